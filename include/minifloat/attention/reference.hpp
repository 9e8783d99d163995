#pragma once
// The definition of quantized attention, in double precision (docs/attention.md#the-reference):
//
//   Q^, K^, V^ = dequantize(quantize(X, scheme)) (no scheme: X). Q and K are quantized as the
//   matrices (B*Hq*Tq, d) and (B*Hkv*Tk, d) (MX blocks run along d); V as one (Tk, dv) matrix per
//   (batch, head), so mxfp8_e4m3/axis=0 puts its blocks along T; a `tensor` granularity computes
//   one scale over the whole array (Q, K or V). With the Hadamard rotation (recipe.hpp) Q and K
//   are first multiplied along d by M (in double, rounded to float32), then quantized.
//   S = scale * Q^ K^T in double; m = max of S over the visible keys (NaN if any is NaN);
//   P~ = exp(S - m) on visible keys (masked keys are left out of every sum); l = sum P~;
//   P^ = P~, or p_scale * decode(encode_F(float32(P~ / p_scale))) (F's default rounding, saturating);
//   out = (P^ V^) / l, rounded once to float32; a query with no visible key gives 0 (m = -inf, l = 0).
//
// Backward (the gradient of that forward with the quantizers passed straight through):
//   dO^ = dequantize(quantize(dO)) as the matrix (B*Hq*Tq, dv); O the forward output (double);
//   dV = sum_i (P^_ij / l_i) dO^_i;  dP_ij = dO^_i . V^_j;  D_i = dO^_i . O_i;
//   dS_ij = (P~_ij / l_i) (dP_ij - D_i);  dS^ = d_s_scale * decode(encode(dS / d_s_scale));
//   dQ_i = scale sum_j dS^_ij K^_j;  dK_j = scale sum_i dS^_ij Q^_i (summed over the query heads of
//   the group). Every sum in double, each gradient rounded once to float32.
//
// Non-finite values follow IEEE arithmetic in double: the saturating quantizers turn +-Inf into
// +-max and keep NaN; a NaN (or an Inf - Inf) in a query's visible scores makes its whole output
// row NaN; a NaN in V^_jc makes out_ic NaN for every query that sees key j.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <span>
#include <vector>

#include "entry_points.hpp"
#include "../quant/quantized_tensor.hpp"
#include "recipe.hpp"

namespace minifloat::attention {

/// Q^, K^, V^ (and dO^) as the reference defines them, same shapes as the inputs.
struct dequantized_operands {
  std::vector<float> q, k, v;
};

namespace detail {

/// X (groups x rows x cols) quantized as one (groups*rows, cols) matrix.
inline std::vector<float> fake_quantize_rows(std::span<const float> x, std::size_t rows, std::size_t cols,
                                             const operand_scheme& s) {
  if (!s) return {x.begin(), x.end()};
  return fake_quantize(x, rows, cols, *s);
}

/// V-like operands: one scale over the whole array for `tensor`, else one (rows, cols) matrix per group.
inline std::vector<float> fake_quantize_groups(std::span<const float> x, std::size_t groups, std::size_t rows,
                                               std::size_t cols, const operand_scheme& s) {
  if (!s) return {x.begin(), x.end()};
  if (s->gran == granularity::tensor) return fake_quantize(x, groups * rows, cols, *s);
  std::vector<float> out(x.size());
  const std::size_t n = rows * cols;
  for (std::size_t g = 0; g < groups; ++g) {
    const auto part = fake_quantize(x.subspan(g * n, n), rows, cols, *s);
    std::copy(part.begin(), part.end(), out.begin() + static_cast<std::ptrdiff_t>(g * n));
  }
  return out;
}

/// NaN-propagating max.
inline double nan_max(double a, double b) noexcept { return (std::isnan(a) || a > b) ? a : (std::isnan(b) ? b : std::max(a, b)); }

/// The forward in double on given (already dequantized) operands of type T (float, or double
/// for finite differences). out: rows x dv, m and l: rows.
template <class T>
void forward_double(const T* q, const T* k, const T* v, const attention_shape& s, const static_format& p, double scale,
                    mask_kind mask, std::vector<double>& out, std::vector<double>& m_out, std::vector<double>& l_out) {
  const std::size_t d = s.head_dim, dv = s.v_dim, tq = s.q_len, tk = s.kv_len, g = s.group();
  out.assign(s.rows() * dv, 0.0);
  m_out.assign(s.rows(), -std::numeric_limits<double>::infinity());
  l_out.assign(s.rows(), 0.0);
  std::vector<double> sc(tk), pt(tk);
  for (std::size_t b = 0; b < s.batch; ++b)
    for (std::size_t h = 0; h < s.q_heads; ++h) {
      const std::size_t hk = h / g;
      const T* kh = k + (b * s.kv_heads + hk) * tk * d;
      const T* vh = v + (b * s.kv_heads + hk) * tk * dv;
      for (std::size_t i = 0; i < tq; ++i) {
        const std::size_t row = (b * s.q_heads + h) * tq + i;
        const T* qi = q + row * d;
        const std::size_t n = visible_keys(i, tq, tk, mask);
        if (n == 0) continue;
        double m = -std::numeric_limits<double>::infinity();
        for (std::size_t j = 0; j < n; ++j) {
          double acc = 0;
          for (std::size_t c = 0; c < d; ++c) acc += static_cast<double>(qi[c]) * static_cast<double>(kh[j * d + c]);
          sc[j] = scale * acc;
          m = nan_max(m, sc[j]);
        }
        double l = 0;
        for (std::size_t j = 0; j < n; ++j) {
          const double e = std::exp(sc[j] - m);
          l += e;
          pt[j] = round_static(e, p);
        }
        double* o = out.data() + row * dv;
        for (std::size_t j = 0; j < n; ++j)
          for (std::size_t c = 0; c < dv; ++c) o[c] += pt[j] * static_cast<double>(vh[j * dv + c]);
        for (std::size_t c = 0; c < dv; ++c) o[c] /= l;
        m_out[row] = m, l_out[row] = l;
      }
    }
}

template <class T>
struct double_grads {
  std::vector<double> dq, dk, dv;
  double ds_amax = 0;
};

/// The backward in double on dequantized operands (dout already dequantized).
template <class T>
double_grads<T> backward_double(const T* q, const T* k, const T* v, const T* dout, const attention_shape& s,
                                const static_format& p, const static_format& ds_fmt, double scale, mask_kind mask) {
  std::vector<double> o, m, l;
  forward_double(q, k, v, s, p, scale, mask, o, m, l);
  const std::size_t d = s.head_dim, dv = s.v_dim, tq = s.q_len, tk = s.kv_len, g = s.group();
  double_grads<T> r;
  r.dq.assign(s.q_size(), 0.0), r.dk.assign(s.k_size(), 0.0), r.dv.assign(s.v_size(), 0.0);
  std::vector<double> sc(tk);
  for (std::size_t b = 0; b < s.batch; ++b)
    for (std::size_t h = 0; h < s.q_heads; ++h) {
      const std::size_t hk = h / g, kbase = (b * s.kv_heads + hk) * tk;
      const T* kh = k + kbase * d;
      const T* vh = v + kbase * dv;
      for (std::size_t i = 0; i < tq; ++i) {
        const std::size_t row = (b * s.q_heads + h) * tq + i;
        const std::size_t n = visible_keys(i, tq, tk, mask);
        if (n == 0) continue;
        const T* qi = q + row * d;
        const T* doi = dout + row * dv;
        const double* oi = o.data() + row * dv;
        double dd = 0;
        for (std::size_t c = 0; c < dv; ++c) dd += static_cast<double>(doi[c]) * oi[c];
        for (std::size_t j = 0; j < n; ++j) {
          double acc = 0;
          for (std::size_t c = 0; c < d; ++c) acc += static_cast<double>(qi[c]) * static_cast<double>(kh[j * d + c]);
          const double e = std::exp(scale * acc - m[row]);
          const double pn = e / l[row], ph = round_static(e, p) / l[row];
          double dp = 0;
          for (std::size_t c = 0; c < dv; ++c) {
            dp += static_cast<double>(doi[c]) * static_cast<double>(vh[j * dv + c]);
            r.dv[(kbase + j) * dv + c] += ph * static_cast<double>(doi[c]);
          }
          const double ds = pn * (dp - dd);
          if (std::isfinite(ds)) r.ds_amax = std::max(r.ds_amax, std::fabs(ds));
          const double dsq = round_static(ds, ds_fmt);
          for (std::size_t c = 0; c < d; ++c) {
            r.dq[row * d + c] += scale * dsq * static_cast<double>(kh[j * d + c]);
            r.dk[(kbase + j) * d + c] += scale * dsq * static_cast<double>(qi[c]);
          }
        }
      }
    }
  return r;
}

inline std::vector<float> to_float(const std::vector<double>& x) {
  std::vector<float> y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) y[i] = static_cast<float>(x[i]);
  return y;
}

}  // namespace detail

/// Q^, K^, V^ of the reference (see the header comment). Checks the call first.
[[nodiscard]] inline dequantized_operands dequantize_operands(std::span<const float> q, std::span<const float> k,
                                                              std::span<const float> v, const attention_shape& s,
                                                              const attention_recipe& r) {
  check_attention_call(s, q.size(), k.size(), v.size(), r);
  dequantized_operands o;
  if (r.rotation == qk_rotation::hadamard) {
    std::vector<float> qr(q.begin(), q.end()), kr(k.begin(), k.end());
    detail::rotate_rows(qr, s.head_dim, r.rotation_seed, false);
    detail::rotate_rows(kr, s.head_dim, r.rotation_seed, false);
    o.q = detail::fake_quantize_rows(qr, s.rows(), s.head_dim, r.q);
    o.k = detail::fake_quantize_rows(kr, s.batch * s.kv_heads * s.kv_len, s.head_dim, r.k);
  } else {
    o.q = detail::fake_quantize_rows(q, s.rows(), s.head_dim, r.q);
    o.k = detail::fake_quantize_rows(k, s.batch * s.kv_heads * s.kv_len, s.head_dim, r.k);
  }
  o.v = detail::fake_quantize_groups(v, s.batch * s.kv_heads, s.kv_len, s.v_dim, r.v);
  return o;
}

#if MINIFLOAT_DEFINE_KERNELS(MINIFLOAT_KERNELS_ATTENTION)  // declared and documented in entry_points.hpp
MINIFLOAT_KERNEL_API attention_result attention_reference(std::span<const float> q, std::span<const float> k,
                                                          std::span<const float> v, const attention_shape& s,
                                                          const attention_recipe& r, const attention_options& opt) {
  check_softmax_scale(opt);
  const auto op = dequantize_operands(q, k, v, s, r);
  std::vector<double> out, m, l;
  detail::forward_double(op.q.data(), op.k.data(), op.v.data(), s, r.p, softmax_scale_of(s, opt), opt.mask, out, m, l);
  return {detail::to_float(out), detail::to_float(m), detail::to_float(l)};
}
#endif

#if MINIFLOAT_DEFINE_KERNELS(MINIFLOAT_KERNELS_ATTENTION)  // declared and documented in entry_points.hpp
MINIFLOAT_KERNEL_API attention_grads attention_backward_reference(std::span<const float> q, std::span<const float> k,
                                                                  std::span<const float> v, std::span<const float> d_out,
                                                                  const attention_shape& s, const attention_recipe& r,
                                                                  const attention_options& opt) {
  const auto op = dequantize_operands(q, k, v, s, r);
  if (d_out.size() != s.out_size())
    throw shape_error("attention backward: dO has " + std::to_string(d_out.size()) + " values; expected (B, Hq, Tq, dv) = " +
                      detail::dims(s.batch, s.q_heads, s.q_len, s.v_dim) + " = " + std::to_string(s.out_size()));
  const auto dq = detail::fake_quantize_rows(d_out, s.rows(), s.v_dim, r.d_out);
  const auto g = detail::backward_double(op.q.data(), op.k.data(), op.v.data(), dq.data(), s, r.p, r.d_s,
                                         softmax_scale_of(s, opt), opt.mask);
  attention_grads out{detail::to_float(g.dq), detail::to_float(g.dk), detail::to_float(g.dv), static_cast<float>(g.ds_amax)};
  if (r.rotation == qk_rotation::hadamard) {  // gradients of the rotated Q, K back to Q, K: M^T
    detail::rotate_rows(out.dq, s.head_dim, r.rotation_seed, true);
    detail::rotate_rows(out.dk, s.head_dim, r.rotation_seed, true);
  }
  return out;
}
#endif

}  // namespace minifloat::attention
