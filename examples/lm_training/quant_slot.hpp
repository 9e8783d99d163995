#pragma once
// quant_slot: one tensor of one layer (a Linear's X, W or dY; an attention's Q, K, V, P, dO or
// dS) as the GEMMs of a step read it. Each step, begin(x) runs the tensor's scaling state (one
// delayed_scaling or current_scaling object per slot: per layer and role), scans for Inf/NaN and
// quantizes x; then the products ask for the orientation they need:
//
//   use            the GEMM reads                       per tensor   MX 1x32             MX 32x32
//   a()            x as A (M, K) = (rows, cols)         codes        axis 1 (along cols)  the tiles
//   b_nk()         x as B stored (N, K) = (rows, cols)  codes        axis 1               the tiles
//   b_kn()         x as B stored (K, N) = (rows, cols)  codes        axis 0 (along rows)  the tiles
//   a_t(G)         x^T as A, per group of rows/G rows   transposed   axis 0, transposed   the tiles, transposed
//                  (dW = dY^T X; per head P^T, dS^T)    codes
//
// A per-tensor tensor is quantized ONCE per step and every use reads the same codes (a_t
// transposes the bytes, the scale is shared). MX 1x32 quantizes once per orientation, i.e. once
// per GEMM the tensor enters; the transposed use reuses the axis-0 codes, whose blocks run along
// the transposed matrix's rows. MX 32x32 quantizes once: a 32x32 tile is the same tile in both
// orientations.
//
// One temporary path reads values instead of codes, because minifloat::gemm does not take
// 16-bit operands yet (the values are exactly what a bf16 GEMM would read; only the fp32
// summation order differs):
//   bf16     BF16 TODO: the operands are rounded to bfloat16 (quantize + dequantize, the
//            library's engine) and multiplied in fp32 (OpenBLAS).
// MX 32x32 reads the codes: minifloat::gemm takes 32x32-tiled MX operands as A, B nk and B kn
// (gemm/operand.hpp), and a_t() is a byte transpose of codes and scale grid.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <minifloat/attention/recipe.hpp>
#include <minifloat/quant/quantized_tensor.hpp>
#include <minifloat/recipes/recipes.hpp>

#include "matmul.hpp"
#include "recipe.hpp"

namespace lm {

enum class slot_policy : std::uint8_t {
  none,     ///< fp32 values
  bf16,     ///< bfloat16 (temporary path, see the file comment)
  delayed,  ///< per tensor, delayed scaling
  current,  ///< per tensor, current scaling
  fixed,    ///< per tensor, a fixed scale (P: amax 1; inference: a calibrated static scale)
  mx,       ///< MXFP8 1x32 along each use's reduction axis
  mx32,     ///< MXFP8 32x32 tiles: one quantization, read in every orientation
  channel,  ///< one scale per row (weights of the inference recipe; B stored (N, K) only)
};

/// train: the scaling states step. eval: states are read, never stepped (delayed: the held
/// scale). calibrate: fp32 values, and every tensor is kept for calibrate().
enum class slot_mode : std::uint8_t { train, eval, calibrate };
using amax_reducer = std::function<void(mf::amax_stats&)>;

/// What a slot is told at construction.
struct slot_spec {
  slot_policy policy = slot_policy::none;
  mf::quant_scheme scheme;  ///< per-tensor / channel / MX (axis ignored) scheme
  std::optional<mf::delayed_scaling_config> delayed;
  std::optional<mf::amax_scaling> current;
  float fixed_scale = 1.0f;
  bool calibrate = false;  ///< inference: fixed_scale comes from calibration
};

/// Transposes every group of a (G * R, C) quantized tensor: (G * C, R). Per-tensor scales are
/// shared; MX 1-D blocks change axis (blocks along C become blocks along the new rows) and the
/// scale grid is transposed per group like the codes; 32x32 tiles stay 32x32. 8-bit codes only.
inline mf::quantized_tensor transpose_groups(const mf::quantized_tensor& q, std::size_t groups) {
  const mf::quant_scheme& s = q.scheme();
  if (mf::format_bits(s.format) != 8) throw std::logic_error("transpose_groups: 8-bit codes only");
  const std::size_t r = q.rows() / groups, c = q.cols();
  std::vector<std::uint8_t> codes(q.codes().size());
  const auto src = q.codes();
  for (std::size_t g = 0; g < groups; ++g) {
    const std::uint8_t* in = src.data() + g * r * c;
    std::uint8_t* out = codes.data() + g * r * c;
    for (std::size_t i0 = 0; i0 < r; i0 += 32)  // 32 x 32 byte tiles keep both sides in cache
      for (std::size_t j0 = 0; j0 < c; j0 += 32)
        for (std::size_t i = i0; i < std::min(r, i0 + 32); ++i)
          for (std::size_t j = j0; j < std::min(c, j0 + 32); ++j) out[j * r + i] = in[i * c + j];
  }
  mf::quant_scheme ts = s;
  std::vector<std::uint8_t> mx;
  if (s.gran == mf::granularity::mx) {
    const mf::quantized_tensor_view v = detail::group_view(q, 0, groups);
    const std::size_t gr = v.scale_grid_rows(), gc = v.scale_grid_cols();  // one group's grid
    mx.resize(q.mx_scales().size());
    const auto ms = q.mx_scales();
    for (std::size_t g = 0; g < groups; ++g)
      for (std::size_t i = 0; i < gr; ++i)
        for (std::size_t j = 0; j < gc; ++j) mx[g * gr * gc + j * gr + i] = ms[g * gr * gc + i * gc + j];
    if (s.tile() != mf::mx_tile::square32) ts.axis = 1 - s.axis;
  } else if (s.gran != mf::granularity::tensor) {
    throw std::logic_error("transpose_groups: per-tensor or MX codes only");
  }
  std::vector<float> scales(q.scales().begin(), q.scales().end());
  return mf::quantized_tensor::from_parts(ts, groups * c, r, std::move(codes), std::move(scales), std::move(mx));
}

/// Summed over a model's slots, for the run summary.
struct slot_counters {
  std::size_t overflow = 0, restarts = 0, updates = 0, skips = 0, nonfinite_steps = 0;
};

template <class T>
class quant_slot;

/// fp64 (the gradient check): plain values, nothing to quantize.
template <>
class quant_slot<double> {
 public:
  quant_slot() = default;
  explicit quant_slot(const slot_spec& s, unsigned = 1) {
    if (s.policy != slot_policy::none) throw std::logic_error("fp64 model: only the fp32 recipe (no quantization)");
  }
  void begin(const double* x, std::size_t rows, std::size_t cols) { x_ = x, rows_ = rows, cols_ = cols; }
  [[nodiscard]] operand<double> a() const { return {nullptr, x_, rows_, cols_, false}; }
  [[nodiscard]] operand<double> b_nk() const { return a(); }
  [[nodiscard]] operand<double> b_kn() const { return a(); }
  [[nodiscard]] operand<double> a_t(std::size_t = 1) const { return {nullptr, x_, rows_, cols_, true}; }
  [[nodiscard]] bool nonfinite() const { return false; }
  void clear_flag() {}
  void skip_step() {}
  void set_mode(slot_mode) {}
  void add_counters(slot_counters&) const {}

 private:
  const double* x_ = nullptr;
  std::size_t rows_ = 0, cols_ = 0;
};

template <>
class quant_slot<float> {
 public:
  quant_slot() = default;
  explicit quant_slot(const slot_spec& s, unsigned threads = 1) : spec_(s), threads_(threads) {
    if (s.delayed) delayed_.emplace(*s.delayed);
    if (s.current) current_.emplace(*s.current);
  }

  [[nodiscard]] slot_policy policy() const noexcept { return spec_.policy; }
  [[nodiscard]] const slot_spec& spec() const noexcept { return spec_; }
  /// Data parallelism: reduces a step's amax stats over the ranks (comm::reduce_amax) before a
  /// delayed or current state steps on them, so every rank's history and scale stay identical.
  /// The function must outlive the slot.
  void set_amax_reducer(const amax_reducer* r) noexcept { reduce_ = r; }
  void set_mode(slot_mode m) { mode_ = m; }
  [[nodiscard]] slot_mode mode() const noexcept { return mode_; }
  /// Inference: the calibrated static scale of a fixed slot.
  void set_fixed_scale(float s) { spec_.fixed_scale = s; }

  /// This step's tensor (rows x cols, row-major). x must stay alive while the step uses the slot.
  void begin(const float* x, std::size_t rows, std::size_t cols) {
    x_ = x, rows_ = rows, cols_ = cols;
    q_.reset(), q_col_.reset(), q_t_.reset(), values_.clear();
    scale_ = 1.0f;
    const mf::matrix_view<const float> view(x, rows, cols, cols);
    if (mode_ == slot_mode::calibrate) {
      if (spec_.calibrate) {
        recorded_.emplace_back(x, x + rows * cols);
        recorded_rows_.push_back(rows);
      }
      nonfinite_ = false;
      return;
    }
    const mf::quantize_options o{.threads = threads_};
    switch (spec_.policy) {
      case slot_policy::delayed:
      case slot_policy::current: {
        mf::step_result r;
        if (mode_ == slot_mode::train) {
          if (reduce_ != nullptr && *reduce_) {  // data parallel: every rank steps on the same stats
            mf::amax_stats st = mf::scan_amax(view);
            (*reduce_)(st);
            r = delayed_ ? delayed_->step(st, view) : current_->step(st, view);
          } else {
            r = delayed_ ? delayed_->step(view) : current_->step(view);
          }
          stepped_ = true;
          overflow_ += r.overflow;
        } else {  // eval: the held delayed scale (current scaling before the first step)
          const mf::amax_stats st = mf::scan_amax(view);
          r.skip = !st.finite();
          const bool held = delayed_ && delayed_->counters().updates + delayed_->counters().restarts > 0;
          r.scale = held ? delayed_->scale()
                         : delayed_ ? delayed_->config().scaling.scale(st.amax) : current_->rule().scale(st.amax);
        }
        nonfinite_ = r.skip;
        nonfinite_steps_ += r.skip ? 1U : 0U;
        scale_ = r.scale;
        q_ = mf::quantize_step(view, spec_.scheme, r, o);
        return;
      }
      default: break;
    }
    nonfinite_ = !mf::scan_amax(view).finite();
    nonfinite_steps_ += nonfinite_ ? 1U : 0U;
    switch (spec_.policy) {
      case slot_policy::bf16:  // BF16 TODO: pass the bfloat16 codes once minifloat::gemm takes them
        values_ = mf::fake_quantize(view, spec_.scheme, o);
        break;
      case slot_policy::fixed:
        scale_ = spec_.fixed_scale;
        q_ = mf::quantize_with_scales(view, spec_.scheme, std::span<const float>(&scale_, 1), o);
        break;
      case slot_policy::mx32:
      case slot_policy::channel: q_ = mf::quantize(view, spec_.scheme, o); break;
      default: break;  // none; mx quantizes per use
    }
  }

  [[nodiscard]] operand<float> a() { return row_use(); }
  [[nodiscard]] operand<float> b_nk() { return row_use(); }
  [[nodiscard]] operand<float> b_kn() {
    if (mode_ == slot_mode::calibrate) return {nullptr, x_, rows_, cols_, false};
    switch (spec_.policy) {
      case slot_policy::mx: return {&mx_col(), nullptr, rows_, cols_, false};
      case slot_policy::channel: throw std::logic_error("quant_slot: per-row scales cannot be read as B (K, N)");
      default: return row_use();
    }
  }
  [[nodiscard]] operand<float> a_t(std::size_t groups = 1) {
    if (mode_ == slot_mode::calibrate) return {nullptr, x_, rows_, cols_, true};
    switch (spec_.policy) {
      case slot_policy::none: return {nullptr, x_, rows_, cols_, true};
      case slot_policy::bf16: return {nullptr, values_.data(), rows_, cols_, true};
      case slot_policy::channel: throw std::logic_error("quant_slot: per-row scales cannot be transposed");
      default: break;
    }
    if (!q_t_ || q_t_groups_ != groups) {
      q_t_ = transpose_groups(spec_.policy == slot_policy::mx ? mx_col() : *q_, groups);
      q_t_groups_ = groups;
    }
    return {&*q_t_, nullptr, cols_ * groups, rows_ / groups, false};
  }

  /// Inf/NaN in this step's tensor (the trainer stops the step).
  [[nodiscard]] bool nonfinite() const noexcept { return nonfinite_; }
  /// Forget the flags of an earlier step (called before every attempt).
  void clear_flag() noexcept { nonfinite_ = false, stepped_ = false; }
  /// The scale of this step (per-tensor policies; 1 otherwise).
  [[nodiscard]] float scale() const noexcept { return scale_; }

  /// The trainer stopped the step. A state that took part undoes its record of the step
  /// (delayed_scaling::skip_step); one the step never reached (the forward stopped before the
  /// backward) gets a non-finite step, which records nothing and also restarts it. Either way
  /// every delayed state restarts with current scaling at the next step.
  void skip_step() {
    if (stepped_) {
      if (delayed_) delayed_->skip_step();
      if (current_) current_->skip_step();
    } else if (delayed_) {
      (void)delayed_->step(mf::amax_stats{.amax = 0.0f, .nonfinite = 1, .count = 0});
    }
    stepped_ = false;
  }

  void add_counters(slot_counters& c) const {
    c.overflow += overflow_;
    c.nonfinite_steps += nonfinite_steps_;
    if (delayed_) {
      c.restarts += delayed_->counters().restarts;
      c.updates += delayed_->counters().updates;
      c.skips += delayed_->counters().skips;
    }
    if (current_) c.skips += current_->counters().skips;
  }

  /// The attention kernel's view of this slot: the values to pass and the scheme it quantizes
  /// them with. Per-tensor slots pass x / s with a scale-1 cast (rule none), which gives the same
  /// codes as quantize_with_scales(x, s) (one float32 division, then the saturating encode); the
  /// caller folds s back into the softmax scale or the output. mx_axis: 1 for Q and K (blocks
  /// along d), 0 for V (along T).
  struct attention_input {
    std::span<const float> values;
    mf::attention::operand_scheme scheme;
    float factor = 1.0f;
  };
  [[nodiscard]] attention_input attention_view(int mx_axis, std::vector<float>& scratch) const {
    attention_input in;
    const std::size_t n = rows_ * cols_;
    in.values = std::span<const float>(x_, n);
    if (mode_ == slot_mode::calibrate) return in;
    switch (spec_.policy) {
      case slot_policy::none: break;
      case slot_policy::bf16: in.scheme = mf::attention::parse_operand_scheme("bf16", "attention"); break;
      case slot_policy::mx:
      case slot_policy::mx32: {
        mf::quant_scheme s = mf::quant_scheme::make(spec_.scheme.format, mf::granularity::mx);
        s.rule = spec_.scheme.rule;
        s.axis = mx_axis;
        in.scheme = s;
        break;
      }
      default: {  // per tensor: prescaled values, cast at scale 1
        scratch.resize(n);
        for (std::size_t i = 0; i < n; ++i) scratch[i] = x_[i] / scale_;
        in.values = scratch;
        mf::quant_scheme s = mf::quant_scheme::make(spec_.scheme.format, mf::granularity::tensor);
        s.rule = mf::scale_rule::none;
        in.scheme = s;
        in.factor = scale_;
      }
    }
    return in;
  }

  /// The static format of P in the attention kernel (fixed slots; bf16: bfloat16 at scale 1).
  [[nodiscard]] mf::attention::static_format p_format() const {
    if (mode_ == slot_mode::calibrate) return {};
    if (spec_.policy == slot_policy::fixed) return {spec_.scheme.format, spec_.fixed_scale};
    if (spec_.policy == slot_policy::bf16) return {mf::format_id::bfloat16, 1.0f};
    return {};
  }

  /// Calibration mode: every tensor seen (copies) and their row counts.
  [[nodiscard]] const std::vector<std::vector<float>>& recorded() const noexcept { return recorded_; }
  [[nodiscard]] const std::vector<std::size_t>& recorded_rows() const noexcept { return recorded_rows_; }
  [[nodiscard]] std::size_t cols() const noexcept { return cols_; }
  void clear_recorded() { recorded_.clear(), recorded_rows_.clear(); }

 private:
  operand<float> row_use() {
    if (mode_ == slot_mode::calibrate) return {nullptr, x_, rows_, cols_, false};
    switch (spec_.policy) {
      case slot_policy::none: return {nullptr, x_, rows_, cols_, false};
      case slot_policy::bf16: return {nullptr, values_.data(), rows_, cols_, false};
      case slot_policy::mx:
        if (!q_) q_ = mf::quantize(mf::matrix_view<const float>(x_, rows_, cols_, cols_), mx_scheme(1), {.threads = threads_});
        return {&*q_, nullptr, rows_, cols_, false};
      default: return {&*q_, nullptr, rows_, cols_, false};
    }
  }
  const mf::quantized_tensor& mx_col() {
    if (!q_col_) q_col_ = mf::quantize(mf::matrix_view<const float>(x_, rows_, cols_, cols_), mx_scheme(0), {.threads = threads_});
    return *q_col_;
  }
  [[nodiscard]] mf::quant_scheme mx_scheme(int axis) const {
    mf::quant_scheme s = spec_.scheme;
    s.axis = axis;
    return s;
  }

  slot_spec spec_;
  unsigned threads_ = 1;
  slot_mode mode_ = slot_mode::train;
  std::optional<mf::delayed_scaling> delayed_;
  std::optional<mf::current_scaling> current_;
  const float* x_ = nullptr;
  std::size_t rows_ = 0, cols_ = 0;
  float scale_ = 1.0f;
  bool nonfinite_ = false, stepped_ = false;
  std::optional<mf::quantized_tensor> q_, q_col_, q_t_;
  std::size_t q_t_groups_ = 0;
  std::vector<float> values_;
  std::size_t overflow_ = 0, nonfinite_steps_ = 0;
  const amax_reducer* reduce_ = nullptr;
  std::vector<std::vector<float>> recorded_;
  std::vector<std::size_t> recorded_rows_;
};

/// The tensors of the model, by the role they play.
enum class tensor_kind : std::uint8_t { x, w, dy, q, k, v, p, d_out, d_s };

constexpr mf::tensor_role role_of(tensor_kind t) noexcept {
  switch (t) {
    case tensor_kind::w: return mf::tensor_role::weight;
    case tensor_kind::dy:
    case tensor_kind::d_out:
    case tensor_kind::d_s: return mf::tensor_role::gradient;
    default: return mf::tensor_role::activation;
  }
}

/// The slot a training recipe gives a tensor (recipe.hpp has the table).
inline slot_spec training_spec(const recipe& r, tensor_kind t) {
  slot_spec s;
  const mf::tensor_role role = role_of(t);
  const bool attention_operand = t == tensor_kind::q || t == tensor_kind::k || t == tensor_kind::v ||
                                 t == tensor_kind::d_out || t == tensor_kind::d_s;
  switch (r.kind) {
    case recipe_kind::fp32: return s;
    case recipe_kind::bf16:
      s.policy = slot_policy::bf16;
      s.scheme = mf::quant_scheme::make(mf::format_id::bfloat16, mf::granularity::tensor);
      s.scheme.rule = mf::scale_rule::none;
      return s;
    case recipe_kind::hif8_delayed:
    case recipe_kind::hif8_current:
    case recipe_kind::fp8_delayed:
      if (t == tensor_kind::p) {  // known amax 1: the activation rule's scale for 1
        const mf::amax_scaling a = r.rule(mf::tensor_role::activation);
        s.policy = slot_policy::fixed;
        s.scheme = a.scheme();
        s.fixed_scale = a.scale(1.0f);
        return s;
      }
      s.scheme = r.rule(role).scheme();
      if (r.delayed()) {
        s.policy = slot_policy::delayed;
        s.delayed = r.delayed_config(role);
      } else {
        s.policy = slot_policy::current;
        s.current = r.rule(role);
      }
      return s;
    case recipe_kind::infer_hif8:
    case recipe_kind::infer_fp8: {
      const mf::format_id f = r.infer_format();
      if (role == mf::tensor_role::gradient) return s;  // forward only
      if (t == tensor_kind::w) {  // offline, one scale per output channel (HiF8: pow2, N_guard 11; E4M3: max)
        s.policy = slot_policy::channel;
        s.scheme = mf::quant_scheme::make(f, mf::granularity::channel);
        return s;
      }
      s.policy = slot_policy::fixed;
      s.scheme = mf::quant_scheme::make(f, mf::granularity::tensor);
      s.scheme.rule = mf::scale_rule::none;
      // P: the scale its known amax 1 gets (HiF8 guard rule of activations; E4M3 1/448); the
      // others are replaced by the calibrated scale (calibrate_inference in main.cpp).
      s.fixed_scale = f == mf::format_id::hifloat8 ? mf::amax_scaling::hif8_guard(r.n_guard_activation).scale(1.0f)
                                                   : 1.0f / 448.0f;
      s.calibrate = t != tensor_kind::p;
      return s;
    }
    case recipe_kind::mxfp8:
    case recipe_kind::mxfp8_32x32:
    case recipe_kind::infer_mxfp8:
      if (role == mf::tensor_role::gradient && r.kind == recipe_kind::infer_mxfp8) return s;
      if (t == tensor_kind::p) {  // E4M3 at 2^-8: the E8M0 scale (floor or rceil) of a block with amax 1
        s.policy = slot_policy::fixed;
        s.scheme = mf::quant_scheme::make(mf::format_id::float8_e4m3fn, mf::granularity::tensor);
        s.fixed_scale = 0x1.0p-8f;
        return s;
      }
      s.scheme = mf::quant_scheme::make(mf::format_id::float8_e4m3fn, mf::granularity::mx);
      s.scheme.rule = r.mx_rule;
      // The attention kernels read 1x32 blocks (K along d, V along T), so attention operands
      // stay 1x32 in the 32x32 recipe; every Linear operand gets 32x32 tiles.
      if (r.kind == recipe_kind::mxfp8_32x32 && !attention_operand) {
        s.policy = slot_policy::mx32;
        s.scheme.block_rows = s.scheme.block_cols = 32;
      } else {
        s.policy = slot_policy::mx;
      }
      return s;
  }
  return s;
}

}  // namespace lm
