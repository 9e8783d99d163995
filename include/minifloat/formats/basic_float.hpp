#pragma once
// basic_float<Spec>: the one value type behind every format. It stores the code, widens to
// float exactly, compares and negates by value, and converts from wider types with the
// format's default conversion; other conversions are spelled with narrow() (convert.hpp).
#include <bit>
#include <compare>
#include <cstdint>
#include <functional>
#include <limits>

#include "unpacked.hpp"
#include "../core/policy.hpp"
#include "spec.hpp"

namespace minifloat {

template <format_spec Spec>
class basic_float;

template <class T>
struct is_basic_float : std::false_type {};
template <class S>
struct is_basic_float<basic_float<S>> : std::true_type {};
template <class T>
inline constexpr bool is_basic_float_v = is_basic_float<T>::value;

/// Anything minifloat can round from: float, double, or another minifloat format.
template <class T>
concept source_value = std::same_as<T, float> || std::same_as<T, double> || is_basic_float_v<T>;

namespace detail {
/// Decoded values of every code, for formats of at most 8 bits (the hot decode path).
template <class Spec>
inline constexpr auto decode_table = [] {
  std::array<float, (1U << Spec::bits)> t{};
  for (unsigned c = 0; c < t.size(); ++c)
    t[c] = static_cast<float>(Spec::decode(static_cast<typename Spec::storage_type>(c)));
  return t;
}();
}  // namespace detail

template <format_spec Spec>
class basic_float {
 public:
  using spec = Spec;
  using storage_type = typename Spec::storage_type;

  /// Zero (code 0x00), as value-initialised built-in floats are.
  constexpr basic_float() noexcept = default;

  /// From a code. Bits above Spec::bits (sub-byte formats) are ignored.
  [[nodiscard]] static constexpr basic_float from_bits(storage_type b) noexcept {
    basic_float r;
    r.bits_ = static_cast<storage_type>(b & code_mask);
    return r;
  }
  [[nodiscard]] constexpr storage_type bits() const noexcept { return bits_; }

  /// Rounds with the format's default conversion (its own nearest rule, non-saturating).
  explicit constexpr basic_float(float x) noexcept : bits_(Spec::encode(detail::unpack(x), {}, 0)) {}
  explicit constexpr basic_float(double x) noexcept : bits_(Spec::encode(detail::unpack(x), {}, 0)) {}
  template <class Other>
    requires(!std::same_as<Other, Spec>)
  explicit constexpr basic_float(basic_float<Other> x) noexcept
      : bits_(Spec::encode(detail::unpack(static_cast<double>(x)), {}, 0)) {}

  /// Exact: every value of every format is a float.
  constexpr operator float() const noexcept {
    if constexpr (Spec::bits <= 8) {
      if (!std::is_constant_evaluated()) return detail::decode_table<Spec>[bits_];
    }
    return static_cast<float>(Spec::decode(bits_));
  }
  explicit constexpr operator double() const noexcept { return Spec::decode(bits_); }

  [[nodiscard]] static constexpr basic_float zero() noexcept { return from_bits(Spec::zero_code); }

  constexpr basic_float operator-() const noexcept { return from_bits(Spec::negate(bits_)); }
  constexpr basic_float operator+() const noexcept { return *this; }

  // Arithmetic is computed in float and rounded once to the format with its default
  // conversion, as ml_dtypes does. It is for convenience in model code, not a fused unit.
  friend constexpr basic_float operator+(basic_float a, basic_float b) noexcept { return basic_float(float(a) + float(b)); }
  friend constexpr basic_float operator-(basic_float a, basic_float b) noexcept { return basic_float(float(a) - float(b)); }
  friend constexpr basic_float operator*(basic_float a, basic_float b) noexcept { return basic_float(float(a) * float(b)); }
  friend constexpr basic_float operator/(basic_float a, basic_float b) noexcept { return basic_float(float(a) / float(b)); }
  constexpr basic_float& operator+=(basic_float b) noexcept { return *this = *this + b; }
  constexpr basic_float& operator-=(basic_float b) noexcept { return *this = *this - b; }
  constexpr basic_float& operator*=(basic_float b) noexcept { return *this = *this * b; }
  constexpr basic_float& operator/=(basic_float b) noexcept { return *this = *this / b; }

  // Comparison is by value (NaN unordered, -0 == +0), never by code: HiF8 code order is not
  // value order.
  friend constexpr bool operator==(basic_float a, basic_float b) noexcept {
    return static_cast<double>(a) == static_cast<double>(b);
  }
  friend constexpr std::partial_ordering operator<=>(basic_float a, basic_float b) noexcept {
    return static_cast<double>(a) <=> static_cast<double>(b);
  }

 private:
  static constexpr storage_type code_mask = static_cast<storage_type>((1U << Spec::bits) - 1U);
  storage_type bits_ = 0;
};

// Classification, found by ADL next to the std ones.
template <class S>
constexpr bool isnan(basic_float<S> x) noexcept { return S::is_nan(x.bits()); }
template <class S>
constexpr bool isinf(basic_float<S> x) noexcept { return S::is_inf(x.bits()); }
template <class S>
constexpr bool isfinite(basic_float<S> x) noexcept { return !isnan(x) && !isinf(x); }
template <class S>
constexpr bool signbit(basic_float<S> x) noexcept {
  if constexpr (S::sign_mask == 0) return false;
  else return (x.bits() & S::sign_mask) != 0 && !S::is_nan(x.bits());
}
template <class S>
constexpr basic_float<S> abs(basic_float<S> x) noexcept { return signbit(x) ? -x : x; }

enum class value_class : std::uint8_t { zero, subnormal, normal, infinite, nan };

template <>
struct enum_names<value_class> {
  static constexpr std::array table{name_of(value_class::zero, "zero"), name_of(value_class::subnormal, "subnormal"),
                                    name_of(value_class::normal, "normal"), name_of(value_class::infinite, "infinite"),
                                    name_of(value_class::nan, "nan")};
};

/// fpclassify for minifloat values: subnormal means below the format's min normal (HiF8's
/// denormal range included).
template <class S>
constexpr value_class classify(basic_float<S> x) noexcept {
  if (isnan(x)) return value_class::nan;
  if (isinf(x)) return value_class::infinite;
  const double v = static_cast<double>(x);
  if (v == 0) return value_class::zero;
  const double min_normal = S::decode(S::min_normal_code);
  return (v < 0 ? -v : v) < min_normal ? value_class::subnormal : value_class::normal;
}

}  // namespace minifloat

template <class S>
struct std::hash<minifloat::basic_float<S>> {
  std::size_t operator()(minifloat::basic_float<S> x) const noexcept {
    // Equal values hash equal: +0 and -0 share a hash.
    const auto b = x.bits();
    return std::hash<unsigned>{}(static_cast<double>(x) == 0.0 ? 0U : static_cast<unsigned>(b));
  }
};
