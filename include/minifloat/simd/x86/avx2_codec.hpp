#pragma once
// AVX2 (+FMA, F16C) bulk codecs: the same functions, with the same signatures and the same
// bits, as simd/scalar/codec.hpp. Every function carries [[gnu::target("avx2,fma,f16c")]],
// so this header compiles in any x86-64 TU; call it only when the CPU has those features
// (simd/bulk.hpp checks).
//
// The format logic (rounding, the E4M3/E5M2/FP6/FP4/bf16/fp16, E8M0 and HiF8 encoders, the
// arithmetic decoders and the loops) is simd/lanes/codec_logic.hpp, instantiated here with `ops`
// (8 x 32-bit lanes, masks as all-ones lanes); docs/simd.md explains the split. What stays here
// is what only AVX2 does this way:
//   * counter-based random bits for stochastic rounding, 8 SplitMix64 lanes built from vpmuludq;
//   * HiF8's default (ties-away): its code depends only on the exponent and the top 4 mantissa
//     bits, so one vpgatherdd from a 656-entry table built from the scalar codec (every cell
//     checked constant at compile time);
//   * HiF8 decode from the scalar decode table itself: every HiF8 value is a bfloat16 (at most 4
//     significant bits, 2^-22 .. 2^15), so float32 = bf16 << 16 and the two bf16 bytes come from
//     two 128-entry byte tables, each looked up with 8 vpshufb (tables pre-XORed so that
//     out-of-range lookups cancel: the "vpshufb cascade", simd/decode_tables.hpp);
//   * packing 32-bit lane codes to bytes, words and FP4 nibbles (vpackus + vpermd), fp16 by F16C.
// Encoding works on float32 bit patterns with integer operations only (no FP rounding, so the
// MXCSR rounding mode and FTZ/DAZ do not matter), 32 elements per step.
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

namespace minifloat::simd::avx2 {

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

// ------------------------------------------------------------------------------------------------
// Small helpers (lanes are 32-bit unless named otherwise); simd/x86/avx2_mx.hpp uses them too.

MINIFLOAT_INLINE_AVX2 __m256i splat(std::uint32_t v) { return _mm256_set1_epi32(static_cast<int>(v)); }
MINIFLOAT_INLINE_AVX2 __m256i splat_i(int v) { return _mm256_set1_epi32(v); }
MINIFLOAT_INLINE_AVX2 __m256i all_ones() { return _mm256_set1_epi32(-1); }
MINIFLOAT_INLINE_AVX2 __m256i blend(__m256i a, __m256i b, __m256i mask) {  // mask ? b : a
  return _mm256_blendv_epi8(a, b, mask);
}

template <class T>
MINIFLOAT_INLINE_AVX2 __m256i loadu(const T* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}
template <class T>
MINIFLOAT_INLINE_AVX2 void storeu(T* p, __m256i v) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v);
}
template <class T>
MINIFLOAT_INLINE_AVX2 __m128i loadu128(const T* p) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}
template <class T>
MINIFLOAT_INLINE_AVX2 void storeu128(T* p, __m128i v) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), v);
}

/// 8 inputs as float32 bit patterns (bf16 and fp16 widen exactly; F16C's vcvtph2ps is exact,
/// subnormals included).
template <class In>
MINIFLOAT_INLINE_AVX2 __m256i load8(const In* p) {
  if constexpr (std::is_same_v<In, float>) {
    return loadu(p);
  } else if constexpr (std::is_same_v<In, bfloat16>) {
    static_assert(sizeof(bfloat16) == 2);
    return _mm256_slli_epi32(_mm256_cvtepu16_epi32(loadu128(p)), 16);
  } else {
    static_assert(std::is_same_v<In, float16> && sizeof(float16) == 2);
    return _mm256_castps_si256(_mm256_cvtph_ps(loadu128(p)));
  }
}

MINIFLOAT_INLINE_AVX2 float hmax_bits(__m256i v) {
  __m128i m = _mm_max_epu32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  m = _mm_max_epu32(m, _mm_shuffle_epi32(m, _MM_SHUFFLE(1, 0, 3, 2)));
  m = _mm_max_epu32(m, _mm_shuffle_epi32(m, _MM_SHUFFLE(2, 3, 0, 1)));
  return std::bit_cast<float>(static_cast<std::uint32_t>(_mm_cvtsi128_si32(m)));
}

/// 4 x 8 codes (32-bit lanes, each < 2^16) -> memory.
template <store_kind St>
MINIFLOAT_INLINE_AVX2 void store32(void* out, __m256i c0, __m256i c1, __m256i c2, __m256i c3) {
  if constexpr (St == store_kind::u16) {
    auto* o = static_cast<std::uint16_t*>(out);
    storeu(o, _mm256_permute4x64_epi64(_mm256_packus_epi32(c0, c1), 0xD8));
    storeu(o + 16, _mm256_permute4x64_epi64(_mm256_packus_epi32(c2, c3), 0xD8));
  } else {
    const __m256i w = _mm256_packus_epi16(_mm256_packus_epi32(c0, c1), _mm256_packus_epi32(c2, c3));
    const __m256i bytes = _mm256_permutevar8x32_epi32(w, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    if constexpr (St == store_kind::u8) {
      storeu(static_cast<std::uint8_t*>(out), bytes);
    } else {
      // 16-bit words (code 2i | code 2i+1 << 8) -> byte code 2i | code 2i+1 << 4.
      const __m256i nib = _mm256_or_si256(_mm256_and_si256(bytes, _mm256_set1_epi16(0x000F)),
                                          _mm256_and_si256(_mm256_srli_epi16(bytes, 4), _mm256_set1_epi16(0x00F0)));
      const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi16(nib, nib), 0x08);
      storeu128(static_cast<std::uint8_t*>(out), _mm256_castsi256_si128(packed));
    }
  }
}

/// 16 bytes of FP4 nibble pairs (element 2i low) -> 32 codes, one per byte, into `out`.
MINIFLOAT_INLINE_AVX2 void unpack32_nibbles(const std::uint8_t* p, std::uint8_t* out) {
  const __m128i b = loadu128(p);
  const __m128i lo = _mm_and_si128(b, _mm_set1_epi8(0x0F));
  const __m128i hi = _mm_and_si128(_mm_srli_epi16(b, 4), _mm_set1_epi8(0x0F));
  storeu(out, _mm256_set_m128i(_mm_unpackhi_epi8(lo, hi), _mm_unpacklo_epi8(lo, hi)));
}

/// The 32 one-per-byte codes starting at element i (FP4: from nibble pairs, via `buf`).
template <bool Packed>
MINIFLOAT_INLINE_AVX2 const std::uint8_t* codes32_at(const std::uint8_t* codes, std::size_t i, std::uint8_t* buf) {
  if constexpr (Packed) {
    unpack32_nibbles(codes + i / 2, buf);
    return buf;
  } else {
    (void)buf;
    return codes + i;
  }
}

// ------------------------------------------------------------------------------------------------
// Counter-based random bits: random_bits(seed, index) of random.hpp, 8 lanes at a time. The
// SplitMix64 state z_i = seed + (i + 1) * G is carried in two vectors of 64-bit lanes holding
// elements {0, 1, 4, 5} and {2, 3, 6, 7} of each group of 8, so that picking the high halves
// with one vshufps gives the 8 results in order. 64x64 multiplies are built from vpmuludq.

inline constexpr std::uint64_t golden = 0x9E3779B97F4A7C15ULL;

MINIFLOAT_INLINE_AVX2 __m256i mul64_const(__m256i z, std::uint64_t c) {
  const __m256i c_lo = _mm256_set1_epi64x(static_cast<long long>(c & 0xFFFFFFFFULL));
  const __m256i c_hi = _mm256_set1_epi64x(static_cast<long long>(c >> 32));
  const __m256i lo_lo = _mm256_mul_epu32(z, c_lo);
  const __m256i lo_hi = _mm256_mul_epu32(z, c_hi);
  const __m256i hi_lo = _mm256_mul_epu32(_mm256_srli_epi64(z, 32), c_lo);
  return _mm256_add_epi64(lo_lo, _mm256_slli_epi64(_mm256_add_epi64(lo_hi, hi_lo), 32));
}

MINIFLOAT_INLINE_AVX2 __m256i splitmix_finalise(__m256i z) {
  z = _mm256_xor_si256(z, _mm256_srli_epi64(z, 30));
  z = mul64_const(z, 0xBF58476D1CE4E5B9ULL);
  z = _mm256_xor_si256(z, _mm256_srli_epi64(z, 27));
  z = mul64_const(z, 0x94D049BB133111EBULL);
  return _mm256_xor_si256(z, _mm256_srli_epi64(z, 31));
}

struct random8 {
  __m256i z0, z1;

  MINIFLOAT_INLINE_AVX2 random8(std::uint64_t seed, std::uint64_t index) {
    const auto z = [&](std::uint64_t j) { return static_cast<long long>(seed + (index + j + 1) * golden); };
    z0 = _mm256_set_epi64x(z(5), z(4), z(1), z(0));
    z1 = _mm256_set_epi64x(z(7), z(6), z(3), z(2));
  }
  /// random_bits(seed, index + k) for k = 0..7, then advances by 8.
  MINIFLOAT_INLINE_AVX2 __m256i next() {
    const __m256i f0 = splitmix_finalise(z0), f1 = splitmix_finalise(z1);
    const __m256i step = _mm256_set1_epi64x(static_cast<long long>(8 * golden));
    z0 = _mm256_add_epi64(z0, step);
    z1 = _mm256_add_epi64(z1, step);
    return _mm256_castps_si256(
        _mm256_shuffle_ps(_mm256_castsi256_ps(f0), _mm256_castsi256_ps(f1), _MM_SHUFFLE(3, 1, 3, 1)));
  }
};

// ------------------------------------------------------------------------------------------------
// The lane ops the shared format logic is written in (simd/lanes/codec_logic.hpp lists them).

template <class Spec, round_kind R>
struct pick_encoder;  // below, once the encoders exist

struct ops {
  using v = __m256i;
  using m = __m256i;  // all-ones lanes
  using f = __m256;
  using table16 = __m256i;
  using table8 = __m256i;
  using random = random8;
  template <class Spec, round_kind R>
  using encoder = typename pick_encoder<Spec, R>::type;
  static constexpr std::size_t lanes = 8;

  MINIFLOAT_INLINE_AVX2 static v splat(std::uint32_t x) { return _mm256_set1_epi32(static_cast<int>(x)); }
  MINIFLOAT_INLINE_AVX2 static v splat_i(int x) { return _mm256_set1_epi32(x); }
  MINIFLOAT_INLINE_AVX2 static v zero() { return _mm256_setzero_si256(); }
  MINIFLOAT_INLINE_AVX2 static m mask_splat(bool b) { return _mm256_set1_epi32(b ? -1 : 0); }
  MINIFLOAT_INLINE_AVX2 static v add(v a, v b) { return _mm256_add_epi32(a, b); }
  MINIFLOAT_INLINE_AVX2 static v sub(v a, v b) { return _mm256_sub_epi32(a, b); }
  MINIFLOAT_INLINE_AVX2 static v and_(v a, v b) { return _mm256_and_si256(a, b); }
  MINIFLOAT_INLINE_AVX2 static v or_(v a, v b) { return _mm256_or_si256(a, b); }
  MINIFLOAT_INLINE_AVX2 static v xor_(v a, v b) { return _mm256_xor_si256(a, b); }
  MINIFLOAT_INLINE_AVX2 static v andnot(v a, v b) { return _mm256_andnot_si256(a, b); }
  MINIFLOAT_INLINE_AVX2 static v min_s(v a, v b) { return _mm256_min_epi32(a, b); }
  MINIFLOAT_INLINE_AVX2 static v max_s(v a, v b) { return _mm256_max_epi32(a, b); }
  MINIFLOAT_INLINE_AVX2 static v max_u(v a, v b) { return _mm256_max_epu32(a, b); }
  MINIFLOAT_INLINE_AVX2 static v abs_s(v a) { return _mm256_abs_epi32(a); }
  MINIFLOAT_INLINE_AVX2 static v srl(v a, v count) { return _mm256_srlv_epi32(a, count); }
  MINIFLOAT_INLINE_AVX2 static v sll(v a, v count) { return _mm256_sllv_epi32(a, count); }
  template <int N>
  MINIFLOAT_INLINE_AVX2 static v srli(v a) { return _mm256_srli_epi32(a, N); }
  template <int N>
  MINIFLOAT_INLINE_AVX2 static v slli(v a) { return _mm256_slli_epi32(a, N); }
  template <int N>
  MINIFLOAT_INLINE_AVX2 static v srai(v a) { return _mm256_srai_epi32(a, N); }
  MINIFLOAT_INLINE_AVX2 static m eq(v a, v b) { return _mm256_cmpeq_epi32(a, b); }
  MINIFLOAT_INLINE_AVX2 static m gt_s(v a, v b) { return _mm256_cmpgt_epi32(a, b); }
  /// a < b unsigned: not (max(a, b) == a).
  MINIFLOAT_INLINE_AVX2 static m lt_u(v a, v b) { return _mm256_xor_si256(_mm256_cmpeq_epi32(_mm256_max_epu32(a, b), a), all_ones()); }
  MINIFLOAT_INLINE_AVX2 static v select(m k, v a, v b) { return _mm256_blendv_epi8(b, a, k); }
  MINIFLOAT_INLINE_AVX2 static v keep(v a, m k) { return _mm256_and_si256(a, k); }
  MINIFLOAT_INLINE_AVX2 static v zero_if(v a, m k) { return _mm256_andnot_si256(k, a); }
  MINIFLOAT_INLINE_AVX2 static v inc_if(v a, m k) { return _mm256_sub_epi32(a, k); }
  MINIFLOAT_INLINE_AVX2 static m mask_or(m a, m b) { return _mm256_or_si256(a, b); }
  MINIFLOAT_INLINE_AVX2 static m mask_and(m a, m b) { return _mm256_and_si256(a, b); }
  MINIFLOAT_INLINE_AVX2 static v as_vec(m k) { return k; }
  MINIFLOAT_INLINE_AVX2 static m sign_lanes(v a) { return _mm256_srai_epi32(a, 31); }
  MINIFLOAT_INLINE_AVX2 static table16 load_table16(const std::uint8_t* t) { return _mm256_broadcastsi128_si256(loadu128(t)); }
  /// Byte lookup for lanes holding 0..15 (the upper index bytes have bit 7 set: vpshufb gives 0).
  MINIFLOAT_INLINE_AVX2 static v lookup16(table16 t, v idx) { return _mm256_shuffle_epi8(t, _mm256_or_si256(idx, splat(0x80808000U))); }
  MINIFLOAT_INLINE_AVX2 static table8 load_table8(const std::uint32_t* t) { return loadu(t); }
  MINIFLOAT_INLINE_AVX2 static v lookup8(table8 t, v idx) { return _mm256_permutevar8x32_epi32(t, idx); }

  // loop primitives
  MINIFLOAT_INLINE_AVX2 static f fsplat(float x) { return _mm256_set1_ps(x); }
  MINIFLOAT_INLINE_AVX2 static f mulf(f a, f b) { return _mm256_mul_ps(a, b); }
  MINIFLOAT_INLINE_AVX2 static f divf(f a, f b) { return _mm256_div_ps(a, b); }
  MINIFLOAT_INLINE_AVX2 static f as_f(v a) { return _mm256_castsi256_ps(a); }
  MINIFLOAT_INLINE_AVX2 static v as_v(f a) { return _mm256_castps_si256(a); }
  MINIFLOAT_INLINE_AVX2 static float hmax(v a) { return hmax_bits(a); }
  template <class In>
  MINIFLOAT_INLINE_AVX2 static v load(const In* p) { return load8(p); }
  template <class In>
  MINIFLOAT_INLINE_AVX2 static v load_partial(const In* p, std::size_t r) {
    In buf[lanes] = {};
    std::memcpy(buf, p, r * sizeof(In));
    return load8(buf);
  }
  template <store_kind St>
  MINIFLOAT_INLINE_AVX2 static void store_step(void* out, const v c[4]) { store32<St>(out, c[0], c[1], c[2], c[3]); }
  template <store_kind St>
  MINIFLOAT_INLINE_AVX2 static void store_step_partial(void* out, std::size_t r, const v c[4]) {
    alignas(32) std::uint8_t buf[64];
    store32<St>(buf, c[0], c[1], c[2], c[3]);
    if constexpr (St == store_kind::nibbles) {
      if (r % 2 != 0) buf[r / 2] = static_cast<std::uint8_t>(buf[r / 2] & 0x0FU);  // no code in the last high nibble
    }
    std::memcpy(out, buf, out_bytes<St>(r));
  }
  MINIFLOAT_INLINE_AVX2 static v load_u8(const std::uint8_t* p) {
    return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  }
  MINIFLOAT_INLINE_AVX2 static void unpack_step(const std::uint8_t* p, std::uint8_t* out) { unpack32_nibbles(p, out); }
  MINIFLOAT_INLINE_AVX2 static void copy_partial(void* dst, const void* src, std::size_t bytes, std::size_t capacity) {
    std::memset(dst, 0, capacity);
    std::memcpy(dst, src, bytes);
  }
  template <decode_store D>
  MINIFLOAT_INLINE_AVX2 static void store_f(float* out, v bits, f scale) {
    f x = _mm256_castsi256_ps(bits);
    if constexpr (D == decode_store::scaled) x = _mm256_mul_ps(x, scale);
    _mm256_storeu_ps(out, x);
  }
  template <decode_store D>
  MINIFLOAT_INLINE_AVX2 static void store_f_partial(float* out, std::size_t r, v bits, f scale) {
    alignas(32) float buf[lanes];
    store_f<D>(buf, bits, scale);
    std::memcpy(out, buf, r * sizeof(float));
  }
  template <class Spec>
  MINIFLOAT_INLINE_AVX2 static v widen16(const std::uint16_t* p, v& c) {
    const __m128i codes = loadu128(p);
    c = _mm256_cvtepu16_epi32(codes);
    if constexpr (Spec::exponent_bits == 8) return _mm256_slli_epi32(c, 16);  // bfloat16
    else return _mm256_castps_si256(_mm256_cvtph_ps(codes));                 // float16
  }
};

#define MINIFLOAT_LANES_INLINE MINIFLOAT_INLINE_AVX2
#define MINIFLOAT_LANES_TARGET MINIFLOAT_TARGET_AVX2
#include "../lanes/codec_logic.hpp"
#undef MINIFLOAT_LANES_INLINE
#undef MINIFLOAT_LANES_TARGET

// ------------------------------------------------------------------------------------------------
// Encoders (operator()(x bits, random bits) -> 8 codes in 32-bit lanes), under the names
// simd/x86/avx2_mx.hpp uses.

template <class Spec, round_kind R>
using exmy_encoder = exmy_lanes<ops, Spec, R>;
template <class Spec, round_kind R>
using e8m0_encoder = e8m0_lanes<ops, Spec, R>;

/// HiF8 ties-away rows: biased exponents 103 (2^-24 and below, clamped) .. 143 (2^16 and above);
/// 32-bit entries for vpgatherdd.
using hif8_away_table = simd::detail::hif8_away_table<std::int32_t, 103, 41>;
inline constexpr hif8_away_table hif8_away_table_data = hif8_away_table::make();
static_assert(hif8_away_table_data.cells_constant);
static_assert(hif8_away_table_data.code[0] == 0 && hif8_away_table_data.code[16] == 1);  // 2^-24, 2^-23
static_assert(hif8_away_table_data.code[40 * 16] == hifloat8_spec::inf_code);             // 2^16

template <round_kind R>
struct hif8_encoder : hif8_lanes<ops, R> {
  using base = hif8_lanes<ops, R>;

  MINIFLOAT_INLINE_AVX2 hif8_encoder(conversion c) : base(c) {}

  /// Ties-away (HiF8's default): one gather from hif8_away_table per 8 lanes. Exponents are
  /// clamped into the table (everything below 2^-23 encodes as 0, everything from 2^16 up, Inf
  /// included, overflows); then overflow policy, sign and NaN as in every path.
  MINIFLOAT_INLINE_AVX2 __m256i nearest_away_fast(__m256i x) const {
    constexpr auto& t = hif8_away_table_data;
    const __m256i a = _mm256_and_si256(x, splat(0x7FFFFFFFU));
    const __m256i eb = _mm256_min_epi32(_mm256_max_epi32(_mm256_srli_epi32(a, 23), splat(t.first_row)),
                                        splat(t.first_row + t.rows - 1));
    const __m256i idx = _mm256_add_epi32(_mm256_slli_epi32(_mm256_sub_epi32(eb, splat(t.first_row)), 4),
                                         _mm256_and_si256(_mm256_srli_epi32(a, 19), splat(15)));
    __m256i code = _mm256_i32gather_epi32(t.code.data(), idx, 4);
    code = blend(code, base::ovf, _mm256_cmpeq_epi32(code, splat(hifloat8_spec::inf_code)));
    return base::finish(code, x, a);
  }

  MINIFLOAT_INLINE_AVX2 __m256i operator()(__m256i x, __m256i random) const {
    if constexpr (R == round_kind::nearest_away) {
      (void)random;
      return nearest_away_fast(x);
    } else {
      return base::operator()(x, random);
    }
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
// Decoding

/// How the vpshufb cascade indexes a format's bf16 bytes (simd/decode_tables.hpp cascade_bytes,
/// pre-XORed so that entry j of sub-table t holds T[16t + j] ^ T[16(t-1) + j]): by the magnitude
/// (code & 0x7F) for signed 8-bit formats, by the whole code for narrower ones.
template <class Spec>
struct lut_index {
  static constexpr bool signed8 = Spec::bits == 8;
  static constexpr std::size_t entries = signed8 ? 128 : (std::size_t{1} << Spec::bits);
  static constexpr std::size_t tables = entries / 16;
};

template <class Spec>
struct lut_decoder {
  using L = lut_index<Spec>;
  static constexpr auto& bytes = simd::detail::cascade_bytes<Spec, L::entries>;
  static constexpr auto& facts = simd::detail::bf16_bytes<Spec, L::entries>;
  static_assert(L::tables >= 1 && L::tables <= 8);
  static_assert(facts.low_half_zero, "every value must be a bfloat16");
  static_assert(!L::signed8 || facts.sign_symmetric);
  __m256i hi[L::tables], lo[L::tables];

  MINIFLOAT_INLINE_AVX2 lut_decoder() {
    for (std::size_t t = 0; t < L::tables; ++t) {
      hi[t] = _mm256_broadcastsi128_si256(loadu128(bytes.hi.data() + 16 * t));
      lo[t] = _mm256_broadcastsi128_si256(loadu128(bytes.lo.data() + 16 * t));
    }
  }

  /// 32 codes (one per byte) -> 4 x 8 float32 bit patterns, in order.
  MINIFLOAT_INLINE_AVX2 void operator()(const std::uint8_t* p, __m256i out[4]) const {
    const __m256i codes = loadu(p);
    // Pre-permute the dwords (4 codes each) so that the in-lane unpacks below come out in order.
    const __m256i v = _mm256_permutevar8x32_epi32(codes, _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7));
    __m256i idx = _mm256_and_si256(v, _mm256_set1_epi8(static_cast<char>(L::entries - 1)));
    __m256i h = _mm256_setzero_si256(), l = _mm256_setzero_si256();
    for (std::size_t t = 0; t < L::tables; ++t) {
      // Table t answers indices 16t .. 16t + 15; smaller indices went negative (bit 7 set: vpshufb
      // gives 0) and larger ones read entry idx & 15, which the pre-XOR cancels.
      h = _mm256_xor_si256(h, _mm256_shuffle_epi8(hi[t], idx));
      l = _mm256_xor_si256(l, _mm256_shuffle_epi8(lo[t], idx));
      idx = _mm256_sub_epi8(idx, _mm256_set1_epi8(16));
    }
    if constexpr (L::signed8) {
      h = _mm256_or_si256(h, _mm256_and_si256(v, _mm256_set1_epi8(static_cast<char>(0x80))));
      if constexpr (facts.code80 != 0x80000000U) {
        const __m256i is80 = _mm256_cmpeq_epi8(v, _mm256_set1_epi8(static_cast<char>(0x80)));
        h = blend(h, _mm256_set1_epi8(static_cast<char>(facts.code80 >> 24)), is80);
        l = blend(l, _mm256_set1_epi8(static_cast<char>((facts.code80 >> 16) & 0xFFU)), is80);
      }
    }
    const __m256i w0 = _mm256_unpacklo_epi8(l, h), w1 = _mm256_unpackhi_epi8(l, h);
    const __m256i z = _mm256_setzero_si256();
    out[0] = _mm256_unpacklo_epi16(z, w0);
    out[1] = _mm256_unpackhi_epi16(z, w0);
    out[2] = _mm256_unpacklo_epi16(z, w1);
    out[3] = _mm256_unpackhi_epi16(z, w1);
  }
};

using e8m0_decoder = e8m0_decoder_lanes<ops>;
template <class Spec>
using exmy_decoder = exmy_decoder_lanes<ops, Spec>;

/// IEEE-like formats decode by field moves, rebias and an 8-entry vpermd table of their
/// subnormals (32-bit lane work with one shuffle per 8 codes, which beats the 128-entry vpshufb
/// tables); HiF8 (tapered) and formats with more than 8 subnormals (E3M4) use the tables.
template <class Spec>
inline constexpr bool decodes_by_table = std::is_same_v<Spec, hifloat8_spec> || Spec::digits > 4;
template <class Spec>
using decoder8_for =
    std::conditional_t<decodes_by_table<Spec>, lut_decoder<Spec>,
                       std::conditional_t<is_e8m0_like<Spec>, e8m0_decoder, exmy_decoder<Spec>>>;

}  // namespace detail

// The kernel set (signatures as in simd/scalar/codec.hpp), written once for every ISA namespace.
#include "../lanes/kernel_set.inc"  // IWYU pragma: keep

MINIFLOAT_TARGET_AVX2 inline void pack_nibbles(const std::uint8_t* codes, std::size_t n, std::uint8_t* packed) noexcept {
  std::size_t i = 0;
  const __m256i low = _mm256_set1_epi16(0x000F), high = _mm256_set1_epi16(0x00F0);
  for (; i + 32 <= n; i += 32) {
    const __m256i b = detail::loadu(codes + i);
    const __m256i nib = _mm256_or_si256(_mm256_and_si256(b, low), _mm256_and_si256(_mm256_srli_epi16(b, 4), high));
    detail::storeu128(packed + i / 2, _mm256_castsi256_si128(_mm256_permute4x64_epi64(_mm256_packus_epi16(nib, nib), 0x08)));
  }
  for (; i < n; i += 2) {
    const unsigned lo = codes[i] & 0xFU;
    const unsigned hi = i + 1 < n ? codes[i + 1] & 0xFU : 0U;
    packed[i / 2] = static_cast<std::uint8_t>(lo | (hi << 4));
  }
}

MINIFLOAT_TARGET_AVX2 inline void unpack_nibbles(const std::uint8_t* packed, std::size_t n, std::uint8_t* codes) noexcept {
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m128i b = detail::loadu128(packed + i / 2);
    const __m128i lo = _mm_and_si128(b, _mm_set1_epi8(0x0F));
    const __m128i hi = _mm_and_si128(_mm_srli_epi16(b, 4), _mm_set1_epi8(0x0F));
    detail::storeu(codes + i, _mm256_set_m128i(_mm_unpackhi_epi8(lo, hi), _mm_unpacklo_epi8(lo, hi)));
  }
  for (; i < n; ++i) codes[i] = static_cast<std::uint8_t>((static_cast<unsigned>(packed[i / 2]) >> (4 * (i & 1))) & 0xFU);
}

}  // namespace minifloat::simd::avx2

#endif  // MINIFLOAT_SIMD_X86
