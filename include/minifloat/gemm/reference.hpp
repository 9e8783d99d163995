#pragma once
// The definition of a quantized GEMM, as scalar code to test kernels against.
//
//   C[m, n] = sum_k  a(m, k) * sA(m, k) * b(k, n) * sB(k, n)  [+ bias[n]]
//
// a, b are the decoded element values (exact: float(Elem::from_bits(code))); sA, sB the scales
// of the tiles holding (m, k) and (k, n) (operand.hpp lists the layouts and granularities).
// Two accumulation modes:
//
// gemm_accumulation::exact -- every product exact, the sum (with the bias) exact (exact_sum.hpp,
//   a long fixed-point accumulator), rounded ONCE to the output type with round-to-nearest-even
//   (float32, or bfloat16 directly from the exact value). NaN/Inf follow IEEE (a NaN code, an
//   Inf code times 0, a NaN E8M0 scale, or +Inf + -Inf give NaN).
//
// gemm_accumulation::fp32_blocks -- what block-scaled hardware does, in this exact order:
//   K is cut into K-blocks of length L (operand.hpp: the smaller scale-tile extent along K, or K
//   itself for tensor/token/channel scales on both sides; the last block may be short). For
//   each output (m, n), in float32:
//     acc = bias[n] (0 without bias)
//     for each K-block j, k ascending within it:
//       p = 0;  for k in block j:  p = fma(a(m,k), b(k,n), p)    // a*b is exact in fp32: the
//                                                                // fma is one rounded add
//       s = sA(m, j) * sB(j, n)                                  // one fp32 rounding
//       acc = fma(p, s, acc)                                     // one rounding
//     out = acc (float32) or RNE(acc) to bfloat16 (a second rounding, unlike exact mode)
//   Overflow rule (finite in, never a silent Inf out): when acc ends NaN or +-Inf although every
//   value and scale of A's row m, of B's column n and the bias are finite (an fp32 partial sum or
//   s = sA*sB overflowed, e.g. blocks of -FLT_MAX then +FLT_MAX that cancel), acc is replaced by
//   the exact sum rounded once to float32 (exact mode's fp32 value; still Inf when the exact
//   value itself is beyond float32). The fast path finds such outputs in one pass over C after
//   its kernels and recomputes only them, so it stays bit-identical to this definition.
//   The products a*b never round: element values have <= 4 significant bits and lie in
//   [2^-22, 2^16), so every product is a normal fp32 of <= 8 bits.
//   The fast path (blocked.hpp) computes exactly this, bit for bit, for every shape, format,
//   thread count, ISA, micro-kernel and path (blocked GEMM and GEMV): docs/gemm.md says why.
//
// Error bound of fp32_blocks (and so of the fast path) against exact, with u = 2^-24,
// gamma(n) = n u / (1 - n u), L the K-block length and J = ceil(K / L) the number of blocks:
//
//   |C_fp32_blocks - C_exact| <= gamma(L + J) * (sum_k |a sA b sB| + |bias|)
//                                + 2^-150 * (sum_k |a b| + J)
//
// Why: a product a*b is exact and enters its block's partial sum, which rounds at most L - 1
// times; s = sA*sB rounds once; acc rounds once per remaining block (<= J fma); the bias sees
// only the J fma roundings. Products a*b >= 2^-44 keep every partial sum normal, so the only
// underflow is in s (|s - sA sB| <= 2^-150 when it is below 2^-126) and in subnormal acc
// values (<= 2^-150 per fma): the second term. Overflow to Inf is outside the bound (the
// overflow rule above gives those outputs the exact value). Per-tensor
// and per-channel/token scales have J = 1, L = K: gamma(K + 1); MX: gamma(32 + K/32).
// bfloat16 output adds its own rounding: |out - C_exact| <= 2^-8 |C_fp32_blocks| + bound
// (+ 2^-134 in bfloat16's subnormal range). exact mode is the correctly rounded value itself.
// tests/unit/gemm/test_gemm.cpp checks the bound element by element (random and PP-OCRv4 data).
#include <cstddef>
#include <vector>
#include <cstdint>
#include <bit>
#include <cmath>
#include <span>

#include "entry_points.hpp"
#include "../formats/float16.hpp"
#include "exact_sum.hpp"
#include "operand.hpp"

namespace minifloat {

namespace detail::gemm {

/// RNE float -> bfloat16 bits; NaN stays NaN (quiet), overflow goes to Inf.
inline std::uint16_t bf16_bits_rne(float x) noexcept {
  const std::uint32_t b = std::bit_cast<std::uint32_t>(x);
  if ((b & 0x7FFFFFFFU) > 0x7F800000U) return static_cast<std::uint16_t>((b >> 16) | 0x40U);
  return static_cast<std::uint16_t>((b + 0x7FFFU + ((b >> 16) & 1U)) >> 16);
}
inline bfloat16 to_bf16(float x) noexcept { return bfloat16::from_bits(bf16_bits_rne(x)); }

/// The fp32_blocks value of one output.
inline float fp32_blocks_one(const problem& p, std::size_t m, std::size_t n, float bias) noexcept {
  float acc = bias;
  for (std::size_t k0 = 0; k0 < p.k; k0 += p.l) {
    const std::size_t k1 = std::min(p.k, k0 + p.l);
    float part = 0.0f;
    for (std::size_t k = k0; k < k1; ++k) part = std::fma(p.a.value(m, k), p.b.value(n, k), part);
    const float s = p.a.scale(m, k0) * p.b.scale(n, k0);
    acc = std::fma(part, s, acc);
  }
  return acc;
}

/// The exact sum of one output, unrounded.
inline exact_sum exact_one(const problem& p, std::size_t m, std::size_t n, std::span<const float> bias) noexcept {
  exact_sum acc;
  for (std::size_t k = 0; k < p.k; ++k)
    acc.add_product(p.a.value(m, k), p.b.value(n, k), p.a.scale(m, k), p.b.scale(n, k));
  if (!bias.empty()) acc.add(bias[n]);
  return acc;
}

/// Whether every value and scale of A's row m (A) or B's column n (B) is finite.
inline bool a_row_finite(const problem& p, std::size_t m) noexcept {
  for (std::size_t k = 0; k < p.k; ++k)
    if (!std::isfinite(p.a.value(m, k)) || !std::isfinite(p.a.scale(m, k))) return false;
  return true;
}
inline bool b_col_finite(const problem& p, std::size_t n) noexcept {
  for (std::size_t k = 0; k < p.k; ++k)
    if (!std::isfinite(p.b.value(n, k)) || !std::isfinite(p.b.scale(n, k))) return false;
  return true;
}

/// The overflow rule of fp32_blocks (header comment): an output the fp32 order leaves NaN or
/// +-Inf although every operand it reads is finite takes the exact sum rounded to float32.
inline float exact_float(const problem& p, std::size_t m, std::size_t n, std::span<const float> bias) noexcept {
  return static_cast<float>(exact_one(p, m, n, bias).round(24));
}

/// The overflow rule over the outputs [m0, m1) x [n0, n1) of fp32 C (row stride ldc), as the fast
/// path applies it after its kernels: one pass over C; A rows and B columns are checked for
/// finite operands only where an output is not finite, each at most once.
inline void fix_fp32_overflow(const problem& p, std::span<const float> bias, float* c, std::size_t ldc, std::size_t m0,
                              std::size_t m1, std::size_t n0, std::size_t n1) {
  bool any = false;
  for (std::size_t m = m0; m < m1; ++m) {
    const float* row = c + m * ldc;
    std::uint32_t bad = 0;
    for (std::size_t n = n0; n < n1; ++n)
      bad |= static_cast<std::uint32_t>((std::bit_cast<std::uint32_t>(row[n]) & 0x7F800000U) == 0x7F800000U);
    any = any || bad != 0;
  }
  if (!any) return;
  std::vector<signed char> col_ok(n1 - n0, -1);  // -1: not checked yet
  for (std::size_t m = m0; m < m1; ++m) {
    signed char row_ok = -1;
    for (std::size_t n = n0; n < n1; ++n) {
      float& o = c[m * ldc + n];
      if (std::isfinite(o) || (!bias.empty() && !std::isfinite(bias[n]))) continue;
      if (row_ok < 0) row_ok = a_row_finite(p, m) ? 1 : 0;
      if (row_ok == 0) break;
      signed char& ok = col_ok[n - n0];
      if (ok < 0) ok = b_col_finite(p, n) ? 1 : 0;
      if (ok == 1) o = exact_float(p, m, n, bias);
    }
  }
}

template <class Out>
void reference_run(const problem& p, std::span<const float> bias, std::span<Out> out, gemm_accumulation mode) {
  for (std::size_t m = 0; m < p.m; ++m)
    for (std::size_t n = 0; n < p.n; ++n) {
      Out& o = out[m * p.n + n];
      if (mode == gemm_accumulation::fp32_blocks) {
        float v = fp32_blocks_one(p, m, n, bias.empty() ? 0.0f : bias[n]);
        if (!std::isfinite(v) && (bias.empty() || std::isfinite(bias[n])) && a_row_finite(p, m) && b_col_finite(p, n))
          v = exact_float(p, m, n, bias);
        if constexpr (std::is_same_v<Out, float>) o = v;
        else o = to_bf16(v);
      } else {
        const exact_sum s = exact_one(p, m, n, bias);
        if constexpr (std::is_same_v<Out, float>) o = static_cast<float>(s.round(24));
        else o = to_bf16(static_cast<float>(s.round(8)));  // exact: already a bfloat16 value
      }
    }
}

}  // namespace detail::gemm

#if MINIFLOAT_DEFINE_KERNELS(MINIFLOAT_KERNELS_GEMM)  // declared and documented in entry_points.hpp
MINIFLOAT_KERNEL_API void gemm_reference(const quantized_tensor_view& a, const quantized_tensor_view& b, gemm_layout layout,
                           std::span<const float> bias, std::span<float> out,
                           gemm_accumulation mode) {
  const auto p = detail::gemm::make_problem(a, b, layout, bias.size(), out.size());
  detail::gemm::reference_run(p, bias, out, mode);
}
MINIFLOAT_KERNEL_API void gemm_reference(const quantized_tensor_view& a, const quantized_tensor_view& b, gemm_layout layout,
                           std::span<const float> bias, std::span<bfloat16> out,
                           gemm_accumulation mode) {
  const auto p = detail::gemm::make_problem(a, b, layout, bias.size(), out.size());
  detail::gemm::reference_run(p, bias, out, mode);
}
#endif

#if MINIFLOAT_DEFINE_KERNELS(MINIFLOAT_KERNELS_GEMM)  // declared and documented in entry_points.hpp
MINIFLOAT_KERNEL_API std::vector<double> gemm_reference_exact_double(const quantized_tensor_view& a,
                                                                     const quantized_tensor_view& b, gemm_layout layout,
                                                                     std::span<const float> bias) {
  const std::size_t mn = checked_mul(a.rows, layout == gemm_layout::kn ? b.cols : b.rows, "gemm: output M x N");
  const auto p = detail::gemm::make_problem(a, b, layout, bias.size(), mn);
  std::vector<double> r(mn);
  for (std::size_t m = 0; m < p.m; ++m)
    for (std::size_t n = 0; n < p.n; ++n) r[m * p.n + n] = detail::gemm::exact_one(p, m, n, bias).round(53, -1022, 1024);
  return r;
}
#endif

}  // namespace minifloat
