#pragma once
// std::numeric_limits for every format, written once from the spec (not one copy per format).
#include <cmath>
#include <limits>

#include "basic_float.hpp"

namespace minifloat::detail {

template <class S>
struct limits_from_spec {
  using T = basic_float<S>;
  static constexpr double min_normal = S::decode(S::min_normal_code);
  static constexpr double max_finite = S::decode(S::max_code);

  /// floor(log2 v) for a positive power-of-two-ish double, constexpr.
  static constexpr int ilog2(double v) noexcept {
    int e = 0;
    while (v >= 2.0) v /= 2.0, ++e;
    while (v < 1.0) v *= 2.0, --e;
    return e;
  }
  /// Significant bits at full precision (HiF8: 4, around 1.0); epsilon = 2^(1 - digits).
  static constexpr int digits = S::digits;
};

}  // namespace minifloat::detail

template <class S>
class std::numeric_limits<minifloat::basic_float<S>> {
  using T = minifloat::basic_float<S>;
  using L = minifloat::detail::limits_from_spec<S>;

 public:
  static constexpr bool is_specialized = true;
  static constexpr bool is_signed = S::sign_mask != 0;
  static constexpr bool is_integer = false;
  static constexpr bool is_exact = false;
  static constexpr bool has_infinity = S::has_inf;
  static constexpr bool has_quiet_NaN = S::has_nan;
  static constexpr bool has_signaling_NaN = false;
  static constexpr std::float_denorm_style has_denorm = S::has_subnormals ? std::denorm_present : std::denorm_absent;
  static constexpr bool has_denorm_loss = false;
  static constexpr std::float_round_style round_style = std::round_to_nearest;
  static constexpr bool is_iec559 = false;
  static constexpr bool is_bounded = true;
  static constexpr bool is_modulo = false;
  static constexpr int radix = 2;
  static constexpr int digits = L::digits;
  // floor((digits - 1) * log10(2)) and ceil(1 + digits * log10(2)), in integers: 0.30103 ~ 30103/100000.
  static constexpr int digits10 = (digits - 1) * 30103 / 100000;
  static constexpr int max_digits10 = 1 + (digits * 30103 + 99999) / 100000;
  // As for float: min normal = 2^(min_exponent - 1), max finite < 2^max_exponent.
  static constexpr int min_exponent = L::ilog2(L::min_normal) + 1;
  static constexpr int max_exponent = L::ilog2(L::max_finite) + 1;
  static constexpr int min_exponent10 = static_cast<int>(L::ilog2(L::min_normal) * 30103 / 100000);
  static constexpr int max_exponent10 = static_cast<int>(L::ilog2(L::max_finite) * 30103 / 100000);
  static constexpr bool traps = false;
  static constexpr bool tinyness_before = false;

  static constexpr T min() noexcept { return T::from_bits(S::min_normal_code); }
  static constexpr T max() noexcept { return T::from_bits(S::max_code); }
  static constexpr T lowest() noexcept {
    if constexpr (is_signed) return T::from_bits(static_cast<typename S::storage_type>(S::sign_mask | S::max_code));
    else return min();
  }
  static constexpr T epsilon() noexcept { return T(minifloat::detail::exp2i(1 - digits)); }
  static constexpr T round_error() noexcept { return T(0.5); }
  static constexpr T infinity() noexcept {
    if constexpr (S::has_inf) return T::from_bits(S::inf_code);
    else return T{};
  }
  static constexpr T quiet_NaN() noexcept {
    if constexpr (S::has_nan) return T::from_bits(S::nan_code);
    else return T{};
  }
  static constexpr T signaling_NaN() noexcept { return quiet_NaN(); }
  static constexpr T denorm_min() noexcept { return T::from_bits(S::denorm_min_code); }
};

template <class S>
class std::numeric_limits<const minifloat::basic_float<S>> : public std::numeric_limits<minifloat::basic_float<S>> {};
