#pragma once
// AVX-512 bulk codecs (F, BW, VL, DQ, VBMI, VBMI2, BF16: the isa::avx512 level of isa.hpp): the
// same functions, signatures and bits as simd/scalar/codec.hpp, 64 elements per step on 16-lane
// vectors, tails by masked loads and stores. Every function carries MINIFLOAT_TARGET_AVX512, so
// the header compiles in any x86-64 TU; simd/bulk.hpp calls it only when the probe found the
// level.
//
// The format logic is simd/lanes/codec_logic.hpp (shared with AVX2 and NEON), instantiated with
// `ops`: 16 x 32-bit lanes and k-register masks. AVX-512-only paths:
//   * E4M3, E5M2, FP6 and FP4 with ties-to-even (the OCP default, and MX's element rounding):
//     the magic-number add. With q = max(biased exponent of |x|, the target's min normal) and
//     C = 1.5 * 2^(q - 127 - M + 23), |x| + C rounds once, at the target's LSB 2^(q - 127 - M),
//     so the low 22 bits of the sum are RNE(|x| / LSB) = m; the code is m + ((q - emin) << M),
//     where a carry (m = 2^(M+1)) walks into the next binade as in spec.hpp step 4. The add uses
//     embedded rounding ({rn-sae}), so MXCSR's rounding mode and exception flags do not matter;
//     FTZ cannot apply (the sum is >= C, normal) and DAZ only zeroes float32 subnormal inputs,
//     which round to zero in these formats anyway (their LSB is >= 2^-17). Overflow, NaN and sign
//     as in the integer encoder (min, masked select, masked or).
//   * HiF8 ties-away (its default): the code is a function of the float32 exponent and the top 4
//     mantissa bits (codec_common.hpp hif8_away_table, from the scalar codec), so 64 lanes at a
//     time are narrowed to a 10-bit table index plus sign and looked up with six vpermi2b over a
//     768-byte table held in registers (the overflow and NaN entries patched per call).
//   * decoding of every format of at most 8 bits with vpermi2b / vpermb: every such value is a
//     bfloat16, so the two bytes of its bf16 pattern come from byte tables built from the
//     format's own decode table (simd/decode_tables.hpp), and four masked vpermt2b place them
//     into 64 float32 lanes.
//   * counter-based random bits for stochastic rounding with vpmullq (16 SplitMix64 lanes);
//   * a software prefetch of the encode loop's input 1 KiB ahead (memory-bound spans).
// Everything else (directed and stochastic modes, nearest-away for OCP formats, E8M0, bf16,
// fp16 outputs) runs the shared integer encoders on 16 lanes.
#include "../isa.hpp"

#if MINIFLOAT_SIMD_X86

#include <immintrin.h>

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "../../formats/basic_float.hpp"
#include "../../formats/e8m0.hpp"
#include "../../formats/float16.hpp"
#include "../../formats/float8.hpp"
#include "../../formats/hifloat8.hpp"
#include "../../formats/mx_elements.hpp"
#include "../decode_tables.hpp"
#include "../lanes/codec_common.hpp"
#include "intrinsic_warnings.hpp"

MINIFLOAT_AVX512_WARNINGS_PUSH

namespace minifloat::simd::avx512 {

namespace detail {

using simd::detail::decode_store;
using simd::detail::directed_lanes;
using simd::detail::hif8_table_data;
using simd::detail::is_e8m0_like;
using simd::detail::out_bytes;
using simd::detail::overflow_codes;
using simd::detail::reciprocal_is_exact;
using simd::detail::round_kind;
using simd::detail::scale_kind;
using simd::detail::store_for;
using simd::detail::store_kind;
using simd::detail::subnormal_bits;

MINIFLOAT_INLINE_AVX512 __m512i splat(std::uint32_t v) { return _mm512_set1_epi32(static_cast<int>(v)); }
MINIFLOAT_INLINE_AVX512 __m512i splat8(std::uint8_t v) { return _mm512_set1_epi8(static_cast<char>(v)); }
template <class T>
MINIFLOAT_INLINE_AVX512 __m512i loadu(const T* p) {
  return _mm512_loadu_si512(p);
}
template <class T>
MINIFLOAT_INLINE_AVX512 __m256i loadu256(const T* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}
/// The first r of 16 / 64 lanes (r <= 16 / r <= 64).
MINIFLOAT_INLINE_AVX512 __mmask16 first16(std::size_t r) {
  return static_cast<__mmask16>((std::uint32_t{1} << r) - 1U);
}
MINIFLOAT_INLINE_AVX512 __mmask64 first64(std::size_t r) {
  return r >= 64 ? ~__mmask64{0} : static_cast<__mmask64>((std::uint64_t{1} << r) - 1U);
}

/// 16 inputs as float32 bit patterns (bf16 and fp16 widen exactly; vcvtph2ps is exact).
template <class In>
MINIFLOAT_INLINE_AVX512 __m512i load16(const In* p) {
  if constexpr (std::is_same_v<In, float>) {
    return loadu(p);
  } else if constexpr (std::is_same_v<In, bfloat16>) {
    static_assert(sizeof(bfloat16) == 2);
    return _mm512_slli_epi32(_mm512_cvtepu16_epi32(loadu256(p)), 16);
  } else {
    static_assert(std::is_same_v<In, float16> && sizeof(float16) == 2);
    return _mm512_castps_si512(_mm512_cvtph_ps(loadu256(p)));
  }
}
/// The first r (<= 16) inputs, zeros after.
template <class In>
MINIFLOAT_INLINE_AVX512 __m512i load16_partial(const In* p, std::size_t r) {
  const __mmask16 k = first16(r);
  if constexpr (std::is_same_v<In, float>) {
    return _mm512_maskz_loadu_epi32(k, p);
  } else if constexpr (std::is_same_v<In, bfloat16>) {
    return _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(k, p)), 16);
  } else {
    return _mm512_castps_si512(_mm512_cvtph_ps(_mm256_maskz_loadu_epi16(k, p)));
  }
}

/// 4 x 16 codes (32-bit lanes, each < 2^8) -> 64 bytes in order. The two packs interleave per
/// 128-bit lane (lane L holds elements 4L .. 4L + 3 of each vector); one vpermd restores order.
MINIFLOAT_INLINE_AVX512 __m512i pack_bytes(const __m512i c[4]) {
  const __m512i b = _mm512_packus_epi16(_mm512_packus_epi32(c[0], c[1]), _mm512_packus_epi32(c[2], c[3]));
  return _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), b);
}
/// 2 x 16 codes (< 2^16) -> 32 words in order.
MINIFLOAT_INLINE_AVX512 __m512i pack_words(__m512i c0, __m512i c1) {
  return _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 2, 4, 6, 1, 3, 5, 7), _mm512_packus_epi32(c0, c1));
}
/// 64 one-per-byte FP4 codes -> 32 bytes of nibble pairs (element 2i low).
MINIFLOAT_INLINE_AVX512 __m256i pack_nibbles64(__m512i bytes) {
  const __m512i nib = _mm512_or_si512(_mm512_and_si512(bytes, _mm512_set1_epi16(0x000F)),
                                      _mm512_and_si512(_mm512_srli_epi16(bytes, 4), _mm512_set1_epi16(0x00F0)));
  return _mm512_cvtepi16_epi8(nib);
}

/// 4 x 16 codes -> memory as St.
template <store_kind St>
MINIFLOAT_INLINE_AVX512 void store64(void* out, const __m512i c[4]) {
  if constexpr (St == store_kind::u16) {
    auto* o = static_cast<std::uint16_t*>(out);
    _mm512_storeu_si512(o, pack_words(c[0], c[1]));
    _mm512_storeu_si512(o + 32, pack_words(c[2], c[3]));
  } else if constexpr (St == store_kind::u8) {
    _mm512_storeu_si512(out, pack_bytes(c));
  } else {
    _mm256_storeu_si256(static_cast<__m256i*>(out), pack_nibbles64(pack_bytes(c)));
  }
}
/// The first r (< 64) codes of 4 x 16 -> memory as St (FP4: the high nibble of an odd r's last
/// byte is 0).
template <store_kind St>
MINIFLOAT_INLINE_AVX512 void store64_partial(void* out, std::size_t r, const __m512i c[4]) {
  if constexpr (St == store_kind::u16) {
    auto* o = static_cast<std::uint16_t*>(out);
    const std::size_t r0 = r < 32 ? r : 32;
    _mm512_mask_storeu_epi16(o, static_cast<__mmask32>(first64(r0)), pack_words(c[0], c[1]));
    if (r > 32) _mm512_mask_storeu_epi16(o + 32, static_cast<__mmask32>(first64(r - 32)), pack_words(c[2], c[3]));
  } else if constexpr (St == store_kind::u8) {
    _mm512_mask_storeu_epi8(out, first64(r), pack_bytes(c));
  } else {
    __m256i nib = pack_nibbles64(pack_bytes(c));
    if (r % 2 != 0)
      nib = _mm256_mask_and_epi32(nib, static_cast<__mmask8>(1U << (r / 8)), nib,
                                  _mm256_set1_epi32(static_cast<int>(~(0xF0U << (8 * ((r / 2) % 4))))));
    _mm256_mask_storeu_epi8(out, static_cast<__mmask32>(first64((r + 1) / 2)), nib);
  }
}

// ------------------------------------------------------------------------------------------------
// Counter-based random bits: random_bits(seed, index) of random.hpp, 16 lanes at a time: the
// SplitMix64 states of elements 0..7 and 8..15 in two vectors of 64-bit lanes, vpmullq for the
// multiplies, the high halves picked in order by one vpermt2d.

inline constexpr std::uint64_t golden = 0x9E3779B97F4A7C15ULL;

MINIFLOAT_INLINE_AVX512 __m512i splitmix_finalise(__m512i z) {
  z = _mm512_xor_si512(z, _mm512_srli_epi64(z, 30));
  z = _mm512_mullo_epi64(z, _mm512_set1_epi64(static_cast<long long>(0xBF58476D1CE4E5B9ULL)));
  z = _mm512_xor_si512(z, _mm512_srli_epi64(z, 27));
  z = _mm512_mullo_epi64(z, _mm512_set1_epi64(static_cast<long long>(0x94D049BB133111EBULL)));
  return _mm512_xor_si512(z, _mm512_srli_epi64(z, 31));
}

struct random16 {
  __m512i z0, z1;

  MINIFLOAT_INLINE_AVX512 random16(std::uint64_t seed, std::uint64_t index) {
    const auto z = [&](std::uint64_t j) { return static_cast<long long>(seed + (index + j + 1) * golden); };
    z0 = _mm512_setr_epi64(z(0), z(1), z(2), z(3), z(4), z(5), z(6), z(7));
    z1 = _mm512_setr_epi64(z(8), z(9), z(10), z(11), z(12), z(13), z(14), z(15));
  }
  /// random_bits(seed, index + k) for k = 0..15, then advances by 16.
  MINIFLOAT_INLINE_AVX512 __m512i next() {
    const __m512i f0 = splitmix_finalise(z0), f1 = splitmix_finalise(z1);
    const __m512i step = _mm512_set1_epi64(static_cast<long long>(16 * golden));
    z0 = _mm512_add_epi64(z0, step);
    z1 = _mm512_add_epi64(z1, step);
    const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    return _mm512_permutex2var_epi32(f0, odd, f1);
  }
};

// ------------------------------------------------------------------------------------------------
// The lane ops the shared format logic is written in (simd/lanes/codec_logic.hpp lists them).

template <class Spec, round_kind R>
struct pick_encoder;  // below, once the encoders exist

struct ops {
  using v = __m512i;
  using m = __mmask16;
  using f = __m512;
  using table16 = __m512i;  // 16 dword entries, looked up with vpermd
  using table8 = __m512i;
  using random = random16;
  template <class Spec, round_kind R>
  using encoder = typename pick_encoder<Spec, R>::type;
  static constexpr std::size_t lanes = 16;

  MINIFLOAT_INLINE_AVX512 static v splat(std::uint32_t x) { return _mm512_set1_epi32(static_cast<int>(x)); }
  MINIFLOAT_INLINE_AVX512 static v splat_i(int x) { return _mm512_set1_epi32(x); }
  MINIFLOAT_INLINE_AVX512 static v zero() { return _mm512_setzero_si512(); }
  MINIFLOAT_INLINE_AVX512 static m mask_splat(bool b) { return b ? m{0xFFFF} : m{0}; }
  MINIFLOAT_INLINE_AVX512 static v add(v a, v b) { return _mm512_add_epi32(a, b); }
  MINIFLOAT_INLINE_AVX512 static v sub(v a, v b) { return _mm512_sub_epi32(a, b); }
  MINIFLOAT_INLINE_AVX512 static v and_(v a, v b) { return _mm512_and_si512(a, b); }
  MINIFLOAT_INLINE_AVX512 static v or_(v a, v b) { return _mm512_or_si512(a, b); }
  MINIFLOAT_INLINE_AVX512 static v xor_(v a, v b) { return _mm512_xor_si512(a, b); }
  MINIFLOAT_INLINE_AVX512 static v andnot(v a, v b) { return _mm512_andnot_si512(a, b); }
  MINIFLOAT_INLINE_AVX512 static v min_s(v a, v b) { return _mm512_min_epi32(a, b); }
  MINIFLOAT_INLINE_AVX512 static v max_s(v a, v b) { return _mm512_max_epi32(a, b); }
  MINIFLOAT_INLINE_AVX512 static v max_u(v a, v b) { return _mm512_max_epu32(a, b); }
  MINIFLOAT_INLINE_AVX512 static v abs_s(v a) { return _mm512_abs_epi32(a); }
  MINIFLOAT_INLINE_AVX512 static v srl(v a, v count) { return _mm512_srlv_epi32(a, count); }
  MINIFLOAT_INLINE_AVX512 static v sll(v a, v count) { return _mm512_sllv_epi32(a, count); }
  template <int N>
  MINIFLOAT_INLINE_AVX512 static v srli(v a) { return _mm512_srli_epi32(a, N); }
  template <int N>
  MINIFLOAT_INLINE_AVX512 static v slli(v a) { return _mm512_slli_epi32(a, N); }
  template <int N>
  MINIFLOAT_INLINE_AVX512 static v srai(v a) { return _mm512_srai_epi32(a, N); }
  MINIFLOAT_INLINE_AVX512 static m eq(v a, v b) { return _mm512_cmpeq_epi32_mask(a, b); }
  MINIFLOAT_INLINE_AVX512 static m gt_s(v a, v b) { return _mm512_cmpgt_epi32_mask(a, b); }
  MINIFLOAT_INLINE_AVX512 static m lt_u(v a, v b) { return _mm512_cmplt_epu32_mask(a, b); }
  MINIFLOAT_INLINE_AVX512 static v select(m k, v a, v b) { return _mm512_mask_blend_epi32(k, b, a); }
  MINIFLOAT_INLINE_AVX512 static v keep(v a, m k) { return _mm512_maskz_mov_epi32(k, a); }
  MINIFLOAT_INLINE_AVX512 static v zero_if(v a, m k) { return _mm512_maskz_mov_epi32(_knot_mask16(k), a); }
  MINIFLOAT_INLINE_AVX512 static v inc_if(v a, m k) { return _mm512_mask_add_epi32(a, k, a, _mm512_set1_epi32(1)); }
  MINIFLOAT_INLINE_AVX512 static m mask_or(m a, m b) { return _kor_mask16(a, b); }
  MINIFLOAT_INLINE_AVX512 static m mask_and(m a, m b) { return _kand_mask16(a, b); }
  MINIFLOAT_INLINE_AVX512 static v as_vec(m k) { return _mm512_movm_epi32(k); }
  MINIFLOAT_INLINE_AVX512 static m sign_lanes(v a) { return _mm512_movepi32_mask(a); }
  MINIFLOAT_INLINE_AVX512 static table16 load_table16(const std::uint8_t* t) {
    return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(t)));
  }
  MINIFLOAT_INLINE_AVX512 static v lookup16(table16 t, v idx) { return _mm512_permutexvar_epi32(idx, t); }
  MINIFLOAT_INLINE_AVX512 static table8 load_table8(const std::uint32_t* t) {
    return _mm512_zextsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(t)));
  }
  MINIFLOAT_INLINE_AVX512 static v lookup8(table8 t, v idx) { return _mm512_permutexvar_epi32(idx, t); }

  // loop primitives
  MINIFLOAT_INLINE_AVX512 static f fsplat(float x) { return _mm512_set1_ps(x); }
  MINIFLOAT_INLINE_AVX512 static f mulf(f a, f b) { return _mm512_mul_ps(a, b); }
  MINIFLOAT_INLINE_AVX512 static f divf(f a, f b) { return _mm512_div_ps(a, b); }
  MINIFLOAT_INLINE_AVX512 static f as_f(v a) { return _mm512_castsi512_ps(a); }
  MINIFLOAT_INLINE_AVX512 static v as_v(f a) { return _mm512_castps_si512(a); }
  MINIFLOAT_INLINE_AVX512 static float hmax(v a) { return std::bit_cast<float>(_mm512_reduce_max_epu32(a)); }
  template <class In>
  MINIFLOAT_INLINE_AVX512 static v load(const In* p) { return load16(p); }
  template <class In>
  MINIFLOAT_INLINE_AVX512 static v load_partial(const In* p, std::size_t r) { return load16_partial(p, r); }
  template <store_kind St>
  MINIFLOAT_INLINE_AVX512 static void store_step(void* out, const v c[4]) { store64<St>(out, c); }
  template <store_kind St>
  MINIFLOAT_INLINE_AVX512 static void store_step_partial(void* out, std::size_t r, const v c[4]) {
    store64_partial<St>(out, r, c);
  }
  MINIFLOAT_INLINE_AVX512 static void store_bytes(void* out, __m512i b) { _mm512_storeu_si512(out, b); }
  /// The encode loop's input, 1 KiB ahead of step i (a prefetch never faults, so the end of the
  /// span needs no care; the address is formed as an integer). Measured on 64 Mi float32: +10-15 %
  /// (0.86 -> 0.95 of the stream for E4M3); 4 KiB ahead was slower than none; in-cache spans lose
  /// about 2 %.
  template <class In>
  MINIFLOAT_INLINE_AVX512 static void prefetch_in(const In* x, std::size_t i) {
    constexpr std::uintptr_t ahead = 1024;
    const std::uintptr_t p = reinterpret_cast<std::uintptr_t>(x) + i * sizeof(In) + ahead;
    for (std::size_t line = 0; line < 4 * lanes * sizeof(In); line += 64)
      _mm_prefetch(reinterpret_cast<const char*>(p + line), _MM_HINT_T0);
  }
  MINIFLOAT_INLINE_AVX512 static void store_bytes_partial(void* out, std::size_t r, __m512i b) {
    _mm512_mask_storeu_epi8(out, first64(r), b);
  }
  MINIFLOAT_INLINE_AVX512 static v load_u8(const std::uint8_t* p) {
    return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  /// 32 bytes of FP4 nibble pairs -> 64 codes, one per byte.
  MINIFLOAT_INLINE_AVX512 static void unpack_step(const std::uint8_t* p, std::uint8_t* out) {
    const __m512i w = _mm512_cvtepu8_epi16(loadu256(p));
    _mm512_storeu_si512(out, _mm512_or_si512(_mm512_and_si512(w, _mm512_set1_epi16(0x000F)),
                                             _mm512_and_si512(_mm512_slli_epi16(w, 4), _mm512_set1_epi16(0x0F00))));
  }
  /// bytes (<= capacity, capacity 32 or 64) from src, zeros after, by a masked load.
  MINIFLOAT_INLINE_AVX512 static void copy_partial(void* dst, const void* src, std::size_t bytes, std::size_t capacity) {
    if (capacity >= 64) {
      _mm512_storeu_si512(dst, _mm512_maskz_loadu_epi8(first64(bytes), src));
    } else {
      _mm256_storeu_si256(static_cast<__m256i*>(dst),
                          _mm256_maskz_loadu_epi8(static_cast<__mmask32>(first64(bytes)), src));
    }
  }
  template <decode_store D>
  MINIFLOAT_INLINE_AVX512 static void store_f(float* out, v bits, f scale) {
    f x = _mm512_castsi512_ps(bits);
    if constexpr (D == decode_store::scaled) x = _mm512_mul_ps(x, scale);
    _mm512_storeu_ps(out, x);
  }
  template <decode_store D>
  MINIFLOAT_INLINE_AVX512 static void store_f_partial(float* out, std::size_t r, v bits, f scale) {
    f x = _mm512_castsi512_ps(bits);
    if constexpr (D == decode_store::scaled) x = _mm512_mul_ps(x, scale);
    _mm512_mask_storeu_ps(out, first16(r), x);
  }
  template <class Spec>
  MINIFLOAT_INLINE_AVX512 static v widen16(const std::uint16_t* p, v& c) {
    const __m256i codes = loadu256(p);
    c = _mm512_cvtepu16_epi32(codes);
    if constexpr (Spec::exponent_bits == 8) return _mm512_slli_epi32(c, 16);  // bfloat16
    else return _mm512_castps_si512(_mm512_cvtph_ps(codes));                 // float16
  }
};

#define MINIFLOAT_LANES_INLINE MINIFLOAT_INLINE_AVX512
#define MINIFLOAT_LANES_TARGET MINIFLOAT_TARGET_AVX512
#include "../lanes/codec_logic.hpp"
#undef MINIFLOAT_LANES_INLINE
#undef MINIFLOAT_LANES_TARGET

// ------------------------------------------------------------------------------------------------
// Encoders (operator()(x bits, random bits) -> 16 codes in 32-bit lanes)

/// Ties-to-even for the IEEE-like formats of at most 8 bits with a zero, by the magic-number add
/// of the header comment.
template <class Spec>
struct exmy_rne {
  static constexpr int M = Spec::mantissa_bits;
  static constexpr std::uint32_t emin_bits = static_cast<std::uint32_t>(128 - Spec::bias) << 23;
  static_assert(Spec::bits <= 8 && 128 - Spec::bias >= 1 && M <= 3);
  __m512i ovf, nan_out;

  MINIFLOAT_INLINE_AVX512 exmy_rne(conversion c) {
    const auto k = overflow_codes<Spec>::from(c);
    ovf = splat(k.ovf), nan_out = splat(k.nan_out);
  }

  MINIFLOAT_INLINE_AVX512 __m512i operator()(__m512i x, __m512i random) const {
    (void)random;
    const __m512i a = _mm512_and_si512(x, splat(0x7FFFFFFFU));
    const __m512i q = _mm512_max_epu32(_mm512_and_si512(x, splat(0x7F800000U)), splat(emin_bits));
    const __m512i c = _mm512_add_epi32(q, splat((static_cast<std::uint32_t>(23 - M) << 23) | 0x400000U));
    const __m512 s = _mm512_add_round_ps(_mm512_castsi512_ps(a), _mm512_castsi512_ps(c),
                                         _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512i m = _mm512_and_si512(_mm512_castps_si512(s), splat(0x3FFFFFU));
    __m512i code = _mm512_add_epi32(m, _mm512_srli_epi32(_mm512_sub_epi32(q, splat(emin_bits)), 23 - M));
    const __mmask16 not_nan = _mm512_cmple_epu32_mask(a, splat(0x7F800000U));
    code = _mm512_mask_min_epi32(nan_out, not_nan, code, ovf);  // overflow; NaN lanes -> nan_out
    __mmask16 neg = _mm512_mask_test_epi32_mask(not_nan, x, splat(0x80000000U));
    if constexpr (Spec::layout.specials == nan_inf::fnuz) neg = _mm512_mask_test_epi32_mask(neg, code, code);  // no -0
    return _mm512_mask_or_epi32(code, neg, code, splat(Spec::sign_mask));
  }
};

template <class Spec, round_kind R>
using exmy_encoder = std::conditional_t<R == round_kind::nearest_even && Spec::bits <= 8 && Spec::digits <= 4, exmy_rne<Spec>,
                                        exmy_lanes<ops, Spec, R>>;
template <class Spec, round_kind R>
using e8m0_encoder = e8m0_lanes<ops, Spec, R>;

/// HiF8 ties-away rows: biased exponents 96 .. 143 (six 128-byte vpermi2b tables). Inputs clamp
/// into rows 103 (2^-24 and below: code 0) .. 143 (2^16 and above: overflow); rows 96 .. 102 are
/// then unreachable, and entry 0 serves as the NaN entry.
using hif8_away_bytes = simd::detail::hif8_away_table<std::uint8_t, 96, 48>;
inline constexpr hif8_away_bytes hif8_away_bytes_data = hif8_away_bytes::make();
static_assert(hif8_away_bytes_data.cells_constant);
static_assert(hif8_away_bytes_data.code[(103 - 96) * 16] == 0 && hif8_away_bytes_data.code[(104 - 96) * 16] == 1);
static_assert(hif8_away_bytes_data.code[(143 - 96) * 16 + 15] == hifloat8_spec::inf_code);

/// The order of the bytes of (packus_epi32(w0, w1), packus_epi32(w2, w3)) as one 128-byte table:
/// entry j is the position of the low byte of element j's word (+ High: the high byte).
template <int High>
inline constexpr std::array<std::uint8_t, 64> word_bytes = [] {
  std::array<std::uint8_t, 64> t{};
  for (std::size_t j = 0; j < 64; ++j) {
    const std::size_t s = j / 16, e = j % 16, lane = e / 4, pos = e % 4;
    const std::size_t word = lane * 8 + (s % 2) * 4 + pos;
    t[j] = static_cast<std::uint8_t>((s >= 2 ? 64 : 0) + 2 * word + High);
  }
  return t;
}();

template <round_kind R>
struct hif8_encoder : hif8_lanes<ops, R> {
  using base = hif8_lanes<ops, R>;
  // nearest_away: hif8_away_bytes with Inf -> this call's overflow code and entry 0 -> NaN code
  __m512i table[R == round_kind::nearest_away ? 12 : 1];

  MINIFLOAT_INLINE_AVX512 hif8_encoder(conversion c) : base(c) {
    if constexpr (R == round_kind::nearest_away) {
      const auto k = overflow_codes<hifloat8_spec>::from(c);
      for (std::size_t t = 0; t < 12; ++t) {
        const __m512i e = loadu(hif8_away_bytes_data.code.data() + 64 * t);
        table[t] = _mm512_mask_blend_epi8(_mm512_cmpeq_epi8_mask(e, splat8(hifloat8_spec::inf_code)), e,
                                          splat8(static_cast<std::uint8_t>(k.ovf)));
      }
      table[0] = _mm512_mask_blend_epi8(1, table[0], splat8(static_cast<std::uint8_t>(k.nan_out)));
    } else {
      table[0] = _mm512_setzero_si512();
    }
  }

  /// Ties-away, 64 lanes -> 64 codes in order. Per lane the word (row, cell) index |x| >> 19
  /// clamped into rows 103 .. 143 (NaN: index 96 * 16, the NaN entry) | sign << 12; the words are
  /// narrowed to the low 7 index bits (vpermi2b reads those) and a byte holding index >> 7 and the
  /// sign; six 128-entry lookups and a blend tree on index bits 7..9 give the code.
  MINIFLOAT_INLINE_AVX512 __m512i bytes_step(const __m512i x[4]) const
    requires(R == round_kind::nearest_away)
  {
    constexpr std::uint32_t lo_row = 103 * 16, hi_row = 143 * 16 + 15, nan_idx = 96 * 16;
    __m512i w[4];
    for (std::size_t k = 0; k < 4; ++k) {
      const __m512i a = _mm512_and_si512(x[k], splat(0x7FFFFFFFU));
      const __m512i t = _mm512_max_epu32(_mm512_srli_epi32(a, 19), splat(lo_row));
      const __mmask16 not_nan = _mm512_cmple_epu32_mask(a, splat(0x7F800000U));
      const __m512i idx = _mm512_mask_min_epu32(splat(nan_idx), not_nan, t, splat(hi_row));
      w[k] = _mm512_ternarylogic_epi32(idx, _mm512_srli_epi32(x[k], 19), splat(0x1000U), 0xF8);  // A | (B & C)
    }
    const __m512i p01 = _mm512_packus_epi32(w[0], w[1]), p23 = _mm512_packus_epi32(w[2], w[3]);
    const __m512i lo = _mm512_permutex2var_epi8(p01, loadu(word_bytes<0>.data()), p23);
    const __m512i hi = _mm512_permutex2var_epi8(_mm512_slli_epi16(p01, 1), loadu(word_bytes<1>.data()),
                                                _mm512_slli_epi16(p23, 1));
    const __m512i sel = _mm512_sub_epi8(hi, splat8(12));  // table 0..5 in bits 0..2, the sign in bit 5
    __m512i r[6];
    for (std::size_t t = 0; t < 6; ++t) r[t] = _mm512_permutex2var_epi8(table[2 * t], lo, table[2 * t + 1]);
    const __mmask64 b0 = _mm512_test_epi8_mask(sel, splat8(1)), b1 = _mm512_test_epi8_mask(sel, splat8(2)),
                    b2 = _mm512_test_epi8_mask(sel, splat8(4));
    const __m512i r03 = _mm512_mask_blend_epi8(b1, _mm512_mask_blend_epi8(b0, r[0], r[1]), _mm512_mask_blend_epi8(b0, r[2], r[3]));
    const __m512i code = _mm512_mask_blend_epi8(b2, r03, _mm512_mask_blend_epi8(b0, r[4], r[5]));
    // The sign, except on the one zero (a negative input that rounds to 0 gives 0x00) and NaN.
    const __mmask64 neg = _mm512_mask_test_epi8_mask(_mm512_test_epi8_mask(code, code), sel, splat8(0x20));
    return _mm512_or_si512(code, _mm512_maskz_mov_epi8(neg, splat8(0x80)));
  }
};

template <class Spec, round_kind R>
struct pick_encoder {
  using type = std::conditional_t<std::is_same_v<Spec, hifloat8_spec>, hif8_encoder<R>,
                                  std::conditional_t<is_e8m0_like<Spec>, e8m0_encoder<Spec, R>, exmy_encoder<Spec, R>>>;
};
template <class Spec, round_kind R>
using encoder_for = typename pick_encoder<Spec, R>::type;

// ------------------------------------------------------------------------------------------------
// Decoding: formats of at most 8 bits from bf16 byte tables

/// How the decoder indexes a format's bf16 byte tables (simd/decode_tables.hpp bf16_bytes): by
/// the magnitude (code & 0x7F) for signed 8-bit formats (the sign is ORed in), by the whole code
/// for E8M0 (256 entries), by code & 63 for FP6 and FP4 (FP4's 16 entries repeated).
template <class Spec>
struct bf16_index {
  static constexpr bool signed8 = Spec::bits == 8 && !is_e8m0_like<Spec>;
  static constexpr std::size_t entries = Spec::bits == 8 ? (signed8 ? 128 : 256) : 64;
};

/// Output byte b of float vector k: byte 2 of dword j is the low bf16 byte of code 16k + j (first
/// table), byte 3 its high byte (second table, + 64); bytes 0 and 1 are zeroed by the mask.
template <std::size_t K>
inline constexpr std::array<std::uint8_t, 64> expand_bytes = [] {
  std::array<std::uint8_t, 64> t{};
  for (std::size_t b = 0; b < 64; ++b) {
    const std::size_t j = b / 4, pos = b % 4;
    t[b] = static_cast<std::uint8_t>(pos == 3 ? 64 + 16 * K + j : pos == 2 ? 16 * K + j : 0);
  }
  return t;
}();

template <class Spec>
struct table_decoder {
  using L = bf16_index<Spec>;
  static constexpr auto& data = simd::detail::bf16_bytes<Spec, L::entries>;
  static_assert(data.low_half_zero, "every value must be a bfloat16");
  static_assert(!L::signed8 || data.sign_symmetric);
  static constexpr std::size_t zmms = L::entries / 64;
  __m512i hi[zmms], lo[zmms];

  MINIFLOAT_INLINE_AVX512 table_decoder() {
    for (std::size_t t = 0; t < zmms; ++t) hi[t] = loadu(data.hi.data() + 64 * t), lo[t] = loadu(data.lo.data() + 64 * t);
  }

  /// 64 codes (one per byte) -> 4 x 16 float32 bit patterns, in order.
  MINIFLOAT_INLINE_AVX512 void operator()(const std::uint8_t* p, __m512i out[4]) const {
    const __m512i c = loadu(p);
    __m512i h, l;
    if constexpr (zmms == 1) {
      h = _mm512_permutexvar_epi8(c, hi[0]);
      l = _mm512_permutexvar_epi8(c, lo[0]);
    } else if constexpr (zmms == 2) {
      h = _mm512_permutex2var_epi8(hi[0], c, hi[1]);
      l = _mm512_permutex2var_epi8(lo[0], c, lo[1]);
      h = _mm512_ternarylogic_epi32(h, c, splat8(0x80), 0xF8);  // | the sign
      if constexpr (data.code80 != 0x80000000U) {
        const __mmask64 is80 = _mm512_cmpeq_epi8_mask(c, splat8(0x80));
        h = _mm512_mask_blend_epi8(is80, h, splat8(static_cast<std::uint8_t>(data.code80 >> 24)));
        l = _mm512_mask_blend_epi8(is80, l, splat8(static_cast<std::uint8_t>((data.code80 >> 16) & 0xFFU)));
      }
    } else {
      const __mmask64 upper = _mm512_movepi8_mask(c);
      h = _mm512_mask_blend_epi8(upper, _mm512_permutex2var_epi8(hi[0], c, hi[1]), _mm512_permutex2var_epi8(hi[2], c, hi[3]));
      l = _mm512_mask_blend_epi8(upper, _mm512_permutex2var_epi8(lo[0], c, lo[1]), _mm512_permutex2var_epi8(lo[2], c, lo[3]));
    }
    constexpr __mmask64 top2 = 0xCCCCCCCCCCCCCCCCULL;
    out[0] = _mm512_maskz_permutex2var_epi8(top2, l, loadu(expand_bytes<0>.data()), h);
    out[1] = _mm512_maskz_permutex2var_epi8(top2, l, loadu(expand_bytes<1>.data()), h);
    out[2] = _mm512_maskz_permutex2var_epi8(top2, l, loadu(expand_bytes<2>.data()), h);
    out[3] = _mm512_maskz_permutex2var_epi8(top2, l, loadu(expand_bytes<3>.data()), h);
  }
};

template <class Spec>
using decoder8_for = table_decoder<Spec>;

}  // namespace detail

// The kernel set (signatures as in simd/scalar/codec.hpp), written once for every ISA namespace.
#include "../lanes/kernel_set.inc"  // IWYU pragma: keep

MINIFLOAT_TARGET_AVX512 inline void pack_nibbles(const std::uint8_t* codes, std::size_t n, std::uint8_t* packed) noexcept {
  std::size_t i = 0;
  for (; i + 64 <= n; i += 64) _mm256_storeu_si256(reinterpret_cast<__m256i*>(packed + i / 2), detail::pack_nibbles64(detail::loadu(codes + i)));
  if (i < n) {
    const std::size_t r = n - i;
    __m256i nib = detail::pack_nibbles64(_mm512_maskz_loadu_epi8(detail::first64(r), codes + i));
    _mm256_mask_storeu_epi8(packed + i / 2, static_cast<__mmask32>(detail::first64((r + 1) / 2)), nib);
  }
}

MINIFLOAT_TARGET_AVX512 inline void unpack_nibbles(const std::uint8_t* packed, std::size_t n, std::uint8_t* codes) noexcept {
  std::size_t i = 0;
  alignas(64) std::uint8_t buf[64];
  for (; i + 64 <= n; i += 64) detail::ops::unpack_step(packed + i / 2, codes + i);
  if (i < n) {
    const std::size_t r = n - i;
    alignas(32) std::uint8_t in[32];
    detail::ops::copy_partial(in, packed + i / 2, (r + 1) / 2, sizeof in);
    detail::ops::unpack_step(in, buf);
    _mm512_mask_storeu_epi8(codes + i, detail::first64(r), _mm512_loadu_si512(buf));
  }
}

}  // namespace minifloat::simd::avx512

MINIFLOAT_AVX512_WARNINGS_POP

#endif  // MINIFLOAT_SIMD_X86
