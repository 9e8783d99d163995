#pragma once
// An independent reference ("oracle") for every scalar conversion double -> format.
//
// Written from the format definitions only (docs/formats/hifloat8.md#bit-layout,
// include/minifloat/core/policy.hpp and the comments at the top of include/minifloat/formats/*.hpp),
// never from the library's encoders. It shares nothing with the library except the public
// types (for the storage width and the `conversion` policy struct).
//
// How it works, deliberately simple rather than fast:
//   1. oracle_decode<T>(code): the value of a code, from the bit layout (E/M/bias formula for the
//      IEEE-like formats, the Dot prefix code of docs/formats/hifloat8.md#dot-prefix for hifloat8).
//   2. value_table<T>(): every finite non-negative value of T, sorted, with the code of +v and of
//      -v, followed by the "would-be" value one step above max (the value the next code would
//      have if the format did not stop at max, e.g. 480 for E4M3, 2^16 for E5M2, 1.5 * 2^15 for
//      hifloat8). Rounding to it means overflow.
//   3. oracle_encode<T>(x, c, r): special inputs first (NaN, Inf, zero/negative for E8M0), then a
//      binary search for the neighbours lo <= |x| < hi on that table, then the rounding rule,
//      then the sign and the overflow policy.
//
// Exactness. All table values have at most 11 significant bits and lie in [2^-133, 2^128], so
// they, their neighbours' midpoints (lo + hi) / 2 and gaps hi - lo are exact doubles:
//   * hi - lo is the spacing of lo's binade (a power of two), and lo is an integer multiple of it
//     (or 0), so lo + hi = (2k + 1) * gap with 2k + 1 < 2^13: exact, and halving it is exact.
//   * Comparing the double |x| with that midpoint is therefore an exact comparison of reals: no
//     subtraction |x| - lo versus hi - |x| is needed for the nearest modes.
//   * For stochastic rounding, |x| - lo is exact by Sterbenz's lemma when lo > 0 (lo <= |x| < hi
//     <= 2 lo, since gap <= lo), and trivially when lo = 0; dividing by the power-of-two gap and
//     scaling by 2^32 are exact too, so F = floor(f * 2^32) is the exact integer of policy.hpp.
//   The unit tests check these table properties (gap a power of two, lo a multiple of it).
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include <minifloat/minifloat.hpp>

namespace minifloat_oracle {

using minifloat::conversion;
using minifloat::overflow;
using minifloat::rounding;

enum class family : std::uint8_t { hifloat8, exmy };
// fnuz: the negative-zero code is the one NaN; no Inf, no -0.
enum class specials : std::uint8_t { none, nan_only, ieee, fnuz };

/// Everything the oracle knows about a format, written out by hand from the spec documents.
struct format_info {
  family fam = family::exmy;
  int bits = 8;                // logical code width
  int ebits = 0, mbits = 0, bias = 0;  // exmy only
  bool is_signed = true;
  bool has_zero = true;
  specials sp = specials::none;
  bool has_signed_zero = true;  // false: -0 and negative underflow give code 0 (hifloat8)
  std::uint32_t nan_code = 0;   // canonical (positive) NaN; meaningful if sp != none
  std::uint32_t pos_inf = 0, neg_inf = 0;  // meaningful if sp == ieee (or hifloat8)
  double max = 0;               // largest finite value
  double would_be = 0;          // the value one grid step above max
  std::uint32_t would_be_code = 0;  // the code that would-be value would have (for parity)
  bool ties_always_up = false;  // E8M0: the significand is always odd, so ties-even goes up
  bool nearest_is_away = false; // hifloat8: rounding::nearest is ties-away
};

/// 2^k, usable in constant expressions (std::ldexp is not constexpr before C++23).
constexpr double pow2(int k) {
  double r = 1.0;
  for (; k > 0; --k) r *= 2.0;
  for (; k < 0; ++k) r /= 2.0;
  return r;
}

template <class T>
constexpr format_info info_of() {
  using namespace minifloat;
  format_info f{};
  if constexpr (std::is_same_v<T, hifloat8>) {
    // docs/formats/hifloat8.md#special-codes: one zero 0x00, one NaN 0x80, Inf 0x6F/0xEF (would be 1.5 * 2^15),
    // max 0x6E = 2^15.
    f.fam = family::hifloat8;
    f.bits = 8;
    f.sp = specials::ieee;
    f.has_signed_zero = false;
    f.nan_code = 0x80;
    f.pos_inf = 0x6F;
    f.neg_inf = 0xEF;
    f.max = 32768.0;
    f.would_be = 49152.0;
    f.would_be_code = 0x6F;
    f.nearest_is_away = true;
  } else if constexpr (std::is_same_v<T, float8_e4m3fn>) {
    // S.EEEE.MMM bias 7, NaN S.1111.111 only, max 448, would-be 480 = S.1111.111.
    f.ebits = 4; f.mbits = 3; f.bias = 7; f.sp = specials::nan_only;
    f.nan_code = 0x7F;
    f.max = 448.0; f.would_be = 480.0; f.would_be_code = 0x7F;
  } else if constexpr (std::is_same_v<T, float8_e5m2>) {
    // S.EEEEE.MM bias 15, IEEE specials, max 57344, would-be 2^16 = Inf code 0x7C.
    f.ebits = 5; f.mbits = 2; f.bias = 15; f.sp = specials::ieee;
    f.nan_code = 0x7E; f.pos_inf = 0x7C; f.neg_inf = 0xFC;
    f.max = 57344.0; f.would_be = 65536.0; f.would_be_code = 0x7C;
  } else if constexpr (std::is_same_v<T, float6_e3m2fn>) {
    f.bits = 6; f.ebits = 3; f.mbits = 2; f.bias = 3; f.sp = specials::none;
    f.max = 28.0; f.would_be = 32.0; f.would_be_code = 0x20;
  } else if constexpr (std::is_same_v<T, float6_e2m3fn>) {
    f.bits = 6; f.ebits = 2; f.mbits = 3; f.bias = 1; f.sp = specials::none;
    f.max = 7.5; f.would_be = 8.0; f.would_be_code = 0x20;
  } else if constexpr (std::is_same_v<T, float4_e2m1fn>) {
    f.bits = 4; f.ebits = 2; f.mbits = 1; f.bias = 1; f.sp = specials::none;
    f.max = 6.0; f.would_be = 8.0; f.would_be_code = 0x8;
  } else if constexpr (std::is_same_v<T, float8_e8m0fnu>) {
    // Unsigned EEEEEEEE bias 127, no zero, 0xFF = NaN, max 0xFE = 2^127.
    f.ebits = 8; f.mbits = 0; f.bias = 127; f.sp = specials::nan_only;
    f.is_signed = false; f.has_zero = false; f.has_signed_zero = false;
    f.nan_code = 0xFF;
    f.max = pow2(127); f.would_be = pow2(128); f.would_be_code = 0xFF;
    f.ties_always_up = true;
  } else if constexpr (std::is_same_v<T, bfloat16>) {
    f.bits = 16; f.ebits = 8; f.mbits = 7; f.bias = 127; f.sp = specials::ieee;
    f.nan_code = 0x7FC0; f.pos_inf = 0x7F80; f.neg_inf = 0xFF80;
    f.max = 255.0 * pow2(120); f.would_be = pow2(128); f.would_be_code = 0x7F80;
  } else if constexpr (std::is_same_v<T, float16>) {
    f.bits = 16; f.ebits = 5; f.mbits = 10; f.bias = 15; f.sp = specials::ieee;
    f.nan_code = 0x7E00; f.pos_inf = 0x7C00; f.neg_inf = 0xFC00;
    f.max = 65504.0; f.would_be = 65536.0; f.would_be_code = 0x7C00;
  } else if constexpr (std::is_same_v<T, float8_e4m3fnuz>) {
    // S.EEEE.MMM bias 8, NaN = 0x80 (the -0 code), no Inf, max 0x7F = 240, would-be 256 = 0x80.
    f.ebits = 4; f.mbits = 3; f.bias = 8; f.sp = specials::fnuz; f.has_signed_zero = false;
    f.nan_code = 0x80;
    f.max = 240.0; f.would_be = 256.0; f.would_be_code = 0x80;
  } else if constexpr (std::is_same_v<T, float8_e5m2fnuz>) {
    // S.EEEEE.MM bias 16, NaN = 0x80, max 0x7F = 57344, would-be 2^16.
    f.ebits = 5; f.mbits = 2; f.bias = 16; f.sp = specials::fnuz; f.has_signed_zero = false;
    f.nan_code = 0x80;
    f.max = 57344.0; f.would_be = 65536.0; f.would_be_code = 0x80;
  } else if constexpr (std::is_same_v<T, float8_e4m3b11fnuz>) {
    // S.EEEE.MMM bias 11, NaN = 0x80, max 0x7F = 30, would-be 32.
    f.ebits = 4; f.mbits = 3; f.bias = 11; f.sp = specials::fnuz; f.has_signed_zero = false;
    f.nan_code = 0x80;
    f.max = 30.0; f.would_be = 32.0; f.would_be_code = 0x80;
  } else if constexpr (std::is_same_v<T, float8_e3m4>) {
    // S.EEE.MMMM bias 3, IEEE specials (Inf 0x70), max 0x6F = 15.5, would-be 16 = Inf.
    f.ebits = 3; f.mbits = 4; f.bias = 3; f.sp = specials::ieee;
    f.nan_code = 0x78; f.pos_inf = 0x70; f.neg_inf = 0xF0;
    f.max = 15.5; f.would_be = 16.0; f.would_be_code = 0x70;
  } else if constexpr (std::is_same_v<T, float8_e4m3>) {
    // S.EEEE.MMM bias 7, IEEE specials (Inf 0x78), max 0x77 = 240, would-be 256 = Inf.
    f.ebits = 4; f.mbits = 3; f.bias = 7; f.sp = specials::ieee;
    f.nan_code = 0x7C; f.pos_inf = 0x78; f.neg_inf = 0xF8;
    f.max = 240.0; f.would_be = 256.0; f.would_be_code = 0x78;
  } else {
    static_assert(!sizeof(T), "oracle: unknown format");
  }
  return f;
}

inline constexpr double quiet_nan = std::numeric_limits<double>::quiet_NaN();
inline constexpr double infinity = std::numeric_limits<double>::infinity();

/// hifloat8 decode, from docs/formats/hifloat8.md#bit-layout.
inline double decode_hifloat8(std::uint32_t code) {
  code &= 0xFFU;
  if (code == 0x00U) return 0.0;
  if (code == 0x80U) return quiet_nan;
  if (code == 0x6FU) return infinity;
  if (code == 0xEFU) return -infinity;
  const double sign = (code & 0x80U) != 0 ? -1.0 : 1.0;
  const std::uint32_t b = code & 0x7FU;  // Dot | exponent field | mantissa (7 bits)
  int d = 0;       // Dot value D (the exponent field width); -1 for the denormal prefix 0000
  int dot_len = 0; // length of the Dot prefix code
  if ((b >> 5) == 0b11U) { d = 4; dot_len = 2; }
  else if ((b >> 5) == 0b10U) { d = 3; dot_len = 2; }
  else if ((b >> 5) == 0b01U) { d = 2; dot_len = 2; }
  else if ((b >> 4) == 0b001U) { d = 1; dot_len = 3; }
  else if ((b >> 3) == 0b0001U) { d = 0; dot_len = 4; }
  else { d = -1; dot_len = 4; }
  if (d < 0) {  // DML: (-1)^S * 2^(M - 23), M = 1..7
    const int m = static_cast<int>(b & 0x7U);
    return sign * std::ldexp(1.0, m - 23);
  }
  const int w = 7 - dot_len - d;  // mantissa width
  const std::uint32_t m = b & ((1U << w) - 1U);
  int e = 0;
  if (d > 0) {
    const std::uint32_t field = (b >> w) & ((1U << d) - 1U);
    const bool negative = ((field >> (d - 1)) & 1U) != 0;  // first bit: the sign of E
    const std::uint32_t low = field & ((1U << (d - 1)) - 1U);
    const int magnitude = (1 << (d - 1)) + static_cast<int>(low);  // hidden top bit of |E|
    e = negative ? -magnitude : magnitude;
  }
  return sign * std::ldexp(1.0 + static_cast<double>(m) / static_cast<double>(1U << w), e);
}

/// Sign/exponent/mantissa decode, from the formula of docs/formats/ocp_fp8.md#layouts.
inline double decode_exmy(const format_info& f, std::uint32_t code) {
  const std::uint32_t emask = (1U << f.ebits) - 1U;
  const std::uint32_t mmask = (1U << f.mbits) - 1U;
  const bool s = f.is_signed && ((code >> (f.ebits + f.mbits)) & 1U) != 0;
  const std::uint32_t e = (code >> f.mbits) & emask;
  const std::uint32_t m = code & mmask;
  const double sign = s ? -1.0 : 1.0;
  if (f.sp == specials::ieee && e == emask) return m == 0 ? sign * infinity : quiet_nan;
  if (f.sp == specials::nan_only && e == emask && m == mmask) return quiet_nan;
  if (f.sp == specials::fnuz && s && e == 0 && m == 0) return quiet_nan;
  if (f.has_zero && e == 0)  // zero and subnormals: 0.M * 2^(1 - bias)
    return sign * std::ldexp(static_cast<double>(m), 1 - f.bias - f.mbits);
  return sign * std::ldexp(static_cast<double>((1U << f.mbits) + m),
                           static_cast<int>(e) - f.bias - f.mbits);
}

template <class T>
double oracle_decode(std::uint32_t code) {
  constexpr format_info f = info_of<T>();
  code &= (1U << f.bits) - 1U;
  if constexpr (f.fam == family::hifloat8) return decode_hifloat8(code);
  else return decode_exmy(f, code);
}

/// Finite non-negative values of T in increasing order, then the would-be value above max.
struct value_table {
  std::vector<double> mag;
  std::vector<std::uint32_t> pos_code;  // code of +mag[i]
  std::vector<std::uint32_t> neg_code;  // code of -mag[i] (signed formats)
  std::size_t max_index = 0;            // index of max; max_index + 1 is the would-be value
};

template <class T>
value_table build_table() {
  constexpr format_info f = info_of<T>();
  struct entry {
    double v;
    std::uint32_t pos, neg;
  };
  std::vector<entry> es;
  const std::uint32_t ncodes = 1U << f.bits;
  for (std::uint32_t c = 0; c < ncodes; ++c) {
    const double v = oracle_decode<T>(c);
    if (!std::isfinite(v) || std::signbit(v)) continue;
    es.push_back({v, c, c});
  }
  std::sort(es.begin(), es.end(), [](const entry& a, const entry& b) { return a.v < b.v; });
  for (std::uint32_t c = 0; c < ncodes; ++c) {
    const double v = oracle_decode<T>(c);
    if (!std::isfinite(v) || !std::signbit(v)) continue;
    const auto it = std::lower_bound(es.begin(), es.end(), -v,
                                     [](const entry& e, double w) { return e.v < w; });
    if (it != es.end() && it->v == -v) it->neg = c;
  }
  if (!f.has_signed_zero && !es.empty() && es.front().v == 0.0) es.front().neg = es.front().pos;
  value_table t;
  for (const auto& e : es) {
    t.mag.push_back(e.v);
    t.pos_code.push_back(e.pos);
    t.neg_code.push_back(e.neg);
  }
  t.max_index = t.mag.size() - 1;
  t.mag.push_back(f.would_be);
  t.pos_code.push_back(f.would_be_code);
  t.neg_code.push_back(f.would_be_code | (f.is_signed ? 1U << (f.bits - 1) : 0U));
  return t;
}

template <class T>
const value_table& table() {
  static const value_table t = build_table<T>();
  return t;
}

/// The code the library should produce for narrow<T>(x, c, r).
template <class T>
typename T::storage_type oracle_encode(double x, conversion c = {}, std::uint32_t r = 0) {
  using code_t = typename T::storage_type;
  constexpr format_info f = info_of<T>();
  const value_table& t = table<T>();
  const auto out = [](std::uint32_t v) { return static_cast<code_t>(v); };

  const bool has_nan = f.sp != specials::none;
  // Formats with neither Inf nor NaN (the MX sub-byte elements) always saturate.
  const bool saturating = !has_nan || c.on_overflow != overflow::non_saturating;
  const bool neg = std::signbit(x);
  const std::uint32_t max_pos = t.pos_code[t.max_index];
  const std::uint32_t max_neg = t.neg_code[t.max_index];

  // 1. NaN: the canonical positive NaN, or +0 (code 0) for saturate_nan_to_zero and for formats
  //    without NaN.
  if (std::isnan(x)) {
    if (!has_nan || c.on_overflow == overflow::saturate_nan_to_zero) return out(0);
    return out(f.nan_code);
  }
  // 2. E8M0 has no sign and no zero: +-0 and every negative input (-Inf included) have no code.
  if (!f.is_signed && (neg || x == 0.0)) return out(saturating ? 0x00U : f.nan_code);

  // The result of an overflow (finite input rounded past max, or an infinite input).
  const auto overflowed = [&]() -> code_t {
    if (saturating) return out(neg ? max_neg : max_pos);
    if (f.sp == specials::ieee) return out(neg ? f.neg_inf : f.pos_inf);
    // NaN-only formats: E4M3 keeps the sign (0x7F / 0xFF); E8M0 only has 0xFF; fnuz has only 0x80.
    if (f.sp == specials::fnuz) return out(f.nan_code);
    return out(f.is_signed && neg ? (f.nan_code | (1U << (f.bits - 1))) : f.nan_code);
  };

  const double a = std::fabs(x);
  // 3. +-Inf: stays infinite (NaN for E4M3/E8M0) unless saturating, whatever the rounding mode.
  if (std::isinf(a)) return overflowed();

  // 4. Below the smallest value of a format without zero (E8M0): that smallest value.
  if (!f.has_zero && a < t.mag.front()) return out(t.pos_code.front());

  // Directed modes that round the magnitude toward zero never overflow.
  const bool magnitude_down = c.round == rounding::toward_zero ||
                              (c.round == rounding::upward && neg) ||
                              (c.round == rounding::downward && !neg);
  const std::size_t wb = t.max_index + 1;  // index of the would-be value

  std::size_t idx = 0;
  if (a >= t.mag[wb]) {
    idx = wb;  // already at or past the would-be value: every rounding overflows
  } else {
    // lo = mag[i] <= a < mag[i + 1] = hi
    const auto it = std::upper_bound(t.mag.begin(), t.mag.end(), a);
    const std::size_t i = static_cast<std::size_t>(it - t.mag.begin()) - 1;
    const double lo = t.mag[i];
    const double hi = t.mag[i + 1];
    if (a == lo) {
      idx = i;
    } else {
      const double mid = (lo + hi) / 2;  // exact (see the header comment)
      bool up = false;
      const auto tie_even_up = [&] { return f.ties_always_up || (t.pos_code[i + 1] & 1U) == 0; };
      switch (c.round) {
        case rounding::nearest:
          up = a > mid || (a == mid && (f.nearest_is_away ? true : tie_even_up()));
          break;
        case rounding::nearest_even: up = a > mid || (a == mid && tie_even_up()); break;
        case rounding::nearest_away: up = a >= mid; break;
        case rounding::toward_zero: up = false; break;
        case rounding::upward: up = !neg; break;
        case rounding::downward: up = neg; break;
        case rounding::stochastic: {
          const double gap = hi - lo;      // a power of two, exact
          const double frac = (a - lo) / gap;  // exact: Sterbenz, power-of-two divisor
          const auto big_f = static_cast<std::uint64_t>(std::floor(std::ldexp(frac, 32)));
          up = big_f + static_cast<std::uint64_t>(r) >= (std::uint64_t{1} << 32);
          break;
        }
      }
      idx = up ? i + 1 : i;
    }
  }
  if (idx == wb) {
    if (magnitude_down) return out(neg ? max_neg : max_pos);
    return overflowed();
  }
  return out(neg ? t.neg_code[idx] : t.pos_code[idx]);
}

}  // namespace minifloat_oracle
