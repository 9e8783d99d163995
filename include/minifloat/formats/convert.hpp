#pragma once
// The scalar reference codecs: narrow() rounds a float, double or minifloat value to a format
// under a conversion policy; widen() is exact. Every bulk and SIMD kernel is tested against these.
#include <cstdint>

#include "basic_float.hpp"
#include "unpacked.hpp"
#include "../core/policy.hpp"

namespace minifloat {

/// Round `x` to `To` once (a double input is not first rounded to float). `random_bits` is used
/// only by rounding::stochastic (see policy.hpp for the exact rule).
template <class To, source_value From>
  requires is_basic_float_v<To>
[[nodiscard]] constexpr To narrow(From x, conversion c = {}, std::uint32_t random_bits = 0) noexcept {
  return To::from_bits(To::spec::encode(detail::unpack(static_cast<double>(x)), c, random_bits));
}

/// The policy as a template argument, for call sites that fix it at compile time:
///   narrow<float8_e4m3fn, saturating>(x)
template <class To, conversion C, source_value From>
  requires is_basic_float_v<To>
[[nodiscard]] constexpr To narrow(From x, std::uint32_t random_bits = 0) noexcept {
  return narrow<To>(x, C, random_bits);
}

/// The code alone, for kernels and tables.
template <class To, source_value From>
  requires is_basic_float_v<To>
[[nodiscard]] constexpr typename To::storage_type encode(From x, conversion c = {},
                                                         std::uint32_t random_bits = 0) noexcept {
  return narrow<To>(x, c, random_bits).bits();
}

/// Exact widening to float (or double).
template <class To = float, class S>
  requires(std::same_as<To, float> || std::same_as<To, double>)
[[nodiscard]] constexpr To widen(basic_float<S> x) noexcept {
  return static_cast<To>(x);
}

template <class T>
  requires is_basic_float_v<T>
[[nodiscard]] constexpr float decode(typename T::storage_type code) noexcept {
  return static_cast<float>(T::from_bits(code));
}

}  // namespace minifloat
