#pragma once
// Merged KV: one cache C (T x d) used as K and as V = C[..., :dv] (MLA's compressed latent,
// DeepSeek sparse attention), and the study's recipes for storing it in 8 bits.
//
// How a quantized merged cache feeds the two products is a merged_kv_recipe:
//   stored   how C is stored; q C^T reads these codes. nullopt: fp32.
//   pv       the layout the P C product needs, if it differs from `stored`: an MX product needs
//            its scales along the reduction axis, along d (axis 1) for q C^T but along T (axis 0)
//            for P C, so an MX cache is quantized a second time for P C. nullopt: P C reads the
//            stored codes (a per-tensor scale serves both products).
//   pv_from  what that second quantization starts from: the fp32 tokens (a second copy written
//            when the token is appended), or the stored codes (dequantize, re-quantize: the only
//            option once the fp32 values are gone; it rounds twice).
// make_merged_cache() builds the kv_cache (kv_cache.hpp) that stores C that way; the fast decode
// step runs on it. prepare_merged_kv() gives the two operands as fp32 for the double-precision
// emulation below (the reference of the study, reference.hpp's definition on one query token).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "../core/errors.hpp"
#include "../quant/matrix_view.hpp"
#include "../quant/quantized_tensor.hpp"
#include "../quant/scheme.hpp"
#include "kv_cache.hpp"
#include "reference.hpp"

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

/// The kv_cache (one KV head per cache head, d = dv) that stores C as the recipe says. Its P C
/// operand for MX is quantized along T with the stored scheme's rule (r.pv's layout).
[[nodiscard]] inline kv_cache make_merged_cache(const merged_kv_recipe& r, std::size_t kv_heads, std::size_t d,
                                                std::size_t dv) {
  kv_cache_config cfg;
  cfg.kv_heads = kv_heads, cfg.head_dim = d, cfg.v_dim = dv;
  cfg.k = r.stored;
  cfg.layout = kv_layout::merged;
  cfg.pv = r.pv_from == requantize_source::fp32 ? pv_source::second_copy : pv_source::requantize;
  return kv_cache(cfg);
}

namespace detail {

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

inline std::vector<float> dense(matrix_view<const float> x) {
  std::vector<float> out(x.rows * x.cols);
  for (std::size_t r = 0; r < x.rows; ++r) std::copy_n(x.row(r), x.cols, out.data() + r * x.cols);
  return out;
}

}  // namespace detail

/// One decode step for each of the nq queries (rows of q, each d long) in double precision:
/// out (nq x d, row-major) = softmax(scale * q K^T) V, the reference's definition (reference.hpp)
/// with each query its own head over one KV head; logits (nq x T), if not empty, receive
/// scale * q K^T.
inline void decode_attention(matrix_view<const float> q, matrix_view<const float> k, matrix_view<const float> v,
                             double scale, std::span<double> out, std::span<double> logits = {}) {
  detail::check_attention_shapes("decode_attention", q, k, v, out, logits);
  const std::size_t nq = q.rows, d = q.cols, t = k.rows;
  const auto qd = detail::dense(q), kd = detail::dense(k), vd = detail::dense(v);
  const attention_shape s{1, nq, 1, 1, t, d, d};
  std::vector<double> o, m, l;
  detail::forward_double(qd.data(), kd.data(), vd.data(), s, {}, scale, mask_kind::none, o, m, l);
  std::copy(o.begin(), o.end(), out.begin());
  if (!logits.empty())
    for (std::size_t i = 0; i < nq; ++i)
      for (std::size_t j = 0; j < t; ++j) {
        double acc = 0;
        for (std::size_t c = 0; c < d; ++c) acc += static_cast<double>(qd[i * d + c]) * static_cast<double>(kd[j * d + c]);
        logits[i * t + j] = scale * acc;
      }
}

/// Merged KV: K = V = c.
inline void merged_kv_attention(matrix_view<const float> q, matrix_view<const float> c, double scale,
                                std::span<double> out, std::span<double> logits = {}) {
  decode_attention(q, c, c, scale, out, logits);
}

/// The same work split over `threads` threads by query rows (results identical to one thread).
inline void decode_attention_parallel(matrix_view<const float> q, matrix_view<const float> k,
                                      matrix_view<const float> v, double scale, std::span<double> out,
                                      std::span<double> logits = {}, unsigned threads = 2) {
  detail::check_attention_shapes("decode_attention_parallel", q, k, v, out, logits);
  const std::size_t nq = q.rows, d = q.cols, t = k.rows;
  if (threads <= 1 || nq < 16) return decode_attention(q, k, v, scale, out, logits);
  const std::size_t per = (nq + threads - 1) / threads;
  minifloat::detail::fork_join(threads, [&](std::size_t w) {
    const std::size_t r0 = w * per, r1 = std::min(nq, r0 + per);
    if (r0 >= r1) return;
    const matrix_view<const float> qs(q.row(r0), r1 - r0, d, q.row_stride);
    decode_attention(qs, k, v, scale, out.subspan(r0 * d, (r1 - r0) * d),
                     logits.empty() ? std::span<double>{} : logits.subspan(r0 * t, (r1 - r0) * t));
  });
}

}  // namespace minifloat::attention
