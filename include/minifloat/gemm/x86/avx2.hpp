#pragma once
// The AVX2 versions of gemm/kernels.hpp's building blocks, each bit-identical to its scalar twin
// there, plus the AVX2-only routines of the blocked GEMM and the GEMV (blocked.hpp):
//   decode_run_avx2 n consecutive codes of one stored row -> n floats
//   kernel_avx2     the 6 x 16 micro-kernel (12 ymm accumulators, one broadcast + two fma per k)
//   pack_rows_avx2  decode 8 rows, 8 x 8 float transposes into [k][P] panels
//   gemv_nk_avx2    GEMV for B stored (N, K): byte transposes, decode, 4 fma chains of 8 outputs
//
// AVX2 decoders:
//   float8_e5m2   code << 8 is the binary16 with the same value: vcvtph2ps (F16C).
//   float8_e4m3fn (code & 0x7F) << 7 | sign << 8 is binary16 with value 2^-8 * x (the E4M3 exponent
//                 field lands in the low 4 bits of binary16's, bias 7 vs 15; subnormals map to
//                 subnormals), then * 2^8 (exact; the GEMV folds it into A instead); magnitude
//                 0x7F (NaN) is forced to NaN.
//   float4_e2m1fn 4 bytes broadcast, vpsrlvd by 0,4,..,28 gives the 8 nibbles in element order
//                 (element 2i = low nibble of byte i); vpermps on the 8 magnitudes, sign by xor.
//   hifloat8, float6_*  32 codes at a time through a 128-entry vpshufb table to bfloat16
//                 (lut128, simd/decode_tables.hpp: 8 sub-tables combined by XOR telescoping),
//                 vpgatherdd from the 256-entry decode table for a tail of 8, scalar below that.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "../kernels.hpp"
#include "../../simd/decode_tables.hpp"

#if MINIFLOAT_SIMD_X86
#include <immintrin.h>
#endif

namespace minifloat::detail::gemm {

using simd::detail::lut128;
using simd::detail::lut128_of;

#if MINIFLOAT_SIMD_X86

template <decode_kind Kind>
MINIFLOAT_TARGET_AVX2 inline __m256 decode8_avx2(const std::uint8_t* p, const float* table) noexcept {
  if constexpr (Kind == decode_kind::fp4) {
    std::uint32_t w;
    std::memcpy(&w, p, 4);
    const __m256i shifts = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
    const __m256i nib = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(w)), shifts),
                                         _mm256_set1_epi32(0xF));
    const __m256 mag = _mm256_permutevar8x32_ps(_mm256_loadu_ps(table), nib);  // table[0..7] = magnitudes
    const __m256i sign = _mm256_slli_epi32(_mm256_srli_epi32(nib, 3), 31);
    return _mm256_xor_ps(mag, _mm256_castsi256_ps(sign));
  } else {
    const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
    if constexpr (Kind == decode_kind::e5m2) {
      return _mm256_cvtph_ps(_mm_slli_epi16(_mm_cvtepu8_epi16(bytes), 8));
    } else if constexpr (Kind == decode_kind::e4m3) {
      const __m128i w = _mm_cvtepu8_epi16(bytes);
      const __m128i mag = _mm_slli_epi16(_mm_and_si128(w, _mm_set1_epi16(0x7F)), 7);
      const __m128i sign = _mm_slli_epi16(_mm_and_si128(w, _mm_set1_epi16(0x80)), 8);
      const __m128i is_nan = _mm_cmpeq_epi16(mag, _mm_set1_epi16(0x3F80));
      const __m128i h = _mm_or_si128(_mm_or_si128(mag, sign), _mm_and_si128(is_nan, _mm_set1_epi16(0x7E00)));
      return _mm256_mul_ps(_mm256_cvtph_ps(h), _mm256_set1_ps(256.0f));
    } else {
      return _mm256_i32gather_ps(table, _mm256_cvtepu8_epi32(bytes), 4);
    }
  }
}


/// `groups` x 32 codes -> floats through the lut128 (see there): 16 vpshufb + 16 xor per 32 codes.
MINIFLOAT_TARGET_AVX2 inline void decode32_lut_avx2(const lut128& l, const std::uint8_t* p, std::size_t groups,
                                                          float* out) noexcept {
  __m256i dh[8], dl[8];
  for (int h = 0; h < 8; ++h) {
    dh[h] = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(l.dh[h])));
    dl[h] = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(l.dl[h])));
  }
  const __m256i m7f = _mm256_set1_epi8(0x7F), m80 = _mm256_set1_epi8(static_cast<char>(0x80)),
                step = _mm256_set1_epi8(16), nan_h = _mm256_set1_epi8(0x7F),
                nan_l = _mm256_set1_epi8(static_cast<char>(0xC0));
  for (std::size_t g = 0; g < groups; ++g, p += 32, out += 32) {
    // qwords 0,2 | 1,3: after the in-lane byte unpack below, elements come out in order.
    const __m256i x = _mm256_permute4x64_epi64(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)), 0xD8);
    const __m256i c = _mm256_and_si256(x, m7f);
    __m256i idx = _mm256_add_epi8(c, _mm256_set1_epi8(0x70));  // h = 0: c + 0x80 - 16
    __m256i hi = _mm256_shuffle_epi8(dh[0], idx), lo = _mm256_shuffle_epi8(dl[0], idx);
#define MF_GEMM_LUT_STEP(h)                                               \
  idx = _mm256_sub_epi8(idx, step);                                       \
  hi = _mm256_xor_si256(hi, _mm256_shuffle_epi8(dh[h], idx));             \
  lo = _mm256_xor_si256(lo, _mm256_shuffle_epi8(dl[h], idx));
    MF_GEMM_LUT_STEP(1) MF_GEMM_LUT_STEP(2) MF_GEMM_LUT_STEP(3) MF_GEMM_LUT_STEP(4)
    MF_GEMM_LUT_STEP(5) MF_GEMM_LUT_STEP(6) MF_GEMM_LUT_STEP(7)
#undef MF_GEMM_LUT_STEP
    if (l.sign7) {
      const __m256i is_nan = _mm256_cmpeq_epi8(x, m80);  // hifloat8 0x80
      hi = _mm256_or_si256(hi, _mm256_and_si256(x, m80));
      hi = _mm256_blendv_epi8(hi, nan_h, is_nan);
      lo = _mm256_blendv_epi8(lo, nan_l, is_nan);
    }
    const __m256i w0 = _mm256_unpacklo_epi8(lo, hi), w1 = _mm256_unpackhi_epi8(lo, hi);  // bfloat16, in order
    _mm256_storeu_ps(out, _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm256_castsi256_si128(w0)), 16)));
    _mm256_storeu_ps(out + 8, _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm256_extracti128_si256(w0, 1)), 16)));
    _mm256_storeu_ps(out + 16, _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm256_castsi256_si128(w1)), 16)));
    _mm256_storeu_ps(out + 24, _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm256_extracti128_si256(w1, 1)), 16)));
  }
}

template <decode_kind Kind>
MINIFLOAT_TARGET_AVX2 void decode_run_avx2_impl(const operand& o, std::size_t row, std::size_t col,
                                                     std::size_t n, float* out) noexcept {
  const std::uint8_t* r = o.codes + row * o.row_bytes;
  const float* t = o.table->data();
  std::size_t i = 0;
  if constexpr (Kind == decode_kind::fp4) {
    if ((col & 1) != 0) {  // odd nibble start: scalar
      decode_run_scalar(o, row, col, n, out);
      return;
    }
    // Bytes [col/2, col/2 + 4) per 8 elements; stay inside the row (n may end mid-row).
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, decode8_avx2<Kind>(r + (col + i) / 2, t));
  } else {
    if constexpr (Kind == decode_kind::table) {
      const lut128& lut = lut128_of(o.format);
      if (lut.ok && n >= 32) {
        decode32_lut_avx2(lut, r + col, n / 32, out);
        i = (n / 32) * 32;
      }
    }
    // 8 bytes per load: keep the load inside the row.
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, decode8_avx2<Kind>(r + col + i, t));
  }
  if (i < n) decode_run_scalar(o, row, col + i, n - i, out + i);
}

inline decode_fn decode_avx2_for(format_id f) noexcept {
  switch (decode_kind_of(f)) {
    case decode_kind::e4m3: return &decode_run_avx2_impl<decode_kind::e4m3>;
    case decode_kind::e5m2: return &decode_run_avx2_impl<decode_kind::e5m2>;
    case decode_kind::fp4: return &decode_run_avx2_impl<decode_kind::fp4>;
    default: return &decode_run_avx2_impl<decode_kind::table>;
  }
}

template <int R>
MINIFLOAT_TARGET_AVX2 void kernel_avx2(std::size_t kc, const float* a, const float* b, float* c, std::size_t ldc,
                                            bool load_c, std::size_t l, const float* sa, const float* sb) noexcept {
  if (l == 0) {
    __m256 c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51;
    c00 = c01 = c10 = c11 = c20 = c21 = c30 = c31 = c40 = c41 = c50 = c51 = _mm256_setzero_ps();
#define MF_GEMM_LOAD(r)                            \
  if (R > r && load_c) {                           \
    c##r##0 = _mm256_loadu_ps(c + r * ldc);        \
    c##r##1 = _mm256_loadu_ps(c + r * ldc + 8);    \
  }
    MF_GEMM_LOAD(0) MF_GEMM_LOAD(1) MF_GEMM_LOAD(2) MF_GEMM_LOAD(3) MF_GEMM_LOAD(4) MF_GEMM_LOAD(5)
#undef MF_GEMM_LOAD
    for (std::size_t k = 0; k < kc; ++k) {
      const __m256 b0 = _mm256_loadu_ps(b + k * nr), b1 = _mm256_loadu_ps(b + k * nr + 8);
      const float* ak = a + k * mr;
#define MF_GEMM_STEP(r)                                   \
  if (R > r) {                                            \
    const __m256 ar = _mm256_broadcast_ss(ak + r);        \
    c##r##0 = _mm256_fmadd_ps(ar, b0, c##r##0);           \
    c##r##1 = _mm256_fmadd_ps(ar, b1, c##r##1);           \
  }
      MF_GEMM_STEP(0) MF_GEMM_STEP(1) MF_GEMM_STEP(2) MF_GEMM_STEP(3) MF_GEMM_STEP(4) MF_GEMM_STEP(5)
    }
#define MF_GEMM_STORE(r)                           \
  if (R > r) {                                     \
    _mm256_storeu_ps(c + r * ldc, c##r##0);        \
    _mm256_storeu_ps(c + r * ldc + 8, c##r##1);    \
  }
    MF_GEMM_STORE(0) MF_GEMM_STORE(1) MF_GEMM_STORE(2) MF_GEMM_STORE(3) MF_GEMM_STORE(4) MF_GEMM_STORE(5)
#undef MF_GEMM_STORE
    return;
  }
  for (std::size_t k0 = 0, blk = 0; k0 < kc; k0 += l, ++blk) {
    const std::size_t k1 = k0 + l < kc ? k0 + l : kc;
    __m256 c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51;
    c00 = c01 = c10 = c11 = c20 = c21 = c30 = c31 = c40 = c41 = c50 = c51 = _mm256_setzero_ps();
    for (std::size_t k = k0; k < k1; ++k) {
      const __m256 b0 = _mm256_loadu_ps(b + k * nr), b1 = _mm256_loadu_ps(b + k * nr + 8);
      const float* ak = a + k * mr;
      MF_GEMM_STEP(0) MF_GEMM_STEP(1) MF_GEMM_STEP(2) MF_GEMM_STEP(3) MF_GEMM_STEP(4) MF_GEMM_STEP(5)
    }
    const __m256 s0 = _mm256_loadu_ps(sb + blk * nr), s1 = _mm256_loadu_ps(sb + blk * nr + 8);
#define MF_GEMM_SCALE(r)                                                                                 \
  if (R > r) {                                                                                           \
    const __m256 ar = _mm256_broadcast_ss(sa + blk * mr + r);                                            \
    _mm256_storeu_ps(c + r * ldc, _mm256_fmadd_ps(c##r##0, _mm256_mul_ps(ar, s0), _mm256_loadu_ps(c + r * ldc))); \
    _mm256_storeu_ps(c + r * ldc + 8,                                                                    \
                     _mm256_fmadd_ps(c##r##1, _mm256_mul_ps(ar, s1), _mm256_loadu_ps(c + r * ldc + 8)));  \
  }
    MF_GEMM_SCALE(0) MF_GEMM_SCALE(1) MF_GEMM_SCALE(2) MF_GEMM_SCALE(3) MF_GEMM_SCALE(4) MF_GEMM_SCALE(5)
#undef MF_GEMM_SCALE
  }
#undef MF_GEMM_STEP
}


/// Element part of packing rows [i0, i0 + rows) x k [k0, k0 + kc) of a k-major operand into
/// panels of P rows ([panel][k][P], zero-padded): 8 rows decoded into tmp (8 x kc floats), then
/// 8 x 8 register transposes. P = 16 stores two 8-row halves; P = 6 stores 8 lanes per k with
/// the 2 extra lanes overlapping the next k (overwritten next; dst has 2 floats of slack).
template <std::size_t P>
MINIFLOAT_TARGET_AVX2 void pack_rows_avx2(const operand& o, decode_fn decode, std::size_t i0, std::size_t rows,
                                               std::size_t k0, std::size_t kc, float* dst, float* tmp) noexcept {
  static_assert(P == 6 || P == 16);
  const std::size_t panels = (rows + P - 1) / P, k8 = kc / 8 * 8;
  for (std::size_t q = 0; q < panels; ++q) {
    float* panel = dst + q * kc * P;
    for (std::size_t g = 0; g * 8 < P; ++g) {
      for (std::size_t r = 0; r < 8; ++r) {
        const std::size_t i = q * P + g * 8 + r;
        if (g * 8 + r < P && i < rows) decode(o, i0 + i + o.outer_offset, k0, kc, tmp + r * kc);
        else std::memset(tmp + r * kc, 0, kc * sizeof(float));
      }
      float* base = panel + g * 8;
      for (std::size_t k = 0; k < k8; k += 8) {
        const __m256 r0 = _mm256_loadu_ps(tmp + k), r1 = _mm256_loadu_ps(tmp + kc + k),
                     r2 = _mm256_loadu_ps(tmp + 2 * kc + k), r3 = _mm256_loadu_ps(tmp + 3 * kc + k),
                     r4 = _mm256_loadu_ps(tmp + 4 * kc + k), r5 = _mm256_loadu_ps(tmp + 5 * kc + k),
                     r6 = _mm256_loadu_ps(tmp + 6 * kc + k), r7 = _mm256_loadu_ps(tmp + 7 * kc + k);
        const __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
        const __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
        const __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
        const __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
        const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
        const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
        const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
        const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
        _mm256_storeu_ps(base + (k + 0) * P, _mm256_permute2f128_ps(u0, u4, 0x20));
        _mm256_storeu_ps(base + (k + 1) * P, _mm256_permute2f128_ps(u1, u5, 0x20));
        _mm256_storeu_ps(base + (k + 2) * P, _mm256_permute2f128_ps(u2, u6, 0x20));
        _mm256_storeu_ps(base + (k + 3) * P, _mm256_permute2f128_ps(u3, u7, 0x20));
        _mm256_storeu_ps(base + (k + 4) * P, _mm256_permute2f128_ps(u0, u4, 0x31));
        _mm256_storeu_ps(base + (k + 5) * P, _mm256_permute2f128_ps(u1, u5, 0x31));
        _mm256_storeu_ps(base + (k + 6) * P, _mm256_permute2f128_ps(u2, u6, 0x31));
        _mm256_storeu_ps(base + (k + 7) * P, _mm256_permute2f128_ps(u3, u7, 0x31));
      }
      const std::size_t lanes = P - g * 8 < 8 ? P - g * 8 : 8;
      for (std::size_t k = k8; k < kc; ++k)
        for (std::size_t r = 0; r < lanes; ++r) base[k * P + r] = tmp[r * kc + k];
    }
  }
}


/// The lut128 in registers, for kernels that decode many groups.
struct lut_regs {
  __m256i dh[8], dl[8];
};

MINIFLOAT_TARGET_AVX2 inline void load_lut(const lut128& l, lut_regs& r) noexcept {
  for (int h = 0; h < 8; ++h) {
    r.dh[h] = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(l.dh[h])));
    r.dl[h] = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(l.dl[h])));
  }
}

/// 32 codes -> the high (hi) and low (lo) bytes of their bfloat16 values, byte for byte in the
/// codes' positions, through the lut128 (see decode32_lut_avx2).
MINIFLOAT_TARGET_AVX2 inline void lut_bytes(const lut_regs& l, bool sign7, __m256i x, __m256i& hi,
                                                 __m256i& lo) noexcept {
  const __m256i c = _mm256_and_si256(x, _mm256_set1_epi8(0x7F));
  const __m256i step = _mm256_set1_epi8(16);
  __m256i idx = _mm256_add_epi8(c, _mm256_set1_epi8(0x70));
  hi = _mm256_shuffle_epi8(l.dh[0], idx), lo = _mm256_shuffle_epi8(l.dl[0], idx);
  for (int h = 1; h < 8; ++h) {
    idx = _mm256_sub_epi8(idx, step);
    hi = _mm256_xor_si256(hi, _mm256_shuffle_epi8(l.dh[h], idx));
    lo = _mm256_xor_si256(lo, _mm256_shuffle_epi8(l.dl[h], idx));
  }
  if (sign7) {
    const __m256i m80 = _mm256_set1_epi8(static_cast<char>(0x80));
    const __m256i is_nan = _mm256_cmpeq_epi8(x, m80);
    hi = _mm256_or_si256(hi, _mm256_and_si256(x, m80));
    hi = _mm256_blendv_epi8(hi, _mm256_set1_epi8(0x7F), is_nan);
    lo = _mm256_blendv_epi8(lo, _mm256_set1_epi8(static_cast<char>(0xC0)), is_nan);
  }
}

/// 32 codes (a ymm, in order) -> 4 x 8 floats in order, through the lut128 (see decode32_lut_avx2).
MINIFLOAT_TARGET_AVX2 inline void lut_decode32(const lut_regs& l, bool sign7, __m256i raw, __m256* out) noexcept {
  // qwords 0,2 | 1,3: after the in-lane byte unpack below, elements come out in order.
  __m256i hi, lo;
  lut_bytes(l, sign7, _mm256_permute4x64_epi64(raw, 0xD8), hi, lo);
  const __m256i w0 = _mm256_unpacklo_epi8(lo, hi), w1 = _mm256_unpackhi_epi8(lo, hi);
  out[0] = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm256_castsi256_si128(w0)), 16));
  out[1] = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm256_extracti128_si256(w0, 1)), 16));
  out[2] = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm256_castsi256_si128(w1)), 16));
  out[3] = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm256_extracti128_si256(w1, 1)), 16));
}

/// 8 rows x 8 bytes (rows[r] + off) -> {k0,k1}, {k2,k3}, {k4,k5}, {k6,k7}: 16 bytes each, the 8
/// rows' byte k in order (an 8 x 8 byte transpose in three unpack stages).
MINIFLOAT_TARGET_AVX2 inline void transpose_bytes_8x8(const std::uint8_t* const* rows, std::size_t off,
                                                          __m128i* out) noexcept {
  __m128i x[8];
  for (int r = 0; r < 8; ++r) x[r] = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(rows[r] + off));
  const __m128i a0 = _mm_unpacklo_epi8(x[0], x[1]), a1 = _mm_unpacklo_epi8(x[2], x[3]);
  const __m128i a2 = _mm_unpacklo_epi8(x[4], x[5]), a3 = _mm_unpacklo_epi8(x[6], x[7]);
  const __m128i b0 = _mm_unpacklo_epi16(a0, a1), b1 = _mm_unpackhi_epi16(a0, a1);
  const __m128i b2 = _mm_unpacklo_epi16(a2, a3), b3 = _mm_unpackhi_epi16(a2, a3);
  out[0] = _mm_unpacklo_epi32(b0, b2), out[1] = _mm_unpackhi_epi32(b0, b2);
  out[2] = _mm_unpacklo_epi32(b1, b3), out[3] = _mm_unpackhi_epi32(b1, b3);
}

/// float8_e5m2, 16 bytes -> 16 floats (lo: bytes 0-7, hi: bytes 8-15): code << 8 is the binary16.
MINIFLOAT_TARGET_AVX2 inline void decode16_e5m2(__m128i bytes, __m256& lo, __m256& hi) noexcept {
  const __m256i h = _mm256_slli_epi16(_mm256_cvtepu8_epi16(bytes), 8);
  lo = _mm256_cvtph_ps(_mm256_castsi256_si128(h));
  hi = _mm256_cvtph_ps(_mm256_extracti128_si256(h, 1));
}

/// float8_e4m3fn, 16 bytes -> 16 floats of value 2^-8 * x (the GEMV multiplies A by 2^8
/// instead: a * 2^8 and b * 2^-8 are exact, so every product, and so every sum, is unchanged).
/// (code << 8) arithmetic-shifted right by one puts the sign in bits 15 and 14 and the other
/// 7 bits at 13..7; clearing bit 14 leaves the binary16 pattern of 2^-8 * x.
MINIFLOAT_TARGET_AVX2 inline void decode16_e4m3_scaled(__m128i bytes, __m256& lo, __m256& hi) noexcept {
  const __m256i w = _mm256_slli_epi16(_mm256_cvtepu8_epi16(bytes), 8);
  __m256i h = _mm256_and_si256(_mm256_srai_epi16(w, 1), _mm256_set1_epi16(static_cast<short>(0xBF80)));
  const __m256i is_nan = _mm256_cmpeq_epi16(_mm256_and_si256(h, _mm256_set1_epi16(0x7FFF)), _mm256_set1_epi16(0x3F80));
  h = _mm256_or_si256(h, _mm256_and_si256(is_nan, _mm256_set1_epi16(0x7E00)));
  lo = _mm256_cvtph_ps(_mm256_castsi256_si128(h));
  hi = _mm256_cvtph_ps(_mm256_extracti128_si256(h, 1));
}

/// FP4: 8 bytes (one per row) -> the low-nibble values and the high-nibble values.
MINIFLOAT_TARGET_AVX2 inline void decode_fp4_pairs(__m128i bytes, __m256 mags, __m256& lo, __m256& hi) noexcept {
  const __m256i b = _mm256_cvtepu8_epi32(bytes);
  const __m256i l4 = _mm256_and_si256(b, _mm256_set1_epi32(0xF)), h4 = _mm256_srli_epi32(b, 4);
  lo = _mm256_xor_ps(_mm256_permutevar8x32_ps(mags, l4), _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_srli_epi32(l4, 3), 31)));
  hi = _mm256_xor_ps(_mm256_permutevar8x32_ps(mags, h4), _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_srli_epi32(h4, 3), 31)));
}

/// GEMV for B stored (N, K), 32 rows of B per pass in 4 groups of 8 lanes, m_rows (<= 8) rows
/// of A (a: decoded A, row-major m_rows x K, unscaled; times 2^8 when B is float8_e4m3fn). Bit-identical to the micro-kernel path:
/// each output is one fma chain over k ascending (8 outputs per vector). The codes of 8 rows x
/// 8 bytes are transposed as bytes first, so decoding yields the k-columns directly.
///   l == 0: single-block mode, c[m][n] = the raw sum (the epilogue scales it).
///   l > 0 (a multiple of 32): K-block mode, c holds the running acc (bias-initialised);
///           per block acc = fma(p, sa[m][j] * sb[n][j], acc); sa: m_rows x nblocks.
template <decode_kind Kind>
MINIFLOAT_TARGET_AVX2 void gemv_nk_avx2(const operand& b, const float* a, std::size_t m_rows, std::size_t k_all,
                                             std::size_t n0, std::size_t n1, std::size_t l, const float* sa,
                                             std::size_t nblocks, float* c, std::size_t ldc) noexcept {
  constexpr std::size_t groups = 4, rows_per_pass = 8 * groups;  // the fma loop below is written for 4
  constexpr std::size_t kstep = Kind == decode_kind::fp4 ? 16 : 8;  // k per 8 bytes
  const lut128& lut = lut128_of(b.format);
  lut_regs lr;
  if constexpr (Kind == decode_kind::table) load_lut(lut, lr);
  const __m256 mags = _mm256_loadu_ps(b.table->data());  // fp4: the 8 magnitudes
  // e4m3 columns are decoded as 2^-8 * b (and A comes in multiplied by 2^8): see decode16_e4m3_scaled.
  const float b_unit = Kind == decode_kind::e4m3 ? 0x1p-8f : 1.0f;
  std::vector<std::uint8_t> zero_row(b.row_bytes + 8, 0);
  const std::size_t k_vec = k_all / kstep * kstep;  // vector part; the rest is scalar
  alignas(32) float out[rows_per_pass];
  alignas(32) float tail[16 * 8];
  const std::uint8_t* rows[rows_per_pass];
  alignas(32) std::uint8_t stage[rows_per_pass * 64];
  const std::uint8_t* staged[rows_per_pass];
  for (std::size_t r = 0; r < rows_per_pass; ++r) staged[r] = stage + r * 64;
  for (std::size_t g0 = n0; g0 < n1; g0 += rows_per_pass) {
    const std::size_t valid = n1 - g0 < rows_per_pass ? n1 - g0 : rows_per_pass;
    std::size_t scale_row[rows_per_pass];  // grid offset of each row's scales (no division per block)
    for (std::size_t r = 0; r < rows_per_pass; ++r) {
      rows[r] = r < valid ? b.codes + (g0 + r + b.outer_offset) * b.row_bytes : zero_row.data();
      scale_row[r] = r < valid ? ((g0 + r + b.outer_offset) / b.tile_outer) * b.stride_outer : 0;
    }
    __m256 acc[8][groups], part[8][groups];
    for (std::size_t m = 0; m < m_rows; ++m) {
      for (std::size_t r = 0; r < rows_per_pass; ++r) out[r] = l != 0 && r < valid ? c[m * ldc + g0 + r] : 0.0f;
      for (std::size_t q = 0; q < groups; ++q) acc[m][q] = _mm256_load_ps(out + 8 * q), part[m][q] = _mm256_setzero_ps();
    }
    for (std::size_t k0 = 0; k0 < k_all; k0 += kstep) {
      if (l != 0 && k0 % l == 0)
        for (std::size_t m = 0; m < m_rows; ++m)
          for (std::size_t q = 0; q < groups; ++q) part[m][q] = _mm256_setzero_ps();
      const std::size_t steps = k0 < k_vec ? kstep : k_all - k0;
      // Stage the next 64 bytes of all 32 rows in a contiguous buffer: rows of 4 KiB (or any
      // multiple) all map to the same L1 set, and reading them 8 bytes at a time straight from
      // memory would evict each line 7 times before it is used up. Prefetch 1 KiB ahead into L2.
      const std::size_t byte0 = Kind == decode_kind::fp4 ? k0 / 2 : k0;
      if (byte0 % 64 == 0 && k0 < k_vec) {
        const std::size_t vec_bytes = Kind == decode_kind::fp4 ? k_vec / 2 : k_vec;
        const std::size_t nbytes = vec_bytes - byte0 < 64 ? vec_bytes - byte0 : 64;
        for (std::size_t r = 0; r < rows_per_pass; ++r) {
          if (nbytes == 64) {
            _mm256_store_si256(reinterpret_cast<__m256i*>(stage + r * 64),
                               _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[r] + byte0)));
            _mm256_store_si256(reinterpret_cast<__m256i*>(stage + r * 64 + 32),
                               _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[r] + byte0 + 32)));
          } else {
            std::memcpy(stage + r * 64, rows[r] + byte0, nbytes);
          }
          if (r < valid && byte0 + 1024 < b.row_bytes)
            _mm_prefetch(reinterpret_cast<const char*>(rows[r] + byte0 + 1024), _MM_HINT_T1);
        }
      }
      // Decode all groups' columns first, then run the four fma chains interleaved (a single
      // chain per group would wait on the fma latency).
      alignas(32) __m256 col[groups][16];
      for (std::size_t q = 0; q < groups; ++q) {
        if (k0 < k_vec) {
          __m128i t[4];
          transpose_bytes_8x8(staged + 8 * q, byte0 % 64, t);
          if constexpr (Kind == decode_kind::table) {
            lut_decode32(lr, lut.sign7, _mm256_set_m128i(t[1], t[0]), col[q]);
            lut_decode32(lr, lut.sign7, _mm256_set_m128i(t[3], t[2]), col[q] + 4);
          } else if constexpr (Kind == decode_kind::fp4) {
            for (int j = 0; j < 4; ++j) {
              decode_fp4_pairs(t[j], mags, col[q][4 * j], col[q][4 * j + 1]);
              decode_fp4_pairs(_mm_unpackhi_epi64(t[j], t[j]), mags, col[q][4 * j + 2], col[q][4 * j + 3]);
            }
          } else {
            for (int j = 0; j < 4; ++j) {
              if constexpr (Kind == decode_kind::e4m3) decode16_e4m3_scaled(t[j], col[q][2 * j], col[q][2 * j + 1]);
              else decode16_e5m2(t[j], col[q][2 * j], col[q][2 * j + 1]);
            }
          }
        } else {  // K tail: scalar decode into lanes
          for (std::size_t r = 0; r < 8; ++r) {
            const std::size_t row = 8 * q + r;
            for (std::size_t j = 0; j < steps; ++j)
              tail[j * 8 + r] = row < valid ? decode_run_scalar_one(b, g0 + row + b.outer_offset, k0 + j) * b_unit : 0.0f;
          }
          for (std::size_t j = 0; j < steps; ++j) col[q][j] = _mm256_load_ps(tail + j * 8);
        }
      }
      for (std::size_t m = 0; m < m_rows; ++m) {
        __m256* const x = l == 0 ? acc[m] : part[m];
        __m256 x0 = x[0], x1 = x[1], x2 = x[2], x3 = x[3];
        const float* am = a + m * k_all + k0;
        for (std::size_t j = 0; j < steps; ++j) {
          const __m256 av = _mm256_broadcast_ss(am + j);
          x0 = _mm256_fmadd_ps(av, col[0][j], x0);
          x1 = _mm256_fmadd_ps(av, col[1][j], x1);
          x2 = _mm256_fmadd_ps(av, col[2][j], x2);
          x3 = _mm256_fmadd_ps(av, col[3][j], x3);
        }
        x[0] = x0, x[1] = x1, x[2] = x2, x[3] = x3;
      }
      if (l != 0 && ((k0 + kstep) % l == 0 || k0 + kstep >= k_all)) {
        const std::size_t blk = k0 / l;
        const std::size_t kofs = (k0 / b.tile_k) * b.stride_k;
        for (std::size_t r = 0; r < rows_per_pass; ++r)
          out[r] = r >= valid ? 0.0f : b.mx ? mx_scale_value(b.mx_scales[scale_row[r] + kofs]) : b.scales[scale_row[r] + kofs];
        for (std::size_t m = 0; m < m_rows; ++m) {
          const __m256 av = _mm256_set1_ps(sa[m * nblocks + blk]);
          for (std::size_t q = 0; q < groups; ++q)
            acc[m][q] = _mm256_fmadd_ps(part[m][q], _mm256_mul_ps(av, _mm256_load_ps(out + 8 * q)), acc[m][q]);
        }
      }
    }
    for (std::size_t m = 0; m < m_rows; ++m) {
      for (std::size_t q = 0; q < groups; ++q) _mm256_store_ps(out + 8 * q, acc[m][q]);
      for (std::size_t r = 0; r < valid; ++r) c[m * ldc + g0 + r] = out[r];
    }
  }
}

inline gemv_nk_fn gemv_nk_avx2_for(format_id f) noexcept {
  switch (decode_kind_of(f)) {
    case decode_kind::e4m3: return &gemv_nk_avx2<decode_kind::e4m3>;
    case decode_kind::e5m2: return &gemv_nk_avx2<decode_kind::e5m2>;
    case decode_kind::fp4: return &gemv_nk_avx2<decode_kind::fp4>;
    default: return lut128_of(f).ok ? &gemv_nk_avx2<decode_kind::table> : nullptr;
  }
}

/// Single-block epilogue for one row: c[n] = fma(c[n], sa * sb[n], bias[n]) (bias may be null).
MINIFLOAT_TARGET_AVX2 inline void epilogue_row_avx2(float* c, std::size_t n, float sa, const float* sb,
                                                         const float* bias) noexcept {
  const __m256 a = _mm256_set1_ps(sa);
  std::size_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256 b = bias != nullptr ? _mm256_loadu_ps(bias + j) : _mm256_setzero_ps();
    _mm256_storeu_ps(c + j, _mm256_fmadd_ps(_mm256_loadu_ps(c + j), _mm256_mul_ps(a, _mm256_loadu_ps(sb + j)), b));
  }
  for (; j < n; ++j) c[j] = std::fma(c[j], sa * sb[j], bias != nullptr ? bias[j] : 0.0f);
}

inline void avx2_kernels(isa_kernels& k, format_id fa, format_id fb) noexcept {
  k.avx2 = true;
  k.kernel[1] = &kernel_avx2<1>, k.kernel[2] = &kernel_avx2<2>, k.kernel[3] = &kernel_avx2<3>;
  k.kernel[4] = &kernel_avx2<4>, k.kernel[5] = &kernel_avx2<5>, k.kernel[6] = &kernel_avx2<6>;
  k.decode_a = decode_avx2_for(fa), k.decode_b = decode_avx2_for(fb);
}

#endif  // MINIFLOAT_SIMD_X86

}  // namespace minifloat::detail::gemm
