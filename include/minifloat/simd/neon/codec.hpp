#pragma once
// AArch64 NEON bulk codecs: the same functions, signatures and bits as
// simd/scalar/codec.hpp, 16 elements per step on 4-lane vectors. NEON is part of the
// AArch64 baseline, so this path is static (no run-time check).
//
// The algorithms are those of simd/avx2/codec.hpp (see its header comment): encoding on
// float32 bit patterns with integer operations only (the FPCR rounding mode does not matter),
// IEEE-like formats by rounding the rebiased pattern, HiF8 by rounding the significand at its
// binade's width and adding the mantissa to the code of 2^E (vqtbl1q_u8 tables), E8M0 by the
// exponent; decoding by field moves (IEEE-like), a 128-entry byte table (HiF8, vqtbl4q_u8), a
// shift (bf16) or vcvt_f32_f16 (fp16). Differences from AVX2:
//   * variable shifts go through srl/sll, which clamp the count so that vshlq behaves like
//     vpsrlvd/vpsllvd (0 for any count >= 32);
//   * HiF8's default mode uses the general path (no gather instruction);
//   * stochastic rounding takes its random bits from the scalar random_bits() (exact, slower);
//   * MX quantize/dequantize use the scalar twins on this path (simd/mx.hpp).
#include "../isa.hpp"

#if MINIFLOAT_SIMD_NEON

#include <arm_neon.h>

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "../../formats/basic_float.hpp"
#include "../../formats/convert.hpp"
#include "../../formats/e8m0.hpp"
#include "../../formats/float16.hpp"
#include "../../formats/float8.hpp"
#include "../../formats/hifloat8.hpp"
#include "../../formats/mx_elements.hpp"
#include "../../core/random.hpp"

namespace minifloat::simd::neon {

namespace detail {

using simd::detail::round_kind;
using u32 = uint32x4_t;
using s32 = int32x4_t;

inline u32 splat(std::uint32_t v) { return vdupq_n_u32(v); }
inline u32 splat_i(int v) { return vreinterpretq_u32_s32(vdupq_n_s32(v)); }
inline s32 as_s(u32 v) { return vreinterpretq_s32_u32(v); }
inline u32 as_u(s32 v) { return vreinterpretq_u32_s32(v); }
inline u32 blend(u32 a, u32 b, u32 mask) { return vbslq_u32(mask, b, a); }  // mask ? b : a
// vshlq takes its count from the low signed byte of each lane and shifts right for negative
// counts; clamping the (unsigned) count to 64 first gives exactly vpsrlvd/vpsllvd semantics:
// any count >= 32, "negative" ones included, shifts everything out.
inline u32 srl(u32 v, u32 count) { return vshlq_u32(v, vnegq_s32(as_s(vminq_u32(count, vdupq_n_u32(64))))); }
inline u32 sll(u32 v, u32 count) { return vshlq_u32(v, as_s(vminq_u32(count, vdupq_n_u32(64)))); }
inline u32 min_s(u32 a, u32 b) { return as_u(vminq_s32(as_s(a), as_s(b))); }
inline u32 max_s(u32 a, u32 b) { return as_u(vmaxq_s32(as_s(a), as_s(b))); }
inline u32 gt_s(u32 a, u32 b) { return vcgtq_s32(as_s(a), as_s(b)); }
inline u32 sign_mask(u32 x) { return as_u(vshrq_n_s32(as_s(x), 31)); }

/// 4 inputs as float32 bit patterns.
template <class In>
inline u32 load4(const In* p) {
  if constexpr (std::is_same_v<In, float>) {
    return vld1q_u32(reinterpret_cast<const std::uint32_t*>(p));
  } else if constexpr (std::is_same_v<In, bfloat16>) {
    return vshll_n_u16(vld1_u16(reinterpret_cast<const std::uint16_t*>(p)), 16);
  } else {
    static_assert(std::is_same_v<In, float16>);
    return vreinterpretq_u32_f32(vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(reinterpret_cast<const std::uint16_t*>(p)))));
  }
}

struct round_inputs {
  u32 tie_up = vdupq_n_u32(0);
  u32 away = vdupq_n_u32(0);
  u32 random = vdupq_n_u32(0);
};

/// kept = sig / 2^d rounded by kind R. sig < 2^25; d <= 31 for every kind but stochastic.
template <round_kind R, bool CustomTie = false>
inline u32 round_shift(u32 sig, u32 d, const round_inputs& in) {
  if constexpr (R == round_kind::nearest_even) {
    const u32 half_m1 = srl(splat(0x7FFFFFFFU), vsubq_u32(splat(32), d));
    u32 tie_up;
    if constexpr (CustomTie) tie_up = in.tie_up;
    else tie_up = vandq_u32(srl(sig, d), splat(1));
    return srl(vaddq_u32(vaddq_u32(sig, half_m1), tie_up), d);
  } else if constexpr (R == round_kind::nearest_away) {
    const u32 half = srl(splat(0x40000000U), vsubq_u32(splat(31), d));
    return srl(vaddq_u32(sig, half), d);
  } else if constexpr (R == round_kind::directed) {
    const u32 ulp_m1 = srl(splat(0xFFFFFFFFU), vsubq_u32(splat(32), d));
    return srl(vaddq_u32(sig, vandq_u32(ulp_m1, in.away)), d);
  } else {
    // F = floor(dropped * 2^32 / 2^d): sig << (32 - d) for d <= 32, sig >> (d - 32) above.
    const u32 f = vorrq_u32(sll(sig, vsubq_u32(splat(32), d)), srl(sig, vsubq_u32(d, splat(32))));
    const u32 kept = srl(sig, d);
    const u32 sum = vaddq_u32(f, in.random);
    return vsubq_u32(kept, vcltq_u32(sum, f));  // carry out of 32 bits: sum < f
  }
}

struct directed_lanes {
  std::uint32_t away_xor = 0, away_enable = 0;
  static constexpr directed_lanes from(rounding r) noexcept {
    if (r == rounding::upward) return {0xFFFFFFFFU, 0xFFFFFFFFU};
    if (r == rounding::downward) return {0x00000000U, 0xFFFFFFFFU};
    return {0U, 0U};
  }
};

template <class Spec>
constexpr bool e8m0_like() noexcept {
  if constexpr (requires { Spec::layout; }) return !Spec::layout.has_zero;
  else return false;
}
template <class Spec>
inline constexpr bool is_e8m0_like = e8m0_like<Spec>();

template <class Spec>
struct overflow_codes {
  std::uint32_t ovf, max, nan_out;
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

/// IEEE-like formats with a zero: round the rebiased float32 pattern (avx2 exmy_encoder).
template <class Spec, round_kind R>
struct exmy_encoder {
  static constexpr int M = Spec::mantissa_bits;
  static constexpr int emin_biased = 128 - Spec::bias;
  static constexpr int sign_shift = 32 - Spec::bits;
  u32 ovf, max, nan_out, away_xor, away_enable;

  explicit exmy_encoder(conversion c) {
    const auto k = overflow_codes<Spec>::from(c);
    const auto dl = directed_lanes::from(c.round);
    ovf = splat(k.ovf), max = splat(k.max), nan_out = splat(k.nan_out);
    away_xor = splat(dl.away_xor), away_enable = splat(dl.away_enable);
  }

  u32 operator()(u32 x, u32 random) const {
    const u32 a = vandq_u32(x, splat(0x7FFFFFFFU));
    u32 p, d;
    if constexpr (emin_biased == 1) {
      p = a;
      d = splat(23 - M);
    } else {
      const u32 below = max_s(vsubq_u32(splat_i(emin_biased), vshrq_n_u32(a, 23)), splat(0));
      p = vsubq_u32(vaddq_u32(a, vshlq_n_u32(below, 23)), splat(static_cast<std::uint32_t>(emin_biased - 1) << 23));
      d = vaddq_u32(below, splat(23 - M));
      if constexpr (R != round_kind::stochastic) d = vminq_u32(d, splat(31));
    }
    round_inputs in{};
    u32 away = splat(0);
    if constexpr (R == round_kind::directed) {
      away = vandq_u32(veorq_u32(sign_mask(x), away_xor), away_enable);
      in.away = away;
    }
    if constexpr (R == round_kind::stochastic) in.random = random;
    u32 mag = round_shift<R>(p, d, in);
    u32 code;
    if constexpr (R == round_kind::directed) {
      if constexpr (emin_biased != 1) mag = vbicq_u32(mag, vceqq_u32(a, splat(0)));
      code = vminq_u32(mag, blend(max, ovf, away));
      code = blend(code, ovf, vceqq_u32(a, splat(0x7F800000U)));
    } else {
      code = vminq_u32(mag, ovf);
    }
    code = vorrq_u32(code, vshrq_n_u32(vandq_u32(x, splat(0x80000000U)), sign_shift));
    return blend(code, nan_out, vcgtq_u32(a, splat(0x7F800000U)));
  }
};

/// float8_e8m0fnu (avx2 e8m0_encoder).
template <class Spec, round_kind R>
struct e8m0_encoder {
  u32 ovf, max, nan_out, zero_or_negative, away_xor, away_enable;

  explicit e8m0_encoder(conversion c) {
    const auto k = overflow_codes<Spec>::from(c);
    const auto dl = directed_lanes::from(c.round);
    const bool sat = c.on_overflow != overflow::non_saturating;
    ovf = splat(k.ovf), max = splat(k.max), nan_out = splat(k.nan_out);
    zero_or_negative = splat(sat ? 0U : Spec::nan_code);
    away_xor = splat(dl.away_xor), away_enable = splat(dl.away_enable);
  }

  u32 operator()(u32 x, u32 random) const {
    const u32 a = vandq_u32(x, splat(0x7FFFFFFFU));
    const u32 eb = vshrq_n_u32(a, 23);
    const u32 normal = vcgtq_u32(eb, splat(0));
    const u32 sig = vorrq_u32(vandq_u32(a, splat(0x7FFFFFU)), vandq_u32(normal, splat(0x800000U)));
    const u32 d = vaddq_u32(splat(22), vandq_u32(normal, splat(1)));
    round_inputs in{};
    u32 away = splat(0);
    if constexpr (R == round_kind::directed) {
      away = vandq_u32(veorq_u32(sign_mask(x), away_xor), away_enable);
      in.away = away;
    }
    if constexpr (R == round_kind::stochastic) in.random = random;
    const u32 mag = vaddq_u32(vsubq_u32(eb, splat(1)), round_shift<R>(sig, d, in));
    u32 code;
    if constexpr (R == round_kind::directed) {
      code = min_s(mag, blend(max, ovf, away));
      code = blend(code, ovf, vceqq_u32(a, splat(0x7F800000U)));
    } else {
      code = min_s(mag, ovf);
    }
    code = vbicq_u32(code, vcltq_u32(a, splat(0x00400000U)));
    const u32 zero_or_neg = vorrq_u32(vceqq_u32(a, splat(0)), sign_mask(x));
    code = blend(code, zero_or_negative, zero_or_neg);
    return blend(code, nan_out, vcgtq_u32(a, splat(0x7F800000U)));
  }
};

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

/// HiF8, every rounding kind (avx2 hif8_encoder::general).
template <round_kind R>
struct hif8_encoder {
  u32 ovf, max, nan_out, away_xor, away_enable;
  uint8x16_t width, base, negbit;

  explicit hif8_encoder(conversion c) {
    const auto k = overflow_codes<hifloat8_spec>::from(c);
    const auto dl = directed_lanes::from(c.round);
    ovf = splat(k.ovf), max = splat(k.max), nan_out = splat(k.nan_out);
    away_xor = splat(dl.away_xor), away_enable = splat(dl.away_enable);
    width = vld1q_u8(hif8_table_data.width.data());
    base = vld1q_u8(hif8_table_data.base.data());
    negbit = vld1q_u8(hif8_table_data.negbit.data());
  }

  /// Byte lookup for lanes holding 0..15 (the upper index bytes are out of range: 0).
  static u32 lookup(uint8x16_t table, u32 idx) {
    return vreinterpretq_u32_u8(vqtbl1q_u8(table, vreinterpretq_u8_u32(vorrq_u32(idx, splat(0x80808000U)))));
  }

  u32 operator()(u32 x, u32 random) const {
    const u32 a = vandq_u32(x, splat(0x7FFFFFFFU));
    const u32 eb = vshrq_n_u32(a, 23);
    const u32 e = vsubq_u32(eb, splat(127));
    const u32 ec = max_s(e, splat_i(-23));
    const u32 fifteen = splat(15);
    const u32 below_normal = gt_s(splat_i(-15), ec);
    const u32 w = blend(lookup(width, min_s(as_u(vabsq_s32(as_s(ec))), fifteen)), vceqq_u32(ec, splat_i(-23)), below_normal);
    u32 sig = vandq_u32(a, splat(0x7FFFFFU));
    if constexpr (R == round_kind::directed) sig = vorrq_u32(sig, vshlq_n_u32(vminq_u32(eb, splat(1)), 23));
    else sig = vorrq_u32(sig, splat(0x800000U));
    // d = (ec - w) - (max(eb, 1) - 150), clamped for every kind but stochastic
    u32 d = vaddq_u32(vsubq_u32(ec, w), vsubq_u32(splat(150), vmaxq_u32(eb, splat(1))));
    if constexpr (R != round_kind::stochastic) d = vminq_u32(d, splat(31));
    round_inputs in{};
    u32 away = splat(0);
    if constexpr (R == round_kind::directed) {
      away = vandq_u32(veorq_u32(sign_mask(x), away_xor), away_enable);
      in.away = away;
    }
    if constexpr (R == round_kind::stochastic) in.random = random;
    u32 kept;
    if constexpr (R == round_kind::nearest_even) {
      const u32 kept0_odd = vandq_u32(srl(sig, d), splat(1));
      const u32 e_even = vbicq_u32(splat(1), ec);
      in.tie_up = blend(kept0_odd, e_even, below_normal);
      kept = round_shift<R, true>(sig, d, in);
    } else {
      kept = round_shift<R>(sig, d, in);
    }
    const u32 carry = srl(kept, vaddq_u32(w, splat(1)));
    const u32 e2 = vaddq_u32(ec, carry);
    // 2^w with w = -1 is 0 (a right shift by one of 1)
    const u32 m = vbicq_u32(vsubq_u32(kept, sll(splat(1), w)), vnegq_s32_as_u(carry));
    const u32 idx = min_s(as_u(vabsq_s32(as_s(e2))), fifteen);
    u32 code = vorrq_u32(lookup(base, idx), vandq_u32(lookup(negbit, idx), gt_s(splat(0), e2)));
    code = blend(code, vaddq_u32(e2, splat(23)), gt_s(splat_i(-15), e2));
    code = vaddq_u32(code, m);
    const u32 overflowed = vorrq_u32(gt_s(e2, fifteen), vceqq_u32(code, splat(hifloat8_spec::inf_code)));
    if constexpr (R == round_kind::directed) {
      code = blend(code, blend(max, ovf, away), overflowed);
      code = blend(code, ovf, vceqq_u32(a, splat(0x7F800000U)));
    } else {
      code = blend(code, ovf, overflowed);
    }
    const u32 sign = vandq_u32(vshrq_n_u32(x, 24), splat(0x80U));
    code = vorrq_u32(code, vbicq_u32(sign, vceqq_u32(code, splat(0))));
    return blend(code, nan_out, vcgtq_u32(a, splat(0x7F800000U)));
  }

  static u32 vnegq_s32_as_u(u32 v) { return as_u(vnegq_s32(as_s(v))); }
};

template <class Spec, round_kind R>
using encoder_for = std::conditional_t<std::is_same_v<Spec, hifloat8_spec>, hif8_encoder<R>,
                                       std::conditional_t<is_e8m0_like<Spec>, e8m0_encoder<Spec, R>, exmy_encoder<Spec, R>>>;

enum class scale_kind : std::uint8_t { none, multiply, divide };
enum class store_kind : std::uint8_t { u8, u16, nibbles };

template <store_kind St>
constexpr std::size_t out_bytes(std::size_t n) noexcept {
  return St == store_kind::u16 ? 2 * n : St == store_kind::u8 ? n : (n + 1) / 2;
}

/// 4 x 4 codes (each < 2^16) -> memory.
template <store_kind St>
inline void store16(void* out, u32 c0, u32 c1, u32 c2, u32 c3) {
  const uint16x8_t w0 = vcombine_u16(vmovn_u32(c0), vmovn_u32(c1));
  const uint16x8_t w1 = vcombine_u16(vmovn_u32(c2), vmovn_u32(c3));
  if constexpr (St == store_kind::u16) {
    auto* o = static_cast<std::uint16_t*>(out);
    vst1q_u16(o, w0);
    vst1q_u16(o + 8, w1);
  } else {
    const uint8x16_t b = vcombine_u8(vmovn_u16(w0), vmovn_u16(w1));
    if constexpr (St == store_kind::u8) {
      vst1q_u8(static_cast<std::uint8_t*>(out), b);
    } else {
      const uint8x16_t even = vuzp1q_u8(b, b), odd = vuzp2q_u8(b, b);
      const uint8x16_t packed = vorrq_u8(vandq_u8(even, vdupq_n_u8(0x0F)), vshlq_n_u8(odd, 4));
      vst1_u8(static_cast<std::uint8_t*>(out), vget_low_u8(packed));
    }
  }
}

inline u32 finite_max_step(u32 v, u32 m) {
  const u32 a = vandq_u32(v, splat(0x7FFFFFFFU));
  return vmaxq_u32(m, vandq_u32(a, vcltq_u32(a, splat(0x7F800000U))));
}

template <class Spec, class In, round_kind R, scale_kind S, store_kind St>
inline void encode16(const In* x, void* out, const encoder_for<Spec, R>& enc, float32x4_t scale, u32& amax,
                     std::uint64_t seed, std::uint64_t index) {
  u32 c[4];
  for (int k = 0; k < 4; ++k) {
    u32 v = load4(x + 4 * k);
    if constexpr (S != scale_kind::none) {
      amax = finite_max_step(v, amax);
      const float32x4_t f = vreinterpretq_f32_u32(v);
      v = vreinterpretq_u32_f32(S == scale_kind::multiply ? vmulq_f32(f, scale) : vdivq_f32(f, scale));
    }
    u32 r = splat(0);
    if constexpr (R == round_kind::stochastic) {
      const std::uint64_t i0 = index + 4 * static_cast<std::uint64_t>(k);
      const std::uint32_t bits[4] = {random_bits(seed, i0), random_bits(seed, i0 + 1), random_bits(seed, i0 + 2),
                                     random_bits(seed, i0 + 3)};
      r = vld1q_u32(bits);
    }
    c[k] = enc(v, r);
  }
  store16<St>(out, c[0], c[1], c[2], c[3]);
}

template <class Spec, class In, round_kind R, scale_kind S, store_kind St>
float encode_span(const In* x, std::size_t n, void* out, conversion c, float scale, std::uint64_t seed,
                  std::uint64_t first_index) noexcept {
  const encoder_for<Spec, R> enc(c);
  const float32x4_t sv = vdupq_n_f32(scale);
  u32 amax = splat(0);
  auto* o = static_cast<std::uint8_t*>(out);
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16)
    encode16<Spec, In, R, S, St>(x + i, o + out_bytes<St>(i), enc, sv, amax, seed, first_index + i);
  if (i < n) {
    const std::size_t r = n - i;
    In xin[16] = {};
    std::uint8_t buf[32];
    std::memcpy(xin, x + i, r * sizeof(In));
    encode16<Spec, In, R, S, St>(xin, buf, enc, sv, amax, seed, first_index + i);
    if constexpr (St == store_kind::nibbles) {
      if (r % 2 != 0) buf[r / 2] = static_cast<std::uint8_t>(buf[r / 2] & 0x0FU);
    }
    std::memcpy(o + out_bytes<St>(i), buf, out_bytes<St>(r));
  }
  return std::bit_cast<float>(vmaxvq_u32(amax));
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

inline bool reciprocal_is_exact(float s, float& inv) noexcept {
  const std::uint32_t b = std::bit_cast<std::uint32_t>(s);
  const std::uint32_t field = (b >> 23) & 0xFFU;
  if ((b & 0x807FFFFFU) != 0 || field == 0 || field >= 254) return false;
  inv = std::bit_cast<float>((254U - field) << 23);
  return true;
}

// --- decoding -----------------------------------------------------------------------------------

/// HiF8: bf16 patterns of the 128 magnitudes as two byte tables (vqtbl4q_u8 takes 64 entries).
struct hif8_decode_tables {
  std::array<std::uint8_t, 128> hi{}, lo{};
  std::uint32_t code80 = 0;
  static constexpr hif8_decode_tables make() noexcept {
    hif8_decode_tables t;
    const auto& d = minifloat::detail::decode_table<hifloat8_spec>;
    for (std::size_t c = 0; c < 128; ++c) {
      const std::uint32_t b = std::bit_cast<std::uint32_t>(d[c]);
      t.hi[c] = static_cast<std::uint8_t>(b >> 24);
      t.lo[c] = static_cast<std::uint8_t>((b >> 16) & 0xFFU);
    }
    t.code80 = std::bit_cast<std::uint32_t>(d[0x80]);
    return t;
  }
};
inline constexpr hif8_decode_tables hif8_decode_data = hif8_decode_tables::make();

inline uint8x16x4_t table64(const std::uint8_t* p) { return {vld1q_u8(p), vld1q_u8(p + 16), vld1q_u8(p + 32), vld1q_u8(p + 48)}; }

/// 16 codes -> 4 x 4 float32 bit patterns.
template <class Spec>
inline void decode16(const std::uint8_t* p, u32 out[4]) {
  if constexpr (std::is_same_v<Spec, hifloat8_spec>) {
    const uint8x16_t c = vld1q_u8(p);
    const uint8x16_t idx = vandq_u8(c, vdupq_n_u8(0x7F));
    const uint8x16_t idx2 = vsubq_u8(idx, vdupq_n_u8(64));  // < 64 wraps to >= 192: out of range, 0
    const auto& t = hif8_decode_data;
    uint8x16_t h = vorrq_u8(vqtbl4q_u8(table64(t.hi.data()), idx), vqtbl4q_u8(table64(t.hi.data() + 64), idx2));
    uint8x16_t l = vorrq_u8(vqtbl4q_u8(table64(t.lo.data()), idx), vqtbl4q_u8(table64(t.lo.data() + 64), idx2));
    h = vorrq_u8(h, vandq_u8(c, vdupq_n_u8(0x80)));
    const uint8x16_t is80 = vceqq_u8(c, vdupq_n_u8(0x80));
    h = vbslq_u8(is80, vdupq_n_u8(static_cast<std::uint8_t>(t.code80 >> 24)), h);
    l = vbslq_u8(is80, vdupq_n_u8(static_cast<std::uint8_t>((t.code80 >> 16) & 0xFFU)), l);
    const uint8x16x2_t z = vzipq_u8(l, h);  // 16-bit bf16 patterns, in order
    const uint16x8_t w0 = vreinterpretq_u16_u8(z.val[0]), w1 = vreinterpretq_u16_u8(z.val[1]);
    out[0] = vshll_n_u16(vget_low_u16(w0), 16);
    out[1] = vshll_n_u16(vget_high_u16(w0), 16);
    out[2] = vshll_n_u16(vget_low_u16(w1), 16);
    out[3] = vshll_n_u16(vget_high_u16(w1), 16);
  } else {
    const uint8x16_t c8 = vld1q_u8(p);
    const uint16x8_t c16[2] = {vmovl_u8(vget_low_u8(c8)), vmovl_u8(vget_high_u8(c8))};
    for (int k = 0; k < 4; ++k) {
      const u32 c = vmovl_u16((k & 1) == 0 ? vget_low_u16(c16[k / 2]) : vget_high_u16(c16[k / 2]));
      if constexpr (is_e8m0_like<Spec>) {
        u32 b = vshlq_n_u32(c, 23);
        b = blend(b, splat(0x00400000U), vceqq_u32(c, splat(0)));
        out[k] = blend(b, splat(0x7FC00000U), vceqq_u32(c, splat(0xFFU)));
      } else {
        constexpr int M = Spec::mantissa_bits;
        const u32 mag = vandq_u32(c, splat(Spec::magnitude_mask));
        u32 b = vaddq_u32(vshlq_n_u32(mag, 23 - M), splat(static_cast<std::uint32_t>(127 - Spec::bias) << 23));
        // Subnormals: float(m) * 2^(1 - bias - M), exact (a normal product).
        const float32x4_t sub = vmulq_f32(vcvtq_f32_u32(mag), vreinterpretq_f32_u32(splat(static_cast<std::uint32_t>(128 - Spec::bias - M) << 23)));
        b = blend(b, vreinterpretq_u32_f32(sub), vcltq_u32(mag, splat(1U << M)));
        if constexpr (Spec::layout.specials == nan_inf::ieee) {
          b = blend(b, splat(0x7F800000U), vceqq_u32(mag, splat(Spec::inf_code)));
          b = blend(b, splat(0x7FC00000U), vcgtq_u32(mag, splat(Spec::inf_code)));
        } else if constexpr (Spec::layout.specials == nan_inf::nan_only) {
          b = blend(b, splat(0x7FC00000U), vceqq_u32(mag, splat(Spec::magnitude_mask)));
        }
        out[k] = vorrq_u32(b, vshlq_n_u32(vandq_u32(c, splat(Spec::sign_mask)), 32 - Spec::bits));
      }
    }
  }
}

template <class Spec>
inline u32 decode16x4(const std::uint16_t* p) {
  const uint16x4_t codes = vld1_u16(p);
  const u32 c = vmovl_u16(codes);
  u32 b;
  if constexpr (Spec::exponent_bits == 8) b = vshlq_n_u32(c, 16);
  else b = vreinterpretq_u32_f32(vcvt_f32_f16(vreinterpret_f16_u16(codes)));
  const u32 nan = vcgtq_u32(vandq_u32(c, splat(Spec::magnitude_mask)), splat(Spec::inf_code));
  return blend(b, vorrq_u32(vandq_u32(b, splat(0x80000000U)), splat(0x7FC00000U)), nan);
}

template <bool Scaled>
inline void store4f(float* out, u32 bits, float32x4_t scale) {
  float32x4_t f = vreinterpretq_f32_u32(bits);
  if constexpr (Scaled) f = vmulq_f32(f, scale);
  vst1q_f32(out, f);
}

template <class Spec, bool Packed, bool Scaled>
void decode8_span(const std::uint8_t* codes, std::size_t n, float* out, float scale) noexcept {
  const float32x4_t sv = vdupq_n_f32(scale);
  std::uint8_t unpacked[16];
  const auto at = [&](const std::uint8_t* base, std::size_t i) -> const std::uint8_t* {
    if constexpr (Packed) {
      const uint8x8_t b = vld1_u8(base + i / 2);
      const uint8x8x2_t z = vzip_u8(vand_u8(b, vdup_n_u8(0x0F)), vshr_n_u8(b, 4));
      vst1q_u8(unpacked, vcombine_u8(z.val[0], z.val[1]));
      return unpacked;
    } else {
      return base + i;
    }
  };
  u32 v[4];
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    decode16<Spec>(at(codes, i), v);
    for (int k = 0; k < 4; ++k) store4f<Scaled>(out + i + 4 * k, v[k], sv);
  }
  if (i < n) {
    const std::size_t r = n - i;
    std::uint8_t cin[16] = {};
    std::memcpy(cin, codes + (Packed ? i / 2 : i), Packed ? (r + 1) / 2 : r);
    float buf[16];
    decode16<Spec>(at(cin, 0), v);
    for (int k = 0; k < 4; ++k) store4f<Scaled>(buf + 4 * k, v[k], sv);
    std::memcpy(out + i, buf, r * sizeof(float));
  }
}

template <class Spec, bool Scaled>
void decode16_span(const std::uint16_t* codes, std::size_t n, float* out, float scale) noexcept {
  const float32x4_t sv = vdupq_n_f32(scale);
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4) store4f<Scaled>(out + i, decode16x4<Spec>(codes + i), sv);
  if (i < n) {
    std::uint16_t cin[4] = {};
    float buf[4];
    std::memcpy(cin, codes + i, (n - i) * sizeof(std::uint16_t));
    store4f<Scaled>(buf, decode16x4<Spec>(cin), sv);
    std::memcpy(out + i, buf, (n - i) * sizeof(float));
  }
}

template <class T, bool Scaled>
void decode_any(const typename T::storage_type* codes, std::size_t n, float* out, float scale) noexcept {
  using Spec = typename T::spec;
  if constexpr (Spec::bits > 8) decode16_span<Spec, Scaled>(codes, n, out, scale);
  else decode8_span<Spec, false, Scaled>(codes, n, out, scale);
}

}  // namespace detail

// --- the kernel set (signatures as in simd/scalar/codec.hpp) ------------------------------

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
  detail::u32 m = detail::splat(0);
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4) m = detail::finite_max_step(detail::load4(x + i), m);
  if (i < n) {
    In buf[4] = {};
    std::memcpy(buf, x + i, (n - i) * sizeof(In));
    m = detail::finite_max_step(detail::load4(buf), m);
  }
  return std::bit_cast<float>(vmaxvq_u32(m));
}

template <class T>
void decode(const typename T::storage_type* codes, std::size_t n, float* out) noexcept {
  detail::decode_any<T, false>(codes, n, out, 1.0f);
}

inline void decode_fp4_packed(const std::uint8_t* packed, std::size_t n, float* out) noexcept {
  detail::decode8_span<float4_e2m1fn::spec, true, false>(packed, n, out, 1.0f);
}

template <class T>
void decode_scaled(const typename T::storage_type* codes, std::size_t n, float* out, float scale) noexcept {
  detail::decode_any<T, true>(codes, n, out, scale);
}

inline void decode_scaled_fp4_packed(const std::uint8_t* packed, std::size_t n, float* out, float scale) noexcept {
  detail::decode8_span<float4_e2m1fn::spec, true, true>(packed, n, out, scale);
}

inline void pack_nibbles(const std::uint8_t* codes, std::size_t n, std::uint8_t* packed) noexcept {
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const uint8x16_t b = vld1q_u8(codes + i);
    const uint8x16_t even = vuzp1q_u8(b, b), odd = vuzp2q_u8(b, b);
    vst1_u8(packed + i / 2, vget_low_u8(vorrq_u8(vandq_u8(even, vdupq_n_u8(0x0F)), vshlq_n_u8(odd, 4))));
  }
  for (; i < n; i += 2) {
    const unsigned lo = codes[i] & 0xFU;
    const unsigned hi = i + 1 < n ? codes[i + 1] & 0xFU : 0U;
    packed[i / 2] = static_cast<std::uint8_t>(lo | (hi << 4));
  }
}

inline void unpack_nibbles(const std::uint8_t* packed, std::size_t n, std::uint8_t* codes) noexcept {
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const uint8x8_t b = vld1_u8(packed + i / 2);
    const uint8x8x2_t z = vzip_u8(vand_u8(b, vdup_n_u8(0x0F)), vshr_n_u8(b, 4));
    vst1q_u8(codes + i, vcombine_u8(z.val[0], z.val[1]));
  }
  for (; i < n; ++i) codes[i] = static_cast<std::uint8_t>((static_cast<unsigned>(packed[i / 2]) >> (4 * (i & 1))) & 0xFU);
}

}  // namespace minifloat::simd::neon

#endif  // MINIFLOAT_SIMD_NEON
