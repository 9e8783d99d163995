#pragma once
// attention_forward: the fast prefill path. Quantizes Q, K, V with the recipe exactly as the
// reference does (reference.hpp), keeps K and V as their codes, and runs the tiled kernel
// (kernel.hpp, x86/amx.hpp) over (batch, KV head, block of up to 64 query rows), threaded.
// Deviation from attention_reference: docs/attention.md#error-bound (tested element-wise).
// Non-finite operands (a NaN code, an Inf in an fp32 operand, a NaN MX scale): the call returns
// attention_reference's result, so the defined behaviour is the reference's. The same holds when
// the operands are finite but the fp32 kernel overflowed (V near FLT_MAX, huge scores): a NaN or
// Inf in its output, row sums or row maxima sends the whole call to attention_reference, which
// computes in double (docs/attention.md#the-reference). A softmax scale that is
// not a finite float32 is refused (std::invalid_argument) on both paths.
#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "entry_points.hpp"
#include "../core/page_allocator.hpp"
#include "../quant/quantized_tensor.hpp"
#include "../core/threads.hpp"
#include "kernel.hpp"
#include "reference.hpp"
#include "block_kernels.hpp"

namespace minifloat::attention {

namespace detail {

inline bool is_code8(format_id f) noexcept {
  return f == format_id::hifloat8 || f == format_id::float8_e4m3fn || f == format_id::float8_e5m2;
}

/// Whether the fast path reads this K (mx_axis 1) or V (mx_axis 0) scheme; the message says why not.
inline void check_fast_operand(const operand_scheme& s, const char* operand, int mx_axis) {
  if (!s) return;
  const bool tensor16 = s->gran == granularity::tensor && s->format == format_id::bfloat16;
  const bool tensor8 = s->gran == granularity::tensor && is_code8(s->format);
  const bool mx8 = s->gran == granularity::mx && (s->format == format_id::float8_e4m3fn || s->format == format_id::float8_e5m2);
  if (mx8 && s->axis != mx_axis)
    throw unsupported_error(std::string("attention fast path: ") + operand + " scheme " + scheme_name(*s) + " puts MX blocks along " +
                            (s->axis == 1 ? "d" : "T") + "; the " + (mx_axis == 1 ? "Q K^T" : "P V") +
                            " product needs them along " + (mx_axis == 1 ? "d (axis=1)" : "T (axis=0, e.g. mxfp8_e4m3/axis=0)"));
  if (!tensor16 && !tensor8 && !mx8)
    throw unsupported_error(std::string("attention fast path: ") + operand + " scheme " + scheme_name(*s) +
                            " is not supported; expected fp32, bf16, hifloat8/float8_e4m3fn/float8_e5m2 per tensor, or "
                            "mxfp8 (K along d, V along T); use the reference path");
}

/// A view of rows [r0, r0 + rows) of an operand: fp32 values, or a quantized tensor's codes.
inline kv_view make_view(std::span<const float> values, const quantized_tensor* q, std::size_t r0, std::size_t rows,
                         std::size_t cols) {
  kv_view v;
  v.rows = rows, v.cols = cols;
  if (q == nullptr) {
    v.kind = element_kind::f32;
    v.row_bytes = cols * 4;
    v.data = reinterpret_cast<const std::uint8_t*>(values.data() + r0 * cols);  // NOLINT: read as bytes
    return v;
  }
  const quant_scheme& s = q->scheme();
  v.format = s.format;
  v.kind = s.format == format_id::bfloat16 ? element_kind::bf16 : element_kind::code8;
  v.row_bytes = cols * (v.kind == element_kind::bf16 ? 2 : 1);
  v.data = q->codes().data() + r0 * v.row_bytes;
  if (s.gran == granularity::mx) {
    v.mx_axis = s.axis;
    v.mx_stride = s.axis == 1 ? (cols + 31) / 32 : cols;
    v.mx = q->mx_scales().data() + (s.axis == 1 ? r0 * v.mx_stride : (r0 / 32) * v.mx_stride);
    const std::size_t n = (s.axis == 1 ? rows : (rows + 31) / 32) * v.mx_stride;
    const auto [lo, hi] = std::minmax_element(v.mx, v.mx + n);
    v.mx_bf16_exact = n == 0 || mx_bf16_exact(s.format, *lo, *hi);
    v.mx_lo = n == 0 ? std::uint8_t{0} : *lo;
  } else if (!q->scales().empty()) {
    v.scale = q->scales()[0];
  }
  return v;
}

/// Whether each code of a format of at most 8 bits decodes to NaN or an infinity.
inline const std::array<bool, 256>& nonfinite_codes(format_id f) {
  static const auto tables = [] {
    std::array<std::array<bool, 256>, 16> t{};
    for (std::size_t i = 0; i < t.size(); ++i)
      for (std::size_t c = 0; c < 256; ++c) t[i][c] = !std::isfinite(code_values(static_cast<format_id>(i))[c]);
    return t;
  }();
  return tables[static_cast<std::size_t>(f)];
}

/// True if any of the n values is NaN or infinite (branch-free, so the loops vectorize).
inline bool has_nonfinite_code(const std::uint8_t* codes, std::size_t n, format_id f) {
  const auto& bad = nonfinite_codes(f);
  bool any = false;
  for (std::size_t i = 0; i < n; ++i) any |= bad[codes[i]];
  return any;
}
inline bool has_nonfinite_bf16(const std::uint8_t* words, std::size_t n) {
  unsigned any = 0;
  for (std::size_t i = 0; i < n; ++i) any |= static_cast<unsigned>((words[2 * i + 1] & 0x7FU) == 0x7FU && (words[2 * i] & 0x80U) != 0);
  return any != 0;
}
inline bool has_nonfinite_value(std::span<const float> x) {
  unsigned any = 0;
  for (const float v : x) any |= static_cast<unsigned>((std::bit_cast<std::uint32_t>(v) & 0x7F800000U) == 0x7F800000U);
  return any != 0;
}

/// True if the output, a row sum or a row max holds NaN or +-Inf (a row max of -Inf is a row
/// with no visible key, as in the reference).
inline bool has_nonfinite_result(const attention_result& r) {
  if (has_nonfinite_value(r.out) || has_nonfinite_value(r.row_sum)) return true;
  unsigned any = 0;
  for (const float m : r.row_max) any |= static_cast<unsigned>(std::isnan(m) || m == std::numeric_limits<float>::infinity());
  return any != 0;
}

/// True if any element (or MX scale) of the view is NaN or infinite.
inline bool has_nonfinite(const kv_view& x) {
  if (x.mx != nullptr) {
    const std::size_t gr = x.mx_axis == 1 ? x.rows : (x.rows + 31) / 32, gc = x.mx_axis == 1 ? (x.cols + 31) / 32 : x.cols;
    for (std::size_t r = 0; r < gr; ++r)
      for (std::size_t c = 0; c < gc; ++c)
        if (x.mx[r * x.mx_stride + c] == 0xFF) return true;
  }
  if (x.order == kv_order::rows) {  // row by row on the stored bits
    for (std::size_t r = 0; r < x.rows; ++r) {
      const std::uint8_t* row = x.data + r * x.row_bytes;
      if (x.kind == element_kind::code8 ? has_nonfinite_code(row, x.cols, x.format)
          : x.kind == element_kind::bf16 ? has_nonfinite_bf16(row, x.cols)
                                         : has_nonfinite_value({reinterpret_cast<const float*>(row), x.cols}))  // NOLINT: fp32 rows
        return true;
    }
    return false;
  }
  for (std::size_t r = 0; r < x.rows; ++r)
    for (std::size_t c = 0; c < x.cols; ++c)
      if (!std::isfinite(x.value(r, c))) return true;
  return false;
}

/// The query rows the blocks copy, in one of three forms: the fp32 input as it is; the codes of
/// Q quantized per tensor (bfloat16 or a format of at most 8 bits but FP4) or in MX blocks along
/// d, decoded a row at a time as a block copies it (per tensor unscaled: exact in bfloat16, the
/// scale goes to `factor`); or Q^ materialized (every other scheme). Q's codes take a quarter of
/// the fp32 values' memory, and a fresh 4-byte copy of a long Q cost more than the kernel.
class query_source {
 public:
  query_source(std::span<const float> q, std::size_t rows, std::size_t d, const operand_scheme& s) : d_(d) {
    if (!s) {
      values_ = q;
      return;
    }
    quantized_tensor qt = quantize(q, rows, d, *s);
    const bool narrow = s->format == format_id::bfloat16 || (format_bits(s->format) <= 8 && s->format != format_id::float4_e2m1fn);
    const bool tensor = s->gran == granularity::tensor, mx_rows = s->gran == granularity::mx && s->tile() == mx_tile::row32;
    if (narrow && (tensor || mx_rows)) {
      if (tensor && !qt.scales().empty()) factor_ = qt.scales()[0];
      codes_.emplace(std::move(qt));
      view_ = make_view({}, &*codes_, 0, rows, d);
      return;
    }
    if (tensor && s->format != format_id::float4_e2m1fn) {
      if (!qt.scales().empty()) factor_ = qt.scales()[0];
      owned_.resize(rows * d);
      visit_format(s->format, [&](auto t) {
        using E = typename decltype(t)::type;
        for (std::size_t r = 0; r < rows; ++r)
          for (std::size_t c = 0; c < d; ++c)
            owned_[r * d + c] = static_cast<float>(E::from_bits(static_cast<typename E::storage_type>(qt.code(r, c))));
      });
    } else {
      owned_ = dequantize(qt);
    }
    values_ = owned_;
  }
  query_source(const query_source&) = delete;
  query_source& operator=(const query_source&) = delete;

  /// The factor the rows' values need (the tensor scale of unscaled codes, else 1).
  [[nodiscard]] float factor() const noexcept { return factor_; }
  /// Row r's d values to out (codes: kv_view::value's products, so Q^ / factor exactly).
  void row(std::size_t r, float* out) const {
    if (!codes_) {
      std::copy_n(values_.data() + r * d_, d_, out);
    } else if (view_.kind == element_kind::code8) {
      const auto& t = code_values(view_.format);
      const std::uint8_t* c = view_.data + r * view_.row_bytes;
      if (view_.mx == nullptr)
        for (std::size_t i = 0; i < d_; ++i) out[i] = t[c[i]];
      else
        for (std::size_t i = 0; i < d_; ++i) out[i] = t[c[i]] * mx_scale_value(view_.mx_code(r, i));
    } else {  // bfloat16 words, little-endian
      const std::uint8_t* w = view_.data + r * view_.row_bytes;
      for (std::size_t i = 0; i < d_; ++i)
        out[i] = std::bit_cast<float>((static_cast<std::uint32_t>(w[2 * i + 1]) << 24) | (static_cast<std::uint32_t>(w[2 * i]) << 16));
    }
  }
  [[nodiscard]] bool has_nonfinite() const {
    return codes_ ? detail::has_nonfinite(view_) : has_nonfinite_value(values_);
  }

 private:
  std::size_t d_ = 0;
  float factor_ = 1.0f;
  std::span<const float> values_;
  std::optional<quantized_tensor> codes_;
  kv_view view_;
  std::vector<float> owned_;
};

/// Runs the kernel for every block of one call: groups x (G * Tq rows in blocks of 64).
/// q: the query rows (B, Hq, Tq, d); views[g] = {K, V} of group g = b * Hkv + hk.
inline void run_blocks(const attention_shape& s, const query_source& qv, const std::vector<std::pair<kv_view, kv_view>>& views,
                       float s_factor, float v_factor, const static_format& p, const attention_options& opt,
                       attention_result& res) {
  const std::size_t g = s.group(), tq = s.q_len, d = s.head_dim, dv = s.v_dim;
  const std::size_t rows_per_group = g * tq;
  const std::size_t blocks = (rows_per_group + max_block_rows - 1) / max_block_rows;
  const std::size_t tasks = views.size() * blocks;
  assign_on_huge_pages(res.out, s.out_size(), 0.0f);  // (B, Hq, Tq, dv): first written here
  res.row_max.assign(s.rows(), -std::numeric_limits<float>::infinity());
  res.row_sum.assign(s.rows(), 0.0f);
  std::atomic<std::size_t> next{0};
  const unsigned nthreads = static_cast<unsigned>(std::min<std::size_t>(minifloat::thread_count(opt.threads), std::max<std::size_t>(tasks, 1)));
  minifloat::detail::fork_join(nthreads, [&](std::size_t) {
    std::vector<float> qb(max_block_rows * d), ob(max_block_rows * dv), mb(max_block_rows), lb(max_block_rows);
    std::size_t lim[max_block_rows], row_of[max_block_rows];
    for (;;) {
      const std::size_t t = next.fetch_add(1);
      if (t >= tasks) break;
      // later blocks (more visible keys under a causal mask) first
      const std::size_t grp = t / blocks, blk = blocks - 1 - t % blocks;
      const std::size_t b = grp / s.kv_heads, hk = grp % s.kv_heads;
      const std::size_t r0 = blk * max_block_rows, n = std::min(max_block_rows, rows_per_group - r0);
      for (std::size_t r = 0; r < n; ++r) {
        const std::size_t i = (r0 + r) / g, h = hk * g + (r0 + r) % g;  // query position outer, head inner
        const std::size_t row = (b * s.q_heads + h) * tq + i;
        row_of[r] = row;
        lim[r] = visible_keys(i, tq, s.kv_len, opt.mask);
        qv.row(row, qb.data() + r * d);
      }
      block_args a;
      a.k = views[grp].first, a.v = views[grp].second;
      a.rows = n, a.q = qb.data(), a.q_stride = d, a.limit = lim;
      a.s_factor = s_factor, a.v_factor = v_factor, a.p = p;
      a.out = ob.data(), a.out_stride = dv, a.m = mb.data(), a.l = lb.data();
      run_block(a, opt.isa, opt.kernel);
      for (std::size_t r = 0; r < n; ++r) {
        std::copy_n(ob.data() + r * dv, dv, res.out.data() + row_of[r] * dv);
        res.row_max[row_of[r]] = mb[r], res.row_sum[row_of[r]] = lb[r];
      }
    }
  });
}

}  // namespace detail

#if MINIFLOAT_DEFINE_KERNELS(MINIFLOAT_KERNELS_ATTENTION)  // declared and documented in entry_points.hpp
MINIFLOAT_KERNEL_API attention_result attention_forward(std::span<const float> q, std::span<const float> k,
                                                        std::span<const float> v, const attention_shape& s,
                                                        const attention_recipe& r, const attention_options& opt) {
  check_attention_call(s, q.size(), k.size(), v.size(), r);
  check_softmax_scale(opt);
  detail::check_fast_operand(r.k, "K", 1);
  detail::check_fast_operand(r.v, "V", 0);
  if (simd::detail::resolve(opt.isa) == simd::isa::automatic)
    throw unsupported_error("attention: isa " + std::string(simd::to_string(opt.isa)) + " is not available on this CPU");
  if (r.rotation == qk_rotation::hadamard) {  // rotate, then run the plain recipe on the rotated Q, K
    std::vector<float> qr(q.begin(), q.end()), kr(k.begin(), k.end());
    detail::rotate_rows(qr, s.head_dim, r.rotation_seed, false);
    detail::rotate_rows(kr, s.head_dim, r.rotation_seed, false);
    attention_recipe plain = r;
    plain.rotation = qk_rotation::none;
    return attention_forward(qr, kr, v, s, plain, opt);
  }
  const std::size_t groups = s.batch * s.kv_heads, tk = s.kv_len, d = s.head_dim, dv = s.v_dim;
  // K as one (B*Hkv*Tk, d) matrix; V one tensor or one (Tk, dv) matrix per group (reference.hpp).
  std::optional<quantized_tensor> kq;
  if (r.k) kq = quantize(k, groups * tk, d, *r.k);
  std::vector<quantized_tensor> vq;
  const bool v_whole = r.v && r.v->gran == granularity::tensor;
  if (v_whole) vq.push_back(quantize(v, groups * tk, dv, *r.v));
  else if (r.v)
    for (std::size_t gi = 0; gi < groups; ++gi) vq.push_back(quantize(v.subspan(gi * tk * dv, tk * dv), tk, dv, *r.v));
  std::vector<std::pair<kv_view, kv_view>> views(groups);
  bool nonfinite = false;
  for (std::size_t gi = 0; gi < groups; ++gi) {
    views[gi].first = detail::make_view(k, kq ? &*kq : nullptr, gi * tk, tk, d);
    views[gi].second = v_whole ? detail::make_view(v, &vq[0], gi * tk, tk, dv)
                               : detail::make_view(v.subspan(gi * tk * dv, tk * dv), r.v ? &vq[gi] : nullptr, 0, tk, dv);
    nonfinite = nonfinite || detail::has_nonfinite(views[gi].first) || detail::has_nonfinite(views[gi].second);
  }
  const detail::query_source qv(q, s.rows(), d, r.q);
  if (nonfinite || qv.has_nonfinite()) return attention_reference(q, k, v, s, r, opt);
  const float kscale = views.empty() ? 1.0f : views[0].first.scale, vscale = views.empty() ? 1.0f : views[0].second.scale;
  const float s_factor = static_cast<float>(softmax_scale_of(s, opt)) * qv.factor() * kscale;
  const float v_factor = vscale * (r.p.format ? r.p.scale : 1.0f);
  attention_result res;
  detail::run_blocks(s, qv, views, s_factor, v_factor, r.p, opt, res);
  // Finite operands, yet fp32 overflowed somewhere (a score, or P V with V near FLT_MAX, where the
  // reference's double stays finite): the whole call is recomputed by the reference, so finite
  // in never gives a silent Inf or NaN out. One pass over the output, outside the kernels.
  if (detail::has_nonfinite_result(res)) return attention_reference(q, k, v, s, r, opt);
  return res;
}
#endif

#if MINIFLOAT_DEFINE_KERNELS(MINIFLOAT_KERNELS_ATTENTION)  // declared and documented in entry_points.hpp
MINIFLOAT_KERNEL_API attention_result attention(std::span<const float> q, std::span<const float> k, std::span<const float> v,
                                                const attention_shape& s, const attention_recipe& r,
                                                const attention_options& opt, attention_path path) {
  return path == attention_path::reference ? attention_reference(q, k, v, s, r, opt) : attention_forward(q, k, v, s, r, opt);
}
#endif

}  // namespace minifloat::attention
