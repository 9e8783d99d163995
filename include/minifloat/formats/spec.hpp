#pragma once
// Formats as data. A *spec* is a type that tells basic_float<Spec> everything about one format:
// its storage, its special codes, and its codec (decode to double, encode from an unpacked
// double). The IEEE-like family (FP8, FP6, FP4, E8M0, bf16, fp16) is exmy_spec<layout>; HiF8,
// whose precision tapers with the exponent, supplies its own codec (formats/hifloat8.hpp).
#include <array>
#include <concepts>
#include <cstdint>
#include <limits>
#include <string_view>
#include <type_traits>

#include "unpacked.hpp"
#include "../core/policy.hpp"

namespace minifloat {

/// Which codes are Inf/NaN (cutlass's NanInfEncoding, our spelling).
enum class nan_inf : std::uint8_t {
  ieee,      // exponent all ones: mantissa 0 is Inf, the rest NaN (E5M2, fp16, bf16)
  nan_only,  // only the all-ones magnitude is NaN, no Inf ("fn": E4M3FN, E8M0FNU)
  none,      // every code is finite (MX sub-byte elements E3M2, E2M3, E2M1)
  fnuz,      // "finite, NaN, unsigned zero": the negative-zero code (sign bit, magnitude 0) is the one
             // NaN, every other code is finite; there is no Inf and no -0 (E4M3FNUZ, E5M2FNUZ)
};

/// The layout of a sign/exponent/mantissa format. Written with designated initializers at
/// the point of definition so no positional bool hides its meaning.
struct exmy_layout {
  int exponent_bits;
  int mantissa_bits;
  int bias;
  nan_inf specials;
  bool is_signed = true;
  /// false only for E8M0-like scale formats, where exponent field 0 is the normal value
  /// 2^-bias: there is no zero and there are no subnormals.
  bool has_zero = true;
};

/// What basic_float needs from a spec.
template <class S>
concept format_spec = requires(typename S::storage_type b, detail::unpacked u, conversion c) {
  requires std::unsigned_integral<typename S::storage_type>;
  { S::name } -> std::convertible_to<std::string_view>;
  { S::bits } -> std::convertible_to<int>;
  { S::digits } -> std::convertible_to<int>;
  { S::decode(b) } -> std::same_as<double>;
  { S::encode(u, c, std::uint32_t{}) } -> std::same_as<typename S::storage_type>;
  { S::is_nan(b) } -> std::same_as<bool>;
  { S::is_inf(b) } -> std::same_as<bool>;
  { S::negate(b) } -> std::same_as<typename S::storage_type>;
};

template <std::size_t Bits>
using storage_for = std::conditional_t<(Bits <= 8), std::uint8_t, std::uint16_t>;

template <exmy_layout L, class Name>
struct exmy_spec {
  static constexpr exmy_layout layout = L;
  static constexpr std::string_view name = Name::value;
  static constexpr int exponent_bits = L.exponent_bits;
  static constexpr int mantissa_bits = L.mantissa_bits;
  static constexpr int bias = L.bias;
  static constexpr int bits = (L.is_signed ? 1 : 0) + L.exponent_bits + L.mantissa_bits;
  using storage_type = storage_for<static_cast<std::size_t>(bits)>;

  static_assert(bits <= 16 && exponent_bits >= 1 && mantissa_bits >= 0);
  static_assert(L.has_zero || (mantissa_bits == 0 && !L.is_signed),
                "only unsigned exponent-only scale formats may lack a zero");
  static_assert(L.specials != nan_inf::fnuz || (L.is_signed && L.has_zero),
                "the fnuz NaN is the negative-zero code: the format needs a sign and a zero");

  static constexpr int digits = mantissa_bits + 1;
  static constexpr bool has_inf = L.specials == nan_inf::ieee;
  static constexpr bool has_nan = L.specials != nan_inf::none;
  static constexpr bool has_signed_zero = L.is_signed && L.has_zero && L.specials != nan_inf::fnuz;
  static constexpr bool has_subnormals = L.has_zero && mantissa_bits > 0;
  static constexpr rounding nearest_rule = rounding::nearest_even;

  static constexpr storage_type sign_mask =
      L.is_signed ? static_cast<storage_type>(1U << (bits - 1)) : storage_type{0};
  static constexpr storage_type magnitude_mask =
      static_cast<storage_type>((1U << (exponent_bits + mantissa_bits)) - 1U);
  static constexpr storage_type exponent_all_ones =
      static_cast<storage_type>(((1U << exponent_bits) - 1U) << mantissa_bits);

  // Largest finite magnitude code: E4M3 0x7E = 1.75 * 2^8 = 448; E5M2 0x7B = 1.75 * 2^15 =
  // 57344; E8M0 0xFE = 2^127; E2M1 0x7 = 1.5 * 2^2 = 6; E4M3FNUZ 0x7F = 1.875 * 2^7 = 240.
  static constexpr storage_type max_code =
      L.specials == nan_inf::ieee       ? static_cast<storage_type>(exponent_all_ones - 1U)
      : L.specials == nan_inf::nan_only ? static_cast<storage_type>(magnitude_mask - 1U)
                                        : magnitude_mask;
  static constexpr storage_type nan_code =
      L.specials == nan_inf::ieee
          ? static_cast<storage_type>(exponent_all_ones |
                                      (mantissa_bits > 0 ? 1U << (mantissa_bits - 1) : 0U))
      : L.specials == nan_inf::fnuz ? sign_mask
                                    : magnitude_mask;  // nan_only: the all-ones magnitude; unused for `none`
  static constexpr storage_type inf_code = exponent_all_ones;  // meaningful for ieee only
  static constexpr storage_type zero_code = 0;
  static constexpr int first_normal_biased = L.has_zero ? 1 : 0;
  static constexpr int min_exponent = first_normal_biased - bias;          // of the min normal
  static constexpr int max_exponent = (max_code >> mantissa_bits) - bias;  // of the max finite
  static constexpr storage_type min_normal_code =
      static_cast<storage_type>(first_normal_biased << mantissa_bits);
  static constexpr storage_type denorm_min_code = has_subnormals ? 1 : min_normal_code;

  static constexpr bool is_nan(storage_type b) noexcept {
    if constexpr (L.specials == nan_inf::ieee)
      return (b & exponent_all_ones) == exponent_all_ones && (b & (exponent_all_ones ^ magnitude_mask)) != 0;
    else if constexpr (L.specials == nan_inf::nan_only)
      return (b & magnitude_mask) == magnitude_mask;
    else if constexpr (L.specials == nan_inf::fnuz)
      return b == sign_mask;
    else
      return false;
  }
  static constexpr bool is_inf(storage_type b) noexcept {
    return has_inf && (b & magnitude_mask) == inf_code;
  }

  static constexpr double decode(storage_type b) noexcept {
    const bool neg = (b & sign_mask) != 0;
    const unsigned mag = b & magnitude_mask;
    double v;
    if (is_nan(b)) return neg ? -std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::quiet_NaN();
    if (is_inf(b)) {
      v = std::numeric_limits<double>::infinity();
    } else {
      const int e = static_cast<int>(mag >> mantissa_bits);
      const unsigned m = mag & ((1U << mantissa_bits) - 1U);
      if (e == 0 && L.has_zero)  // subnormal: 0.m * 2^(1 - bias)
        v = static_cast<double>(m) * detail::exp2i(1 - bias - mantissa_bits);
      else  // normal: 1.m * 2^(e - bias)
        v = static_cast<double>((1U << mantissa_bits) | m) * detail::exp2i(e - bias - mantissa_bits);
    }
    return neg ? -v : v;
  }

  // Encoding, in numbered steps (ml_dtypes ConvertImpl style):
  //  1. NaN / Inf / zero / sign the format cannot hold;
  //  2. inputs whose binade lies above max_exponent overflow whatever the rounding;
  //  3. drop the bits below the target LSB (more for subnormal targets) and round;
  //  4. pack: (biased exponent << M) + kept - 2^M, so a carry out of the significand
  //     walks into the next binade (or from the largest subnormal into the min normal);
  //  5. a packed magnitude above max_code overflows.
  static constexpr storage_type encode(const detail::unpacked& u, conversion c,
                                       std::uint32_t random_bits) noexcept {
    const bool sat = c.on_overflow != overflow::non_saturating || L.specials == nan_inf::none;
    const storage_type sign = u.negative ? sign_mask : storage_type{0};
    const storage_type max_out = static_cast<storage_type>(sign | max_code);
    const storage_type overflow_out =
        sat                                 ? max_out
        : L.specials == nan_inf::ieee       ? static_cast<storage_type>(sign | inf_code)
                                            : static_cast<storage_type>(sign | nan_code);
    // 1.
    if (u.kind == detail::value_kind::nan) {
      if (!has_nan || c.on_overflow == overflow::saturate_nan_to_zero) return zero_code;
      return nan_code;  // canonical, positive
    }
    if constexpr (!L.is_signed) {
      // No sign bit: negative values (and zero when there is no zero) have no code.
      if (u.negative && u.kind != detail::value_kind::zero) return sat ? zero_code : nan_code;
      if (!L.has_zero && u.kind == detail::value_kind::zero) return sat ? zero_code : nan_code;
    }
    if (u.kind == detail::value_kind::infinite) return overflow_out;
    if (u.kind == detail::value_kind::zero) return has_signed_zero ? sign : zero_code;
    const auto mode = detail::resolve(c.round, u.negative, nearest_rule);
    const storage_type overflow_result =
        mode == detail::magnitude_rounding::truncate ? max_out : overflow_out;
    // 2.
    if (u.exp > max_exponent) return overflow_result;
    if constexpr (!L.has_zero) {
      if (u.exp < min_exponent) return min_normal_code;  // nothing smaller exists
    }
    // 3.
    const int below_normal = u.exp < min_exponent ? min_exponent - u.exp : 0;
    const auto s = detail::split(u.sig, 52 - mantissa_bits + below_normal);
    const bool up = detail::rounds_up(s, mode, (s.kept & 1U) == 0, random_bits);
    const std::uint64_t kept = s.kept + (up ? 1U : 0U);
    // 4.
    const int biased = below_normal > 0 ? first_normal_biased : u.exp + bias;
    const std::uint64_t mag = (static_cast<std::uint64_t>(biased) << mantissa_bits) + kept -
                              (std::uint64_t{1} << mantissa_bits);
    // 5.
    if (mag > max_code) return overflow_result;
    if (mag == 0 && !has_signed_zero) return zero_code;  // fnuz: sign | 0 would be the NaN
    return static_cast<storage_type>(sign | mag);
  }

  static constexpr storage_type negate(storage_type b) noexcept {
    if constexpr (L.is_signed) {
      if (is_nan(b)) return b;
      if (L.specials == nan_inf::fnuz && b == zero_code) return b;  // no -0
      return static_cast<storage_type>(b ^ sign_mask);
    } else {
      // -x of an unsigned value is not representable (except nothing): NaN, like 0 - x would be.
      return nan_code;
    }
  }
};

namespace detail {
template <std::size_t N>
struct fixed_name {
  char chars[N]{};
  constexpr fixed_name(const char (&s)[N]) noexcept {
    for (std::size_t i = 0; i < N; ++i) chars[i] = s[i];
  }
};
template <fixed_name S>
struct name_of {
  static constexpr std::string_view value{S.chars, sizeof(S.chars) - 1};
};
}  // namespace detail

}  // namespace minifloat
