#pragma once
// Shared by the attention tests: data, an independent double-precision attention, and the
// documented error bound of the fast path (docs/attention.md#error-bound).
#include <minifloat/attention/attention.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace attention_test {

using namespace minifloat;
using namespace minifloat::attention;
namespace ad = minifloat::attention::detail;  // (minifloat::detail exists too)

inline std::vector<float> gaussian(std::size_t n, std::uint64_t seed, float sigma = 1.0f) {
  std::mt19937_64 g(seed);
  std::normal_distribution<float> nd(0.0f, sigma);
  std::vector<float> x(n);
  for (auto& v : x) v = nd(g);
  return x;
}

/// Columns `outliers` scaled by `gain` (outlier channels, as in real K caches).
inline void add_outlier_channels(std::vector<float>& x, std::size_t cols, std::initializer_list<std::size_t> outliers, float gain) {
  for (std::size_t i = 0; i < x.size(); ++i)
    for (auto c : outliers)
      if (i % cols == c) x[i] *= gain;
}

struct recipe_case {
  std::string q, k, v, p;
  float p_scale = 1.0f;
};

inline attention_recipe make_recipe(const recipe_case& c) {
  attention_recipe r;
  r.q = parse_operand_scheme(c.q, "Q"), r.k = parse_operand_scheme(c.k, "K"), r.v = parse_operand_scheme(c.v, "V");
  r.p.format = parse_static_format(c.p, "P");
  if (r.p.format) r.p.scale = c.p_scale;
  return r;
}

/// Every recipe the fast path supports, and some it leaves to the reference.
/// Every block kernel: AMX, the AVX-512 kernel on fp32 FMAs and on bfloat16 pairs (the FMA form
/// where pairs do not apply), the AVX2 kernel (each the best the CPU has where it lacks that one),
/// the scalar twin.
inline std::vector<std::pair<simd::isa, block_kernel>> kernels() {
  return {{simd::isa::automatic, block_kernel::amx},
          {simd::isa::automatic, block_kernel::avx512},
          {simd::isa::automatic, block_kernel::avx512_bf16},
          {simd::isa::automatic, block_kernel::avx2},
          {simd::isa::scalar, block_kernel::automatic}};
}

inline std::vector<recipe_case> fast_recipes() {
  return {
      {"fp32", "fp32", "fp32", "fp32"},
      {"bf16", "bf16", "bf16", "bf16"},
      {"hifloat8/tensor", "hifloat8/tensor", "hifloat8/tensor", "hifloat8"},
      {"float8_e4m3fn/tensor", "float8_e4m3fn/tensor", "float8_e4m3fn/tensor", "float8_e4m3fn"},
      {"float8_e5m2/tensor", "float8_e5m2/tensor", "float8_e5m2/tensor", "float8_e5m2", 0.25f},
      {"mxfp8_e4m3", "mxfp8_e4m3", "mxfp8_e4m3/axis=0", "float8_e4m3fn"},
      {"mxfp8_e5m2", "mxfp8_e5m2", "mxfp8_e5m2/axis=0", "fp32"},
      {"fp32", "hifloat8/tensor", "float8_e4m3fn/tensor", "hifloat8", 0.5f},
      {"float8_e4m3fn/tensor", "bf16", "fp32", "bfloat16"},
      {"hifloat8/tensor/n-guard=8", "hifloat8/tensor/n-guard=8", "hifloat8/tensor", "float16"},
  };
}

/// An independent double-precision attention on given Q^, K^, V^ (written apart from
/// reference.hpp: per-query vectors, a two-pass softmax).
inline std::vector<double> naive_attention(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v,
                                           const attention_shape& s, const static_format& p, double scale, bool causal) {
  std::vector<double> out(s.out_size(), 0.0);
  const std::size_t g = s.q_heads / s.kv_heads;
  for (std::size_t b = 0; b < s.batch; ++b)
    for (std::size_t h = 0; h < s.q_heads; ++h)
      for (std::size_t i = 0; i < s.q_len; ++i) {
        const std::size_t qrow = (b * s.q_heads + h) * s.q_len + i, kv = b * s.kv_heads + h / g;
        std::vector<double> sc;
        for (std::size_t j = 0; j < s.kv_len; ++j) {
          if (causal && static_cast<long long>(j) > static_cast<long long>(i + s.kv_len) - static_cast<long long>(s.q_len)) break;
          double dot = 0;
          for (std::size_t c = 0; c < s.head_dim; ++c)
            dot += static_cast<double>(q[qrow * s.head_dim + c]) * k[(kv * s.kv_len + j) * s.head_dim + c];
          sc.push_back(scale * dot);
        }
        if (sc.empty()) continue;
        double m = sc[0];
        for (double x : sc) m = std::max(m, x);
        double l = 0;
        std::vector<double> ph(sc.size());
        for (std::size_t j = 0; j < sc.size(); ++j) {
          const double e = std::exp(sc[j] - m);
          l += e;
          ph[j] = round_static(e, p);
        }
        for (std::size_t c = 0; c < s.v_dim; ++c) {
          double acc = 0;
          for (std::size_t j = 0; j < sc.size(); ++j) acc += ph[j] * v[(kv * s.kv_len + j) * s.v_dim + c];
          out[qrow * s.v_dim + c] = acc / l;
        }
      }
  return out;
}

inline double gamma(double n) { return n * 0x1p-24 / (1 - n * 0x1p-24); }

/// Half the relative spacing of format f's grid at binade e (1 for the binades that hold no
/// more than a power of two), and the absolute rounding floor below its smallest value.
inline double half_spacing(format_id f, int e) {
  switch (f) {
    case format_id::hifloat8: return std::ldexp(1.0, -(hifloat8_spec::mantissa_width(e) + 1));
    case format_id::float8_e4m3fn: return e >= -6 ? 0x1p-4 : std::ldexp(1.0, -9 - e - 1);
    case format_id::float8_e5m2: return e >= -14 ? 0x1p-3 : std::ldexp(1.0, -16 - e - 1);
    case format_id::bfloat16: return 0x1p-8;
    case format_id::float16: return e >= -14 ? 0x1p-11 : std::ldexp(1.0, -24 - e - 1);
    default: return 0.5;
  }
}
inline double abs_floor(format_id f) {
  switch (f) {
    case format_id::hifloat8: return 0x1p-23;
    case format_id::float8_e4m3fn: return 0x1p-10;
    case format_id::float8_e5m2: return 0x1p-17;
    case format_id::float16: return 0x1p-25;
    default: return 0x1p-134;
  }
}

/// The documented bound |fast - reference| per output element (docs/attention.md#error-bound),
/// from the reference's operands Q^, K^, V^.
inline std::vector<double> fast_bound(const dequantized_operands& op, const attention_shape& s, const static_format& p,
                                      double scale, bool causal, const std::vector<float>& ref_out) {
  std::vector<double> bound(s.out_size(), 0.0);
  const std::size_t g = s.q_heads / s.kv_heads, d = s.head_dim, dv = s.v_dim;
  const double gt = gamma(static_cast<double>(s.kv_len + 64)), gd = gamma(static_cast<double>(d + 8));
  for (std::size_t b = 0; b < s.batch; ++b)
    for (std::size_t h = 0; h < s.q_heads; ++h)
      for (std::size_t i = 0; i < s.q_len; ++i) {
        const std::size_t qrow = (b * s.q_heads + h) * s.q_len + i, kv = b * s.kv_heads + h / g;
        const std::size_t n = visible_keys(i, s.q_len, s.kv_len, causal ? mask_kind::causal : mask_kind::none);
        if (n == 0) continue;
        std::vector<double> sc(n);
        double m = -INFINITY, es = 0;
        for (std::size_t j = 0; j < n; ++j) {
          double dot = 0, mag = 0;
          for (std::size_t c = 0; c < d; ++c) {
            const double x = static_cast<double>(op.q[qrow * d + c]) * op.k[(kv * s.kv_len + j) * d + c];
            dot += x, mag += std::fabs(x);
          }
          sc[j] = scale * dot, es = std::max(es, std::fabs(scale) * mag * gd);
          m = std::max(m, sc[j]);
        }
        const double theta = 2 * es + 0x1p-20;
        double l = 0;
        std::vector<double> pt(n), urel(n, 0.0);
        for (std::size_t j = 0; j < n; ++j) l += (pt[j] = std::exp(sc[j] - m));
        if (p.format) {
          const int top = std::max(0, std::ilogb(1.0 / p.scale) + 1);
          for (std::size_t j = 0; j < n; ++j) {
            const int e0 = pt[j] / p.scale > 0 ? std::ilogb(pt[j] / p.scale) : -200;
            double u = half_spacing(*p.format, e0), uf = u;
            for (int e = std::max(e0, -30); e <= top; ++e) uf = std::max(uf, half_spacing(*p.format, e));
            urel[j] = u + uf;
          }
        }
        const double ab = p.format ? 2 * abs_floor(*p.format) * p.scale : 0.0;
        for (std::size_t c = 0; c < dv; ++c) {
          double a = 0, qerr = 0;
          for (std::size_t j = 0; j < n; ++j) {
            const double vv = std::fabs(static_cast<double>(op.v[(kv * s.kv_len + j) * dv + c]));
            a += pt[j] * vv;
            qerr += (pt[j] * urel[j] + ab) * vv;
          }
          const double o = std::fabs(static_cast<double>(ref_out[qrow * dv + c]));
          bound[qrow * dv + c] = (a * (2 * theta + 2 * gt) + qerr) / l + o * (theta + gt + 0x1p-23) + 1e-30;
        }
      }
  return bound;
}

/// max over elements of |x - ref| / bound (< 1 means within the bound).
inline double bound_ratio(const std::vector<float>& x, const std::vector<float>& ref, const std::vector<double>& bound) {
  double worst = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double e = std::fabs(static_cast<double>(x[i]) - ref[i]);
    worst = std::max(worst, e / bound[i]);
  }
  return worst;
}

}  // namespace attention_test
