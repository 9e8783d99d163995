#pragma once
// attention_forward: the fast prefill path. Quantizes Q, K, V with the recipe exactly as the
// reference does (reference.hpp), keeps K and V as their codes, and runs the tiled kernel
// (kernel.hpp, x86/amx.hpp) over (batch, KV head, block of up to 64 query rows), threaded.
// Deviation from attention_reference: docs/attention.md#error-bound (tested element-wise).
// Non-finite operands (a NaN code, an Inf in an fp32 operand, a NaN MX scale): the call returns
// attention_reference's result, so the defined behaviour is the reference's.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "../quant/quantized_tensor.hpp"
#include "../simd/fork_join.hpp"
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
  } else if (!q->scales().empty()) {
    v.scale = q->scales()[0];
  }
  return v;
}

/// True if any element (or MX scale) of the view is NaN or infinite.
inline bool has_nonfinite(const kv_view& x) {
  if (x.mx != nullptr) {
    const std::size_t gr = x.mx_axis == 1 ? x.rows : (x.rows + 31) / 32, gc = x.mx_axis == 1 ? (x.cols + 31) / 32 : x.cols;
    for (std::size_t r = 0; r < gr; ++r)
      for (std::size_t c = 0; c < gc; ++c)
        if (x.mx[r * x.mx_stride + c] == 0xFF) return true;
  }
  if (x.kind == element_kind::code8) {
    const auto& t = code_values(x.format);
    for (std::size_t r = 0; r < x.rows; ++r)
      for (std::size_t c = 0; c < x.cols; ++c)
        if (!std::isfinite(t[x.data[x.offset(r, c)]])) return true;
    return false;
  }
  for (std::size_t r = 0; r < x.rows; ++r)
    for (std::size_t c = 0; c < x.cols; ++c)
      if (!std::isfinite(x.value(r, c))) return true;
  return false;
}

/// Query values and the factor their codes need: tensor-scaled codes stay unscaled (exact in
/// bfloat16), everything else is Q^ itself.
struct query_values {
  std::vector<float> values;
  float factor = 1.0f;
};

inline query_values make_query_values(std::span<const float> q, std::size_t rows, std::size_t d, const operand_scheme& s) {
  query_values out;
  if (!s) {
    out.values.assign(q.begin(), q.end());
    return out;
  }
  const quantized_tensor qt = quantize(q, rows, d, *s);
  if (s->gran == granularity::tensor && s->format != format_id::float4_e2m1fn) {
    out.factor = qt.scales().empty() ? 1.0f : qt.scales()[0];
    out.values.resize(rows * d);
    visit_format(s->format, [&](auto t) {
      using E = typename decltype(t)::type;
      for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t c = 0; c < d; ++c)
          out.values[r * d + c] = static_cast<float>(E::from_bits(static_cast<typename E::storage_type>(qt.code(r, c))));
    });
    return out;
  }
  out.values = dequantize(qt);
  return out;
}

inline unsigned thread_count(unsigned t) {
  if (t == 0) t = std::max(1U, std::thread::hardware_concurrency());
  return t;
}

/// Runs the kernel for every block of one call: groups x (G * Tq rows in blocks of 64).
/// q: the query values (B, Hq, Tq, d); views[g] = {K, V} of group g = b * Hkv + hk.
inline void run_blocks(const attention_shape& s, std::span<const float> qv, const std::vector<std::pair<kv_view, kv_view>>& views,
                       float s_factor, float v_factor, const static_format& p, const attention_options& opt,
                       attention_result& res) {
  const std::size_t g = s.group(), tq = s.q_len, d = s.head_dim, dv = s.v_dim;
  const std::size_t rows_per_group = g * tq;
  const std::size_t blocks = (rows_per_group + max_block_rows - 1) / max_block_rows;
  const std::size_t tasks = views.size() * blocks;
  res.out.assign(s.out_size(), 0.0f);
  res.row_max.assign(s.rows(), -std::numeric_limits<float>::infinity());
  res.row_sum.assign(s.rows(), 0.0f);
  std::atomic<std::size_t> next{0};
  const unsigned nthreads = static_cast<unsigned>(std::min<std::size_t>(thread_count(opt.threads), std::max<std::size_t>(tasks, 1)));
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
        std::copy_n(qv.data() + row * d, d, qb.data() + r * d);
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

/// The fast forward (see the header comment); same arguments, checks and result as
/// attention_reference.
[[nodiscard]] inline attention_result attention_forward(std::span<const float> q, std::span<const float> k,
                                                        std::span<const float> v, const attention_shape& s,
                                                        const attention_recipe& r, const attention_options& opt = {}) {
  check_attention_call(s, q.size(), k.size(), v.size(), r);
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
  const auto qv = detail::make_query_values(q, s.rows(), d, r.q);
  for (const float x : qv.values) nonfinite = nonfinite || !std::isfinite(x);
  if (nonfinite) return attention_reference(q, k, v, s, r, opt);
  const float kscale = views.empty() ? 1.0f : views[0].first.scale, vscale = views.empty() ? 1.0f : views[0].second.scale;
  const float s_factor = static_cast<float>(softmax_scale_of(s, opt)) * qv.factor * kscale;
  const float v_factor = vscale * (r.p.format ? r.p.scale : 1.0f);
  attention_result res;
  detail::run_blocks(s, qv.values, views, s_factor, v_factor, r.p, opt, res);
  return res;
}

/// attention_reference or attention_forward.
[[nodiscard]] inline attention_result attention(std::span<const float> q, std::span<const float> k, std::span<const float> v,
                                                const attention_shape& s, const attention_recipe& r,
                                                const attention_options& opt = {}, attention_path path = attention_path::fast) {
  return path == attention_path::reference ? attention_reference(q, k, v, s, r, opt) : attention_forward(q, k, v, s, r, opt);
}

}  // namespace minifloat::attention
