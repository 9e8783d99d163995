#pragma once
// AVX2 MX quantize/dequantize, same signatures and bytes as simd/scalar/mx.hpp (the reference:
// the block algorithm of formats/mx_block.hpp per tile).
//
// Quantize, per block of 32 (OCP MX 6.3, mx_block.hpp):
//   1. amax as the unsigned max of |x| bit patterns (NaN/Inf sort above every finite value);
//   2. the E8M0 code from mx_scale_code_from_abs_bits (the block layer's own scalar function,
//      once per block);
//   3. P_i = encode(x_i * 2^(127 - code)) with RNE and saturation. The block layer multiplies in
//      double, where the product is exact; here the product is a float32 multiply by a normal
//      power of two (code <= 253 for every finite amax, since emax >= 2), which is exact unless
//      the product falls below 2^-126. Such a product is far below half the smallest element
//      subnormal (>= 2^-17), so both round it to a zero of the same sign. (With FTZ/DAZ set the
//      same holds for the products; subnormal *inputs* read as zero under DAZ, as they would in
//      the scalar widening to double.)
//   4. a NaN scale (0xFF) stores zero codes.
// 1 x 32 tiles (axis 1) are handled one block per step in registers. 32 x 1 and 32 x 32 tiles work
// on bands of 32 rows and chunks of 256 columns: the per-column amax over the band (reduced over
// each 32-column group for 32 x 32), then one encode pass per row with a per-column multiplier and
// a per-column keep mask (zero codes under a NaN scale).
// Dequantize: float(P) * X with X = 2^(code - 127) decoded like mx_scale_value (0x00 is the
// float32 subnormal 2^-127, 0xFF NaN), one float32 multiply as the block layer does.
#include "avx2_codec.hpp"

#if MINIFLOAT_SIMD_X86

#include "../../formats/mx_scale.hpp"
#include "../../formats/mx_block.hpp"

namespace minifloat::simd::avx2 {

namespace detail {

/// 2^(127 - code) for a finite scale code, as a float (normal for code <= 253).
inline float mx_multiplier(std::uint8_t code) noexcept {
  if (code >= 254) return std::bit_cast<float>(0x00400000U);  // 2^-127; unreachable from finite input
  return std::bit_cast<float>(static_cast<std::uint32_t>(254U - code) << 23);
}

template <mx_element Elem>
constexpr store_kind mx_store = sizeof_bits<Elem> == 4 ? store_kind::nibbles : store_kind::u8;

/// Zero codes for n elements (FP4: (n + 1) / 2 bytes).
template <mx_element Elem>
inline void mx_zero_codes(std::uint8_t* out, std::size_t n) noexcept {
  std::memset(out, 0, out_bytes<mx_store<Elem>>(n));
}

/// One block of n <= 32 elements along a row (axis 1): writes its scale code and codes.
template <mx_element Elem, class In>
MINIFLOAT_INLINE_AVX2 void mx_block_row(const In* x, std::size_t n, scale_rule rule, std::uint8_t* codes,
                                        std::uint8_t* scale,
                                        const exmy_encoder<typename Elem::spec, round_kind::nearest_even>& enc) {
  constexpr auto St = mx_store<Elem>;
  __m256i v[4];
  if (n < 32) {
    In xin[32] = {};
    std::memcpy(xin, x, n * sizeof(In));
    for (int k = 0; k < 4; ++k) v[k] = load8(xin + 8 * k);
  } else {
    for (int k = 0; k < 4; ++k) v[k] = load8(x + 8 * k);
  }
  const __m256i abs_mask = splat(0x7FFFFFFFU);
  const __m256i m = _mm256_max_epu32(_mm256_max_epu32(_mm256_and_si256(v[0], abs_mask), _mm256_and_si256(v[1], abs_mask)),
                                     _mm256_max_epu32(_mm256_and_si256(v[2], abs_mask), _mm256_and_si256(v[3], abs_mask)));
  const std::uint8_t code =
      minifloat::detail::mx_scale_code_from_abs_bits<Elem>(std::bit_cast<std::uint32_t>(hmax_bits(m)), rule);
  *scale = code;
  if (code == mx_nan_scale_code) {
    mx_zero_codes<Elem>(codes, n);
    return;
  }
  const __m256 mul = _mm256_set1_ps(mx_multiplier(code));
  __m256i c[4];
  for (int k = 0; k < 4; ++k) c[k] = enc(_mm256_castps_si256(_mm256_mul_ps(_mm256_castsi256_ps(v[k]), mul)), _mm256_setzero_si256());
  if (n == 32) {
    store32<St>(codes, c[0], c[1], c[2], c[3]);
  } else {
    alignas(32) std::uint8_t buf[32];
    store32<St>(buf, c[0], c[1], c[2], c[3]);
    if constexpr (St == store_kind::nibbles) {
      if (n % 2 != 0) buf[n / 2] = static_cast<std::uint8_t>(buf[n / 2] & 0x0FU);
    }
    std::memcpy(codes, buf, out_bytes<St>(n));
  }
}

#define MINIFLOAT_LANES_INLINE MINIFLOAT_INLINE_AVX2
#include "../lanes/mx_logic.hpp"
#undef MINIFLOAT_LANES_INLINE

/// Lane j = max over the 8 lanes of v[j] (8 horizontal maxima at once; values are non-negative).
MINIFLOAT_INLINE_AVX2 __m256i hmax8x8(const __m256i v[8]) {
  __m256i t[4];
  for (int j = 0; j < 4; ++j)
    t[j] = _mm256_max_epi32(_mm256_unpacklo_epi32(v[2 * j], v[2 * j + 1]), _mm256_unpackhi_epi32(v[2 * j], v[2 * j + 1]));
  const __m256i u0 = _mm256_max_epi32(_mm256_unpacklo_epi64(t[0], t[1]), _mm256_unpackhi_epi64(t[0], t[1]));
  const __m256i u1 = _mm256_max_epi32(_mm256_unpacklo_epi64(t[2], t[3]), _mm256_unpackhi_epi64(t[2], t[3]));
  return _mm256_max_epi32(_mm256_permute2x128_si256(u0, u1, 0x20), _mm256_permute2x128_si256(u0, u1, 0x31));
}

/// 8 full blocks (256 elements) of one row: scales first, all in vectors, then the codes.
template <mx_element Elem, scale_rule Rule, class In>
MINIFLOAT_INLINE_AVX2 void mx_blocks8_row(const In* x, std::uint8_t* codes, std::uint8_t* scales,
                                          const exmy_encoder<typename Elem::spec, round_kind::nearest_even>& enc) {
  constexpr auto St = mx_store<Elem>;
  const __m256i abs_mask = splat(0x7FFFFFFFU);
  __m256i m[8];
  for (int j = 0; j < 8; ++j) {
    const In* b = x + 32 * j;
    m[j] = _mm256_max_epi32(
        _mm256_max_epi32(_mm256_and_si256(load8(b), abs_mask), _mm256_and_si256(load8(b + 8), abs_mask)),
        _mm256_max_epi32(_mm256_and_si256(load8(b + 16), abs_mask), _mm256_and_si256(load8(b + 24), abs_mask)));
  }
  const __m256i code = mx_scale_codes<ops, Elem, Rule>(hmax8x8(m));
  const __m128i c16 = _mm_packus_epi32(_mm256_castsi256_si128(code), _mm256_extracti128_si256(code, 1));
  _mm_storel_epi64(reinterpret_cast<__m128i*>(scales), _mm_packus_epi16(c16, c16));
  const __m256i mul = mx_multipliers<ops>(code);
  const __m256i nan = _mm256_cmpeq_epi32(code, splat(mx_nan_scale_code));
  for (int j = 0; j < 8; ++j) {
    const __m256i sel = splat(static_cast<std::uint32_t>(j));
    const __m256 mj = _mm256_castsi256_ps(_mm256_permutevar8x32_epi32(mul, sel));
    const __m256i zj = _mm256_permutevar8x32_epi32(nan, sel);
    const In* b = x + 32 * j;
    __m256i c[4];
    for (int q = 0; q < 4; ++q)
      c[q] = _mm256_andnot_si256(
          zj, enc(_mm256_castps_si256(_mm256_mul_ps(_mm256_castsi256_ps(load8(b + 8 * q)), mj)), _mm256_setzero_si256()));
    store32<St>(codes + out_bytes<St>(32 * static_cast<std::size_t>(j)), c[0], c[1], c[2], c[3]);
  }
}

template <mx_element Elem, scale_rule Rule, class In>
MINIFLOAT_TARGET_AVX2 void mx_quantize_axis1(const In* x, std::size_t rows, std::size_t cols, std::uint8_t* codes,
                                             std::uint8_t* scales) noexcept {
  const exmy_encoder<typename Elem::spec, round_kind::nearest_even> enc(mx_element_conversion);
  const std::size_t blocks = (cols + 31) / 32;
  const std::size_t row_bytes = packed_bytes(cols, sizeof_bits<Elem>);
  for (std::size_t r = 0; r < rows; ++r) {
    const In* xr = x + r * cols;
    std::uint8_t* cr = codes + r * row_bytes;
    std::size_t b = 0;
    for (; b + 8 <= cols / 32; b += 8)
      mx_blocks8_row<Elem, Rule>(xr + 32 * b, cr + out_bytes<mx_store<Elem>>(32 * b), scales + r * blocks + b, enc);
    for (; b < blocks; ++b) {
      const std::size_t c0 = 32 * b;
      const std::size_t n = cols - c0 < 32 ? cols - c0 : 32;
      mx_block_row<Elem>(xr + c0, n, Rule, cr + out_bytes<mx_store<Elem>>(c0), scales + r * blocks + b, enc);
    }
  }
}

/// 32 elements of one row with per-element multipliers and keep masks.
template <mx_element Elem, class In>
MINIFLOAT_INLINE_AVX2 void mx_encode32_columns(const In* x, const float* mul, const std::uint32_t* keep, std::uint8_t* out,
                                               const exmy_encoder<typename Elem::spec, round_kind::nearest_even>& enc) {
  __m256i c[4];
  for (int k = 0; k < 4; ++k) {
    const __m256 v = _mm256_mul_ps(_mm256_castsi256_ps(load8(x + 8 * k)), _mm256_loadu_ps(mul + 8 * k));
    c[k] = _mm256_and_si256(enc(_mm256_castps_si256(v), _mm256_setzero_si256()), loadu(keep + 8 * k));
  }
  store32<mx_store<Elem>>(out, c[0], c[1], c[2], c[3]);
}

/// Encodes n <= 256 elements of one row (mul/keep hold n rounded up to 32 entries).
template <mx_element Elem, class In>
MINIFLOAT_INLINE_AVX2 void mx_encode_columns(const In* x, std::size_t n, const float* mul, const std::uint32_t* keep,
                                             std::uint8_t* out,
                                             const exmy_encoder<typename Elem::spec, round_kind::nearest_even>& enc) {
  constexpr auto St = mx_store<Elem>;
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) mx_encode32_columns<Elem>(x + i, mul + i, keep + i, out + out_bytes<St>(i), enc);
  if (i < n) {
    const std::size_t r = n - i;
    In xin[32] = {};
    std::memcpy(xin, x + i, r * sizeof(In));
    alignas(32) std::uint8_t buf[32];
    mx_encode32_columns<Elem>(xin, mul + i, keep + i, buf, enc);
    if constexpr (St == store_kind::nibbles) {
      if (r % 2 != 0) buf[r / 2] = static_cast<std::uint8_t>(buf[r / 2] & 0x0FU);
    }
    std::memcpy(out + out_bytes<St>(i), buf, out_bytes<St>(r));
  }
}

/// Bands of 32 rows: tiles 32 x 1 (Square = false: one scale per column of the band) or 32 x 32
/// (Square: the column amaxes of each 32-column group reduced to one tile amax first; chunks
/// start at multiples of 256 columns, so tiles never straddle two chunks).
template <mx_element Elem, bool Square, class In>
MINIFLOAT_TARGET_AVX2 void mx_quantize_bands(const In* x, std::size_t rows, std::size_t cols, scale_rule rule,
                                             std::uint8_t* codes, std::uint8_t* scales) noexcept {
  const exmy_encoder<typename Elem::spec, round_kind::nearest_even> enc(mx_element_conversion);
  const std::size_t row_bytes = packed_bytes(cols, sizeof_bits<Elem>);
  constexpr std::size_t chunk = 256;
  alignas(32) std::uint32_t amax[chunk];
  alignas(32) float mul[chunk + 32];
  alignas(32) std::uint32_t keep[chunk + 32];
  const __m256i abs_mask = splat(0x7FFFFFFFU);
  const std::size_t grid_cols = Square ? (cols + 31) / 32 : cols;
  for (std::size_t r0 = 0; r0 < rows; r0 += 32) {
    const std::size_t band = rows - r0 < 32 ? rows - r0 : 32;
    std::uint8_t* sr = scales + (r0 / 32) * grid_cols;
    for (std::size_t c0 = 0; c0 < cols; c0 += chunk) {
      const std::size_t w = cols - c0 < chunk ? cols - c0 : chunk;
      // 1. per-column amax over the band (8 columns per vector, the ragged end scalar)
      std::size_t c = 0;
      for (; c + 8 <= w; c += 8) {
        __m256i m = _mm256_setzero_si256();
        for (std::size_t r = r0; r < r0 + band; ++r)
          m = _mm256_max_epu32(m, _mm256_and_si256(load8(x + r * cols + c0 + c), abs_mask));
        storeu(amax + c, m);
      }
      for (; c < w; ++c) {
        std::uint32_t m = 0;
        for (std::size_t r = r0; r < r0 + band; ++r) {
          const std::uint32_t a = minifloat::detail::abs_bits(static_cast<float>(x[r * cols + c0 + c]));
          m = m < a ? a : m;
        }
        amax[c] = m;
      }
      // 2. scale codes, multipliers and keep masks
      if constexpr (Square) {
        for (std::size_t g = 0; g < w; g += 32) {
          const std::size_t g1 = w - g < 32 ? w : g + 32;
          std::uint32_t a = 0;
          for (std::size_t j = g; j < g1; ++j) a = a < amax[j] ? amax[j] : a;
          const std::uint8_t code = minifloat::detail::mx_scale_code_from_abs_bits<Elem>(a, rule);
          sr[(c0 + g) / 32] = code;
          const bool nan = code == mx_nan_scale_code;
          for (std::size_t j = g; j < g1; ++j) mul[j] = nan ? 0.0f : mx_multiplier(code), keep[j] = nan ? 0U : 0xFFFFFFFFU;
        }
      } else {
        for (c = 0; c < w; ++c) {
          const std::uint8_t code = minifloat::detail::mx_scale_code_from_abs_bits<Elem>(amax[c], rule);
          sr[c0 + c] = code;
          const bool nan = code == mx_nan_scale_code;
          mul[c] = nan ? 0.0f : mx_multiplier(code);
          keep[c] = nan ? 0U : 0xFFFFFFFFU;
        }
      }
      c = w;
      for (; c < chunk + 32; ++c) mul[c] = 0.0f, keep[c] = 0U;
      // 3. codes, row by row
      for (std::size_t r = r0; r < r0 + band; ++r)
        mx_encode_columns<Elem>(x + r * cols + c0, w, mul, keep, codes + r * row_bytes + out_bytes<mx_store<Elem>>(c0), enc);
    }
  }
}

template <mx_element Elem>
MINIFLOAT_TARGET_AVX2 void mx_dequantize_span(const std::uint8_t* codes, const std::uint8_t* scales, std::size_t rows,
                                              std::size_t cols, mx_tile tile, float* out) noexcept {
  using Spec = typename Elem::spec;
  constexpr bool packed = sizeof_bits<Elem> == 4;
  const decoder8_for<Spec> dec{};
  const e8m0_decoder sdec{};
  const std::size_t row_bytes = packed_bytes(cols, sizeof_bits<Elem>);
  const bool per_column = tile == mx_tile::col32;  // else one scale per 32 columns
  const std::size_t tile_rows = mx_tile_rows(tile), grid_cols = per_column ? cols : (cols + 31) / 32;
  __m256i v[4], s[4];
  for (std::size_t r = 0; r < rows; ++r) {
    const std::uint8_t* cr = codes + r * row_bytes;
    const std::uint8_t* sr = scales + (r / tile_rows) * grid_cols;
    float* o = out + r * cols;
    for (std::size_t c0 = 0; c0 < cols; c0 += 32) {
      const std::size_t n = cols - c0 < 32 ? cols - c0 : 32;
      alignas(32) std::uint8_t cin[32], unpacked[32];
      const std::uint8_t* cp = cr + (packed ? c0 / 2 : c0);
      if (n < 32) {
        std::memset(cin, 0, sizeof cin);
        std::memcpy(cin, cp, packed ? (n + 1) / 2 : n);
        cp = cin;
      }
      dec(packed ? codes32_at<true>(cp, 0, unpacked) : cp, v);
      if (!per_column) {
        const __m256 x = _mm256_set1_ps(mx_scale_value(sr[c0 / 32]));
        for (int k = 0; k < 4; ++k) s[k] = _mm256_castps_si256(x);
      } else {
        alignas(32) std::uint8_t sin[32] = {};
        const std::uint8_t* sp = sr + c0;
        if (n < 32) {
          std::memcpy(sin, sp, n);
          sp = sin;
        }
        sdec(sp, s);
      }
      alignas(32) float buf[32];
      float* dst = n == 32 ? o + c0 : buf;
      for (int k = 0; k < 4; ++k)
        _mm256_storeu_ps(dst + 8 * k, _mm256_mul_ps(_mm256_castsi256_ps(v[k]), _mm256_castsi256_ps(s[k])));
      if (n < 32) std::memcpy(o + c0, buf, n * sizeof(float));
    }
  }
}

}  // namespace detail

template <mx_element Elem, class In>
void mx_quantize(const In* x, std::size_t rows, std::size_t cols, mx_tile tile, scale_rule rule, std::uint8_t* codes,
                 std::uint8_t* scales) noexcept {
  if (tile == mx_tile::col32) return detail::mx_quantize_bands<Elem, false>(x, rows, cols, rule, codes, scales);
  if (tile == mx_tile::square32) return detail::mx_quantize_bands<Elem, true>(x, rows, cols, rule, codes, scales);
  switch (rule) {
    case scale_rule::rceil: detail::mx_quantize_axis1<Elem, scale_rule::rceil>(x, rows, cols, codes, scales); break;
    case scale_rule::ceil: detail::mx_quantize_axis1<Elem, scale_rule::ceil>(x, rows, cols, codes, scales); break;
    case scale_rule::even: detail::mx_quantize_axis1<Elem, scale_rule::even>(x, rows, cols, codes, scales); break;
    default: detail::mx_quantize_axis1<Elem, scale_rule::floor>(x, rows, cols, codes, scales); break;
  }
}

template <mx_element Elem>
void mx_dequantize(const std::uint8_t* codes, const std::uint8_t* scales, std::size_t rows, std::size_t cols,
                   mx_tile tile, float* out) noexcept {
  detail::mx_dequantize_span<Elem>(codes, scales, rows, cols, tile, out);
}

}  // namespace minifloat::simd::avx2

#endif  // MINIFLOAT_SIMD_X86
