#pragma once
// Causal multi-head self-attention: qkv = X Wqkv^T, per head O = softmax(Q K^T / sqrt(dh)) V,
// Y = O Wo^T.
//
// Forward: minifloat::attention::attention_forward, the library's tiled kernel, on the recipe's
// Q, K, V schemes and P format (quant_slot::attention_view: per-tensor scales, including the
// delayed ones, are passed as prescaled values with a scale-1 cast, which gives the kernel
// exactly the codes of quantize_with_scales). It returns O and each row's max m and sum l.
//
// Backward: the FlashAttention recomputation, as products of the library's GEMM on 8-bit
// operands (one group per head, matmul.hpp) and fp32 softmax algebra:
//   S  = Q^ K^T                    A = Q, B = K stored (T, dh) = (N, K)        recomputed
//   P  = exp(scale S - m) / l      causal (P = 0 above the diagonal), fp32
//   dV = P^T dO                    A = P^T (per head), B = dO stored (T, dh) = (K, N)
//   dP = dO V^T                    A = dO, B = V stored (T, dh) = (N, K)
//   D  = rowsum(P o dP);  dS = P o (dP - D)                                     fp32
//   dQ = scale dS K                A = dS, B = K stored (T, dh) = (K, N)
//   dK = scale dS^T Q              A = dS^T (per head), B = Q stored (T, dh) = (K, N)
// Every product's operands come from the slots Q, K, V, P, dO, dS (per layer), so the recipe
// (delayed or current per-tensor scaling, MX blocks along each product's reduction axis) applies
// to each of them; P's scale is fixed by its known amax 1 (recipe.hpp). This is the algebra of
// minifloat::attention::attention_backward (its fp32 reference loops are too slow to train with:
// about 0.2 s per layer and step here); `lm_training --check-attention` compares the two.
//
// fp64 (the gradient check): the same backward; the forward is the plain softmax in double.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <type_traits>
#include <vector>

#include <minifloat/attention/attention.hpp>

#include "layers.hpp"

namespace lm {

template <class T>
struct attention_core {
  std::size_t batch = 0, heads = 0, t = 0, dh = 0;
  quant_slot<T> qs, ks, vs, ps, dos, dss;
  tensor<T> q, k, v, out;   // (B*H*T, dh), head-major
  std::vector<T> m, l;      // (B*H*T)
  tensor<T> p, ds;          // backward scratch (B*H*T, T)
  std::vector<float> scratch_q, scratch_k, scratch_v;

  attention_core() = default;
  attention_core(std::size_t num_heads, std::size_t head_dim, const recipe& rc, unsigned threads)
      : heads(num_heads), dh(head_dim), qs(training_spec(rc, tensor_kind::q), threads),
        ks(training_spec(rc, tensor_kind::k), threads), vs(training_spec(rc, tensor_kind::v), threads),
        ps(training_spec(rc, tensor_kind::p), threads), dos(training_spec(rc, tensor_kind::d_out), threads),
        dss(training_spec(rc, tensor_kind::d_s), threads) {}

  [[nodiscard]] std::size_t groups() const noexcept { return batch * heads; }
  [[nodiscard]] double softmax_scale() const { return 1.0 / std::sqrt(static_cast<double>(dh)); }

  /// q, k, v (B*H*T, dh) are set; computes out, m, l.
  void forward(std::size_t b, std::size_t seq, unsigned threads) {
    batch = b, t = seq;
    const std::size_t rows = groups() * t;
    qs.begin(q.data(), rows, dh), ks.begin(k.data(), rows, dh), vs.begin(v.data(), rows, dh);
    if constexpr (std::is_same_v<T, float>) {
      namespace at = mf::attention;
      const auto qi = qs.attention_view(1, scratch_q), ki = ks.attention_view(1, scratch_k);
      const auto vi = vs.attention_view(0, scratch_v);
      at::attention_recipe r;
      r.q = qi.scheme, r.k = ki.scheme, r.v = vi.scheme, r.p = ps.p_format();
      const at::attention_shape s{.batch = batch, .q_heads = heads, .kv_heads = heads, .q_len = t, .kv_len = t,
                                  .head_dim = dh, .v_dim = dh};
      at::attention_options o;
      o.mask = at::mask_kind::causal, o.threads = threads;
      o.softmax_scale = softmax_scale() * static_cast<double>(qi.factor) * static_cast<double>(ki.factor);
      at::attention_result res = at::attention_forward(qi.values, ki.values, vi.values, s, r, o);
      out.rows = rows, out.cols = dh;
      out.v = std::move(res.out);
      if (vi.factor != 1.0f)
        for (float& x : out.v) x *= vi.factor;
      m = std::move(res.row_max), l = std::move(res.row_sum);
    } else {
      reference_forward();
    }
  }

  /// d_out (B*H*T, dh) -> dq, dk, dv (same shape).
  void backward(const tensor<T>& d_out, tensor<T>& dq, tensor<T>& dk, tensor<T>& dv, unsigned threads) {
    const std::size_t g = groups(), rows = g * t;
    const T scale = static_cast<T>(softmax_scale());
    p.resize(rows, t);
    matmul<T>(qs.a(), ks.b_nk(), mf::gemm_layout::nk, p.span(), threads, g);  // S
    parallel_rows(rows, threads, [&](std::size_t r0, std::size_t r1) {
      for (std::size_t r = r0; r < r1; ++r) {
        const std::size_t i = r % t;
        T* pr = p.row(r);
        const T mr = m[r], inv = T(1) / l[r];
        for (std::size_t j = 0; j <= i; ++j) pr[j] = std::exp(scale * pr[j] - mr) * inv;
        for (std::size_t j = i + 1; j < t; ++j) pr[j] = T(0);
      }
    });
    ps.begin(p.data(), rows, t);
    dos.begin(d_out.data(), rows, dh);
    dv.resize(rows, dh);
    matmul<T>(ps.a_t(g), dos.b_kn(), mf::gemm_layout::kn, dv.span(), threads, g);
    ds.resize(rows, t);
    matmul<T>(dos.a(), vs.b_nk(), mf::gemm_layout::nk, ds.span(), threads, g);  // dP
    parallel_rows(rows, threads, [&](std::size_t r0, std::size_t r1) {
      for (std::size_t r = r0; r < r1; ++r) {
        const std::size_t i = r % t;
        const T* pr = p.row(r);
        T* d = ds.row(r);
        T dd = 0;
        for (std::size_t j = 0; j <= i; ++j) dd += pr[j] * d[j];
        for (std::size_t j = 0; j <= i; ++j) d[j] = pr[j] * (d[j] - dd);
        for (std::size_t j = i + 1; j < t; ++j) d[j] = T(0);
      }
    });
    dss.begin(ds.data(), rows, t);
    dq.resize(rows, dh), dk.resize(rows, dh);
    matmul<T>(dss.a(), ks.b_kn(), mf::gemm_layout::kn, dq.span(), threads, g);
    matmul<T>(dss.a_t(g), qs.b_kn(), mf::gemm_layout::kn, dk.span(), threads, g);
    for (T& x : dq.v) x *= scale;
    for (T& x : dk.v) x *= scale;
  }

  template <class F>
  void for_each_slot(F&& f) {
    f(qs), f(ks), f(vs), f(ps), f(dos), f(dss);
  }

 private:
  /// The definition in T (the double model of the gradient check).
  void reference_forward() {
    const std::size_t rows = groups() * t;
    out.resize(rows, dh);
    m.assign(rows, T(0)), l.assign(rows, T(0));
    const T scale = static_cast<T>(softmax_scale());
    std::vector<T> s(t);
    for (std::size_t gi = 0; gi < groups(); ++gi)
      for (std::size_t i = 0; i < t; ++i) {
        const std::size_t r = gi * t + i;
        T mx = -std::numeric_limits<T>::infinity();
        for (std::size_t j = 0; j <= i; ++j) {
          T acc = 0;
          for (std::size_t c = 0; c < dh; ++c) acc += q.row(r)[c] * k.row(gi * t + j)[c];
          s[j] = scale * acc;
          mx = std::max(mx, s[j]);
        }
        T sum = 0;
        for (std::size_t j = 0; j <= i; ++j) sum += (s[j] = std::exp(s[j] - mx));
        for (std::size_t c = 0; c < dh; ++c) {
          T acc = 0;
          for (std::size_t j = 0; j <= i; ++j) acc += s[j] * v.row(gi * t + j)[c];
          out.row(r)[c] = acc / sum;
        }
        m[r] = mx, l[r] = sum;
      }
  }
};

/// The attention sublayer: Wqkv (3d, d), the core, Wo (d, d).
template <class T>
struct self_attention {
  std::size_t d = 0, heads = 0, dh = 0;
  linear<T> qkv, proj;
  attention_core<T> core;
  tensor<T> y_qkv, merged, d_merged, dq, dk, dv, d_qkv, d_out;

  self_attention() = default;
  self_attention(const std::string& name, std::size_t dim, std::size_t num_heads, double init_std, double proj_std,
                 rng& r, const recipe& rc, unsigned threads)
      : d(dim), heads(num_heads), dh(dim / num_heads), qkv(name + ".qkv", dim, 3 * dim, init_std, r, rc, threads),
        proj(name + ".proj", dim, dim, proj_std, r, rc, threads), core(num_heads, dim / num_heads, rc, threads) {}

  void forward(const tensor<T>& x, std::size_t b, std::size_t t, tensor<T>& y, unsigned threads) {
    qkv.forward(x, y_qkv, threads);
    const std::size_t rows = b * heads * t;
    core.q.resize(rows, dh), core.k.resize(rows, dh), core.v.resize(rows, dh);
    for (std::size_t bi = 0; bi < b; ++bi)
      for (std::size_t ti = 0; ti < t; ++ti) {
        const T* src = y_qkv.row(bi * t + ti);
        for (std::size_t h = 0; h < heads; ++h) {
          const std::size_t r = (bi * heads + h) * t + ti;
          std::copy_n(src + h * dh, dh, core.q.row(r));
          std::copy_n(src + d + h * dh, dh, core.k.row(r));
          std::copy_n(src + 2 * d + h * dh, dh, core.v.row(r));
        }
      }
    core.forward(b, t, threads);
    merged.resize(b * t, d);
    for (std::size_t bi = 0; bi < b; ++bi)
      for (std::size_t h = 0; h < heads; ++h)
        for (std::size_t ti = 0; ti < t; ++ti)
          std::copy_n(core.out.row((bi * heads + h) * t + ti), dh, merged.row(bi * t + ti) + h * dh);
    proj.forward(merged, y, threads);
  }

  void backward(const tensor<T>& dy, tensor<T>& dx, unsigned threads) {
    const std::size_t b = core.batch, t = core.t;
    proj.backward(dy, &d_merged, threads);
    d_out.resize(b * heads * t, dh);
    for (std::size_t bi = 0; bi < b; ++bi)
      for (std::size_t h = 0; h < heads; ++h)
        for (std::size_t ti = 0; ti < t; ++ti)
          std::copy_n(d_merged.row(bi * t + ti) + h * dh, dh, d_out.row((bi * heads + h) * t + ti));
    core.backward(d_out, dq, dk, dv, threads);
    d_qkv.resize(b * t, 3 * d);
    for (std::size_t bi = 0; bi < b; ++bi)
      for (std::size_t ti = 0; ti < t; ++ti) {
        T* dst = d_qkv.row(bi * t + ti);
        for (std::size_t h = 0; h < heads; ++h) {
          const std::size_t r = (bi * heads + h) * t + ti;
          std::copy_n(dq.row(r), dh, dst + h * dh);
          std::copy_n(dk.row(r), dh, dst + d + h * dh);
          std::copy_n(dv.row(r), dh, dst + 2 * d + h * dh);
        }
      }
    qkv.backward(d_qkv, &dx, threads);
  }

  template <class F>
  void for_each_slot(F&& f) {
    qkv.for_each_slot(f), proj.for_each_slot(f), core.for_each_slot(f);
  }
};

}  // namespace lm
