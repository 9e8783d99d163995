#pragma once
// AVX-512 MX quantize/dequantize: the signatures and bytes of simd/scalar/mx.hpp (the reference:
// the block algorithm of formats/mx_block.hpp per tile), on 16-lane vectors with masked tails.
//
// Quantize, per tile (OCP MX 6.3, mx_block.hpp):
//   1. amax as the unsigned max of |x| bit patterns (NaN/Inf sort above every finite value);
//   2. the E8M0 codes of 16 tiles at once (lanes/mx_logic.hpp mx_scale_codes: the formulas of
//      formats/mx_scale.hpp in 32-bit lanes, with its step-3 finite guard);
//   3. P_i = encode(x_i * 2^(127 - code)) with RNE and saturation, by codec.hpp's magic-number
//      encoder (exmy_rne: embedded rounding, independent of MXCSR's rounding mode). The block
//      layer multiplies in double, where the product is exact; here it is a float32 multiply by
//      2^(127 - code), a normal power of two (code <= 253 for every finite amax, since
//      emax >= 2), so the product is exact unless it falls below 2^-126. Such a product is far
//      below half the smallest element subnormal (>= 2^-17), so both round it to a zero of the
//      same sign. (With FTZ/DAZ set the same holds for the products; subnormal *inputs* read as
//      zero under DAZ, as they would in the scalar widening to double.)
//   4. a NaN scale (0xFF) stores zero codes: the codes of such tiles are encoded like any other
//      (from a product by -Inf) and overwritten afterwards (1 x 32), or masked (bands), so the
//      common case pays nothing for them.
// 1 x 32 tiles (axis 1): steps of 16 blocks (512 elements) along a row: 16 block maxima reduced
// to one vector by a 4-stage transpose-max, 16 scale codes and multipliers in one vector, then
// 64 elements (two blocks) per encode and store. When cols is a multiple of 32 the blocks, codes
// and scales of consecutive rows are contiguous, so the whole tensor is one span of blocks; else
// each row is a span and its last step is masked.
// 32 x 1 and 32 x 32 tiles: bands of 32 rows in chunks of 256 columns: per-column amax over the
// band in 16 registers (for 32 x 32 each 32-column group reduced to one tile amax), the scale
// codes, a per-column multiplier array, then one encode pass per row.
// Dequantize: float(P) * X in one float32 multiply as the block layer does, P from codec.hpp's
// vpermb/vpermi2b table decoders, X = 2^(code - 127) as mx_scale_value (0x00 is the float32
// subnormal 2^-127, 0xFF NaN): broadcast from a 256-entry table per 32 columns (1 x 32,
// 32 x 32; stored as 64-byte aligned vectors, aligned_floats), or one vector per 16 columns
// decoded once per band (32 x 1, codec_logic.hpp decode_e8m0_lanes).
#include "avx512_codec.hpp"

#if MINIFLOAT_SIMD_X86

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "../../formats/mx_block.hpp"
#include "../../formats/mx_scale.hpp"
#include "../../formats/packed.hpp"
#include "intrinsic_warnings.hpp"

MINIFLOAT_AVX512_WARNINGS_PUSH

namespace minifloat::simd::avx512 {

namespace detail {

template <mx_element Elem>
inline constexpr store_kind mx_store = sizeof_bits<Elem> == 4 ? store_kind::nibbles : store_kind::u8;

template <mx_element Elem>
using mx_encoder = exmy_encoder<typename Elem::spec, round_kind::nearest_even>;

/// X = mx_scale_value(code) for every code (NaN for 0xFF, 2^-127 for 0x00).
inline constexpr std::array<float, 256> mx_scale_floats = [] {
  std::array<float, 256> t{};
  for (std::size_t c = 0; c < 256; ++c) t[c] = mx_scale_value(static_cast<std::uint8_t>(c));
  return t;
}();

#define MINIFLOAT_LANES_INLINE MINIFLOAT_INLINE_AVX512
#include "../lanes/mx_logic.hpp"
#undef MINIFLOAT_LANES_INLINE

/// Lane j = max over the 16 lanes of v[j] (values are non-negative): pairs interleaved within
/// 128-bit lanes by unpack (32-, then 64-bit), then the 4 x 4 128-bit lanes by two shuffles.
MINIFLOAT_INLINE_AVX512 __m512i hmax16x16(const __m512i v[16]) {
  __m512i t[8], u[4];
  for (int j = 0; j < 8; ++j)
    t[j] = _mm512_max_epu32(_mm512_unpacklo_epi32(v[2 * j], v[2 * j + 1]), _mm512_unpackhi_epi32(v[2 * j], v[2 * j + 1]));
  for (int j = 0; j < 4; ++j)
    u[j] = _mm512_max_epu32(_mm512_unpacklo_epi64(t[2 * j], t[2 * j + 1]), _mm512_unpackhi_epi64(t[2 * j], t[2 * j + 1]));
  // u[j], 128-bit lane L, position p: the max over lane L of v[4j + p].
  const __m512i m01 = _mm512_max_epu32(_mm512_shuffle_i32x4(u[0], u[1], 0x88), _mm512_shuffle_i32x4(u[0], u[1], 0xDD));
  const __m512i m23 = _mm512_max_epu32(_mm512_shuffle_i32x4(u[2], u[3], 0x88), _mm512_shuffle_i32x4(u[2], u[3], 0xDD));
  return _mm512_max_epu32(_mm512_shuffle_i32x4(m01, m23, 0x88), _mm512_shuffle_i32x4(m01, m23, 0xDD));
}

MINIFLOAT_INLINE_AVX512 __m512i abs16(__m512i x) { return _mm512_and_si512(x, splat(0x7FFFFFFFU)); }

MINIFLOAT_INLINE_AVX512 std::size_t min16(std::size_t r) { return r < 16 ? r : 16; }

/// Zero codes of the blocks of `nan` (bit j: block j of the step, which holds n elements).
template <mx_element Elem>
inline void mx_zero_blocks(std::uint32_t nan, std::size_t n, std::uint8_t* codes) noexcept {
  constexpr auto St = mx_store<Elem>;
  for (; nan != 0; nan &= nan - 1) {
    const auto j = static_cast<std::size_t>(std::countr_zero(nan));
    const std::size_t left = n - 32 * j;
    std::memset(codes + out_bytes<St>(32 * j), 0, out_bytes<St>(left < 32 ? left : 32));
  }
}

/// One step of a 1 x 32 span: n elements (n = 512 when Full, else 0 < n < 512) from x, that is
/// ceil(n / 32) blocks, the last one possibly short; writes their scale codes and codes.
template <mx_element Elem, scale_rule Rule, bool Full, class In>
MINIFLOAT_INLINE_AVX512 void mx_row_step(const In* x, std::size_t n, std::uint8_t* codes, std::uint8_t* scales,
                                         const mx_encoder<Elem>& enc) {
  constexpr auto St = mx_store<Elem>;
  const __m512i zero = _mm512_setzero_si512();
  __m512i m[16];
  for (std::size_t j = 0; j < 16; ++j) {
    if constexpr (Full) {
      m[j] = _mm512_max_epu32(abs16(load16(x + 32 * j)), abs16(load16(x + 32 * j + 16)));
    } else {
      m[j] = zero;
      if (32 * j < n) m[j] = abs16(load16_partial(x + 32 * j, min16(n - 32 * j)));
      if (32 * j + 16 < n) m[j] = _mm512_max_epu32(m[j], abs16(load16_partial(x + 32 * j + 16, min16(n - 32 * j - 16))));
    }
  }
  const __m512i code = mx_scale_codes<ops, Elem, Rule>(hmax16x16(m));
  const std::size_t blocks = Full ? 16 : (n + 31) / 32;
  if constexpr (Full) _mm_storeu_si128(reinterpret_cast<__m128i*>(scales), _mm512_cvtepi32_epi8(code));
  else _mm_mask_storeu_epi8(scales, first16(blocks), _mm512_cvtepi32_epi8(code));
  const __m512i mul = mx_multipliers<ops>(code);
  for (std::size_t p = 0; p < 8; ++p) {
    if (!Full && 64 * p >= n) break;
    const __m512 ma = _mm512_castsi512_ps(_mm512_permutexvar_epi32(splat(static_cast<std::uint32_t>(2 * p)), mul));
    const __m512 mb = _mm512_castsi512_ps(_mm512_permutexvar_epi32(splat(static_cast<std::uint32_t>(2 * p + 1)), mul));
    const In* b = x + 64 * p;
    std::uint8_t* out = codes + out_bytes<St>(64 * p);
    __m512i c[4];
    if (Full || 64 * p + 64 <= n) {
      // The input 512 elements + 1 KiB ahead of this group (float32: 1.5 steps ahead). On 64 Mi
      // float32 E4M3 it measured 0.84-0.86 of the stream without, 0.87-0.91 with it (0.85-0.92
      // one step ahead, 0.79-0.89 two); in-cache spans do not change.
      if constexpr (Full) ops::prefetch_in(x, 64 * p + 512);
      for (std::size_t q = 0; q < 4; ++q)
        c[q] = enc(_mm512_castps_si512(_mm512_mul_ps(_mm512_castsi512_ps(load16(b + 16 * q)), q < 2 ? ma : mb)), zero);
      store64<St>(out, c);
    } else {
      const std::size_t r = n - 64 * p;
      for (std::size_t q = 0; q < 4; ++q)
        c[q] = 16 * q < r ? enc(_mm512_castps_si512(_mm512_mul_ps(
                                    _mm512_castsi512_ps(load16_partial(b + 16 * q, min16(r - 16 * q))), q < 2 ? ma : mb)),
                                zero)
                          : zero;
      store64_partial<St>(out, r, c);
    }
  }
  const auto nan = static_cast<std::uint32_t>(_mm512_mask_cmpeq_epi32_mask(first16(blocks), code, splat(mx_nan_scale_code)));
  if (nan != 0) [[unlikely]]
    mx_zero_blocks<Elem>(nan, Full ? 512 : n, codes);
}

/// n elements of 1 x 32 blocks from x (the last block short if 32 does not divide n).
template <mx_element Elem, scale_rule Rule, class In>
MINIFLOAT_INLINE_AVX512 void mx_row_span(const In* x, std::size_t n, std::uint8_t* codes, std::uint8_t* scales,
                                         const mx_encoder<Elem>& enc) {
  constexpr auto St = mx_store<Elem>;
  std::size_t i = 0;
  for (; i + 512 <= n; i += 512) mx_row_step<Elem, Rule, true>(x + i, 512, codes + out_bytes<St>(i), scales + i / 32, enc);
  if (i < n) mx_row_step<Elem, Rule, false>(x + i, n - i, codes + out_bytes<St>(i), scales + i / 32, enc);
}

template <mx_element Elem, scale_rule Rule, class In>
MINIFLOAT_TARGET_AVX512 void mx_quantize_axis1(const In* x, std::size_t rows, std::size_t cols, std::uint8_t* codes,
                                               std::uint8_t* scales) noexcept {
  const mx_encoder<Elem> enc(mx_element_conversion);
  if (cols % 32 == 0) {
    // Rows of whole blocks: codes (FP4: cols / 2 bytes a row) and scales follow each other.
    mx_row_span<Elem, Rule>(x, rows * cols, codes, scales, enc);
    return;
  }
  const std::size_t blocks = (cols + 31) / 32, row_bytes = packed_bytes(cols, sizeof_bits<Elem>);
  for (std::size_t r = 0; r < rows; ++r)
    mx_row_span<Elem, Rule>(x + r * cols, cols, codes + r * row_bytes, scales + r * blocks, enc);
}

/// Encodes w (<= 256) elements of one row with the per-column multipliers mul (and, Keep, the
/// per-column masks keep: zero under a NaN scale).
template <mx_element Elem, bool Keep, class In>
MINIFLOAT_INLINE_AVX512 void mx_encode_row(const In* x, std::size_t w, const float* mul, const std::uint32_t* keep,
                                           std::uint8_t* out, const mx_encoder<Elem>& enc) {
  constexpr auto St = mx_store<Elem>;
  const __m512i zero = _mm512_setzero_si512();
  __m512i c[4];
  std::size_t s = 0;
  for (; s + 64 <= w; s += 64) {
    for (std::size_t q = 0; q < 4; ++q) {
      const std::size_t i = s + 16 * q;
      c[q] = enc(_mm512_castps_si512(_mm512_mul_ps(_mm512_castsi512_ps(load16(x + i)), _mm512_load_ps(mul + i))), zero);
      if constexpr (Keep) c[q] = _mm512_and_si512(c[q], _mm512_load_si512(keep + i));
    }
    store64<St>(out + out_bytes<St>(s), c);
  }
  if (s < w) {
    const std::size_t r = w - s;
    for (std::size_t q = 0; q < 4; ++q) {
      const std::size_t i = s + 16 * q;
      if (16 * q >= r) {
        c[q] = zero;
        continue;
      }
      c[q] = enc(_mm512_castps_si512(
                     _mm512_mul_ps(_mm512_castsi512_ps(load16_partial(x + i, min16(r - 16 * q))), _mm512_load_ps(mul + i))),
                 zero);
      if constexpr (Keep) c[q] = _mm512_and_si512(c[q], _mm512_load_si512(keep + i));
    }
    store64_partial<St>(out + out_bytes<St>(s), r, c);
  }
}

/// Per-column amax over `band` rows of w (<= 256) columns from x (row stride cols) into m[0 ..
/// ceil(w / 16)); the other vectors are zero.
template <bool Full, class In>
MINIFLOAT_INLINE_AVX512 void mx_column_amax(const In* x, std::size_t cols, std::size_t band, std::size_t w, __m512i m[16]) {
  for (std::size_t v = 0; v < 16; ++v) m[v] = _mm512_setzero_si512();
  for (std::size_t r = 0; r < band; ++r) {
    const In* xr = x + r * cols;
    for (std::size_t v = 0; v < 16; ++v) {
      if constexpr (Full) {
        m[v] = _mm512_max_epu32(m[v], abs16(load16(xr + 16 * v)));
      } else if (16 * v < w) {
        m[v] = _mm512_max_epu32(m[v], abs16(load16_partial(xr + 16 * v, min16(w - 16 * v))));
      }
    }
  }
}

/// Bands of 32 rows: tiles 32 x 1 (Square = false: one scale per column of the band) or 32 x 32
/// (Square: the column amaxes of each 32-column group reduced to one tile amax). Chunks start at
/// multiples of 256 columns, so tiles never straddle two chunks.
template <mx_element Elem, bool Square, scale_rule Rule, class In>
MINIFLOAT_TARGET_AVX512 void mx_quantize_bands(const In* x, std::size_t rows, std::size_t cols, std::uint8_t* codes,
                                               std::uint8_t* scales) noexcept {
  constexpr auto St = mx_store<Elem>;
  constexpr std::size_t chunk = 256;
  const mx_encoder<Elem> enc(mx_element_conversion);
  const std::size_t row_bytes = packed_bytes(cols, sizeof_bits<Elem>);
  const std::size_t grid_cols = Square ? (cols + 31) / 32 : cols;
  alignas(64) float mul[chunk];
  alignas(64) std::uint32_t keep[chunk];
  const __m512i ones = splat(0xFFFFFFFFU);
  for (std::size_t r0 = 0; r0 < rows; r0 += 32) {
    const std::size_t band = rows - r0 < 32 ? rows - r0 : 32;
    std::uint8_t* sr = scales + (r0 / 32) * grid_cols;
    for (std::size_t c0 = 0; c0 < cols; c0 += chunk) {
      const std::size_t w = cols - c0 < chunk ? cols - c0 : chunk;
      const In* xc = x + r0 * cols + c0;
      __m512i m[16];
      if (w == chunk) mx_column_amax<true>(xc, cols, band, w, m);
      else mx_column_amax<false>(xc, cols, band, w, m);
      std::uint32_t any_nan = 0;
      if constexpr (Square) {
        __m512i g[16];
        for (std::size_t j = 0; j < 8; ++j) g[j] = _mm512_max_epu32(m[2 * j], m[2 * j + 1]);
        for (std::size_t j = 8; j < 16; ++j) g[j] = _mm512_setzero_si512();
        const std::size_t groups = (w + 31) / 32;
        const __m512i code = mx_scale_codes<ops, Elem, Rule>(hmax16x16(g));
        _mm_mask_storeu_epi8(sr + c0 / 32, first16(groups), _mm512_cvtepi32_epi8(code));
        const __m512i mv = mx_multipliers<ops>(code);
        const __mmask16 nan = _mm512_mask_cmpeq_epi32_mask(first16(groups), code, splat(mx_nan_scale_code));
        const __m512i kv = _mm512_maskz_mov_epi32(_knot_mask16(nan), ones);
        any_nan = nan;
        for (std::size_t j = 0; j < 8; ++j) {
          const __m512i sel = splat(static_cast<std::uint32_t>(j));
          const __m512 mj = _mm512_castsi512_ps(_mm512_permutexvar_epi32(sel, mv));
          _mm512_store_ps(mul + 32 * j, mj);
          _mm512_store_ps(mul + 32 * j + 16, mj);
          if (any_nan != 0) {
            const __m512i kj = _mm512_permutexvar_epi32(sel, kv);
            _mm512_store_si512(keep + 32 * j, kj);
            _mm512_store_si512(keep + 32 * j + 16, kj);
          }
        }
      } else {
        for (std::size_t v = 0; v < 16; ++v) {
          if (16 * v >= w) {
            _mm512_store_ps(mul + 16 * v, _mm512_setzero_ps());
            _mm512_store_si512(keep + 16 * v, _mm512_setzero_si512());
            continue;
          }
          const __mmask16 lanes = first16(min16(w - 16 * v));
          const __m512i code = mx_scale_codes<ops, Elem, Rule>(m[v]);
          _mm_mask_storeu_epi8(sr + c0 + 16 * v, lanes, _mm512_cvtepi32_epi8(code));
          _mm512_store_ps(mul + 16 * v, _mm512_castsi512_ps(mx_multipliers<ops>(code)));
          const __mmask16 nan = _mm512_mask_cmpeq_epi32_mask(lanes, code, splat(mx_nan_scale_code));
          _mm512_store_si512(keep + 16 * v, _mm512_maskz_mov_epi32(_knot_mask16(nan), ones));
          any_nan |= nan;
        }
      }
      std::uint8_t* out = codes + r0 * row_bytes + out_bytes<St>(c0);
      if (any_nan == 0) [[likely]] {
        for (std::size_t r = 0; r < band; ++r) mx_encode_row<Elem, false>(xc + r * cols, w, mul, keep, out + r * row_bytes, enc);
      } else {
        for (std::size_t r = 0; r < band; ++r) mx_encode_row<Elem, true>(xc + r * cols, w, mul, keep, out + r * row_bytes, enc);
      }
    }
  }
}

/// Consecutive vectors of 16 floats (put(), in order) written to out[0 .. n) by 64-byte aligned
/// stores. With out `m` floats past a 64-byte boundary (Shift: m != 0), aligned vector t holds
/// the last m lanes of the previous vector and the first 16 - m of this one (one vpermt2ps);
/// the first and the last aligned vectors are masked to out[0 .. n). Misaligned 64-byte stores
/// split cache lines: on 64 Mi floats (memory bound) dequantize measured 0.58-0.59 G items/s
/// into a buffer 16 bytes past a line and 0.73-0.78 into an aligned one (loaded machine).
template <bool Shift>
struct aligned_floats {
  std::uintptr_t base;  // aligned vector 0 (<= out: below the first element when Shift)
  std::size_t m, n, t = 0;
  __m512i idx;
  __m512 prev;

  MINIFLOAT_INLINE_AVX512 aligned_floats(float* out, std::size_t count)
      : base(reinterpret_cast<std::uintptr_t>(out) & ~std::uintptr_t{63}),
        m((reinterpret_cast<std::uintptr_t>(out) & 63U) / sizeof(float)),
        n(count),
        idx(_mm512_add_epi32(splat(static_cast<std::uint32_t>(16 - m)),
                             _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15))),
        prev(_mm512_setzero_ps()) {}

  MINIFLOAT_INLINE_AVX512 void put(__m512 p) {
    if constexpr (Shift) {
      store(_mm512_permutex2var_ps(prev, idx, p));
      prev = p;
    } else {
      store(p);
    }
  }
  /// The last m floats (Shift), after the last put().
  MINIFLOAT_INLINE_AVX512 void finish() {
    if constexpr (Shift) store(_mm512_permutex2var_ps(prev, idx, _mm512_setzero_ps()));
  }

 private:
  /// Aligned vector t: lane l is out[16 t + l - m], stored where 0 <= 16 t + l - m < n.
  MINIFLOAT_INLINE_AVX512 void store(__m512 a) {
    const std::size_t lo = 16 * t++;  // lane 0's element index + m
    const std::uintptr_t dst = base + 4 * lo;
    if (lo >= m && lo + 16 <= n + m) {
      _mm512_store_ps(reinterpret_cast<float*>(dst), a);
    } else if (lo < n + m) {
      const auto below = static_cast<__mmask16>(lo < m ? first16(m - lo) : 0);
      _mm512_mask_store_ps(reinterpret_cast<float*>(dst), static_cast<__mmask16>(first16(min16(n + m - lo)) & ~below), a);
    }
  }
};

/// n elements of one row (or of a run of whole-block rows) whose 32-element groups take the
/// scales sc[0], sc[1], ...: decode, multiply, store (aligned_floats).
template <mx_element Elem, bool Shift>
MINIFLOAT_INLINE_AVX512 void mx_dequantize_span(const std::uint8_t* codes, const std::uint8_t* sc, std::size_t n,
                                                float* out, const decoder8_for<typename Elem::spec>& dec) {
  constexpr bool packed = sizeof_bits<Elem> == 4;
  constexpr std::size_t in_step = packed ? 32 : 64;
  alignas(64) std::uint8_t unpacked[64];
  aligned_floats<Shift> o(out, n);
  __m512i v[4];
  std::size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    dec(step_codes<ops, packed>(codes + (packed ? i / 2 : i), unpacked), v);
    const __m512 s0 = _mm512_set1_ps(mx_scale_floats[sc[i / 32]]), s1 = _mm512_set1_ps(mx_scale_floats[sc[i / 32 + 1]]);
    for (std::size_t k = 0; k < 4; ++k) o.put(_mm512_mul_ps(_mm512_castsi512_ps(v[k]), k < 2 ? s0 : s1));
  }
  if (i < n) {
    const std::size_t r = n - i;
    alignas(64) std::uint8_t cin[in_step];
    ops::copy_partial(cin, codes + (packed ? i / 2 : i), packed ? (r + 1) / 2 : r, in_step);
    dec(step_codes<ops, packed>(cin, unpacked), v);
    const __m512 s0 = _mm512_set1_ps(mx_scale_floats[sc[i / 32]]);
    const __m512 s1 = r > 32 ? _mm512_set1_ps(mx_scale_floats[sc[i / 32 + 1]]) : s0;
    for (std::size_t k = 0; k < 4 && 16 * k < r; ++k) o.put(_mm512_mul_ps(_mm512_castsi512_ps(v[k]), k < 2 ? s0 : s1));
  }
  o.finish();
}

template <mx_element Elem>
MINIFLOAT_INLINE_AVX512 void mx_dequantize_span(const std::uint8_t* codes, const std::uint8_t* sc, std::size_t n,
                                                float* out, const decoder8_for<typename Elem::spec>& dec) {
  if (reinterpret_cast<std::uintptr_t>(out) % 64 == 0) mx_dequantize_span<Elem, false>(codes, sc, n, out, dec);
  else mx_dequantize_span<Elem, true>(codes, sc, n, out, dec);
}

template <mx_element Elem>
MINIFLOAT_TARGET_AVX512 void mx_dequantize_blocks(const std::uint8_t* codes, const std::uint8_t* scales, std::size_t rows,
                                                  std::size_t cols, mx_tile tile, float* out) noexcept {
  const decoder8_for<typename Elem::spec> dec{};
  if (tile == mx_tile::row32 && cols % 32 == 0) {
    mx_dequantize_span<Elem>(codes, scales, rows * cols, out, dec);
    return;
  }
  const std::size_t row_bytes = packed_bytes(cols, sizeof_bits<Elem>);
  const std::size_t tile_rows = mx_tile_rows(tile), grid_cols = (cols + 31) / 32;
  for (std::size_t r = 0; r < rows; ++r)
    mx_dequantize_span<Elem>(codes + r * row_bytes, scales + (r / tile_rows) * grid_cols, cols, out + r * cols, dec);
}

/// 32 x 1 tiles: per band of 32 rows and chunk of 256 columns, the column scales decoded once.
template <mx_element Elem>
MINIFLOAT_TARGET_AVX512 void mx_dequantize_columns(const std::uint8_t* codes, const std::uint8_t* scales, std::size_t rows,
                                                   std::size_t cols, float* out) noexcept {
  constexpr bool packed = sizeof_bits<Elem> == 4;
  constexpr std::size_t chunk = 256, in_step = packed ? 32 : 64;
  const decoder8_for<typename Elem::spec> dec{};
  const std::size_t row_bytes = packed_bytes(cols, sizeof_bits<Elem>);
  alignas(64) float sv[chunk];
  alignas(64) std::uint8_t unpacked[64], cin[in_step];
  __m512i v[4];
  for (std::size_t r0 = 0; r0 < rows; r0 += 32) {
    const std::size_t band = rows - r0 < 32 ? rows - r0 : 32;
    const std::uint8_t* sr = scales + (r0 / 32) * cols;
    for (std::size_t c0 = 0; c0 < cols; c0 += chunk) {
      const std::size_t w = cols - c0 < chunk ? cols - c0 : chunk;
      for (std::size_t s = 0; s < w; s += 16)
        _mm512_store_si512(sv + s, decode_e8m0_lanes<ops>(_mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(first16(min16(w - s)), sr + c0 + s))));
      for (std::size_t r = r0; r < r0 + band; ++r) {
        const std::uint8_t* cr = codes + r * row_bytes;
        float* o = out + r * cols + c0;
        std::size_t s = 0;
        for (; s + 64 <= w; s += 64) {
          const std::size_t c = c0 + s;
          dec(step_codes<ops, packed>(cr + (packed ? c / 2 : c), unpacked), v);
          for (std::size_t k = 0; k < 4; ++k)
            _mm512_storeu_ps(o + s + 16 * k, _mm512_mul_ps(_mm512_castsi512_ps(v[k]), _mm512_load_ps(sv + s + 16 * k)));
        }
        if (s < w) {
          const std::size_t c = c0 + s, left = w - s;
          ops::copy_partial(cin, cr + (packed ? c / 2 : c), packed ? (left + 1) / 2 : left, in_step);
          dec(step_codes<ops, packed>(cin, unpacked), v);
          for (std::size_t k = 0; k < 4 && 16 * k < left; ++k)
            _mm512_mask_storeu_ps(o + s + 16 * k, first16(min16(left - 16 * k)),
                                  _mm512_mul_ps(_mm512_castsi512_ps(v[k]), _mm512_load_ps(sv + s + 16 * k)));
        }
      }
    }
  }
}

}  // namespace detail

template <mx_element Elem, class In>
void mx_quantize(const In* x, std::size_t rows, std::size_t cols, mx_tile tile, scale_rule rule, std::uint8_t* codes,
                 std::uint8_t* scales) noexcept {
  if (rows == 0 || cols == 0) return;
  const auto run = [&]<scale_rule Rule>() {
    if (tile == mx_tile::col32) detail::mx_quantize_bands<Elem, false, Rule>(x, rows, cols, codes, scales);
    else if (tile == mx_tile::square32) detail::mx_quantize_bands<Elem, true, Rule>(x, rows, cols, codes, scales);
    else detail::mx_quantize_axis1<Elem, Rule>(x, rows, cols, codes, scales);
  };
  switch (rule) {
    case scale_rule::rceil: run.template operator()<scale_rule::rceil>(); break;
    case scale_rule::ceil: run.template operator()<scale_rule::ceil>(); break;
    case scale_rule::even: run.template operator()<scale_rule::even>(); break;
    default: run.template operator()<scale_rule::floor>(); break;
  }
}

template <mx_element Elem>
void mx_dequantize(const std::uint8_t* codes, const std::uint8_t* scales, std::size_t rows, std::size_t cols,
                   mx_tile tile, float* out) noexcept {
  if (rows == 0 || cols == 0) return;
  if (tile == mx_tile::col32) detail::mx_dequantize_columns<Elem>(codes, scales, rows, cols, out);
  else detail::mx_dequantize_blocks<Elem>(codes, scales, rows, cols, tile, out);
}

}  // namespace minifloat::simd::avx512

MINIFLOAT_AVX512_WARNINGS_POP

#endif  // MINIFLOAT_SIMD_X86
