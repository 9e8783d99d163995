#pragma once
// HiFloat8 (HiF8), Huawei Ascend's tapered 8-bit float. docs/formats/hifloat8.md#hifloat8-hif8 (sources
// there: arXiv 2409.16626; CANN AMCT doc; GE hif8_t.cc; en_dtypes).
//
//   bit 7   6 ...................................... 0
//       S | Dot (prefix code) | exponent (D bits) | mantissa (w bits)
//
//   Dot   D  w  exponents E     code (after S)   value
//   11    4  1  +-8 .. +-15     11 eeee m        2^E * (1 + m/2)
//   10    3  2  +-4 .. +-7      10 eee mm        2^E * (1 + m/4)
//   01    2  3  +-2, +-3        01 ee mmm        2^E * (1 + m/8)
//   001   1  3  +-1             001 e mmm        2^E * (1 + m/8)
//   0001  0  3  0               0001 mmm         1 + m/8
//   0000  denormal (DML)        0000 mmm         2^(m - 23), m = 1..7: 2^-22 .. 2^-16
//
// The exponent field is sign-magnitude with a hidden leading one: its first bit is the sign
// of E, the other D-1 bits are |E| - 2^(D-1). So the binades never overlap and unsigned code
// order is not value order (0x70 = 2^-8 sorts after 0x6E = 2^15).
//
//   zero      0x00 (the only zero; -0 does not exist)     NaN   0x80 (the only NaN)
//   +-Inf     0x6F / 0xEF  (what would be 1.5 * 2^15)
//   max       0x6E = 2^15 = 32768   (E = 15 keeps a single finite value)
//   min norm  0x7E = 2^-15          denorm_min 0x01 = 2^-22      1.0 = 0x08
//   38 binades (E = -22 .. 15); 4 significant bits for |E| <= 3, 3 for 4..7, 2 for 8..15,
//   1 in the denormal range.
//
// Rounding is on the tapered grid: round to the nearest HiF8 value, ties away from zero (the
// only nearest mode Ascend hardware offers for hif8). Overflow therefore starts at the midpoint
// 1.25 * 2^15 = 40960. |x| < 2^-23 rounds to 0; [2^-23, 2^-22) to 2^-22. Deviations from the
// reference code, all deliberate (docs/formats/hifloat8.md#fp32-subnormal-inputs): fp32 subnormal inputs give 0, not Inf
// (GE/aicpu bug); saturating mode gives max for [40960, 49152) and for Inf (en_dtypes gives Inf).
#include <array>
#include <cstdint>
#include <limits>
#include <string_view>

#include "unpacked.hpp"
#include "../core/policy.hpp"

namespace minifloat {

struct hifloat8_spec {
  using storage_type = std::uint8_t;
  static constexpr std::string_view name = "hifloat8";
  static constexpr int bits = 8;
  static constexpr int digits = 4;  // significant bits for |E| <= 3
  static constexpr bool has_inf = true;
  static constexpr bool has_nan = true;
  static constexpr bool has_signed_zero = false;
  static constexpr bool has_subnormals = true;
  static constexpr rounding nearest_rule = rounding::nearest_away;

  static constexpr storage_type sign_mask = 0x80;
  static constexpr storage_type zero_code = 0x00;
  static constexpr storage_type nan_code = 0x80;
  static constexpr storage_type inf_code = 0x6F;
  static constexpr storage_type max_code = 0x6E;
  static constexpr storage_type min_normal_code = 0x7E;
  static constexpr storage_type denorm_min_code = 0x01;
  static constexpr int min_exponent = -15;  // of the min normal
  static constexpr int max_exponent = 15;   // of the max finite
  static constexpr int min_denormal_exponent = -22;

  static constexpr bool is_nan(storage_type b) noexcept { return b == nan_code; }
  static constexpr bool is_inf(storage_type b) noexcept { return (b & 0x7F) == inf_code; }

  /// Mantissa width of binade E (E = floor(log2 |x|)); 0 in the denormal range.
  static constexpr int mantissa_width(int e) noexcept {
    const int a = e < 0 ? -e : e;
    if (e < min_exponent) return 0;
    return a <= 3 ? 3 : a <= 7 ? 2 : 1;
  }

  /// The code of +2^E * (1 + m / 2^w), w = mantissa_width(E); E in [-22, 15].
  static constexpr storage_type pack(int e, unsigned m) noexcept {
    if (e < min_exponent) return static_cast<storage_type>(e + 23);  // DML: 0000 mmm
    const unsigned a = static_cast<unsigned>(e < 0 ? -e : e);
    const unsigned neg = e < 0 ? 1U : 0U;
    if (a == 0) return static_cast<storage_type>(0x08U | m);                           // 0001 mmm
    if (a == 1) return static_cast<storage_type>(0x10U | (neg << 3) | m);              // 001 e mmm
    if (a <= 3) return static_cast<storage_type>(0x20U | (neg << 4) | ((a - 2) << 3) | m);  // 01 ee mmm
    if (a <= 7) return static_cast<storage_type>(0x40U | (neg << 4) | ((a - 4) << 2) | m);  // 10 eee mm
    return static_cast<storage_type>(0x60U | (neg << 4) | ((a - 8) << 1) | m);         // 11 eeee m
  }

  static constexpr double decode(storage_type b) noexcept {
    const bool neg = (b & sign_mask) != 0;
    const unsigned c = b & 0x7FU;
    if (b == nan_code) return std::numeric_limits<double>::quiet_NaN();
    if (c == inf_code) return neg ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
    int e = 0;
    unsigned m = 0;
    int w = 3;
    if (c < 0x08) {  // Dot 0000: zero or denormal 2^(m - 23)
      if (c == 0) return 0.0;
      const double v = detail::exp2i(static_cast<int>(c) - 23);
      return neg ? -v : v;
    }
    // Dot decode, then sign-magnitude exponent with the hidden top bit of |E| put back.
    auto field = [&](int d, unsigned raw) {
      const unsigned mag = (raw & ((1U << (d - 1)) - 1U)) | (1U << (d - 1));
      e = (raw >> (d - 1)) != 0 ? -static_cast<int>(mag) : static_cast<int>(mag);
    };
    if (c < 0x10) {
      e = 0, m = c & 7U, w = 3;
    } else if (c < 0x20) {
      field(1, (c >> 3) & 1U), m = c & 7U, w = 3;
    } else if (c < 0x40) {
      field(2, (c >> 3) & 3U), m = c & 7U, w = 3;
    } else if (c < 0x60) {
      field(3, (c >> 2) & 7U), m = c & 3U, w = 2;
    } else {
      field(4, (c >> 1) & 15U), m = c & 1U, w = 1;
    }
    const double v = static_cast<double>((1U << w) | m) * detail::exp2i(e - w);
    return neg ? -v : v;
  }

  // Encoding: round |x| to the grid of its own binade E (step 2^(E - w(E)); step 2^-22 below
  // the smallest denormal, where the grid runs 0, 2^-22), then pack. A carry lands exactly on
  // 2^(E+1), which is the first value of the next binade, so packing the rounded value re-reads
  // its binade (the tapered grid of docs/formats/hifloat8.md#default-rounding).
  static constexpr storage_type encode(const detail::unpacked& u, conversion c,
                                       std::uint32_t random_bits) noexcept {
    const bool sat = c.on_overflow != overflow::non_saturating;
    const storage_type sign = u.negative ? sign_mask : storage_type{0};
    const auto max_out = static_cast<storage_type>(sign | max_code);
    const auto overflow_out = sat ? max_out : static_cast<storage_type>(sign | inf_code);
    if (u.kind == detail::value_kind::nan)
      return c.on_overflow == overflow::saturate_nan_to_zero ? zero_code : nan_code;
    if (u.kind == detail::value_kind::infinite) return overflow_out;
    if (u.kind == detail::value_kind::zero) return zero_code;
    const auto mode = detail::resolve(c.round, u.negative, nearest_rule);
    const auto overflow_result = mode == detail::magnitude_rounding::truncate ? max_out : overflow_out;
    if (u.exp > max_exponent) return overflow_result;

    const int lsb = u.exp >= min_denormal_exponent ? u.exp - mantissa_width(u.exp)
                                                   : min_denormal_exponent;  // exponent of the step
    const auto s = detail::split(u.sig, 52 + lsb - u.exp);
    // Ties-to-even for HiF8 means "the neighbour whose code has LSB 0". Off the DML grid that is
    // the even multiple of the step; in the DML binades (step = 2^E, neighbours 2^E with code
    // E + 23 and 2^(E+1)) the lower one is even iff E + 23 is.
    const bool even_is_down = (u.exp >= min_denormal_exponent && u.exp < min_exponent)
                                  ? ((u.exp + 23) & 1) == 0
                                  : (s.kept & 1U) == 0;
    const std::uint64_t n = s.kept + (detail::rounds_up(s, mode, even_is_down, random_bits) ? 1U : 0U);
    if (n == 0) return zero_code;  // one zero, whatever the sign
    // value = n * 2^lsb; renormalise (n <= 2^(w+1)).
    const int top = 63 - std::countl_zero(n);
    const int e = lsb + top;
    if (e > max_exponent) return overflow_result;
    const int w = mantissa_width(e);
    const std::uint64_t frac = n - (std::uint64_t{1} << top);  // bits below the leading one
    // After a carry n is a power of two (frac 0); otherwise top == w and frac fits w bits.
    const unsigned m = static_cast<unsigned>(top <= w ? frac << (w - top) : frac >> (top - w));
    if (e == max_exponent && m != 0) return overflow_result;  // 1.5 * 2^15 is the Inf code
    return static_cast<storage_type>(sign | pack(e, m));
  }

  static constexpr storage_type negate(storage_type b) noexcept {
    // One zero and one NaN: both are their own negation.
    if (b == zero_code || b == nan_code) return b;
    return static_cast<storage_type>(b ^ sign_mask);
  }
};

}  // namespace minifloat
