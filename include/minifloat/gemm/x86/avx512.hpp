#pragma once
// The AVX-512 micro-kernels and packing routines of the blocked GEMM (blocked.hpp), both
// bit-identical to the fp32_blocks order of reference.hpp (docs/gemm.md proves it):
//
//   fp32 family   12 x 32 tiles of fp32 FMAs on zmm: panels of decoded floats, [k][12] and
//                 [k][32]; one vfmadd231ps (embedded broadcast of a(m, k)) per 16 outputs and k,
//                 the same fma chain as the AVX2 6 x 16 kernel, twice as wide.
//   bf16 family   12 x 32 tiles of vdpbf16ps: panels of bfloat16 pairs, one 32-bit word per
//                 (row, k pair) holding bf16(x[k]) in its high half and bf16(x[k + 1]) in its
//                 low half; an odd tail pairs x[k] with +0. Per fp32 lane the instruction does
//                 acc = acc + hi(a) * hi(b), then acc = acc + lo(a) * lo(b), each an fp32 fma
//                 with round-to-nearest-even, inputs DAZ and results FTZ (Intel SDM; checked on
//                 the CPU by tests/unit/gemm/test_gemm_avx512.cpp). Putting k in the high half
//                 makes it one fma per k in k order: the fp32_blocks chain. DAZ/FTZ never act:
//                 every element value of an accepted format is exact in bfloat16 and is 0 or
//                 at least 2^-22 (HiF8's smallest), so no operand is subnormal; products are 0
//                 or >= 2^-44, so every partial sum of a K-block is 0 or a nonzero multiple of
//                 2^-44 (rounding to 24 bits cannot take it below that); scales, which may be
//                 subnormal or 2^-127, are applied outside the dot product by ordinary fp32 FMAs.
//
// Both families use the same loop nest (blocked.hpp) and the same scale step per K-block:
// s = sA * sB (vmulps), C = fma(p, s, C). Packing decodes 8-row strips (8- and 6-bit formats:
// the VBMI decoder below, 64 codes per two vpermi2b lookups, straight to pair words for bf16;
// FP4: the AVX2 decoder of gemm/x86/avx2.hpp), then 8 x 8 transposes of 32-bit values store them into
// panels (masked stores for the 4-row remainder of 12-row panels).
#include <array>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "../kernels.hpp"
#include "../../simd/decode_tables.hpp"

namespace minifloat::detail::gemm {

inline constexpr std::size_t mr512 = 12;  // AVX-512 micro-tile rows
inline constexpr std::size_t nr512 = 32;  // AVX-512 micro-tile columns (two zmm)

/// The bfloat16 pair word of two exact element values: x (the earlier k) in the high half,
/// which vdpbf16ps multiplies first, y in the low half.
constexpr std::uint32_t bf16_pair(float x, float y) noexcept {
  return (std::bit_cast<std::uint32_t>(x) & 0xFFFF0000U) | (std::bit_cast<std::uint32_t>(y) >> 16);
}

/// Scalar model of one fp32 lane of vdpbf16ps (the SDM's operation): two fp32 FMAs, the high
/// halves first, each with DAZ on its inputs and FTZ on its result, round-to-nearest-even.
/// The tests hold the instruction to it on adversarial inputs (subnormals included).
inline float dpbf16_lane_model(float acc, std::uint32_t a, std::uint32_t b) noexcept {
  const auto daz = [](float x) {
    return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.0f, x) : x;
  };
  const auto hi = [](std::uint32_t w) { return std::bit_cast<float>(w & 0xFFFF0000U); };
  const auto lo = [](std::uint32_t w) { return std::bit_cast<float>(w << 16); };
  acc = daz(std::fma(daz(hi(a)), daz(hi(b)), daz(acc)));
  return daz(std::fma(daz(lo(a)), daz(lo(b)), acc));
}

/// n consecutive codes of one stored row -> (n + 1) / 2 bfloat16 pair words (bf16_pair).
using decode_words_fn = void (*)(const operand&, std::size_t row, std::size_t col, std::size_t n, std::uint32_t* out);

#if MINIFLOAT_SIMD_X86

// The tile's accumulators live in registers only if the row loops are unrolled, which GCC does
// by itself at -O3 but not at -O2: ask for it.
#if defined(__clang__)
#define MF_GEMM_UNROLL _Pragma("unroll")
#elif defined(__GNUC__)
#define MF_GEMM_UNROLL _Pragma("GCC unroll 16")
#else
#define MF_GEMM_UNROLL
#endif

// GCC 12's AVX-512 headers build constants from a deliberately uninitialised variable.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

/// The start of one K-block of both 12 x 32 families: the R x 32 accumulators from C (single-
/// block mode continuing a sum: load_c) or at zero.
template <int R>
MINIFLOAT_INLINE_AVX512 void begin_block(__m512 (&x0)[static_cast<std::size_t>(R)], __m512 (&x1)[static_cast<std::size_t>(R)], const float* c, std::size_t ldc,
                                         bool single, bool load_c) noexcept {
  MF_GEMM_UNROLL
  for (int r = 0; r < R; ++r) {
    const bool load = single && load_c;
    x0[r] = load ? _mm512_loadu_ps(c + static_cast<std::size_t>(r) * ldc) : _mm512_setzero_ps();
    x1[r] = load ? _mm512_loadu_ps(c + static_cast<std::size_t>(r) * ldc + 16) : _mm512_setzero_ps();
  }
}

/// The end of a single-block run of both 12 x 32 families: the R x 32 accumulators to C.
template <int R>
MINIFLOAT_INLINE_AVX512 void store_block(const __m512 (&x0)[static_cast<std::size_t>(R)], const __m512 (&x1)[static_cast<std::size_t>(R)], float* c,
                                         std::size_t ldc) noexcept {
  MF_GEMM_UNROLL
  for (int r = 0; r < R; ++r) {
    _mm512_storeu_ps(c + static_cast<std::size_t>(r) * ldc, x0[r]);
    _mm512_storeu_ps(c + static_cast<std::size_t>(r) * ldc + 16, x1[r]);
  }
}

/// The end of K-block blk of both 12 x 32 families: C += fma(x, sA * sB, C) per row, with
/// s = sa[blk * 12 + r] * sb[blk * 32 + col].
template <int R>
MINIFLOAT_INLINE_AVX512 void scale_block(const __m512 (&x0)[static_cast<std::size_t>(R)], const __m512 (&x1)[static_cast<std::size_t>(R)], float* c, std::size_t ldc,
                                         std::size_t blk, const float* sa, const float* sb) noexcept {
  const __m512 s0 = _mm512_loadu_ps(sb + blk * nr512), s1 = _mm512_loadu_ps(sb + blk * nr512 + 16);
  MF_GEMM_UNROLL
  for (int r = 0; r < R; ++r) {
    float* cr = c + static_cast<std::size_t>(r) * ldc;
    const __m512 ar = _mm512_set1_ps(sa[blk * mr512 + static_cast<std::size_t>(r)]);
    _mm512_storeu_ps(cr, _mm512_fmadd_ps(x0[r], _mm512_mul_ps(ar, s0), _mm512_loadu_ps(cr)));
    _mm512_storeu_ps(cr + 16, _mm512_fmadd_ps(x1[r], _mm512_mul_ps(ar, s1), _mm512_loadu_ps(cr + 16)));
  }
}

/// fp32 micro-kernel, R <= 12 rows x 32 columns. a: kc x 12 floats, b: kc x 32, c: R x 32 with
/// row stride ldc. Modes as kernel_scalar (gemm/kernels.hpp): l == 0 single-block (c loaded if
/// load_c), l > 0 K-block mode with scales sa[blk * 12 + r], sb[blk * 32 + col].
template <int R>
MINIFLOAT_TARGET_AVX512 void kernel_avx512_fp32(std::size_t kc, const float* a, const float* b, float* c,
                                                std::size_t ldc, bool load_c, std::size_t l, const float* sa,
                                                const float* sb) noexcept {
  __m512 x0[static_cast<std::size_t>(R)], x1[static_cast<std::size_t>(R)];
  const std::size_t step = l == 0 ? kc : l;
  for (std::size_t k0 = 0, blk = 0; k0 < kc; k0 += step, ++blk) {
    const std::size_t k1 = k0 + step < kc ? k0 + step : kc;
    begin_block<R>(x0, x1, c, ldc, l == 0, load_c);
    for (std::size_t k = k0; k < k1; ++k) {
      const __m512 b0 = _mm512_loadu_ps(b + k * nr512), b1 = _mm512_loadu_ps(b + k * nr512 + 16);
      const float* ak = a + k * mr512;
      MF_GEMM_UNROLL
    for (int r = 0; r < R; ++r) {
        const __m512 av = _mm512_set1_ps(ak[r]);
        x0[r] = _mm512_fmadd_ps(av, b0, x0[r]);
        x1[r] = _mm512_fmadd_ps(av, b1, x1[r]);
      }
    }
    if (l == 0) {
      store_block<R>(x0, x1, c, ldc);
      return;
    }
    scale_block<R>(x0, x1, c, ldc, blk, sa, sb);
  }
}

/// bf16-pair micro-kernel, R <= 12 rows x 32 columns: as kernel_avx512_fp32 with kp pair words
/// per row (a: kp x 12 words, b: kp x 32) and K-blocks of lp pairs (lp = L / 2; 0: one block).
template <int R>
MINIFLOAT_TARGET_AVX512 void kernel_avx512_bf16(std::size_t kp, const std::uint32_t* a, const std::uint32_t* b,
                                                float* c, std::size_t ldc, bool load_c, std::size_t lp,
                                                const float* sa, const float* sb) noexcept {
  __m512 x0[static_cast<std::size_t>(R)], x1[static_cast<std::size_t>(R)];
  const std::size_t step = lp == 0 ? kp : lp;
  for (std::size_t k0 = 0, blk = 0; k0 < kp; k0 += step, ++blk) {
    const std::size_t k1 = k0 + step < kp ? k0 + step : kp;
    begin_block<R>(x0, x1, c, ldc, lp == 0, load_c);
    for (std::size_t k = k0; k < k1; ++k) {
      const __m512bh b0 = reinterpret_cast<__m512bh>(_mm512_loadu_si512(b + k * nr512));
      const __m512bh b1 = reinterpret_cast<__m512bh>(_mm512_loadu_si512(b + k * nr512 + 16));
      const std::uint32_t* ak = a + k * mr512;
      MF_GEMM_UNROLL
    for (int r = 0; r < R; ++r) {
        const __m512bh av = reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(ak[r])));
        x0[r] = _mm512_dpbf16_ps(x0[r], av, b0);
        x1[r] = _mm512_dpbf16_ps(x1[r], av, b1);
      }
    }
    if (lp == 0) {
      store_block<R>(x0, x1, c, ldc);
      return;
    }
    scale_block<R>(x0, x1, c, ldc, blk, sa, sb);
  }
}

/// Rows [0, 8) of src (32-bit values, row stride ld) x columns [0, n) -> dst[j * P + r] for
/// r < lanes: 8 x 8 register transposes with masked stores, scalar for the column tail.
template <class T>
MINIFLOAT_TARGET_AVX512 void transpose_rows8(const T* src, std::size_t ld, std::size_t n, T* dst, std::size_t P,
                                             unsigned lanes) noexcept {
  static_assert(sizeof(T) == 4);
  const auto mask = static_cast<__mmask8>((1U << lanes) - 1U);
  const std::size_t n8 = n / 8 * 8;
  for (std::size_t j = 0; j < n8; j += 8) {
    __m256 r[8];
    for (std::size_t i = 0; i < 8; ++i)
      r[i] = _mm256_castsi256_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i * ld + j)));
    const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
    const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
    const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    const __m256 o[8] = {_mm256_permute2f128_ps(u0, u4, 0x20), _mm256_permute2f128_ps(u1, u5, 0x20),
                         _mm256_permute2f128_ps(u2, u6, 0x20), _mm256_permute2f128_ps(u3, u7, 0x20),
                         _mm256_permute2f128_ps(u0, u4, 0x31), _mm256_permute2f128_ps(u1, u5, 0x31),
                         _mm256_permute2f128_ps(u2, u6, 0x31), _mm256_permute2f128_ps(u3, u7, 0x31)};
    for (std::size_t q = 0; q < 8; ++q)
      _mm256_mask_storeu_epi32(dst + (j + q) * P, mask, _mm256_castps_si256(o[q]));
  }
  for (std::size_t j = n8; j < n; ++j)
    for (std::size_t i = 0; i < lanes; ++i) dst[j * P + i] = src[i * ld + j];
}

/// kc decoded values -> (kc + 1) / 2 pair words (bf16_pair; an odd tail pairs with +0).
MINIFLOAT_TARGET_AVX512 inline void pair_words(const float* x, std::size_t kc, std::uint32_t* w) noexcept {
  // 16-bit element 4j + 1 is the high half of x[2j], 4j + 3 that of x[2j + 1]: word j takes
  // them as its high and low halves.
  alignas(64) static constexpr std::uint16_t pick[32] = {
      3,  1,  7,  5,  11, 9,  15, 13, 19, 17, 23, 21, 27, 25, 31, 29,
      35, 33, 39, 37, 43, 41, 47, 45, 51, 49, 55, 53, 59, 57, 63, 61};
  const __m512i idx = _mm512_load_si512(pick);
  std::size_t j = 0;
  for (; 2 * j + 32 <= kc; j += 16) {
    const __m512i lo = _mm512_loadu_si512(x + 2 * j), hi = _mm512_loadu_si512(x + 2 * j + 16);
    _mm512_storeu_si512(w + j, _mm512_permutex2var_epi16(lo, idx, hi));
  }
  for (; 2 * j < kc; ++j) w[j] = bf16_pair(x[2 * j], 2 * j + 1 < kc ? x[2 * j + 1] : 0.0f);
}

/// 64 codes -> their 64 bfloat16 values in order, as 2 x 32 16-bit elements (two vpermi2b
/// lookups in the format's bf16 byte tables, simd/decode_tables.hpp, the sign and HiF8's NaN,
/// two vpermt2b interleaves). Codes past `valid` read as 0.
MINIFLOAT_TARGET_AVX512 inline void vbmi_decode64(const simd::detail::bf16_byte_table<128>& l, const std::uint8_t* p,
                                                  std::size_t valid, __m512i& w0, __m512i& w1) noexcept {
  alignas(64) static constexpr std::uint8_t order[2][64] = {
      {0,  64, 1,  65, 2,  66, 3,  67, 4,  68, 5,  69, 6,  70, 7,  71, 8,  72, 9,  73, 10, 74,
       11, 75, 12, 76, 13, 77, 14, 78, 15, 79, 16, 80, 17, 81, 18, 82, 19, 83, 20, 84, 21, 85,
       22, 86, 23, 87, 24, 88, 25, 89, 26, 90, 27, 91, 28, 92, 29, 93, 30, 94, 31, 95},
      {32, 96,  33, 97,  34, 98,  35, 99,  36, 100, 37, 101, 38, 102, 39, 103, 40, 104, 41, 105, 42, 106,
       43, 107, 44, 108, 45, 109, 46, 110, 47, 111, 48, 112, 49, 113, 50, 114, 51, 115, 52, 116, 53, 117,
       54, 118, 55, 119, 56, 120, 57, 121, 58, 122, 59, 123, 60, 124, 61, 125, 62, 126, 63, 127}};
  const __mmask64 m = valid >= 64 ? ~__mmask64{0} : (__mmask64{1} << valid) - 1U;
  const __m512i x = _mm512_maskz_loadu_epi8(m, p);
  __m512i hi = _mm512_permutex2var_epi8(_mm512_loadu_si512(l.hi.data()), x, _mm512_loadu_si512(l.hi.data() + 64));
  __m512i lo = _mm512_permutex2var_epi8(_mm512_loadu_si512(l.lo.data()), x, _mm512_loadu_si512(l.lo.data() + 64));
  if (l.sign7) hi = _mm512_ternarylogic_epi32(hi, x, _mm512_set1_epi8(static_cast<char>(0x80)), 0xF8);  // a | (b & c)
  if (l.nan80) {
    const __mmask64 nan = _mm512_cmpeq_epi8_mask(x, _mm512_set1_epi8(static_cast<char>(0x80)));
    hi = _mm512_mask_mov_epi8(hi, nan, _mm512_set1_epi8(0x7F));
    lo = _mm512_mask_mov_epi8(lo, nan, _mm512_set1_epi8(static_cast<char>(0xC0)));
  }
  w0 = _mm512_permutex2var_epi8(lo, _mm512_load_si512(order[0]), hi);
  w1 = _mm512_permutex2var_epi8(lo, _mm512_load_si512(order[1]), hi);
}

/// decode_fn of the 8- and 6-bit formats on AVX-512 VBMI (simd::detail::bf16_bytes_of(o.format)
/// != nullptr).
MINIFLOAT_TARGET_AVX512 inline void decode_run_vbmi(const operand& o, std::size_t row, std::size_t col, std::size_t n,
                                                    float* out) noexcept {
  const auto& l = *simd::detail::bf16_bytes_of(o.format);
  const std::uint8_t* p = o.codes + row * o.row_bytes + col;
  for (std::size_t i = 0; i < n; i += 64, p += 64, out += 64) {
    const std::size_t valid = n - i < 64 ? n - i : 64;
    __m512i w[2];
    vbmi_decode64(l, p, valid, w[0], w[1]);
    for (std::size_t q = 0; q < 4; ++q) {
      const __m256i h = q % 2 == 0 ? _mm512_castsi512_si256(w[q / 2]) : _mm512_extracti64x4_epi64(w[q / 2], 1);
      const std::size_t left = valid > 16 * q ? valid - 16 * q : 0;
      const auto mask = static_cast<__mmask16>(left >= 16 ? 0xFFFFU : (1U << left) - 1U);
      _mm512_mask_storeu_ps(out + 16 * q, mask, _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)));
    }
  }
}

/// decode_words_fn of the same formats: the values in order, each 32-bit lane's halves swapped.
MINIFLOAT_TARGET_AVX512 inline void decode_words_vbmi(const operand& o, std::size_t row, std::size_t col,
                                                      std::size_t n, std::uint32_t* out) noexcept {
  const auto& l = *simd::detail::bf16_bytes_of(o.format);
  const std::uint8_t* p = o.codes + row * o.row_bytes + col;
  for (std::size_t i = 0; i < n; i += 64, p += 64, out += 32) {
    const std::size_t valid = n - i < 64 ? n - i : 64, words = (valid + 1) / 2;
    __m512i w[2];
    vbmi_decode64(l, p, valid, w[0], w[1]);
    for (std::size_t q = 0; q < 2; ++q) {
      const std::size_t left = words > 16 * q ? words - 16 * q : 0;
      const auto mask = static_cast<__mmask16>(left >= 16 ? 0xFFFFU : (1U << left) - 1U);
      _mm512_mask_storeu_epi32(out + 16 * q, mask, _mm512_rol_epi32(w[q], 16));
    }
  }
}

/// Asks for the codes [k0, k0 + kc) of stored row `row` (the next strip to decode: rows of a
/// K-major operand are far apart, and the hardware prefetchers see only a few lines of each).
MINIFLOAT_TARGET_AVX512 inline void prefetch_codes(const operand& o, std::size_t row, std::size_t k0,
                                                   std::size_t kc) noexcept {
  const std::size_t b0 = o.bits == 4 ? k0 / 2 : k0, b1 = o.bits == 4 ? (k0 + kc + 1) / 2 : k0 + kc;
  const std::uint8_t* r = o.codes + row * o.row_bytes;
  for (std::size_t b = b0; b < b1; b += 64) _mm_prefetch(reinterpret_cast<const char*>(r + b), _MM_HINT_T0);
}

/// Asks for rows [m, m + rows) x columns [n, n + 32) of C (row stride ldc) ahead of the kernel
/// run on them (their loads would otherwise stall it: C is larger than L2).
inline void prefetch_c_rows(const float* c, std::size_t ldc, std::size_t m, std::size_t rows, std::size_t n) noexcept {
  for (std::size_t r = 0; r < rows; ++r) {
    const float* row = c + (m + r) * ldc + n;
    _mm_prefetch(reinterpret_cast<const char*>(row), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(row + 16), _MM_HINT_T0);
  }
}

/// Copies rows x cols (cols <= 32) floats between C (row stride ldc) and a 12 x 32 tile.
MINIFLOAT_TARGET_AVX512 inline void tile_in(const float* c, std::size_t ldc, std::size_t rows, std::size_t cols,
                                            float* t) noexcept {
  const __mmask16 m0 = static_cast<__mmask16>(cols >= 16 ? 0xFFFFU : (1U << cols) - 1U);
  const __mmask16 m1 = static_cast<__mmask16>(cols >= 32 ? 0xFFFFU : cols <= 16 ? 0U : (1U << (cols - 16)) - 1U);
  for (std::size_t r = 0; r < rows; ++r) {
    _mm512_store_ps(t + r * nr512, _mm512_maskz_loadu_ps(m0, c + r * ldc));
    _mm512_store_ps(t + r * nr512 + 16, _mm512_maskz_loadu_ps(m1, c + r * ldc + 16));
  }
}
/// rows x 32 tile = bias[0 .. cols) in every row (0 past cols or without bias).
MINIFLOAT_TARGET_AVX512 inline void tile_bias(const float* bias, std::size_t rows, std::size_t cols, float* t) noexcept {
  const __mmask16 m0 = static_cast<__mmask16>(cols >= 16 ? 0xFFFFU : (1U << cols) - 1U);
  const __mmask16 m1 = static_cast<__mmask16>(cols >= 32 ? 0xFFFFU : cols <= 16 ? 0U : (1U << (cols - 16)) - 1U);
  const __m512 b0 = bias != nullptr ? _mm512_maskz_loadu_ps(m0, bias) : _mm512_setzero_ps();
  const __m512 b1 = bias != nullptr ? _mm512_maskz_loadu_ps(m1, bias + 16) : _mm512_setzero_ps();
  for (std::size_t r = 0; r < rows; ++r) _mm512_store_ps(t + r * nr512, b0), _mm512_store_ps(t + r * nr512 + 16, b1);
}
MINIFLOAT_TARGET_AVX512 inline void tile_out(const float* t, std::size_t rows, std::size_t cols, float* c,
                                             std::size_t ldc) noexcept {
  const __mmask16 m0 = static_cast<__mmask16>(cols >= 16 ? 0xFFFFU : (1U << cols) - 1U);
  const __mmask16 m1 = static_cast<__mmask16>(cols >= 32 ? 0xFFFFU : cols <= 16 ? 0U : (1U << (cols - 16)) - 1U);
  for (std::size_t r = 0; r < rows; ++r) {
    _mm512_mask_storeu_ps(c + r * ldc, m0, _mm512_load_ps(t + r * nr512));
    _mm512_mask_storeu_ps(c + r * ldc + 16, m1, _mm512_load_ps(t + r * nr512 + 16));
  }
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

/// Packs rows [i0, i0 + rows) x k [k0, k0 + kc) of a k-major operand into panels of P rows,
/// [panel][word][P] (zero-padded), T = float (one value per word) or std::uint32_t (bf16
/// pairs, (kc + 1) / 2 words); block scales as pack_k_major (blocked.hpp). tmp: 8 * kc floats;
/// wtmp: 8 * (kc + 1) / 2 words (bf16 only).
template <std::size_t P, class T>
MINIFLOAT_TARGET_AVX512 void pack_k_major_avx512(const operand& o, decode_fn decode, decode_words_fn words,
                                                 std::size_t i0, std::size_t rows, std::size_t k0, std::size_t kc,
                                                 std::size_t l, T* dst, float* dst_scales, float* tmp,
                                                 std::uint32_t* wtmp) noexcept {
  constexpr bool pairs = std::is_same_v<T, std::uint32_t>;
  const std::size_t kw = pairs ? (kc + 1) / 2 : kc, panels = (rows + P - 1) / P;
  const std::size_t nb = l == 0 ? 1 : (kc + l - 1) / l;
  for (std::size_t q = 0; q < panels; ++q) {
    T* panel = dst + q * kw * P;
    for (std::size_t g = 0; g * 8 < P; ++g) {
      for (std::size_t r = 0; r < 8; ++r) {  // the strip after this one
        const std::size_t next = (g + 1) * 8 < P ? q * P + (g + 1) * 8 + r : (q + 1) * P + r;
        if (next < rows && ((g + 1) * 8 < P ? (g + 1) * 8 + r < P : r < P))
          prefetch_codes(o, i0 + next + o.outer_offset, k0, kc);
      }
      for (std::size_t r = 0; r < 8; ++r) {
        const std::size_t i = q * P + g * 8 + r;
        const bool real = g * 8 + r < P && i < rows;
        if constexpr (pairs) {
          std::uint32_t* wrow = wtmp + r * kw;
          if (!real) std::memset(wrow, 0, kw * sizeof(std::uint32_t));
          else if (words != nullptr) words(o, i0 + i + o.outer_offset, k0, kc, wrow);
          else decode(o, i0 + i + o.outer_offset, k0, kc, tmp), pair_words(tmp, kc, wrow);
        } else {
          float* row = tmp + r * kc;
          if (real) decode(o, i0 + i + o.outer_offset, k0, kc, row);
          else std::memset(row, 0, kc * sizeof(float));
        }
      }
      const unsigned lanes = static_cast<unsigned>(P - g * 8 < 8 ? P - g * 8 : 8);
      if constexpr (pairs) transpose_rows8(wtmp, kw, kw, panel + g * 8, P, lanes);
      else transpose_rows8(tmp, kc, kc, panel + g * 8, P, lanes);
    }
    if (l != 0) {
      std::size_t row_at[P];
      for (std::size_t r = 0; r < P; ++r) row_at[r] = q * P + r < rows ? o.scale_row(i0 + q * P + r) : 0;
      for (std::size_t j = 0; j < nb; ++j) {
        const std::size_t col_at = o.scale_col(k0 + j * l);
        float* d = dst_scales + (q * nb + j) * P;
        for (std::size_t r = 0; r < P; ++r) d[r] = q * P + r < rows ? o.scale_at(row_at[r] + col_at) : 0.0f;
      }
    }
  }
}

/// Packs B stored (K, N), columns [n0, n0 + cols) x k [k0, k0 + kc), into panels of 32 columns
/// (T as pack_k_major_avx512). tmp: 64 floats.
template <class T>
MINIFLOAT_TARGET_AVX512 void pack_kn_avx512(const operand& b, decode_fn decode, std::size_t n0, std::size_t cols,
                                            std::size_t k0, std::size_t kc, std::size_t l, T* dst, float* dst_scales,
                                            float* tmp) noexcept {
  constexpr bool pairs = std::is_same_v<T, std::uint32_t>;
  const std::size_t kw = pairs ? (kc + 1) / 2 : kc, panels = (cols + nr512 - 1) / nr512;
  const std::size_t nb = l == 0 ? 1 : (kc + l - 1) / l;
  for (std::size_t q = 0; q < panels; ++q) {
    T* panel = dst + q * kw * nr512;
    const std::size_t c0 = q * nr512, w = cols - c0 < nr512 ? cols - c0 : nr512;
    for (std::size_t j = 0; j < kw; ++j) {
      T* out = panel + j * nr512;
      if constexpr (pairs) {
        std::memset(tmp, 0, 2 * nr512 * sizeof(float));
        decode(b, k0 + 2 * j, n0 + c0 + b.outer_offset, w, tmp);
        if (2 * j + 1 < kc) decode(b, k0 + 2 * j + 1, n0 + c0 + b.outer_offset, w, tmp + nr512);
        for (std::size_t c = 0; c < nr512; ++c) out[c] = bf16_pair(tmp[c], tmp[nr512 + c]);
      } else {
        decode(b, k0 + j, n0 + c0 + b.outer_offset, w, out);
        for (std::size_t c = w; c < nr512; ++c) out[c] = 0.0f;
      }
    }
    if (l != 0) {
      std::size_t row_at[nr512];
      for (std::size_t c = 0; c < nr512; ++c) row_at[c] = c < w ? b.scale_row(n0 + c0 + c) : 0;
      for (std::size_t j = 0; j < nb; ++j) {
        const std::size_t col_at = b.scale_col(k0 + j * l);
        float* d = dst_scales + (q * nb + j) * nr512;
        for (std::size_t c = 0; c < nr512; ++c) d[c] = c < w ? b.scale_at(row_at[c] + col_at) : 0.0f;
      }
    }
  }
}

#undef MF_GEMM_UNROLL
#endif  // MINIFLOAT_SIMD_X86

}  // namespace minifloat::detail::gemm
