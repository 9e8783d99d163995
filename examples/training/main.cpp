// training: a small MLP trained with fake-quantized GEMMs under six scaling recipes.
//
//   training [--steps N] [--out DIR] [--quiet]
//
// Model: 32 -> 64 -> 64 -> 8, ReLU, fp32 master weights, Adam. Task: regress a fixed random
// "teacher" MLP (deterministic synthetic data, one fresh batch of 64 per step, the same batches
// for every recipe). Every GEMM input is fake-quantized (quantize + dequantize with the library):
//   forward   Y  = Xq  Wq^T              X: activation role, W: weight role
//   backward  dX = dYq Wq,  dW = dYq^T Xq     dY: gradient role
// The GEMMs themselves and everything else (bias, ReLU, loss, Adam) run in fp32.
//
// Recipes (per layer and role, one state object each):
//   fp32              no quantization
//   hif8_delayed      HiF8, delayed scaling: L 128, I 10, max, guard rule N_guard 11 (W) / 10 (X, dY)
//   hif8_current      HiF8, current scaling with the same guard rule
//   hif8_mindspeed    HiF8, current scaling, amax -> 15 (X, W) / 224 (dY) (MindSpeed tensorwise)
//   fp8_delayed       E4M3 (X, W) / E5M2 (dY), delayed scaling, s = amax / max_finite (TE HYBRID)
//   mxfp8             MXFP8 E4M3, 32-element blocks along each GEMM's reduction axis (so X, W and
//                     dY are quantized once per GEMM they enter, row- or column-wise)
//
// Two injected events, the same for every recipe:
//   spike    (at 40 % of the run) one target of one batch is 3e38: the loss and dY overflow to
//            Inf, the gradient states report "skip", the step is not applied, every state's
//            record of that step is undone (skip_step) and the next step restarts with current
//            scaling.
//   outlier  (at 70 %) one input element is 4096, 2^8 above the usual input amax: finite, so no
//            skip; it shows the headroom (HiF8 N_guard 10 keeps 10 binades above the history
//            amax, E4M3 with margin 0 none) in the overflow counts, and the history carrying it.
//
// Output: a summary table on stdout; curves.csv (per-step loss per recipe, empty when skipped)
// and curves.svg (moving-average loss and gap to fp32) in --out, default
// <temp dir>/minifloat-training (never the source tree).
// Data-parallel build (training_dp, MINIFLOAT_TRAINING_DATA_PARALLEL=1, needs minifloat::mpi): see
// README.md#data-parallel-training.
#ifndef MINIFLOAT_TRAINING_DATA_PARALLEL
#define MINIFLOAT_TRAINING_DATA_PARALLEL 0
#endif
#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <minifloat/all.hpp>
#include "../common/args.hpp"
#include "../common/rng.hpp"
#include <minifloat/quant/quantized_tensor.hpp>
#include <minifloat/recipes/recipes.hpp>
#if MINIFLOAT_TRAINING_DATA_PARALLEL
#include <minifloat/comm/mpi.hpp>
#endif
#include <functional>

namespace mf = minifloat;

namespace {

using minifloat_examples::rng;  // deterministic on every platform

// --- row-major fp32 matrices and the three GEMM shapes of a linear layer ------------------------
struct mat {
  std::size_t rows = 0, cols = 0;
  std::vector<float> v;
  mat() = default;
  mat(std::size_t r, std::size_t c, float fill = 0.0f) : rows(r), cols(c), v(r * c, fill) {}
  float* row(std::size_t r) { return v.data() + r * cols; }
  [[nodiscard]] const float* row(std::size_t r) const { return v.data() + r * cols; }
  [[nodiscard]] mf::matrix_view<const float> view() const { return {v.data(), rows, cols, cols}; }
};

// c (m x n) = a (m x k) * b^T, b (n x k)
void gemm_nt(const mat& a, const mat& b, mat& c) {
  c = mat(a.rows, b.rows);
  for (std::size_t i = 0; i < a.rows; ++i) {
    const float* ai = a.row(i);
    float* ci = c.row(i);
    for (std::size_t j = 0; j < b.rows; ++j) {
      const float* bj = b.row(j);
      float acc = 0.0f;
      for (std::size_t p = 0; p < a.cols; ++p) acc += ai[p] * bj[p];
      ci[j] = acc;
    }
  }
}
// c (m x n) = a (m x k) * b, b (k x n)
void gemm_nn(const mat& a, const mat& b, mat& c) {
  c = mat(a.rows, b.cols);
  for (std::size_t i = 0; i < a.rows; ++i) {
    const float* ai = a.row(i);
    float* ci = c.row(i);
    for (std::size_t p = 0; p < a.cols; ++p) {
      const float s = ai[p];
      const float* bp = b.row(p);
      for (std::size_t j = 0; j < b.cols; ++j) ci[j] += s * bp[j];
    }
  }
}
// c (m x n) = a^T * b, a (k x m), b (k x n)
void gemm_tn(const mat& a, const mat& b, mat& c) {
  c = mat(a.cols, b.cols);
  for (std::size_t p = 0; p < a.rows; ++p) {
    const float* ap = a.row(p);
    const float* bp = b.row(p);
    for (std::size_t i = 0; i < a.cols; ++i) {
      const float s = ap[i];
      float* ci = c.row(i);
      for (std::size_t j = 0; j < b.cols; ++j) ci[j] += s * bp[j];
    }
  }
}

bool all_finite(const mat& m) {
  return std::all_of(m.v.begin(), m.v.end(), [](float x) { return std::isfinite(x); });
}

// --- recipes ---------------------------------------------------------------------------------------
enum class recipe_id : std::uint8_t { fp32, hif8_delayed, hif8_current, hif8_mindspeed, fp8_delayed, mxfp8 };
constexpr std::array all_recipes = {recipe_id::fp32,           recipe_id::hif8_delayed, recipe_id::hif8_current,
                                    recipe_id::hif8_mindspeed, recipe_id::fp8_delayed,  recipe_id::mxfp8};

std::string_view key(recipe_id r) {
  switch (r) {
    case recipe_id::fp32: return "fp32";
    case recipe_id::hif8_delayed: return "hif8_delayed";
    case recipe_id::hif8_current: return "hif8_current";
    case recipe_id::hif8_mindspeed: return "hif8_mindspeed";
    case recipe_id::fp8_delayed: return "fp8_delayed";
    case recipe_id::mxfp8: return "mxfp8";
  }
  return "?";
}
std::string_view label(recipe_id r) {
  switch (r) {
    case recipe_id::fp32: return "fp32";
    case recipe_id::hif8_delayed: return "HiF8 delayed (N_guard 11/10)";
    case recipe_id::hif8_current: return "HiF8 current (N_guard 11/10)";
    case recipe_id::hif8_mindspeed: return "HiF8 current (MindSpeed 15/224)";
    case recipe_id::fp8_delayed: return "E4M3/E5M2 delayed (margin 0)";
    case recipe_id::mxfp8: return "MXFP8 E4M3 (block 32)";
  }
  return "?";
}

/// Quantizes one role of one layer under a recipe; per-tensor recipes quantize once per step and
/// reuse the result in the second GEMM, MX re-quantizes along the other GEMM's reduction axis.
/// Data parallelism: reduces one step's amax stats over the ranks (comm::reduce_amax) before a
/// per-tensor state records them, so that every rank's history and scale stay identical.
using amax_reducer = std::function<void(mf::amax_stats&)>;

class operand_quantizer {
 public:
  operand_quantizer(recipe_id r, mf::tensor_role role, const amax_reducer* reduce = nullptr) : recipe_(r), reduce_(reduce) {
    switch (r) {
      case recipe_id::hif8_delayed: delayed_.emplace(mf::delayed_scaling_config::hif8(role)); break;
      case recipe_id::fp8_delayed: delayed_.emplace(mf::delayed_scaling_config::fp8(role)); break;
      case recipe_id::hif8_current: current_.emplace(mf::amax_scaling::hif8_guard(role)); break;
      case recipe_id::hif8_mindspeed: current_.emplace(mf::amax_scaling::mindspeed_hif8(role)); break;
      case recipe_id::fp32:
      case recipe_id::mxfp8: break;
    }
  }

  /// First use of x in this step: runs the recipe's state machine and fake-quantizes x for a GEMM
  /// reducing along `axis` (1: along rows, 0: down columns; only MX cares).
  const mat& step(const mat& x, int axis) {
    skipped_ = false;
    if (recipe_ == recipe_id::fp32) return x;
    if (recipe_ == recipe_id::mxfp8) return mx(x, axis);
    // Scalar path: scan (amax, Inf/NaN) + quantize_with_scales. A fused quantize+amax kernel
    // (include/minifloat/simd/, in progress) would do a delayed step in one pass.
    mf::amax_stats st = mf::scan_amax(x.view());
    if (reduce_ != nullptr && *reduce_) (*reduce_)(st);
    const mf::step_result r = delayed_ ? delayed_->step(st, x.view()) : current_->step(st, x.view());
    skipped_ = r.skip;
    overflow_ += r.overflow;
    fq_.rows = x.rows, fq_.cols = x.cols;
    fq_.v = mf::fake_quantize_step(x.view(), delayed_ ? delayed_->scheme() : current_->scheme(), r);
    return fq_;
  }
  /// Second use of the same x in this step (the other GEMM).
  const mat& reuse(const mat& x, int axis) {
    if (recipe_ == recipe_id::fp32) return x;
    if (recipe_ == recipe_id::mxfp8) return mx(x, axis);
    return fq_;
  }
  /// The trainer skipped this step (see delayed_scaling::skip_step).
  void skip_step() {
    if (delayed_) delayed_->skip_step();
    if (current_) current_->skip_step();
  }
  [[nodiscard]] bool skipped() const { return skipped_; }
  [[nodiscard]] std::size_t overflow() const { return delayed_ ? delayed_->counters().overflow_total : overflow_; }
  [[nodiscard]] std::size_t restarts() const { return delayed_ ? delayed_->counters().restarts : 0; }
  [[nodiscard]] std::size_t updates() const { return delayed_ ? delayed_->counters().updates : 0; }

 private:
  const mat& mx(const mat& x, int axis) {
    auto s = mf::quant_scheme::make(mf::format_id::float8_e4m3fn, mf::granularity::mx);
    s.axis = axis;
    mat& out = axis == 1 ? fq_ : fq2_;
    out.rows = x.rows, out.cols = x.cols;
    out.v = mf::fake_quantize(x.view(), s);
    return out;
  }

  recipe_id recipe_;
  std::optional<mf::delayed_scaling> delayed_;
  std::optional<mf::current_scaling> current_;
  const amax_reducer* reduce_ = nullptr;
  mat fq_, fq2_;
  bool skipped_ = false;
  std::size_t overflow_ = 0;
};

struct adam_state {
  std::vector<float> m, v;
};

struct linear {
  mat w, b, gw, gb;  // w: out x in, b: 1 x out
  adam_state aw, ab;
  operand_quantizer qx, qw, qg;
  mat x;  // the input of the last forward

  linear(std::size_t in, std::size_t out, rng& g, recipe_id r, const amax_reducer* reduce = nullptr)
      : w(out, in), b(1, out), qx(r, mf::tensor_role::activation, reduce), qw(r, mf::tensor_role::weight, reduce),
        qg(r, mf::tensor_role::gradient, reduce) {
    const double bound = std::sqrt(6.0 / static_cast<double>(in));  // He uniform, for ReLU
    for (auto& v : w.v) v = static_cast<float>((2.0 * g.uniform() - 1.0) * bound);
    aw.m.assign(w.v.size(), 0.0f), aw.v.assign(w.v.size(), 0.0f);
    ab.m.assign(b.v.size(), 0.0f), ab.v.assign(b.v.size(), 0.0f);
  }

  void forward(const mat& in, mat& y) {
    x = in;
    gemm_nt(qx.step(x, 1), qw.step(w, 1), y);
    for (std::size_t i = 0; i < y.rows; ++i)
      for (std::size_t j = 0; j < y.cols; ++j) y.row(i)[j] += b.v[j];
  }
  /// dy: batch x out. Writes dx (batch x in) if asked.
  void backward(const mat& dy, mat* dx) {
    const mat& dyq = qg.step(dy, 1);
    if (dx != nullptr) gemm_nn(dyq, qw.reuse(w, 0), *dx);  // reduction over `out`
    gemm_tn(qg.reuse(dy, 0), qx.reuse(x, 0), gw);           // reduction over the batch
    gb = mat(1, dy.cols);
    for (std::size_t i = 0; i < dy.rows; ++i)
      for (std::size_t j = 0; j < dy.cols; ++j) gb.v[j] += dy.row(i)[j];
  }
  [[nodiscard]] bool any_skip() const { return qx.skipped() || qw.skipped() || qg.skipped(); }
  void skip_step() { qx.skip_step(), qw.skip_step(), qg.skip_step(); }
};

void adam(std::vector<float>& p, const std::vector<float>& g, adam_state& s, float lr, int t) {
  constexpr float b1 = 0.9f, b2 = 0.999f, eps = 1e-8f;
  const auto c1 = static_cast<float>(1.0 - std::pow(b1, t)), c2 = static_cast<float>(1.0 - std::pow(b2, t));
  for (std::size_t i = 0; i < p.size(); ++i) {
    s.m[i] = b1 * s.m[i] + (1 - b1) * g[i];
    s.v[i] = b2 * s.v[i] + (1 - b2) * g[i] * g[i];
    p[i] -= lr * (s.m[i] / c1) / (std::sqrt(s.v[i] / c2) + eps);
  }
}

// --- the task ------------------------------------------------------------------------------------
constexpr std::size_t d_in = 32, d_hidden = 64, d_out = 8, batch = 64;
constexpr float spike_value = 3e38f;   // a target this large overflows (out - y)^2 and 2 (out - y)
constexpr float outlier_value = 4096;  // ~2^8 x the usual input amax

struct teacher {
  mat w1, b1, w2;
  explicit teacher(rng& g) : w1(32, d_in), b1(1, 32), w2(d_out, 32) {
    for (auto& v : w1.v) v = static_cast<float>(g.normal() * 1.5 / std::sqrt(static_cast<double>(d_in)));
    for (auto& v : b1.v) v = static_cast<float>(g.normal() * 0.5);
    for (auto& v : w2.v) v = static_cast<float>(g.normal() / std::sqrt(32.0));
  }
  void operator()(const mat& x, mat& y) const {
    mat h;
    gemm_nt(x, w1, h);
    for (std::size_t i = 0; i < h.rows; ++i)
      for (std::size_t j = 0; j < h.cols; ++j) h.row(i)[j] = std::tanh(h.row(i)[j] + b1.v[j]);
    gemm_nt(h, w2, y);
  }
};

/// Batch `step`: inputs N(0, 1) with per-feature scales 2^-2 .. 2^2 (a spread of binades).
void make_batch(std::uint64_t seed, std::uint64_t step, const teacher& t, mat& x, mat& y) {
  rng g(0xB47C4ULL + 7919ULL * step + 0x100000000ULL * seed);
  x = mat(batch, d_in);
  for (std::size_t i = 0; i < batch; ++i)
    for (std::size_t j = 0; j < d_in; ++j)
      x.row(i)[j] = static_cast<float>(g.normal() * std::ldexp(1.0, static_cast<int>(j % 5) - 2));
  t(x, y);
}

struct run_result {
  std::vector<double> loss;  // per step; NaN when the step was skipped
  std::size_t skipped = 0, overflow = 0, restarts = 0, updates = 0;
  // data-parallel runs only
  std::vector<double> grad_sqnr;       ///< per applied step: all-reduced gradients vs the exact fp64 sum, dB
  std::size_t weight_mismatches = 0;   ///< steps after which some rank's weights differed from rank 0's
  std::size_t bytes_sent = 0;          ///< gradient all-reduce payload bytes this rank sent, whole run
  double codec_seconds = 0.0, comm_seconds = 0.0;
  double eval = 0.0;
  double seconds = 0.0;
};

#if MINIFLOAT_TRAINING_DATA_PARALLEL
/// Data-parallel training: rank k of P takes rows [64 k / P, 64 (k + 1) / P) of every global
/// batch, the gradients are all-reduced with `wire` (comm::gradient_all_reduce), the amax stats of
/// the per-tensor recipes are reduced (comm::reduce_amax), and the skip rule is agreed.
struct data_parallel {
  MPI_Comm comm = MPI_COMM_WORLD;
  std::size_t rank = 0, ranks = 1;
  mf::comm::recipe wire;
};

std::uint64_t fnv(std::span<const float> v, std::uint64_t h = 1469598103934665603ULL) {
  for (const float x : v) h = (h ^ std::bit_cast<std::uint32_t>(x)) * 1099511628211ULL;
  return h;
}
#else
struct data_parallel {};
#endif

run_result train(recipe_id r, std::size_t steps, std::size_t spike_step, std::size_t outlier_step, std::uint64_t seed,
                 const data_parallel* dp = nullptr) {
  (void)dp;
  rng g(42);  // the task (teacher) is the same for every seed
  const teacher t(g);
  rng init(7 + 1000003ULL * seed);
  std::vector<linear> layers;
  amax_reducer reduce;
#if MINIFLOAT_TRAINING_DATA_PARALLEL
  if (dp != nullptr) reduce = [dp](mf::amax_stats& st) { mf::comm::reduce_amax(std::span<mf::amax_stats>(&st, 1), dp->comm); };
#endif
  layers.emplace_back(d_in, d_hidden, init, r, &reduce);
  layers.emplace_back(d_hidden, d_hidden, init, r, &reduce);
  layers.emplace_back(d_hidden, d_out, init, r, &reduce);
  constexpr double lr_max = 3e-3, lr_min = 3e-4;
  int adam_t = 0;
  run_result res;
  const auto t0 = std::chrono::steady_clock::now();

  auto forward = [&](const mat& x, mat& out, std::vector<mat>& acts, bool quantized) {
    acts.assign(layers.size(), mat{});
    mat cur = x;
    for (std::size_t l = 0; l < layers.size(); ++l) {
      if (quantized) {
        layers[l].forward(cur, acts[l]);
      } else {  // evaluation: plain fp32 forward with the master weights
        gemm_nt(cur, layers[l].w, acts[l]);
        for (std::size_t i = 0; i < acts[l].rows; ++i)
          for (std::size_t j = 0; j < acts[l].cols; ++j) acts[l].row(i)[j] += layers[l].b.v[j];
      }
      if (l + 1 < layers.size()) {
        cur = acts[l];
        for (auto& v : cur.v) v = std::max(v, 0.0f);
      }
    }
    out = acts.back();
  };

  mat x, y, out, dy, dx;
  std::vector<mat> acts;
  for (std::size_t step = 0; step < steps; ++step) {
    make_batch(seed, step, t, x, y);
    if (step == spike_step) y.row(3)[5] = spike_value;
    if (step == outlier_step) x.row(7)[2] = outlier_value;
    std::size_t global_values = y.v.size();
#if MINIFLOAT_TRAINING_DATA_PARALLEL
    if (dp != nullptr) {  // this rank's rows of the global batch
      const std::size_t lo = batch * dp->rank / dp->ranks, hi = batch * (dp->rank + 1) / dp->ranks;
      const auto slice = [&](mat& m) {
        mat part(hi - lo, m.cols);
        std::copy(m.row(lo), m.row(lo) + (hi - lo) * m.cols, part.v.begin());
        m = std::move(part);
      };
      slice(x), slice(y);
    }
#endif
    forward(x, out, acts, true);
    // loss = mean (out - y)^2 in fp32 (an overflow stays Inf), dloss/dout = 2 (out - y) / n
    const float inv_n = 1.0f / static_cast<float>(global_values);
    double loss = 0.0;
    dy = mat(out.rows, out.cols);
    for (std::size_t i = 0; i < out.v.size(); ++i) {
      const float d = out.v[i] - y.v[i];
      loss += static_cast<double>(d * d);
      dy.v[i] = 2.0f * d * inv_n;
    }
    loss *= static_cast<double>(inv_n);
#if MINIFLOAT_TRAINING_DATA_PARALLEL
    if (dp != nullptr) MPI_Allreduce(MPI_IN_PLACE, &loss, 1, MPI_DOUBLE, MPI_SUM, dp->comm);
#endif
    for (std::size_t l = layers.size(); l-- > 0;) {
      const bool first = l == 0;
      layers[l].backward(dy, first ? nullptr : &dx);
      if (!first) {  // through the ReLU of layer l-1
        const mat& pre = acts[l - 1];
        for (std::size_t i = 0; i < dx.v.size(); ++i)
          if (!(pre.v[i] > 0.0f)) dx.v[i] = 0.0f;
        dy = dx;
      }
    }
    // Skip rule, the same for every recipe: a non-finite loss or gradient, or any recipe state
    // that saw Inf/NaN. A skipped step is not applied, and every state forgets it.
#if MINIFLOAT_TRAINING_DATA_PARALLEL
    bool dp_skip = false;
    if (dp != nullptr) {
      // the exact global gradient (fp64 sum of the fp32 local ones), for the SQNR of the all-reduce
      std::vector<double> exact;
      for (const auto& L : layers)
        for (const auto* gr : {&L.gw, &L.gb}) exact.insert(exact.end(), gr->v.begin(), gr->v.end());
      MPI_Allreduce(MPI_IN_PLACE, exact.data(), static_cast<int>(exact.size()), MPI_DOUBLE, MPI_SUM, dp->comm);
      std::vector<std::span<float>> grads;
      for (auto& L : layers) grads.emplace_back(L.gw.v), grads.emplace_back(L.gb.v);
      const auto c0 = std::chrono::steady_clock::now();
      const auto cr = mf::comm::gradient_all_reduce(grads, dp->wire, dp->comm);
      res.comm_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - c0).count();
      res.codec_seconds += cr.codec_seconds;
      res.bytes_sent += cr.bytes_sent;
      dp_skip = cr.verdict == mf::comm::step_verdict::skip;
      double err = 0.0, sig = 0.0;
      std::size_t i = 0;
      for (const auto& L : layers)
        for (const auto* gr : {&L.gw, &L.gb})
          for (const float v : gr->v) err += (v - exact[i]) * (v - exact[i]), sig += exact[i] * exact[i], ++i;
      if (!dp_skip && std::isfinite(sig) && std::isfinite(err))
        res.grad_sqnr.push_back(err > 0.0 ? 10.0 * std::log10(sig / err) : 300.0);
    }
#endif
    bool skip = !std::isfinite(loss);
    for (const auto& L : layers) skip = skip || L.any_skip() || !all_finite(L.gw) || !all_finite(L.gb);
#if MINIFLOAT_TRAINING_DATA_PARALLEL
    if (dp != nullptr)  // every rank takes the same decision
      skip = mf::comm::agree(skip || dp_skip ? mf::comm::step_verdict::skip : mf::comm::step_verdict::apply, dp->comm) ==
             mf::comm::step_verdict::skip;
#endif
    if (skip) {
      for (auto& L : layers) L.skip_step();
      ++res.skipped;
      res.loss.push_back(std::numeric_limits<double>::quiet_NaN());
      continue;
    }
    // global gradient-norm clipping at 1 (as LLM recipes do), then Adam with a cosine schedule
    double norm2 = 0.0;
    for (const auto& L : layers)
      for (const auto* gr : {&L.gw, &L.gb})
        for (const float v : gr->v) norm2 += static_cast<double>(v) * v;
    const auto clip = static_cast<float>(std::min(1.0, 1.0 / std::sqrt(norm2 + 1e-30)));
    const double progress = static_cast<double>(step) / static_cast<double>(steps);
    const auto lr = static_cast<float>(lr_min + (lr_max - lr_min) * 0.5 * (1.0 + std::cos(3.141592653589793 * progress)));
    ++adam_t;
    for (auto& L : layers) {
      for (auto* gr : {&L.gw, &L.gb})
        for (float& v : gr->v) v *= clip;
      adam(L.w.v, L.gw.v, L.aw, lr, adam_t);
      adam(L.b.v, L.gb.v, L.ab, lr, adam_t);
    }
    res.loss.push_back(loss);
#if MINIFLOAT_TRAINING_DATA_PARALLEL
    if (dp != nullptr) {  // the ranks' master weights must stay bit-identical
      std::uint64_t h = 1469598103934665603ULL;
      for (const auto& L : layers) h = fnv(L.b.v, fnv(L.w.v, h));
      std::vector<std::uint64_t> all(dp->ranks);
      MPI_Allgather(&h, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, dp->comm);
      if (std::any_of(all.begin(), all.end(), [&](std::uint64_t o) { return o != all[0]; })) ++res.weight_mismatches;
    }
#endif
  }
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (const auto& L : layers)
    for (const auto* q : {&L.qx, &L.qw, &L.qg}) {
      res.overflow += q->overflow();
      res.restarts += q->restarts();
      res.updates += q->updates();
    }
  // held-out evaluation: 16 fresh batches, fp32 forward with the trained master weights
  double ev = 0.0;
  for (std::uint64_t k = 0; k < 16; ++k) {
    make_batch(0, 1'000'000 + k, t, x, y);  // the same held-out set for every seed
    forward(x, out, acts, false);
    double s = 0.0;
    for (std::size_t i = 0; i < out.v.size(); ++i) s += std::pow(static_cast<double>(out.v[i]) - y.v[i], 2);
    ev += s / static_cast<double>(out.v.size());
  }
  res.eval = ev / 16.0;
  return res;
}

/// Mean of the finite losses over the last 10 % of the run.
double final_loss(const std::vector<double>& loss) {
  const std::size_t n = std::max<std::size_t>(1, loss.size() / 10);
  double s = 0.0;
  std::size_t k = 0;
  for (std::size_t i = loss.size() - n; i < loss.size(); ++i)
    if (std::isfinite(loss[i])) s += loss[i], ++k;
  return k == 0 ? std::numeric_limits<double>::quiet_NaN() : s / static_cast<double>(k);
}

/// Trailing moving median over `w` steps of the finite values (NaN where there are none): a
/// median, so that the single outlier step does not smear over the window.
std::vector<double> moving_median(const std::vector<double>& v, std::size_t w) {
  std::vector<double> out(v.size()), win;
  for (std::size_t i = 0; i < v.size(); ++i) {
    win.clear();
    for (std::size_t j = i + 1 > w ? i + 1 - w : 0; j <= i; ++j)
      if (std::isfinite(v[j])) win.push_back(v[j]);
    if (win.empty()) {
      out[i] = std::numeric_limits<double>::quiet_NaN();
      continue;
    }
    std::sort(win.begin(), win.end());
    const std::size_t h = win.size() / 2;
    out[i] = win.size() % 2 == 1 ? win[h] : 0.5 * (win[h - 1] + win[h]);
  }
  return out;
}

// --- output files ----------------------------------------------------------------------------------

std::string num(double v, int prec) {
  if (!std::isfinite(v)) return "";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", prec, v);
  return buf;
}

// (training_dp writes no files: the two writers are for the single-process program)
[[maybe_unused]] std::string csv(const std::vector<run_result>& runs, std::size_t spike, std::size_t outlier) {
  std::ostringstream o;
  o << "step,event";
  for (const auto r : all_recipes) o << ',' << key(r);
  o << '\n';
  for (std::size_t s = 0; s < runs[0].loss.size(); ++s) {
    o << s << ',' << (s == spike ? "spike" : s == outlier ? "outlier" : "");
    for (const auto& run : runs) o << ',' << num(run.loss[s], 7);
    o << '\n';
  }
  return o.str();
}

constexpr std::array<const char*, 6> colors = {"#000000", "#d62728", "#1f77b4", "#17becf", "#ff7f0e", "#2ca02c"};

[[maybe_unused]] std::string svg(const std::vector<run_result>& runs, std::size_t spike, std::size_t outlier) {
  const std::size_t n = runs[0].loss.size();
  const std::size_t w = std::max<std::size_t>(9, (n / 20) | 1U);
  std::vector<std::vector<double>> ma;
  for (const auto& r : runs) ma.push_back(moving_median(r.loss, w));
  // gap of each moving average to fp32's, in %
  std::vector<std::vector<double>> gap(runs.size(), std::vector<double>(n));
  for (std::size_t k = 0; k < runs.size(); ++k)
    for (std::size_t i = 0; i < n; ++i) gap[k][i] = 100.0 * (ma[k][i] / ma[0][i] - 1.0);

  const std::size_t stride = std::max<std::size_t>(1, n / 500);
  const double W = 960, H = 720, left = 80, right = 300, top = 50, ph = 270, gapy = 80;
  const double pw = W - left - right;
  const std::size_t skip0 = std::min<std::size_t>(n - 1, std::max<std::size_t>(w, n / 20));  // skip the initial transient
  double lo = 1e300, hi = -1e300, glo = 0, ghi = 0;
  for (std::size_t k = 0; k < runs.size(); ++k)
    for (std::size_t i = skip0; i < n; ++i) {
      if (std::isfinite(ma[k][i]) && ma[k][i] > 0) lo = std::min(lo, ma[k][i]), hi = std::max(hi, ma[k][i]);
      if (std::isfinite(gap[k][i])) glo = std::min(glo, gap[k][i]), ghi = std::max(ghi, gap[k][i]);
    }
  const double l0 = std::floor(std::log10(lo)), l1 = std::ceil(std::log10(hi));
  const auto nice = [](double v) {  // round |v| up to 1, 2 or 5 x 10^k
    if (v <= 0) return 1.0;
    const double p = std::pow(10.0, std::floor(std::log10(v)));
    for (const double m : {1.0, 2.0, 5.0, 10.0})
      if (v <= m * p) return m * p;
    return 10 * p;
  };
  const double gstep = nice(std::max(ghi - glo, 1.0) / 6.0);
  const double g0 = std::floor(glo / gstep) * gstep, g1 = std::ceil(ghi / gstep) * gstep;
  const auto X = [&](double s) { return left + pw * s / static_cast<double>(n - 1); };
  const auto Y1 = [&](double v) { return top + ph * (l1 - std::log10(v)) / (l1 - l0); };
  const double top2 = top + ph + gapy;
  const auto Y2 = [&](double v) { return top2 + ph * (g1 - v) / (g1 - g0); };

  std::ostringstream o;
  o.setf(std::ios::fixed);
  o.precision(1);
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H << "\" viewBox=\"0 0 " << W << ' ' << H
    << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  o << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  o << "<text x=\"" << left << "\" y=\"24\" font-size=\"14\" font-weight=\"bold\">MLP 32-64-64-8 with fake-quantized GEMM"
    << " inputs and gradients: training loss, moving median of " << w << " steps</text>\n";
  // panels
  for (const double pt : {top, top2})
    o << "<rect x=\"" << left << "\" y=\"" << pt << "\" width=\"" << pw << "\" height=\"" << ph
      << "\" fill=\"none\" stroke=\"#444\"/>\n";
  // x ticks
  const double xstep = nice(static_cast<double>(n) / 6.0);
  for (double s = 0; s <= static_cast<double>(n - 1); s += xstep)
    for (const double pt : {top, top2}) {
      o << "<line x1=\"" << X(s) << "\" x2=\"" << X(s) << "\" y1=\"" << pt << "\" y2=\"" << pt + ph
        << "\" stroke=\"#ddd\"/>\n";
      o << "<text x=\"" << X(s) << "\" y=\"" << pt + ph + 16 << "\" text-anchor=\"middle\">" << static_cast<long>(s) << "</text>\n";
    }
  o << "<text x=\"" << left + pw / 2 << "\" y=\"" << top2 + ph + 36 << "\" text-anchor=\"middle\">step</text>\n";
  // y ticks: decades (and 2, 5) on the loss panel
  for (double e = l0; e <= l1; ++e)
    for (const double m : {1.0, 2.0, 5.0}) {
      const double v = m * std::pow(10.0, e);
      if (std::log10(v) > l1 + 1e-9) continue;
      o << "<line x1=\"" << left << "\" x2=\"" << left + pw << "\" y1=\"" << Y1(v) << "\" y2=\"" << Y1(v) << "\" stroke=\""
        << (m == 1.0 ? "#ccc" : "#eee") << "\"/>\n";
      o << "<text x=\"" << left - 6 << "\" y=\"" << Y1(v) + 4 << "\" text-anchor=\"end\">" << num(v, 2) << "</text>\n";
    }
  o << "<text transform=\"translate(22," << top + ph / 2 << ") rotate(-90)\" text-anchor=\"middle\">loss (log scale)</text>\n";
  for (double v = g0; v <= g1 + 1e-9; v += gstep) {
    o << "<line x1=\"" << left << "\" x2=\"" << left + pw << "\" y1=\"" << Y2(v) << "\" y2=\"" << Y2(v) << "\" stroke=\""
      << (std::fabs(v) < 1e-9 ? "#888" : "#eee") << "\"/>\n";
    o << "<text x=\"" << left - 6 << "\" y=\"" << Y2(v) + 4 << "\" text-anchor=\"end\">" << num(v, 3) << "</text>\n";
  }
  o << "<text transform=\"translate(22," << top2 + ph / 2 << ") rotate(-90)\" text-anchor=\"middle\">loss gap to fp32 (%)</text>\n";
  // events
  for (const auto& [s, name] : {std::pair{spike, "spike (skipped)"}, std::pair{outlier, "outlier"}}) {
    if (s >= n) continue;
    const double xs = X(static_cast<double>(s));
    for (const double pt : {top, top2})
      o << "<line x1=\"" << xs << "\" x2=\"" << xs << "\" y1=\"" << pt << "\" y2=\"" << pt + ph
        << "\" stroke=\"#999\" stroke-dasharray=\"4,3\"/>\n";
    o << "<text x=\"" << xs + 4 << "\" y=\"" << top + 14 << "\" fill=\"#555\">" << name << "</text>\n";
  }
  // curves (clipped to the panels)
  o << "<defs><clipPath id=\"p1\"><rect x=\"" << left << "\" y=\"" << top << "\" width=\"" << pw << "\" height=\"" << ph
    << "\"/></clipPath><clipPath id=\"p2\"><rect x=\"" << left << "\" y=\"" << top2 << "\" width=\"" << pw
    << "\" height=\"" << ph << "\"/></clipPath></defs>\n";
  for (std::size_t k = 0; k < runs.size(); ++k)
    for (int panel = 0; panel < 2; ++panel) {
      if (panel == 1 && k == 0) continue;
      o << "<polyline clip-path=\"url(#p" << panel + 1 << ")\" fill=\"none\" stroke=\"" << colors[k]
        << "\" stroke-width=\"1.5\" points=\"";
      for (std::size_t i = 0; i < n; i += stride) {  // the medians are smooth: <= ~500 points a curve
        const double v = panel == 0 ? ma[k][i] : gap[k][i];
        if (!std::isfinite(v) || (panel == 0 && v <= 0)) continue;
        o << X(static_cast<double>(i)) << ',' << (panel == 0 ? Y1(v) : Y2(v)) << ' ';
      }
      o << "\"/>\n";
    }
  // legend with the summary numbers
  const double lx = left + pw + 20;
  const double f0 = final_loss(runs[0].loss);
  o << "<text x=\"" << lx << "\" y=\"" << top + 4 << "\" font-weight=\"bold\">recipe: final loss, gap</text>\n";
  for (std::size_t k = 0; k < runs.size(); ++k) {
    const double y = top + 26 + 36 * static_cast<double>(k);
    const double f = final_loss(runs[k].loss);
    o << "<line x1=\"" << lx << "\" x2=\"" << lx + 24 << "\" y1=\"" << y - 4 << "\" y2=\"" << y - 4 << "\" stroke=\""
      << colors[k] << "\" stroke-width=\"3\"/>\n";
    o << "<text x=\"" << lx + 30 << "\" y=\"" << y << "\">" << label(all_recipes[k]) << "</text>\n";
    o << "<text x=\"" << lx + 30 << "\" y=\"" << y + 15 << "\" fill=\"#555\">" << num(f, 4) << ", "
      << (k == 0 ? std::string("reference") : num(100.0 * (f / f0 - 1.0), 3) + " %") << ", skipped "
      << runs[k].skipped << "</text>\n";
  }
  o << "</svg>\n";
  return o.str();
}

// A bound that keeps a typo (an extra zero or five) from becoming a run of days.
constexpr std::size_t max_steps = 1'000'000;

#if !MINIFLOAT_TRAINING_DATA_PARALLEL
int usage(const char* argv0, int code) {
  (code == 0 ? std::cout : std::cerr)
      << "usage: " << argv0 << " [--steps N] [--seed S] [--out DIR] [--quiet]\n"
      << "  --steps N   training steps per recipe (default 200; 20 .. 1000000)\n"
      << "  --seed S    initialization and batch-order seed (default 0; the task is fixed)\n"
      << "  --out DIR   where curves.csv and curves.svg go (default <temp dir>/minifloat-training)\n"
      << "  --quiet     print only the summary table\n";
  return code;
}
#endif

#if MINIFLOAT_TRAINING_DATA_PARALLEL
double median(std::vector<double> v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  return v.size() % 2 == 1 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

/// training_dp: the same MLP, data-parallel under mpirun (examples/training/README.md#data-parallel-training).
int data_parallel_main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  data_parallel dp;
  dp.rank = mf::comm::detail::comm_rank(MPI_COMM_WORLD);
  dp.ranks = mf::comm::detail::comm_size(MPI_COMM_WORLD);
  std::size_t steps = 200;
  std::uint64_t seed = 0;
  using wire_pair = std::pair<mf::comm::wire_format, mf::comm::wire_format>;  // reduce-scatter, all-gather
  std::vector<wire_pair> wires;
  for (const auto f : {mf::comm::wire_format::fp32, mf::comm::wire_format::bf16, mf::comm::wire_format::hif8,
                       mf::comm::wire_format::e4m3, mf::comm::wire_format::mxfp8_e4m3})
    wires.push_back({f, f});
  wires.push_back({mf::comm::wire_format::hif8, mf::comm::wire_format::bf16});
  std::size_t chunk = 256;
  bool help = false;
  try {  // every rank parses the same arguments: all of them stop alike, rank 0 says why
    for (minifloat_examples::arg_cursor arg(argc, argv); arg.next();) {
      const std::string_view a = arg.name();
      if (a == "--help" || a == "-h") help = true;
      else if (a == "--steps") steps = arg.integer<std::size_t>(20, max_steps);
      else if (a == "--seed") seed = arg.integer<std::uint64_t>(0, std::numeric_limits<std::uint64_t>::max());
      else if (a == "--chunk") {
        chunk = arg.integer<std::size_t>(32, std::size_t{1} << 20);
        if (chunk % 32 != 0)
          throw minifloat_examples::usage_error("--chunk expects a multiple of 32 (the MX block) in [32, 2^20], got " +
                                                std::to_string(chunk));
      } else if (a == "--wire") {
        wires.clear();
        for (const std::string& item : arg.list("wire formats FORMAT or FORMAT+GATHER")) {
          const std::size_t plus = std::min(item.find('+'), item.size());
          const auto f = mf::comm::parse_wire_format(std::string_view(item).substr(0, plus));
          const auto g = plus < item.size() ? mf::comm::parse_wire_format(std::string_view(item).substr(plus + 1)) : f;
          if (!f || !g)
            throw minifloat_examples::usage_error("--wire: unknown format " + minifloat_examples::quote_arg(item) +
                                                  "; expected fp32, bf16, hif8, e4m3, e5m2, mxfp8_e4m3 or mxfp8_e5m2, or two joined by + "
                                                  "(reduce-scatter+all-gather, e.g. hif8+bf16)");
          wires.push_back({*f, *g});
        }
      } else {
        arg.unknown();
      }
    }
  } catch (const minifloat_examples::usage_error& e) {
    const int code = dp.rank == 0 ? minifloat_examples::report("training_dp", e) : 2;
    MPI_Finalize();
    return code;
  }
  if (help) {
    if (dp.rank == 0)
      std::cout << "usage: mpirun -n P training_dp [--steps N] [--seed S] [--chunk C] [--wire LIST]\n"
                   "  --steps N   training steps per run (default 200; 20 .. 1000000)\n"
                   "  --seed S    initialization and batch-order seed (default 0)\n"
                   "  --chunk C   elements per wire scale group, a multiple of 32 in [32, 2^20] (default 256)\n"
                   "  --wire LIST comma list of fp32,bf16,hif8,e4m3,mxfp8_e4m3 or FORMAT+GATHER (e.g. hif8+bf16)\n";
    MPI_Finalize();
    return 0;
  }
  const std::size_t spike = steps * 4 / 10, outlier = steps * 7 / 10;
  // single-process baselines (every rank computes them; they are cheap)
  const run_result base = train(recipe_id::fp32, steps, spike, outlier, seed);
  const run_result base_hif8 = train(recipe_id::hif8_delayed, steps, spike, outlier, seed);
  struct row {
    std::string name;
    run_result r;
    std::string wire;
  };
  std::vector<row> rows;
  for (const auto& [w, g] : wires) {
    dp.wire = mf::comm::recipe::of(w, chunk);
    if (g != w) dp.wire.gather = g;
    rows.push_back({"fp32 GEMMs, data-parallel", train(recipe_id::fp32, steps, spike, outlier, seed, &dp), dp.wire.describe()});
  }
  dp.wire = mf::comm::recipe::of(mf::comm::wire_format::hif8, chunk);
  rows.push_back({"HiF8 delayed GEMMs, amax reduced, data-parallel",
                  train(recipe_id::hif8_delayed, steps, spike, outlier, seed, &dp), dp.wire.describe()});

  bool ok = true;
  const double f0 = final_loss(base.loss), e0 = base.eval;
  if (dp.rank == 0) {
    std::printf("MLP %zu-%zu-%zu-%zu, global batch %zu split over %zu ranks, %zu steps, seed %llu; spike at %zu, outlier at %zu\n\n",
                d_in, d_hidden, d_hidden, d_out, batch, dp.ranks, steps, static_cast<unsigned long long>(seed), spike,
                outlier);
    std::printf("| run | gradients on the wire | final loss | gap | eval loss | eval gap | grad SQNR median / min | skipped | "
                "weights identical | bytes sent / step | all-reduce / step |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
    std::printf("| fp32, 1 process | - | %.5f | - | %.5f | - | - | %zu | - | - | - |\n", f0, e0, base.skipped);
    std::printf("| HiF8 delayed GEMMs, 1 process | - | %.5f | %s %% | %.5f | %s %% | - | %zu | - | - | - |\n",
                final_loss(base_hif8.loss), num(100.0 * (final_loss(base_hif8.loss) / f0 - 1.0), 3).c_str(), base_hif8.eval,
                num(100.0 * (base_hif8.eval / e0 - 1.0), 3).c_str(), base_hif8.skipped);
  }
  for (const auto& [name, r, wire] : rows) {
    const double f = final_loss(r.loss);
    const std::size_t applied = steps - r.skipped;
    ok = ok && std::isfinite(f) && r.skipped >= 1 && r.weight_mismatches == 0;
    if (dp.rank == 0) {
      const double mn = r.grad_sqnr.empty() ? 0.0 : *std::min_element(r.grad_sqnr.begin(), r.grad_sqnr.end());
      std::printf("| %s | %s | %.5f | %s %% | %.5f | %s %% | %.1f / %.1f dB | %zu | %s | %zu | %.0f us |\n", name.c_str(),
                  wire.c_str(), f, num(100.0 * (f / f0 - 1.0), 3).c_str(), r.eval, num(100.0 * (r.eval / e0 - 1.0), 3).c_str(),
                  median(r.grad_sqnr), mn, r.skipped,
                  r.weight_mismatches == 0 ? "yes, every step" : ("NO (" + std::to_string(r.weight_mismatches) + " steps)").c_str(),
                  r.bytes_sent / std::max<std::size_t>(applied + r.skipped, 1),
                  1e6 * r.comm_seconds / static_cast<double>(steps));
    }
  }
  if (dp.rank == 0) {
    std::printf("\ngap = final (last 10 %% of steps) training loss vs the 1-process fp32 run; eval = 1024 held-out samples;\n"
                "grad SQNR = the all-reduced gradients vs the exact fp64 sum of the ranks' fp32 gradients, per applied step.\n");
    if (!ok) std::fprintf(stderr, "training_dp: a run diverged, missed the spike, or the ranks' weights differed\n");
  }
  MPI_Finalize();
  return ok ? 0 : 1;
}
#endif

}  // namespace

#if !MINIFLOAT_TRAINING_DATA_PARALLEL
namespace {

int single_process_main(int argc, char** argv) {
  std::size_t steps = 200;
  std::uint64_t seed = 0;
  std::filesystem::path out_dir;
  bool quiet = false;
  for (minifloat_examples::arg_cursor arg(argc, argv); arg.next();) {
    const std::string_view a = arg.name();
    if (a == "--help" || a == "-h") return usage(argv[0], 0);
    if (a == "--quiet") quiet = true;
    else if (a == "--steps") steps = arg.integer<std::size_t>(20, max_steps);
    else if (a == "--seed") seed = arg.integer<std::uint64_t>(0, std::numeric_limits<std::uint64_t>::max());
    else if (a == "--out") out_dir = std::filesystem::path(std::string(arg.value()));
    else arg.unknown();
  }
  if (!out_dir.empty()) minifloat_examples::check_output_folder(out_dir, "--out");
  if (out_dir.empty()) out_dir = std::filesystem::temp_directory_path() / "minifloat-training";

  const std::size_t spike = steps * 4 / 10, outlier = steps * 7 / 10;
  if (!quiet)
    std::cout << "MLP " << d_in << "-" << d_hidden << "-" << d_hidden << "-" << d_out << ", batch " << batch << ", Adam, "
              << steps << " steps, seed " << seed << "; spike (target 3e38) at step " << spike << ", outlier (input 4096) at step "
              << outlier << "\n\n";
  std::vector<run_result> runs;
  for (const auto r : all_recipes) runs.push_back(train(r, steps, spike, outlier, seed));

  const double f0 = final_loss(runs[0].loss), e0 = runs[0].eval;
  std::printf("| recipe | final loss | gap to fp32 | eval loss | eval gap | skipped | saturated | restarts | updates |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|\n");
  bool ok = true;
  for (std::size_t k = 0; k < runs.size(); ++k) {
    const auto& r = runs[k];
    const double f = final_loss(r.loss);
    const std::string gap = k == 0 ? "-" : num(100.0 * (f / f0 - 1.0), 3) + " %";
    const std::string egap = k == 0 ? "-" : num(100.0 * (r.eval / e0 - 1.0), 3) + " %";
    std::printf("| %s | %.5f | %s | %.5f | %s | %zu | %zu | %zu | %zu |\n", std::string(label(all_recipes[k])).c_str(), f,
                gap.c_str(), r.eval, egap.c_str(), r.skipped, r.overflow, r.restarts, r.updates);
    ok = ok && std::isfinite(f) && r.skipped >= 1;
  }
  if (!quiet) {
    std::printf("\nfinal loss = mean training loss over the last 10 %% of steps; eval loss = 1024 held-out samples,\n"
                "fp32 forward with the trained master weights; saturated = finite GEMM-input elements beyond the\n"
                "format's range at the step's scale (per-tensor recipes); restarts include each state's first step.\n");
    double secs = 0;
    for (const auto& r : runs) secs += r.seconds;
    std::printf("time: %.2f s for %zu recipes\n", secs, runs.size());
  }

  mf::output_batch outputs;  // both files or neither; the folder only if they are written
  outputs.create_directories(out_dir);
  outputs.stage(out_dir / "curves.csv", csv(runs, spike, outlier));
  outputs.stage(out_dir / "curves.svg", svg(runs, spike, outlier));
  outputs.commit();
  if (!quiet) std::cout << "wrote " << (out_dir / "curves.csv").string() << " and " << (out_dir / "curves.svg").string() << "\n";
  if (!ok) {
    std::cerr << "training: a recipe did not finish with a finite loss, or the spike was not skipped\n";
    return 1;
  }
  return 0;
}

}  // namespace
#endif

int main(int argc, char** argv) {
#if MINIFLOAT_TRAINING_DATA_PARALLEL
  return data_parallel_main(argc, argv);
#else
  return minifloat_examples::guarded_main("training", [&] { return single_process_main(argc, argv); });
#endif
}
