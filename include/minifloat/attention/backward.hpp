#pragma once
// attention_backward: dQ, dK, dV of the quantized forward (reference.hpp has the definition, with
// the quantizers passed straight through), in fp32, threaded over (batch, KV head): each task owns
// the dK, dV rows of its KV head and the dQ rows of its query heads, so no two tasks write the
// same gradient. It reads the forward's output and its saved row max m and row sum l (the
// forward's attention_result) and recomputes P = exp(S - m) / l; P^ and dS^ are quantized with
// their static scales exactly as the reference does, from the final m (the forward's online
// softmax quantizes P against the running max: docs/attention.md#backward).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <span>
#include <vector>

#include "entry_points.hpp"
#include "../core/threads.hpp"
#include "forward.hpp"
#include "reference.hpp"

namespace minifloat::attention {

namespace detail {

/// x^ = scale * decode(encode(float32(x / scale))) in float.
inline float round_static_f(float x, const static_format& f) {
  if (!f.format) return x;
  return f.scale * round_to_format(x / f.scale, *f.format);
}

}  // namespace detail

#if MINIFLOAT_DEFINE_KERNELS(MINIFLOAT_KERNELS_ATTENTION)  // declared and documented in entry_points.hpp
MINIFLOAT_KERNEL_API attention_grads attention_backward(std::span<const float> q, std::span<const float> k,
                                                        std::span<const float> v, std::span<const float> d_out,
                                                        const attention_result& fwd, const attention_shape& s,
                                                        const attention_recipe& r, const attention_options& opt) {
  const auto op = dequantize_operands(q, k, v, s, r);
  if (d_out.size() != s.out_size())
    throw shape_error("attention backward: dO has " + std::to_string(d_out.size()) + " values; expected (B, Hq, Tq, dv) = " +
                      detail::dims(s.batch, s.q_heads, s.q_len, s.v_dim) + " = " + std::to_string(s.out_size()));
  if (fwd.out.size() != s.out_size() || fwd.row_max.size() != s.rows() || fwd.row_sum.size() != s.rows())
    throw shape_error("attention backward: the forward result has " + std::to_string(fwd.out.size()) + " outputs and " +
                      std::to_string(fwd.row_max.size()) + " row statistics; expected " + std::to_string(s.out_size()) +
                      " and " + std::to_string(s.rows()) + " (B * Hq * Tq)");
  const auto dov = detail::fake_quantize_rows(d_out, s.rows(), s.v_dim, r.d_out);
  const std::size_t d = s.head_dim, dv = s.v_dim, tq = s.q_len, tk = s.kv_len, g = s.group();
  const float scale = static_cast<float>(softmax_scale_of(s, opt));
  attention_grads res;
  res.dq.assign(s.q_size(), 0.0f), res.dk.assign(s.k_size(), 0.0f), res.dv.assign(s.v_size(), 0.0f);
  const std::size_t tasks = s.batch * s.kv_heads;
  std::vector<float> amax(tasks, 0.0f);
  std::atomic<std::size_t> next{0};
  const unsigned nthreads = static_cast<unsigned>(std::min<std::size_t>(minifloat::thread_count(opt.threads), std::max<std::size_t>(tasks, 1)));
  minifloat::detail::fork_join(nthreads, [&](std::size_t) {
    for (;;) {
      const std::size_t t = next.fetch_add(1);
      if (t >= tasks) break;
      const std::size_t b = t / s.kv_heads, hk = t % s.kv_heads, kbase = (b * s.kv_heads + hk) * tk;
      const float* kh = op.k.data() + kbase * d;
      const float* vh = op.v.data() + kbase * dv;
      float* dk = res.dk.data() + kbase * d;
      float* dvv = res.dv.data() + kbase * dv;
      for (std::size_t h = hk * g; h < (hk + 1) * g; ++h)
        for (std::size_t i = 0; i < tq; ++i) {
          const std::size_t row = (b * s.q_heads + h) * tq + i;
          const std::size_t n = visible_keys(i, tq, tk, opt.mask);
          const float l = fwd.row_sum[row], m = fwd.row_max[row];
          if (n == 0 || !(l > 0.0f)) continue;
          const float* qi = op.q.data() + row * d;
          const float* doi = dov.data() + row * dv;
          const float* oi = fwd.out.data() + row * dv;
          float* dqi = res.dq.data() + row * d;
          float dd = 0.0f;
          for (std::size_t c = 0; c < dv; ++c) dd = std::fma(doi[c], oi[c], dd);
          for (std::size_t j = 0; j < n; ++j) {
            const float* kj = kh + j * d;
            const float* vj = vh + j * dv;
            float sc = 0.0f, dp = 0.0f;
            for (std::size_t c = 0; c < d; ++c) sc = std::fma(qi[c], kj[c], sc);
            for (std::size_t c = 0; c < dv; ++c) dp = std::fma(doi[c], vj[c], dp);
            const float e = std::exp(scale * sc - m);
            const float pn = e / l, ph = detail::round_static_f(e, r.p) / l;
            const float ds = pn * (dp - dd);
            if (std::isfinite(ds)) amax[t] = std::max(amax[t], std::fabs(ds));
            const float w = scale * detail::round_static_f(ds, r.d_s);
            for (std::size_t c = 0; c < d; ++c) dqi[c] = std::fma(w, kj[c], dqi[c]);
            for (std::size_t c = 0; c < d; ++c) dk[j * d + c] = std::fma(w, qi[c], dk[j * d + c]);
            for (std::size_t c = 0; c < dv; ++c) dvv[j * dv + c] = std::fma(ph, doi[c], dvv[j * dv + c]);
          }
        }
    }
  });
  for (const float a : amax) res.ds_amax = std::max(res.ds_amax, a);
  if (r.rotation == qk_rotation::hadamard) {  // back from the rotated Q, K: M^T
    detail::rotate_rows(res.dq, d, r.rotation_seed, true);
    detail::rotate_rows(res.dk, d, r.rotation_seed, true);
  }
  return res;
}
#endif

}  // namespace minifloat::attention
