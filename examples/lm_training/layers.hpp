#pragma once
// The layers of the model, each a small struct with its parameters, gradients and the state its
// backward needs. T is float (training) or double (the gradient check). Only Linear and the
// attention products quantize; embedding, RMSNorm, GELU, softmax and the loss stay in T.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common.hpp"
#include "matmul.hpp"
#include "quant_slot.hpp"

namespace lm {

/// A parameter tensor with its gradient, as the optimizer and the gradient hook see it.
template <class T>
struct parameter {
  std::string name;
  tensor<T>* value = nullptr;
  tensor<T>* grad = nullptr;
  bool decay = false;  ///< AdamW weight decay (matrices only)
};

/// Y = X W^T, W (out, in), no bias. Three GEMMs, all on 8-bit operands under a quantized recipe:
///   forward  Y  = X W^T     A = X (tokens, in), B = W stored (out, in) = (N, K)   layout nk
///   backward dX = dY W      A = dY (tokens, out), B = W stored (out, in) = (K, N) layout kn
///            dW = dY^T X    A = dY^T (out, tokens), B = X stored (tokens, in)     layout kn
/// X, W and dY are each one quant_slot: quantized once per step (per tensor, 32x32), or once per
/// GEMM they enter (MX 1x32).
template <class T>
struct linear {
  std::string name;
  std::size_t in = 0, out = 0;
  tensor<T> w, gw;
  quant_slot<T> xs, ws, dys;

  linear() = default;
  linear(std::string n, std::size_t in_features, std::size_t out_features, double init_std, rng& r,
         const recipe& rc, unsigned threads)
      : name(std::move(n)), in(in_features), out(out_features), w(out_features, in_features),
        gw(out_features, in_features), xs(training_spec(rc, tensor_kind::x), threads),
        ws(training_spec(rc, tensor_kind::w), threads), dys(training_spec(rc, tensor_kind::dy), threads) {
    for (T& x : w.v) x = static_cast<T>(init_std * r.normal());
  }

  /// x must stay alive until backward().
  void forward(const tensor<T>& x, tensor<T>& y, unsigned threads) {
    xs.begin(x.data(), x.rows, in);
    ws.begin(w.data(), out, in);
    y.resize(x.rows, out);
    matmul<T>(xs.a(), ws.b_nk(), mf::gemm_layout::nk, y.span(), threads);
  }

  /// dX (if dx is given) and dW from dY.
  void backward(const tensor<T>& dy, tensor<T>* dx, unsigned threads) {
    dys.begin(dy.data(), dy.rows, out);
    if (dx != nullptr) {
      dx->resize(dy.rows, in);
      matmul<T>(dys.a(), ws.b_kn(), mf::gemm_layout::kn, dx->span(), threads);
    }
    matmul<T>(dys.a_t(), xs.b_kn(), mf::gemm_layout::kn, gw.span(), threads);
  }

  template <class F>
  void for_each_slot(F&& f) {
    f(xs), f(ws), f(dys);
  }
};

/// y = x / rms(x) * g, rms = sqrt(mean(x^2) + eps), per row.
template <class T>
struct rms_norm {
  std::string name;
  std::size_t d = 0;
  tensor<T> g, gg;
  std::vector<T> rstd;
  static constexpr double eps = 1e-5;

  rms_norm() = default;
  rms_norm(std::string n, std::size_t dim) : name(std::move(n)), d(dim), g(1, dim), gg(1, dim) {
    for (T& x : g.v) x = T(1);
  }

  void forward(const tensor<T>& x, tensor<T>& y) {
    y.resize(x.rows, d);
    rstd.resize(x.rows);
    for (std::size_t r = 0; r < x.rows; ++r) {
      const T* xr = x.row(r);
      T* yr = y.row(r);
      T ss = 0;
      for (std::size_t c = 0; c < d; ++c) ss += xr[c] * xr[c];
      const T rs = static_cast<T>(1.0 / std::sqrt(static_cast<double>(ss) / static_cast<double>(d) + eps));
      rstd[r] = rs;
      for (std::size_t c = 0; c < d; ++c) yr[c] = xr[c] * rs * g.v[c];
    }
  }

  /// dx = r (g dy) - x r^3 / d * sum(g dy x); dg += sum over rows of dy x r. dx is overwritten.
  void backward(const tensor<T>& x, const tensor<T>& dy, tensor<T>& dx) {
    dx.resize(x.rows, d);
    for (std::size_t r = 0; r < x.rows; ++r) {
      const T* xr = x.row(r);
      const T* dyr = dy.row(r);
      T* dxr = dx.row(r);
      const T rs = rstd[r];
      T s = 0;
      for (std::size_t c = 0; c < d; ++c) s += dyr[c] * g.v[c] * xr[c];
      const T k = s * rs * rs * rs / static_cast<T>(d);
      for (std::size_t c = 0; c < d; ++c) {
        dxr[c] = dyr[c] * g.v[c] * rs - xr[c] * k;
        gg.v[c] += dyr[c] * xr[c] * rs;
      }
    }
  }
};

/// GELU, tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). The forward keeps tanh for
/// the backward. Elementwise, split over threads.
template <class T>
struct gelu {
  std::vector<T> th;

  void forward(const tensor<T>& x, tensor<T>& y, unsigned threads) {
    y.resize(x.rows, x.cols);
    th.resize(x.size());
    parallel_rows(x.size(), threads, [&](std::size_t b, std::size_t e) {
      for (std::size_t i = b; i < e; ++i) {
        const T v = x.v[i];
        const T t = std::tanh(T(0.7978845608028654) * (v + T(0.044715) * v * v * v));
        th[i] = t;
        y.v[i] = T(0.5) * v * (T(1) + t);
      }
    });
  }
  void backward(const tensor<T>& x, const tensor<T>& dy, tensor<T>& dx, unsigned threads) {
    dx.resize(x.rows, x.cols);
    parallel_rows(x.size(), threads, [&](std::size_t b, std::size_t e) {
      for (std::size_t i = b; i < e; ++i) {
        const T v = x.v[i], t = th[i];
        const T du = T(0.7978845608028654) * (T(1) + T(3 * 0.044715) * v * v);
        dx.v[i] = dy.v[i] * (T(0.5) * (T(1) + t) + T(0.5) * v * (T(1) - t * t) * du);
      }
    });
  }
};

/// Token and learned positional embeddings: x[b, t] = tok[id] + pos[t] (a lookup, fp32).
template <class T>
struct embedding {
  std::size_t vocab = 0, context = 0, d = 0;
  tensor<T> tok, pos, gtok, gpos;

  embedding() = default;
  embedding(std::size_t v, std::size_t ctx, std::size_t dim, double init_std, rng& r)
      : vocab(v), context(ctx), d(dim), tok(v, dim), pos(ctx, dim), gtok(v, dim), gpos(ctx, dim) {
    for (T& x : tok.v) x = static_cast<T>(init_std * r.normal());
    for (T& x : pos.v) x = static_cast<T>(init_std * r.normal());
  }

  void forward(const std::vector<std::uint8_t>& ids, std::size_t t, tensor<T>& x) const {
    x.resize(ids.size(), d);
    for (std::size_t i = 0; i < ids.size(); ++i) {
      const T* a = tok.row(ids[i]);
      const T* p = pos.row(i % t);
      T* xr = x.row(i);
      for (std::size_t c = 0; c < d; ++c) xr[c] = a[c] + p[c];
    }
  }
  void backward(const std::vector<std::uint8_t>& ids, std::size_t t, const tensor<T>& dx) {
    for (std::size_t i = 0; i < ids.size(); ++i) {
      T* a = gtok.row(ids[i]);
      T* p = gpos.row(i % t);
      const T* g = dx.row(i);
      for (std::size_t c = 0; c < d; ++c) a[c] += g[c], p[c] += g[c];
    }
  }
};

/// Mean cross-entropy over the rows of logits (N, V) against targets; writes dlogits =
/// (softmax - onehot) / N. Row-wise log-sum-exp in double.
template <class T>
double cross_entropy(const tensor<T>& logits, const std::vector<std::uint8_t>& targets, tensor<T>* dlogits) {
  const std::size_t n = logits.rows, v = logits.cols;
  if (dlogits != nullptr) dlogits->resize(n, v);
  double total = 0.0;
  for (std::size_t r = 0; r < n; ++r) {
    const T* z = logits.row(r);
    double m = -INFINITY;
    for (std::size_t c = 0; c < v; ++c) m = std::max(m, static_cast<double>(z[c]));
    double s = 0.0;
    for (std::size_t c = 0; c < v; ++c) s += std::exp(static_cast<double>(z[c]) - m);
    const double lse = m + std::log(s);
    total += lse - static_cast<double>(z[targets[r]]);
    if (dlogits != nullptr) {
      T* g = dlogits->row(r);
      for (std::size_t c = 0; c < v; ++c)
        g[c] = static_cast<T>(std::exp(static_cast<double>(z[c]) - lse) / static_cast<double>(n));
      g[targets[r]] -= static_cast<T>(1.0 / static_cast<double>(n));
    }
  }
  return total / static_cast<double>(n);
}

}  // namespace lm
