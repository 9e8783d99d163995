#pragma once
// AVX2 (+FMA, F16C) bulk codecs: the same functions, with the same signatures and the same
// bits, as simd/scalar/codec.hpp. Every function carries [[gnu::target("avx2,fma,f16c")]],
// so this header compiles in any x86-64 TU; call it only when the CPU has those features
// (simd/bulk.hpp checks, see dispatch.hpp).
//
// Encoding works on float32 bit patterns in 32-bit lanes with integer operations only (no FP
// rounding, so the MXCSR rounding mode and FTZ/DAZ do not matter), 32 elements per step. It is
// the scalar algorithm of spec.hpp written per lane, which is why it is exact:
//   1. a = |x| bits; the target binade E of |x|, clamped to the target's min normal exponent
//      (subnormal targets keep a fixed LSB), and d = the number of input bits below the target
//      LSB, a per-lane shift (vpsrlvd) that exceeds 23 for subnormal targets;
//   2. kept = (bits) >> d, rounded with integer adds that mirror detail::rounds_up (round_shift):
//      ties-to-even adds half-1 plus kept's low bit; ties-away adds half; directed modes add
//      ulp-1 on the lanes that round away; stochastic adds 1 when the dropped fraction
//      F = floor(frac * 2^32) plus the lane's random bits carries out of 32 bits;
//   3. pack so that a carry out of the significand walks into the next binade (spec.hpp step 4):
//      IEEE-like formats round the float32 pattern rebiased to the target (exmy_encoder), HiF8
//      adds the mantissa to the code of its binade (a 16-entry vpshufb table);
//   4. overflow is `min(mag, overflow code)`, because every format's overflow code (Inf, NaN, or
//      max when saturating) is max_code or max_code + 1; directed modes pick max per lane;
//   5. sign, then NaN / Inf / zero lanes by blends.
// HiF8's default (ties-away) has a faster exact form: its code depends only on the exponent and
// the top 4 mantissa bits, so one vpgatherdd from a 656-entry table built from the scalar codec
// (hif8_away_table, every cell checked constant at compile time).
// Decoding: IEEE-like formats move the fields into place and rebias, with the few subnormal
// values from an 8-entry vpermd table; HiF8 uses the scalar decode table itself: every HiF8 value
// is a bfloat16 (at most 4 significant bits, 2^-22 .. 2^15), so float32 = bf16 << 16 and the two
// bf16 bytes come from two 128-entry byte tables, each looked up with 8 vpshufb (tables pre-XORed
// so that out-of-range lookups cancel: the "vpshufb cascade"); bf16 is a shift, fp16 is F16C.
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


namespace minifloat::simd::avx2 {

namespace detail {

using simd::detail::round_kind;

// ------------------------------------------------------------------------------------------------
// Small helpers (lanes are 32-bit unless named otherwise)

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
// Rounding: kept = sig / 2^d rounded by kind R. Lanes: sig < 2^31 and, for d >= 24, sig < 2^25.
// The nearest and stochastic kinds accept any d (vpsllvd/vpsrlvd give 0 for counts >= 32, which
// is then the exact answer); the directed kind needs d <= 31 so that ulp - 1 is representable.

struct round_inputs {
  __m256i tie_up;  // nearest_even: 1 where a tie rounds away (the "odd" neighbour is below)
  __m256i away;    // directed: all-ones on lanes that round away from zero when inexact
  __m256i random;  // stochastic: the lane's random bits
};

template <round_kind R, bool CustomTie = false>
MINIFLOAT_INLINE_AVX2 __m256i round_shift(__m256i sig, __m256i d, const round_inputs& in) {
  const __m256i thirty_two = splat(32);
  if constexpr (R == round_kind::nearest_even) {
    // sig + (half - 1) + tie_up: a tie carries iff tie_up; above half always carries.
    const __m256i half_m1 = _mm256_srlv_epi32(splat(0x7FFFFFFFU), _mm256_sub_epi32(thirty_two, d));
    __m256i tie_up;
    if constexpr (CustomTie) tie_up = in.tie_up;
    else tie_up = _mm256_and_si256(_mm256_srlv_epi32(sig, d), splat(1));
    return _mm256_srlv_epi32(_mm256_add_epi32(_mm256_add_epi32(sig, half_m1), tie_up), d);
  } else if constexpr (R == round_kind::nearest_away) {
    const __m256i half = _mm256_srlv_epi32(splat(0x40000000U), _mm256_sub_epi32(splat(31), d));
    return _mm256_srlv_epi32(_mm256_add_epi32(sig, half), d);
  } else if constexpr (R == round_kind::directed) {
    const __m256i ulp_m1 = _mm256_srlv_epi32(all_ones(), _mm256_sub_epi32(thirty_two, d));
    return _mm256_srlv_epi32(_mm256_add_epi32(sig, _mm256_and_si256(ulp_m1, in.away)), d);
  } else {
    // F = floor(dropped * 2^32 / 2^d): sig << (32 - d) for d <= 32, sig >> (d - 32) above.
    const __m256i kept = _mm256_srlv_epi32(sig, d);
    const __m256i f = _mm256_or_si256(_mm256_sllv_epi32(sig, _mm256_sub_epi32(thirty_two, d)),
                                      _mm256_srlv_epi32(sig, _mm256_sub_epi32(d, thirty_two)));
    const __m256i sum = _mm256_add_epi32(f, in.random);
    // carry out of 32 bits <=> sum < f (unsigned) <=> max(f, sum) != sum
    const __m256i no_carry = _mm256_cmpeq_epi32(_mm256_max_epu32(f, sum), sum);
    return _mm256_sub_epi32(kept, _mm256_xor_si256(no_carry, all_ones()));
  }
}

/// Per-call constants of the directed kind: away = (sign_mask ^ away_xor) & away_enable.
struct directed_lanes {
  std::uint32_t away_xor = 0, away_enable = 0;
  static constexpr directed_lanes from(rounding r) noexcept {
    if (r == rounding::upward) return {0xFFFFFFFFU, 0xFFFFFFFFU};   // positive lanes round up
    if (r == rounding::downward) return {0x00000000U, 0xFFFFFFFFU}; // negative lanes round down
    return {0U, 0U};                                                  // toward_zero
  }
};

// ------------------------------------------------------------------------------------------------
// Encoders: operator()(x bits, random bits) -> 8 codes in 32-bit lanes.

template <class Spec>
constexpr bool e8m0_like() noexcept {
  if constexpr (requires { Spec::layout; }) return !Spec::layout.has_zero;
  else return false;
}
template <class Spec>
inline constexpr bool is_e8m0_like = e8m0_like<Spec>();

template <class Spec>
struct overflow_codes {
  std::uint32_t ovf;      // overflow and +-Inf when the lane does not truncate (no sign)
  std::uint32_t max;      // max finite magnitude code
  std::uint32_t nan_out;  // code of a NaN input
  static constexpr overflow_codes from(conversion c) noexcept {
    if constexpr (std::is_same_v<Spec, hifloat8_spec>) {
      const bool sat = c.on_overflow != overflow::non_saturating;
      return {sat ? 0x6EU : 0x6FU, 0x6EU, c.on_overflow == overflow::saturate_nan_to_zero ? 0U : 0x80U};
    } else {
      const bool sat = c.on_overflow != overflow::non_saturating || Spec::layout.specials == nan_inf::none;
      const std::uint32_t ovf = sat                                        ? Spec::max_code
                                : Spec::layout.specials == nan_inf::ieee ? Spec::inf_code
                                                                          : Spec::nan_code;
      const bool nan_zero = !Spec::has_nan || c.on_overflow == overflow::saturate_nan_to_zero;
      return {ovf, Spec::max_code, nan_zero ? 0U : static_cast<std::uint32_t>(Spec::nan_code)};
    }
  }
};

/// IEEE-like formats with a zero (E4M3, E5M2, FP6, FP4, bf16, fp16).
///
/// Instead of building the significand and repacking, round the float32 pattern itself after
/// moving its exponent field to the target bias: P = |x| bits + (below << 23) - ((emin - 1) << 23),
/// where emin is the float32 biased exponent of the target's min normal and below = max(emin -
/// eb, 0). For inputs in the target's normal range P = (target biased E << 23) | fraction, so
/// P >> (23 - M) is already the code magnitude, and a rounding carry walks into the next binade
/// (spec.hpp step 4). For inputs below it P = 1.fraction (the hidden bit, biased E = 1) and the
/// shift grows by `below`: the subnormal code. d = 23 - M + below.
/// Float32 subnormal inputs get a wrong hidden bit this way; that matters only where such inputs
/// can round to a non-zero code: bf16 (emin = 1, handled as plain a >> 16 rounding) and the
/// directed modes, where a zero must not round away (those lanes are masked).
template <class Spec, round_kind R>
struct exmy_encoder {
  static constexpr int M = Spec::mantissa_bits;
  static constexpr int emin_biased = 128 - Spec::bias;  // float32 biased exponent of the min normal
  static_assert(emin_biased >= 1);
  static constexpr std::uint32_t sign_shift = 32U - static_cast<std::uint32_t>(Spec::bits);

  __m256i ovf, max, nan_out, away_xor, away_enable;

  MINIFLOAT_INLINE_AVX2 exmy_encoder(conversion c) {
    const auto k = overflow_codes<Spec>::from(c);
    const auto dl = directed_lanes::from(c.round);
    ovf = splat(k.ovf), max = splat(k.max), nan_out = splat(k.nan_out);
    away_xor = splat(dl.away_xor), away_enable = splat(dl.away_enable);
  }

  MINIFLOAT_INLINE_AVX2 __m256i operator()(__m256i x, __m256i random) const {
    const __m256i a = _mm256_and_si256(x, splat(0x7FFFFFFFU));
    __m256i p, d;
    if constexpr (emin_biased == 1) {
      // bf16: every float32 binade, subnormals included, drops a fixed 23 - M bits.
      p = a;
      d = splat(23 - M);
    } else {
      const __m256i below = _mm256_max_epi32(_mm256_sub_epi32(splat_i(emin_biased), _mm256_srli_epi32(a, 23)),
                                             _mm256_setzero_si256());
      p = _mm256_sub_epi32(_mm256_add_epi32(a, _mm256_slli_epi32(below, 23)),
                           splat(static_cast<std::uint32_t>(emin_biased - 1) << 23));
      d = _mm256_add_epi32(below, splat(23 - M));
      // Nearest and stochastic shifts may exceed 31 (vpsrlvd gives 0 then, the right answer);
      // the directed away-rounding needs the count capped so that ulp - 1 stays meaningful.
      if constexpr (R == round_kind::directed) d = _mm256_min_epi32(d, splat(31));
    }
    round_inputs in{};
    __m256i away{};
    if constexpr (R == round_kind::directed) {
      away = _mm256_and_si256(_mm256_xor_si256(_mm256_srai_epi32(x, 31), away_xor), away_enable);
      in.away = away;
    }
    if constexpr (R == round_kind::stochastic) in.random = random;
    __m256i mag = round_shift<R>(p, d, in);
    __m256i code;
    if constexpr (R == round_kind::directed) {
      if constexpr (emin_biased != 1) mag = _mm256_andnot_si256(_mm256_cmpeq_epi32(a, _mm256_setzero_si256()), mag);
      code = _mm256_min_epi32(mag, blend(max, ovf, away));  // truncating lanes stop at max
      code = blend(code, ovf, _mm256_cmpeq_epi32(a, splat(0x7F800000U)));  // +-Inf -> overflow code
    } else {
      code = _mm256_min_epi32(mag, ovf);
    }
    code = _mm256_or_si256(code, _mm256_srli_epi32(_mm256_and_si256(x, splat(0x80000000U)), sign_shift));
    return blend(code, nan_out, _mm256_cmpgt_epi32(a, splat(0x7F800000U)));
  }
};

/// float8_e8m0fnu: unsigned, no zero, M = 0: code = biased exponent of the rounded power of two.
template <class Spec, round_kind R>
struct e8m0_encoder {
  __m256i ovf, max, nan_out, zero_or_negative, away_xor, away_enable;

  MINIFLOAT_INLINE_AVX2 e8m0_encoder(conversion c) {
    const auto k = overflow_codes<Spec>::from(c);
    const auto dl = directed_lanes::from(c.round);
    const bool sat = c.on_overflow != overflow::non_saturating;
    ovf = splat(k.ovf), max = splat(k.max), nan_out = splat(k.nan_out);
    zero_or_negative = splat(sat ? 0U : Spec::nan_code);
    away_xor = splat(dl.away_xor), away_enable = splat(dl.away_enable);
  }

  MINIFLOAT_INLINE_AVX2 __m256i operator()(__m256i x, __m256i random) const {
    const __m256i a = _mm256_and_si256(x, splat(0x7FFFFFFFU));
    const __m256i eb = _mm256_srli_epi32(a, 23);
    const __m256i normal = _mm256_cmpgt_epi32(eb, _mm256_setzero_si256());
    // Normal input: sig = 1.f (24 bits), d = 23, code = eb - 1 + kept. Subnormal input in
    // [2^-127, 2^-126): its leading one is bit 22, so sig = f, d = 22, code = -1 + kept.
    const __m256i sig = _mm256_or_si256(_mm256_and_si256(a, splat(0x7FFFFFU)), _mm256_and_si256(normal, splat(0x800000U)));
    const __m256i d = _mm256_sub_epi32(splat(22), normal);
    round_inputs in{};
    __m256i away{};
    if constexpr (R == round_kind::directed) {
      away = _mm256_and_si256(_mm256_xor_si256(_mm256_srai_epi32(x, 31), away_xor), away_enable);
      in.away = away;
    }
    if constexpr (R == round_kind::stochastic) in.random = random;
    const __m256i mag = _mm256_add_epi32(_mm256_sub_epi32(eb, splat(1)), round_shift<R>(sig, d, in));
    __m256i code;
    if constexpr (R == round_kind::directed) {
      code = _mm256_min_epi32(mag, blend(max, ovf, away));
      code = blend(code, ovf, _mm256_cmpeq_epi32(a, splat(0x7F800000U)));
    } else {
      code = _mm256_min_epi32(mag, ovf);
    }
    code = _mm256_andnot_si256(_mm256_cmpgt_epi32(splat(0x00400000U), a), code);  // below 2^-127 -> 0x00
    const __m256i zero_or_neg = _mm256_or_si256(_mm256_cmpeq_epi32(a, _mm256_setzero_si256()), _mm256_srai_epi32(x, 31));
    code = blend(code, zero_or_negative, zero_or_neg);
    return blend(code, nan_out, _mm256_cmpgt_epi32(a, splat(0x7F800000U)));
  }
};

/// HiF8 (hifloat8_spec.hpp): the LSB of binade E is 2^(E - w(E)), w = 3, 2, 1 for |E| <= 3, 7,
/// 15, 0 in the denormal binades E = -22 .. -16, and every |x| < 2^-22 shares the LSB 2^-22 (we
/// give those lanes E = -23 and w = -1). Code = base(E') + m, where E' is the binade after
/// rounding (E + 1 on a carry) and base(E) = hifloat8_spec::pack(E, 0): for |E| <= 15 a 16-entry
/// table of pack(|E|, 0) plus the exponent-sign bit pack(-|E|, 0) ^ pack(|E|, 0); E + 23 in the
/// denormal binades. pack(15, 1) = 0x6F is the Inf code, so E' = 15 with m = 1 is overflow,
/// like E' >= 16.
struct hif8_tables {
  std::array<std::uint8_t, 16> width{}, base{}, negbit{};
  static constexpr hif8_tables make() noexcept {
    hif8_tables t;
    for (int a = 0; a < 16; ++a) {
      const auto u = static_cast<std::size_t>(a);
      t.width[u] = static_cast<std::uint8_t>(hifloat8_spec::mantissa_width(a));
      t.base[u] = hifloat8_spec::pack(a, 0);
      t.negbit[u] = static_cast<std::uint8_t>(a == 0 ? 0 : (hifloat8_spec::pack(-a, 0) ^ hifloat8_spec::pack(a, 0)));
    }
    return t;
  }
};
inline constexpr hif8_tables hif8_table_data = hif8_tables::make();
// The structure the encoder relies on: one exponent-sign bit per binade, m in the low w bits.
static_assert([] {
  for (int e = -15; e <= 15; ++e) {
    const int a = e < 0 ? -e : e;
    const unsigned w = static_cast<unsigned>(hifloat8_spec::mantissa_width(e));
    for (unsigned m = 0; m < (1U << w); ++m) {
      const unsigned want = hif8_table_data.base[static_cast<std::size_t>(a)] |
                            (e < 0 ? hif8_table_data.negbit[static_cast<std::size_t>(a)] : 0U);
      if (hifloat8_spec::pack(e, m) != want + m) return false;
    }
  }
  for (int e = -22; e <= -16; ++e)
    if (hifloat8_spec::pack(e, 0) != static_cast<unsigned>(e + 23)) return false;
  return hifloat8_spec::pack(15, 1) == hifloat8_spec::inf_code;
}());

MINIFLOAT_INLINE_AVX2 __m256i table16(const std::array<std::uint8_t, 16>& t) {
  return _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(t.data())));
}

/// HiF8 ties-away (the default) as a table: with ties away from zero the rounding of |x| at w <= 3
/// mantissa bits depends only on the top w + 1 mantissa bits (the half bit decides, nothing below
/// it matters), so the code of |x| is a function of its float32 exponent and its top 4 mantissa
/// bits: 41 exponent rows (2^-24 and below .. 2^16 and above, clamped) of 16 entries, taken from
/// the scalar codec itself. Every cell is checked at compile time to be constant (its lowest and
/// highest pattern encode alike, and encode is monotone). Entries are 32-bit for vpgatherdd.
struct hif8_away_table {
  static constexpr std::uint32_t first_row = 103, rows = 41;  // biased exponents 103 .. 143
  std::array<std::int32_t, rows * 16> code{};
  bool cells_constant = true;
  static constexpr hif8_away_table make() noexcept {
    hif8_away_table t;
    for (std::uint32_t row = 0; row < rows; ++row)
      for (std::uint32_t cell = 0; cell < 16; ++cell) {
        const std::uint32_t lo = ((first_row + row) << 23) | (cell << 19);
        const std::uint32_t hi = lo | 0x7FFFFU;
        const std::uint8_t c_lo = minifloat::encode<hifloat8>(std::bit_cast<float>(lo), conversion{rounding::nearest_away});
        const std::uint8_t c_hi = minifloat::encode<hifloat8>(std::bit_cast<float>(hi), conversion{rounding::nearest_away});
        if (c_lo != c_hi) t.cells_constant = false;
        t.code[row * 16 + cell] = c_lo;
      }
    return t;
  }
};
inline constexpr hif8_away_table hif8_away_table_data = hif8_away_table::make();
static_assert(hif8_away_table_data.cells_constant);
static_assert(hif8_away_table_data.code[0] == 0 && hif8_away_table_data.code[16] == 1);  // 2^-24, 2^-23
static_assert(hif8_away_table_data.code[40 * 16] == hifloat8_spec::inf_code);             // 2^16

template <round_kind R>
struct hif8_encoder {
  static constexpr bool exact_tiny_inputs = R == round_kind::directed;
  __m256i ovf, max, nan_out, away_xor, away_enable, width, base, negbit;

  MINIFLOAT_INLINE_AVX2 hif8_encoder(conversion c) {
    const auto k = overflow_codes<hifloat8_spec>::from(c);
    const auto dl = directed_lanes::from(c.round);
    ovf = splat(k.ovf), max = splat(k.max), nan_out = splat(k.nan_out);
    away_xor = splat(dl.away_xor), away_enable = splat(dl.away_enable);
    width = table16(hif8_table_data.width);
    base = table16(hif8_table_data.base);
    negbit = table16(hif8_table_data.negbit);
  }

  /// Byte lookup in a 16-entry table for lanes holding 0..15 (upper index bytes select nothing).
  MINIFLOAT_INLINE_AVX2 static __m256i lookup(__m256i table, __m256i idx) {
    return _mm256_shuffle_epi8(table, _mm256_or_si256(idx, splat(0x80808000U)));
  }

  /// The code of 2^E (E = e2, 32-bit lanes, -23 <= E <= 15 meaningful): the table for |E| <= 15
  /// plus the exponent-sign bit, E + 23 in the denormal binades.
  MINIFLOAT_INLINE_AVX2 __m256i binade_code(__m256i e2) const {
    const __m256i idx = _mm256_min_epi32(_mm256_abs_epi32(e2), splat(15));
    const __m256i code = _mm256_or_si256(lookup(base, idx),
                                         _mm256_and_si256(lookup(negbit, idx), _mm256_cmpgt_epi32(_mm256_setzero_si256(), e2)));
    return blend(code, _mm256_add_epi32(e2, splat(23)), _mm256_cmpgt_epi32(splat_i(-15), e2));
  }

  /// Sign (none on the one zero), then NaN.
  MINIFLOAT_INLINE_AVX2 __m256i finish(__m256i code, __m256i x, __m256i a) const {
    const __m256i sign = _mm256_and_si256(_mm256_srli_epi32(x, 24), splat(0x80U));
    code = _mm256_or_si256(code, _mm256_andnot_si256(_mm256_cmpeq_epi32(code, _mm256_setzero_si256()), sign));
    return blend(code, nan_out, _mm256_cmpgt_epi32(a, splat(0x7F800000U)));
  }

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
    code = blend(code, ovf, _mm256_cmpeq_epi32(code, splat(hifloat8_spec::inf_code)));
    return finish(code, x, a);
  }

  MINIFLOAT_INLINE_AVX2 __m256i operator()(__m256i x, __m256i random) const {
    if constexpr (R == round_kind::nearest_away) {
      (void)random;
      return nearest_away_fast(x);
    } else {
      return general(x, random);
    }
  }

  /// Every rounding kind, on the significand: kept = sig >> d rounded (round_shift).
  MINIFLOAT_INLINE_AVX2 __m256i general(__m256i x, __m256i random) const {
    const __m256i a = _mm256_and_si256(x, splat(0x7FFFFFFFU));
    const __m256i eb = _mm256_srli_epi32(a, 23);
    const __m256i e = _mm256_sub_epi32(eb, splat(127));
    const __m256i ec = _mm256_max_epi32(e, splat_i(-23));  // binade, clamped: all tiny lanes share -23
    const __m256i fifteen = splat(15);
    const __m256i below_normal = _mm256_cmpgt_epi32(splat_i(-15), ec);  // denormal binades and -23
    // w: table for |E| <= 15 (larger |E| overflow whatever w is), 0 in the denormal binades, -1 at -23.
    const __m256i w = blend(lookup(width, _mm256_min_epi32(_mm256_abs_epi32(ec), fifteen)),
                            _mm256_cmpeq_epi32(ec, splat_i(-23)), below_normal);
    __m256i sig = _mm256_and_si256(a, splat(0x7FFFFFU));
    if constexpr (exact_tiny_inputs) sig = _mm256_or_si256(sig, _mm256_slli_epi32(_mm256_min_epi32(eb, splat(1)), 23));
    else sig = _mm256_or_si256(sig, splat(0x800000U));
    // d = (ec - w) - (max(eb, 1) - 150): the LSB exponent minus the exponent of sig's bit 0.
    __m256i d = _mm256_add_epi32(_mm256_sub_epi32(ec, w), _mm256_sub_epi32(splat(150), _mm256_max_epi32(eb, splat(1))));
    if constexpr (R != round_kind::stochastic) d = _mm256_min_epi32(d, splat(31));
    round_inputs in{};
    __m256i away{};
    if constexpr (R == round_kind::directed) {
      away = _mm256_and_si256(_mm256_xor_si256(_mm256_srai_epi32(x, 31), away_xor), away_enable);
      in.away = away;
    }
    if constexpr (R == round_kind::stochastic) in.random = random;
    __m256i kept;
    if constexpr (R == round_kind::nearest_even) {
      // HiF8 ties go to the neighbour whose code is even. Off the denormal grid that is the even
      // multiple of the LSB (kept & 1 == 0); in the denormal binades (kept = 1, the neighbours
      // 2^E and 2^(E+1) have codes E + 23 and E + 24) the lower is even iff E is odd, so a tie
      // rounds up iff E is even. Lanes at -23 have kept = 0 and tie down either way.
      const __m256i kept0_odd = _mm256_and_si256(_mm256_srlv_epi32(sig, d), splat(1));
      const __m256i e_even = _mm256_andnot_si256(ec, splat(1));
      in.tie_up = blend(kept0_odd, e_even, below_normal);
      kept = round_shift<R, true>(sig, d, in);
    } else {
      kept = round_shift<R>(sig, d, in);
    }
    // Carry into the next binade: kept reached 2^(w+1) (w = -1: kept = 1 is 2^-22 = base(-22)).
    const __m256i carry = _mm256_srlv_epi32(kept, _mm256_add_epi32(w, splat(1)));
    const __m256i e2 = _mm256_add_epi32(ec, carry);
    const __m256i m = _mm256_andnot_si256(_mm256_sub_epi32(_mm256_setzero_si256(), carry),
                                          _mm256_sub_epi32(kept, _mm256_sllv_epi32(splat(1), w)));
    __m256i code = _mm256_add_epi32(binade_code(e2), m);
    const __m256i overflowed =
        _mm256_or_si256(_mm256_cmpgt_epi32(e2, fifteen), _mm256_cmpeq_epi32(code, splat(hifloat8_spec::inf_code)));
    if constexpr (R == round_kind::directed) {
      code = blend(code, blend(max, ovf, away), overflowed);
      code = blend(code, ovf, _mm256_cmpeq_epi32(a, splat(0x7F800000U)));
    } else {
      code = blend(code, ovf, overflowed);
    }
    return finish(code, x, a);  // one zero: a negative input that rounds to 0 gives 0x00
  }
};

template <class Spec, round_kind R>
using encoder_for = std::conditional_t<std::is_same_v<Spec, hifloat8_spec>, hif8_encoder<R>,
                                       std::conditional_t<is_e8m0_like<Spec>, e8m0_encoder<Spec, R>, exmy_encoder<Spec, R>>>;

// ------------------------------------------------------------------------------------------------
// The encode loop: 32 elements per step (4 vectors of 8), an optional scale stage (x * inv or
// x / s, in float32, with the finite amax of the raw input), then a store stage.

/// m = max(m, |v|) over the finite lanes of v (float32 bits).
MINIFLOAT_INLINE_AVX2 void finite_max_step(__m256i v, __m256i& m) {
  const __m256i a = _mm256_and_si256(v, splat(0x7FFFFFFFU));
  m = _mm256_max_epi32(m, _mm256_and_si256(a, _mm256_cmpgt_epi32(splat(0x7F800000U), a)));
}

enum class scale_kind : std::uint8_t { none, multiply, divide };
enum class store_kind : std::uint8_t { u8, u16, nibbles };

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

template <store_kind St>
constexpr std::size_t out_bytes(std::size_t n) noexcept {
  return St == store_kind::u16 ? 2 * n : St == store_kind::u8 ? n : (n + 1) / 2;
}

template <class Spec, class In, round_kind R, scale_kind S, store_kind St>
MINIFLOAT_INLINE_AVX2 void encode32(const In* x, void* out, const encoder_for<Spec, R>& enc, __m256 scale,
                                    __m256i& amax, random8& rng) {
  __m256i c[4];
  for (int k = 0; k < 4; ++k) {
    __m256i v = load8(x + 8 * k);
    if constexpr (S != scale_kind::none) {
      finite_max_step(v, amax);
      const __m256 f = _mm256_castsi256_ps(v);
      v = _mm256_castps_si256(S == scale_kind::multiply ? _mm256_mul_ps(f, scale) : _mm256_div_ps(f, scale));
    }
    __m256i r{};
    if constexpr (R == round_kind::stochastic) r = rng.next();
    c[k] = enc(v, r);
  }
  store32<St>(out, c[0], c[1], c[2], c[3]);
}

MINIFLOAT_INLINE_AVX2 float hmax_bits(__m256i v) {
  __m128i m = _mm_max_epu32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  m = _mm_max_epu32(m, _mm_shuffle_epi32(m, _MM_SHUFFLE(1, 0, 3, 2)));
  m = _mm_max_epu32(m, _mm_shuffle_epi32(m, _MM_SHUFFLE(2, 3, 0, 1)));
  return std::bit_cast<float>(static_cast<std::uint32_t>(_mm_cvtsi128_si32(m)));
}

/// The whole span: full steps of 32, then the tail through zero-padded local buffers (zeros do
/// not change the amax; their codes are not stored).
template <class Spec, class In, round_kind R, scale_kind S, store_kind St>
MINIFLOAT_TARGET_AVX2 float encode_span(const In* x, std::size_t n, void* out, conversion c, float scale,
                                        std::uint64_t seed, std::uint64_t first_index) noexcept {
  const encoder_for<Spec, R> enc(c);
  const __m256 sv = _mm256_set1_ps(scale);
  __m256i amax = _mm256_setzero_si256();
  random8 rng(seed, first_index);
  auto* o = static_cast<std::uint8_t*>(out);
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) encode32<Spec, In, R, S, St>(x + i, o + out_bytes<St>(i), enc, sv, amax, rng);
  if (i < n) {
    const std::size_t r = n - i;
    In xin[32] = {};
    alignas(32) std::uint8_t buf[64];
    std::memcpy(xin, x + i, r * sizeof(In));
    encode32<Spec, In, R, S, St>(xin, buf, enc, sv, amax, rng);
    if constexpr (St == store_kind::nibbles) {
      if (r % 2 != 0) buf[r / 2] = static_cast<std::uint8_t>(buf[r / 2] & 0x0FU);  // no code in the last high nibble
    }
    std::memcpy(o + out_bytes<St>(i), buf, out_bytes<St>(r));
  }
  return hmax_bits(amax);
}

template <class Spec, class In, scale_kind S, store_kind St>
float encode_any(const In* x, std::size_t n, void* out, conversion c, float scale, std::uint64_t seed,
                 std::uint64_t first_index) noexcept {
  switch (simd::detail::kind_of(c.round, Spec::nearest_rule)) {
    case round_kind::nearest_even:
      return encode_span<Spec, In, round_kind::nearest_even, S, St>(x, n, out, c, scale, seed, first_index);
    case round_kind::nearest_away:
      return encode_span<Spec, In, round_kind::nearest_away, S, St>(x, n, out, c, scale, seed, first_index);
    case round_kind::directed:
      return encode_span<Spec, In, round_kind::directed, S, St>(x, n, out, c, scale, seed, first_index);
    case round_kind::stochastic:
      return encode_span<Spec, In, round_kind::stochastic, S, St>(x, n, out, c, scale, seed, first_index);
  }
  return 0.0f;
}

template <class T>
constexpr store_kind store_for = T::spec::bits > 8 ? store_kind::u16 : store_kind::u8;

/// The scale stage for x / s: when s = 2^k with 1/s a normal float, x * (1/s) is the same
/// correctly rounded quotient (both round the exact x * 2^-k once) and much cheaper than vdivps.
inline bool reciprocal_is_exact(float s, float& inv) noexcept {
  const std::uint32_t b = std::bit_cast<std::uint32_t>(s);
  const std::uint32_t field = (b >> 23) & 0xFFU;
  if ((b & 0x807FFFFFU) != 0 || field == 0 || field >= 254) return false;  // 2^k, k in [-126, 126]
  inv = std::bit_cast<float>((254U - field) << 23);
  return true;
}

// ------------------------------------------------------------------------------------------------
// Decoding

/// bf16 patterns (float32 >> 16) of every code of an 8-bit-or-narrower format, split in high and
/// low bytes over the index domain: the magnitude (code & 0x7F) for signed 8-bit formats, the
/// whole code for narrower ones. The tables are pre-XORed for the vpshufb cascade: entry j of
/// table t holds T[16t + j] ^ T[16(t-1) + j].
template <class Spec>
struct decode_luts {
  static constexpr bool signed8 = Spec::bits == 8;
  static constexpr std::size_t entries = signed8 ? 128 : (std::size_t{1} << Spec::bits);
  static constexpr std::size_t tables = entries / 16;
  std::array<std::uint8_t, entries> hi{}, lo{};  // pre-XORed, table by table
  bool low_half_zero = true;                     // every decoded float is a bf16
  bool sign_symmetric = true;                    // signed8: decode(c | 0x80) = -decode(c) bitwise, except 0x80
  std::uint32_t code80 = 0;                      // signed8: float bits of code 0x80

  static constexpr decode_luts make() noexcept {
    decode_luts l;
    const auto& t = minifloat::detail::decode_table<Spec>;
    std::array<std::uint16_t, entries> p{};
    for (std::size_t c = 0; c < entries; ++c) {
      const std::uint32_t b = std::bit_cast<std::uint32_t>(t[c]);
      if ((b & 0xFFFFU) != 0) l.low_half_zero = false;
      p[c] = static_cast<std::uint16_t>(b >> 16);
    }
    if constexpr (signed8) {
      l.code80 = std::bit_cast<std::uint32_t>(t[0x80]);
      for (std::size_t c = 1; c < 128; ++c)
        if (std::bit_cast<std::uint32_t>(t[c | 0x80]) != (std::bit_cast<std::uint32_t>(t[c]) | 0x80000000U))
          l.sign_symmetric = false;
    }
    for (std::size_t c = 0; c < entries; ++c) {
      const std::uint16_t prev = c >= 16 ? p[c - 16] : std::uint16_t{0};
      l.hi[c] = static_cast<std::uint8_t>((p[c] ^ prev) >> 8);
      l.lo[c] = static_cast<std::uint8_t>((p[c] ^ prev) & 0xFFU);
    }
    return l;
  }
};

template <class Spec>
inline constexpr decode_luts<Spec> decode_lut_data = decode_luts<Spec>::make();

template <class Spec>
struct lut_decoder {
  using L = decode_luts<Spec>;
  static_assert(L::tables >= 1 && L::tables <= 8);
  static_assert(decode_lut_data<Spec>.low_half_zero, "every value must be a bfloat16");
  static_assert(!L::signed8 || decode_lut_data<Spec>.sign_symmetric);
  __m256i hi[L::tables], lo[L::tables];

  MINIFLOAT_INLINE_AVX2 lut_decoder() {
    for (std::size_t t = 0; t < L::tables; ++t) {
      hi[t] = _mm256_broadcastsi128_si256(loadu128(decode_lut_data<Spec>.hi.data() + 16 * t));
      lo[t] = _mm256_broadcastsi128_si256(loadu128(decode_lut_data<Spec>.lo.data() + 16 * t));
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
      if constexpr (decode_lut_data<Spec>.code80 != 0x80000000U) {
        const __m256i is80 = _mm256_cmpeq_epi8(v, _mm256_set1_epi8(static_cast<char>(0x80)));
        h = blend(h, _mm256_set1_epi8(static_cast<char>(decode_lut_data<Spec>.code80 >> 24)), is80);
        l = blend(l, _mm256_set1_epi8(static_cast<char>((decode_lut_data<Spec>.code80 >> 16) & 0xFFU)), is80);
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

/// E8M0: 2^(c - 127) = c << 23, except 0x00 (2^-127, a float32 subnormal) and 0xFF (NaN).
struct e8m0_decoder {
  MINIFLOAT_INLINE_AVX2 void operator()(const std::uint8_t* p, __m256i out[4]) const {
    for (int k = 0; k < 4; ++k) {
      const __m256i c = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 8 * k)));
      __m256i b = _mm256_slli_epi32(c, 23);
      b = blend(b, splat(0x00400000U), _mm256_cmpeq_epi32(c, _mm256_setzero_si256()));
      out[k] = blend(b, splat(0x7FC00000U), _mm256_cmpeq_epi32(c, splat(0xFFU)));
    }
  }
};

/// IEEE-like formats of at most 8 bits: normal codes by moving the fields into place and
/// rebiasing, the (at most 8) subnormal magnitudes from an 8-entry vpermd table of their float32
/// patterns (built from the scalar decode table), specials by blends, then the sign. 32-bit lane
/// work with one shuffle per 8 codes, which beats the 128-entry vpshufb tables; HiF8 (tapered)
/// uses the tables.
template <class Spec>
struct exmy_decoder {
  static constexpr int M = Spec::mantissa_bits;
  static_assert(M <= 3, "at most 8 subnormal magnitudes");
  static constexpr std::array<std::uint32_t, 8> subnormal_bits = [] {
    std::array<std::uint32_t, 8> t{};
    for (std::size_t m = 0; m < (std::size_t{1} << M); ++m)
      t[m] = std::bit_cast<std::uint32_t>(minifloat::detail::decode_table<Spec>[m]);
    return t;
  }();
  __m256i subnormals;

  MINIFLOAT_INLINE_AVX2 exmy_decoder() : subnormals(loadu(subnormal_bits.data())) {}

  MINIFLOAT_INLINE_AVX2 void operator()(const std::uint8_t* p, __m256i out[4]) const {
    for (int k = 0; k < 4; ++k) {
      const __m256i c = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 8 * k)));
      const __m256i mag = _mm256_and_si256(c, splat(Spec::magnitude_mask));
      __m256i b = _mm256_add_epi32(_mm256_slli_epi32(mag, 23 - M), splat(static_cast<std::uint32_t>(127 - Spec::bias) << 23));
      b = blend(b, _mm256_permutevar8x32_epi32(subnormals, mag), _mm256_cmpgt_epi32(splat(1U << M), mag));
      if constexpr (Spec::layout.specials == nan_inf::ieee) {
        b = blend(b, splat(0x7F800000U), _mm256_cmpeq_epi32(mag, splat(Spec::inf_code)));
        b = blend(b, splat(0x7FC00000U), _mm256_cmpgt_epi32(mag, splat(Spec::inf_code)));
      } else if constexpr (Spec::layout.specials == nan_inf::nan_only) {
        b = blend(b, splat(0x7FC00000U), _mm256_cmpeq_epi32(mag, splat(Spec::magnitude_mask)));
      }
      out[k] = _mm256_or_si256(b, _mm256_slli_epi32(_mm256_and_si256(c, splat(Spec::sign_mask)), 32 - Spec::bits));
    }
  }
};

template <class Spec>
using decoder8_for =
    std::conditional_t<std::is_same_v<Spec, hifloat8_spec>, lut_decoder<Spec>,
                       std::conditional_t<is_e8m0_like<Spec>, e8m0_decoder, exmy_decoder<Spec>>>;

/// 16-bit codes: 8 of them -> float32 bits; NaN payloads canonicalised to +-0x7FC00000 as the
/// scalar decode (via double) does.
template <class Spec>
MINIFLOAT_INLINE_AVX2 __m256i decode16x8(__m128i codes) {
  const __m256i c = _mm256_cvtepu16_epi32(codes);
  __m256i b;
  if constexpr (Spec::exponent_bits == 8) b = _mm256_slli_epi32(c, 16);                 // bfloat16
  else b = _mm256_castps_si256(_mm256_cvtph_ps(codes));                                   // float16
  const __m256i mag = _mm256_and_si256(c, splat(Spec::magnitude_mask));
  const __m256i nan = _mm256_cmpgt_epi32(mag, splat(Spec::inf_code));
  const __m256i canonical = _mm256_or_si256(_mm256_and_si256(b, splat(0x80000000U)), splat(0x7FC00000U));
  return blend(b, canonical, nan);
}

enum class decode_store : std::uint8_t { plain, scaled };

template <class Spec, decode_store D>
MINIFLOAT_INLINE_AVX2 void store_decoded(float* out, __m256i bits, __m256 scale) {
  __m256 f = _mm256_castsi256_ps(bits);
  if constexpr (D == decode_store::scaled) f = _mm256_mul_ps(f, scale);
  _mm256_storeu_ps(out, f);
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

/// Codes one per byte (Packed = false) or FP4 nibble pairs (Packed = true) -> floats.
template <class Spec, bool Packed, decode_store D>
MINIFLOAT_TARGET_AVX2 void decode8_span(const std::uint8_t* codes, std::size_t n, float* out, float scale) noexcept {
  const decoder8_for<Spec> dec{};
  const __m256 sv = _mm256_set1_ps(scale);
  constexpr std::size_t in_step = Packed ? 16 : 32;
  std::size_t i = 0;
  __m256i v[4];
  alignas(32) std::uint8_t unpacked[32];
  for (; i + 32 <= n; i += 32) {
    dec(codes32_at<Packed>(codes, i, unpacked), v);
    for (int k = 0; k < 4; ++k) store_decoded<Spec, D>(out + i + 8 * k, v[k], sv);
  }
  if (i < n) {
    const std::size_t r = n - i;
    alignas(32) std::uint8_t cin[in_step] = {};
    std::memcpy(cin, codes + (Packed ? i / 2 : i), Packed ? (r + 1) / 2 : r);
    alignas(32) float buf[32];
    dec(codes32_at<Packed>(cin, 0, unpacked), v);
    for (int k = 0; k < 4; ++k) store_decoded<Spec, D>(buf + 8 * k, v[k], sv);
    std::memcpy(out + i, buf, r * sizeof(float));
  }
}

template <class Spec, decode_store D>
MINIFLOAT_TARGET_AVX2 void decode16_span(const std::uint16_t* codes, std::size_t n, float* out, float scale) noexcept {
  const __m256 sv = _mm256_set1_ps(scale);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) store_decoded<Spec, D>(out + i, decode16x8<Spec>(loadu128(codes + i)), sv);
  if (i < n) {
    alignas(16) std::uint16_t cin[8] = {};
    alignas(32) float buf[8];
    std::memcpy(cin, codes + i, (n - i) * sizeof(std::uint16_t));
    store_decoded<Spec, D>(buf, decode16x8<Spec>(loadu128(cin)), sv);
    std::memcpy(out + i, buf, (n - i) * sizeof(float));
  }
}

template <class T, decode_store D>
void decode_any(const typename T::storage_type* codes, std::size_t n, float* out, float scale) noexcept {
  using Spec = typename T::spec;
  if constexpr (Spec::bits > 8) decode16_span<Spec, D>(codes, n, out, scale);
  else decode8_span<Spec, false, D>(codes, n, out, scale);
}

template <class In>
MINIFLOAT_TARGET_AVX2 float finite_amax_span(const In* x, std::size_t n) noexcept {
  __m256i m0 = _mm256_setzero_si256(), m1 = _mm256_setzero_si256();
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    finite_max_step(load8(x + i), m0);
    finite_max_step(load8(x + i + 8), m1);
  }
  if (i < n) {
    In buf[16] = {};
    std::memcpy(buf, x + i, (n - i) * sizeof(In));
    finite_max_step(load8(buf), m0);
    finite_max_step(load8(buf + 8), m1);
  }
  return hmax_bits(_mm256_max_epi32(m0, m1));
}

}  // namespace detail

// ------------------------------------------------------------------------------------------------
// The kernel set (signatures as in simd/scalar/codec.hpp)

template <class T, class In>
void encode(const In* x, std::size_t n, typename T::storage_type* out, conversion c, std::uint64_t seed,
            std::uint64_t first_index) noexcept {
  (void)detail::encode_any<typename T::spec, In, detail::scale_kind::none, detail::store_for<T>>(x, n, out, c, 1.0f, seed,
                                                                                                 first_index);
}

template <class In>
void encode_fp4_packed(const In* x, std::size_t n, std::uint8_t* out, conversion c, std::uint64_t seed,
                       std::uint64_t first_index) noexcept {
  (void)detail::encode_any<float4_e2m1fn::spec, In, detail::scale_kind::none, detail::store_kind::nibbles>(
      x, n, out, c, 1.0f, seed, first_index);
}

template <class T, class In>
float encode_scaled(const In* x, std::size_t n, typename T::storage_type* out, float scale, conversion c,
                    std::uint64_t seed, std::uint64_t first_index) noexcept {
  using Spec = typename T::spec;
  constexpr auto St = detail::store_for<T>;
  if (float inv = 0.0f; detail::reciprocal_is_exact(scale, inv))
    return detail::encode_any<Spec, In, detail::scale_kind::multiply, St>(x, n, out, c, inv, seed, first_index);
  return detail::encode_any<Spec, In, detail::scale_kind::divide, St>(x, n, out, c, scale, seed, first_index);
}

template <class In>
float encode_scaled_fp4_packed(const In* x, std::size_t n, std::uint8_t* out, float scale, conversion c,
                               std::uint64_t seed, std::uint64_t first_index) noexcept {
  using Spec = float4_e2m1fn::spec;
  constexpr auto St = detail::store_kind::nibbles;
  if (float inv = 0.0f; detail::reciprocal_is_exact(scale, inv))
    return detail::encode_any<Spec, In, detail::scale_kind::multiply, St>(x, n, out, c, inv, seed, first_index);
  return detail::encode_any<Spec, In, detail::scale_kind::divide, St>(x, n, out, c, scale, seed, first_index);
}

template <class In>
float finite_amax(const In* x, std::size_t n) noexcept {
  return detail::finite_amax_span(x, n);
}

template <class T>
void decode(const typename T::storage_type* codes, std::size_t n, float* out) noexcept {
  detail::decode_any<T, detail::decode_store::plain>(codes, n, out, 1.0f);
}

inline void decode_fp4_packed(const std::uint8_t* packed, std::size_t n, float* out) noexcept {
  detail::decode8_span<float4_e2m1fn::spec, true, detail::decode_store::plain>(packed, n, out, 1.0f);
}

template <class T>
void decode_scaled(const typename T::storage_type* codes, std::size_t n, float* out, float scale) noexcept {
  detail::decode_any<T, detail::decode_store::scaled>(codes, n, out, scale);
}

inline void decode_scaled_fp4_packed(const std::uint8_t* packed, std::size_t n, float* out, float scale) noexcept {
  detail::decode8_span<float4_e2m1fn::spec, true, detail::decode_store::scaled>(packed, n, out, scale);
}

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
