#pragma once
// Emulation of one decode step of attention over a quantized KV cache, in double precision so
// that the only error is the cache's storage format.
//
//   decode_attention:   out = softmax(scale * q K^T) V           (K, V: T x d; q, out: d)
//   merged KV:          K = V = C, a single T x d cache (MLA's compressed latent, DeepSeek sparse
//                       attention): out = softmax(scale * q C^T) C
//
// How a quantized merged cache feeds the two products is a merged_kv_recipe:
//   stored   how C is stored; q C^T reads these codes (dequantized). nullopt: fp32.
//   pv       the layout the P C product needs, if it differs from `stored`. An MX GEMM needs its
//            scales along the reduction axis: along d (axis 1) for q C^T but along T (axis 0)
//            for P C, so an MX cache must be quantized a second time for P C. nullopt: P C reads
//            the stored copy (any per-tensor scale is valid for both products).
//   pv_from  what that second quantization starts from: the fp32 cache (a second copy written
//            when the token is appended), or the stored codes (dequantize, re-quantize: the
//            only option once the fp32 values are gone; it rounds twice).
// q and the probabilities P stay in fp32/double: this isolates the cache's error.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "../core/errors.hpp"
#include "../quant/matrix_view.hpp"
#include "../quant/quantized_tensor.hpp"
#include "../quant/scheme.hpp"

namespace minifloat::attention {

/// What the second quantization of a merged cache (for P C) starts from.
enum class requantize_source : std::uint8_t { fp32, stored_codes };

struct merged_kv_recipe {
  std::string name;
  std::optional<quant_scheme> stored;  // nullopt: fp32 cache
  std::optional<quant_scheme> pv;      // nullopt: P C uses the stored copy
  requantize_source pv_from = requantize_source::fp32;
};

/// The two operands a recipe hands to the products, dequantized to float (T x d each).
struct merged_kv_operands {
  std::vector<float> k;  // what q C^T reads
  std::vector<float> v;  // what P C reads
};

/// Applies a recipe to the fp32 cache c (T x d, row-major).
[[nodiscard]] inline merged_kv_operands prepare_merged_kv(std::span<const float> c, std::size_t t, std::size_t d,
                                                          const merged_kv_recipe& r) {
  if (c.size() != t * d)
    throw shape_error("prepare_merged_kv: a " + std::to_string(t) + "x" + std::to_string(d) + " cache needs " +
                      std::to_string(t * d) + " values, got " + std::to_string(c.size()));
  merged_kv_operands op;
  op.k = r.stored ? fake_quantize(c, t, d, *r.stored) : std::vector<float>(c.begin(), c.end());
  if (!r.pv) {
    op.v = op.k;
  } else {
    const std::span<const float> src = r.pv_from == requantize_source::fp32 ? c : std::span<const float>(op.k);
    op.v = fake_quantize(src, t, d, *r.pv);
  }
  return op;
}

namespace detail {

/// Dot product in double with four independent partial sums (lets the compiler overlap them).
inline double dot(const float* a, const float* b, std::size_t n) noexcept {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  std::size_t j = 0;
  for (; j + 4 <= n; j += 4) {
    s0 += static_cast<double>(a[j]) * b[j];
    s1 += static_cast<double>(a[j + 1]) * b[j + 1];
    s2 += static_cast<double>(a[j + 2]) * b[j + 2];
    s3 += static_cast<double>(a[j + 3]) * b[j + 3];
  }
  for (; j < n; ++j) s0 += static_cast<double>(a[j]) * b[j];
  return (s0 + s1) + (s2 + s3);
}

inline void check_attention_shapes(const char* who, matrix_view<const float> q, matrix_view<const float> k,
                                   matrix_view<const float> v, std::span<double> out, std::span<double> logits) {
  q.validate(), k.validate(), v.validate();
  const std::size_t nq = q.rows, d = q.cols, t = k.rows;
  if (k.cols != d || v.cols != d || v.rows != t)
    throw shape_error(std::string(who) + ": q is " + std::to_string(nq) + "x" + std::to_string(d) + ", K " +
                      std::to_string(k.rows) + "x" + std::to_string(k.cols) + ", V " + std::to_string(v.rows) + "x" +
                      std::to_string(v.cols) + "; expected K and V of T x d");
  if (out.size() != nq * d)
    throw shape_error(std::string(who) + ": out needs nq * d = " + std::to_string(nq * d) + " values, got " +
                      std::to_string(out.size()));
  if (!logits.empty() && logits.size() != nq * t)
    throw shape_error(std::string(who) + ": logits needs nq * T = " + std::to_string(nq * t) + " values, got " +
                      std::to_string(logits.size()));
}

}  // namespace detail

/// One decode step for each of the nq queries (rows of q, each d long): out (nq x d, double,
/// row-major) = softmax(scale * q K^T) V; logits (nq x T), if not empty, receives scale * q K^T.
/// Queries are processed in blocks of 8 so that each cache row is read once per block.
inline void decode_attention(matrix_view<const float> q, matrix_view<const float> k, matrix_view<const float> v,
                             double scale, std::span<double> out, std::span<double> logits = {}) {
  detail::check_attention_shapes("decode_attention", q, k, v, out, logits);
  const std::size_t nq = q.rows, d = q.cols, t = k.rows;
  constexpr std::size_t block = 8;
  std::vector<double> p(block * t);
  for (std::size_t q0 = 0; q0 < nq; q0 += block) {
    const std::size_t nb = std::min(block, nq - q0);
    // 1. logits, one cache row at a time for the whole block of queries
    for (std::size_t i = 0; i < t; ++i)
      for (std::size_t b = 0; b < nb; ++b) p[b * t + i] = scale * detail::dot(q.row(q0 + b), k.row(i), d);
    // 2. softmax per query (max subtracted; sum in double)
    for (std::size_t b = 0; b < nb; ++b) {
      double* pb = p.data() + b * t;
      if (!logits.empty()) std::copy(pb, pb + t, logits.begin() + static_cast<std::ptrdiff_t>((q0 + b) * t));
      const double m = t == 0 ? 0.0 : *std::max_element(pb, pb + t);
      double sum = 0;
      for (std::size_t i = 0; i < t; ++i) sum += (pb[i] = std::exp(pb[i] - m));
      for (std::size_t i = 0; i < t; ++i) pb[i] /= sum;
    }
    // 3. out = P V, one cache row at a time
    std::fill(out.begin() + static_cast<std::ptrdiff_t>(q0 * d), out.begin() + static_cast<std::ptrdiff_t>((q0 + nb) * d), 0.0);
    for (std::size_t i = 0; i < t; ++i) {
      const float* vi = v.row(i);
      for (std::size_t b = 0; b < nb; ++b) {
        const double w = p[b * t + i];
        double* o = out.data() + (q0 + b) * d;
        for (std::size_t j = 0; j < d; ++j) o[j] += w * static_cast<double>(vi[j]);
      }
    }
  }
}

/// Merged KV: K = V = c.
inline void merged_kv_attention(matrix_view<const float> q, matrix_view<const float> c, double scale,
                                std::span<double> out, std::span<double> logits = {}) {
  decode_attention(q, c, c, scale, out, logits);
}

/// The same work split over `threads` threads by query rows (results identical to one thread:
/// each query's arithmetic does not depend on the split).
inline void decode_attention_parallel(matrix_view<const float> q, matrix_view<const float> k,
                                      matrix_view<const float> v, double scale, std::span<double> out,
                                      std::span<double> logits = {}, unsigned threads = 2) {
  detail::check_attention_shapes("decode_attention_parallel", q, k, v, out, logits);
  const std::size_t nq = q.rows, d = q.cols, t = k.rows;
  if (threads <= 1 || nq < 16) return decode_attention(q, k, v, scale, out, logits);
  std::vector<std::thread> pool;
  const std::size_t per = (nq + threads - 1) / threads;
  for (unsigned w = 0; w < threads; ++w) {
    const std::size_t r0 = w * per, r1 = std::min(nq, r0 + per);
    if (r0 >= r1) break;
    pool.emplace_back([=] {
      const matrix_view<const float> qs(q.row(r0), r1 - r0, d, q.row_stride);
      decode_attention(qs, k, v, scale, out.subspan(r0 * d, (r1 - r0) * d),
                       logits.empty() ? std::span<double>{} : logits.subspan(r0 * t, (r1 - r0) * t));
    });
  }
  for (auto& th : pool) th.join();
}

}  // namespace minifloat::attention
