#pragma once
// What a format does to a value according to the value's binary exponent E = floor(log2 |v|):
// how many significand bits it keeps there, which precision class E falls in, and where
// overflow and underflow begin. Everything is derived from the format's own codec (decode table
// and encoder), so the profile cannot disagree with the conversions it describes.
//
// Precision classes (fidelity metrics report the share of values in each):
//   hifloat8   "3-bit" (|E| <= 3), "2-bit" (4 <= |E| <= 7), "1-bit" (8 <= |E| <= 15),
//              "denormal" (-22 <= E <= -16): the mantissa widths of docs/formats/hifloat8.md#precision-classes
//   E/M formats (float8_e4m3fn, float8_e5m2, float6_*, float4_e2m1fn, bfloat16, float16)
//              "normal" (M-bit mantissa) and "subnormal"
//   then for every format
//              "below range": E under the smallest binade; rounds to 0 or to the smallest value
//              "overflow": |v| at or past the overflow threshold; clipped to +-max when saturating
//
// significand_bits(E) = 1 + log2(number of positive finite values in [2^E, 2^(E+1))): 4 for an
// E4M3 normal binade (8 values), 2 for a HiF8 1-bit binade, 1 where a binade holds one value
// (HiF8 denormals, HiF8's E = 15 whose second code is Inf). E4M3's top binade holds 7 values
// (0x7F is NaN), so it reads 3.81.
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "../formats/basic_float.hpp"
#include "../formats/convert.hpp"
#include "../formats/format_list.hpp"

namespace minifloat::analysis {

struct precision_class {
  std::string label;      // short, for tables: "3-bit", "normal", "below range"
  std::string detail;     // what it means: "|E| <= 3, 3-bit mantissa"
  int mantissa_bits = -1; // nominal mantissa width; -1 for below range / overflow
};

struct format_profile {
  format_id format = format_id::hifloat8;
  std::string name;
  double max_finite = 0;    // largest finite value
  double min_normal = 0;    // smallest normal value (HiF8: 2^-15, below it the denormals)
  double min_positive = 0;  // smallest positive value
  /// The smallest positive float that overflows under the format's nearest rounding, i.e. that
  /// a non-saturating conversion turns into Inf/NaN (for formats without Inf/NaN: that would
  /// round past max on the top binade's grid). |v| >= this is clipped by a saturating quantizer.
  float overflow_threshold = 0;
  int min_binade = 0, max_binade = 0;  // binades that hold a finite nonzero value
  std::vector<double> significand_bits;      // [E - min_binade]
  std::vector<precision_class> classes;      // the format's own classes, then below range, overflow
  std::vector<std::uint8_t> class_of_binade; // [E - min_binade] -> index into classes
  std::size_t below_class = 0, overflow_class = 0;

  /// The class of a scaled magnitude a = |x / s| (finite, nonzero).
  [[nodiscard]] std::size_t class_of(double a) const noexcept {
    if (!(a < overflow_threshold)) return overflow_class;
    const int e = std::ilogb(a);
    if (e < min_binade) return below_class;
    if (e > max_binade) return overflow_class;  // unreachable: max_binade holds max < threshold
    return class_of_binade[static_cast<std::size_t>(e - min_binade)];
  }
  [[nodiscard]] double bits_at(int e) const noexcept {
    if (e < min_binade || e > max_binade) return 0.0;
    return significand_bits[static_cast<std::size_t>(e - min_binade)];
  }
};

namespace detail {

template <class T>
float overflow_threshold_of() {
  using S = typename T::spec;
  const double max = S::decode(S::max_code);
  if constexpr (S::has_nan || S::has_inf) {
    // Binary search over positive floats (their bit patterns order like their values) for the
    // first one the non-saturating nearest conversion does not keep finite.
    const conversion c{rounding::nearest, overflow::non_saturating};
    auto overflows = [&](std::uint32_t bits) {
      return !isfinite(narrow<T>(std::bit_cast<float>(bits), c));
    };
    std::uint32_t lo = std::bit_cast<std::uint32_t>(static_cast<float>(max));  // finite
    std::uint32_t hi = 0x7F800000U;                                            // +Inf overflows
    while (hi - lo > 1) {
      const std::uint32_t mid = lo + (hi - lo) / 2;
      (overflows(mid) ? hi : lo) = mid;
    }
    return std::bit_cast<float>(hi);
  } else {
    // No Inf, no NaN (MX FP6/FP4): every conversion saturates. The grid of the top binade,
    // continued upward, has its next point at max + step; the midpoint overflows if the tie goes
    // up (max has an odd mantissa: ties-to-even picks the next binade) and is kept otherwise.
    const unsigned m = S::max_code & ((1U << S::mantissa_bits) - 1U);
    const double step = std::ldexp(1.0, S::max_exponent - S::mantissa_bits);
    const auto mid = static_cast<float>(max + step / 2);
    return (m & 1U) != 0 ? mid : std::nextafter(mid, std::numeric_limits<float>::infinity());
  }
}

}  // namespace detail

/// The profile of format T (computed once per call; cheap: at most 2^16 decodes).
template <class T>
  requires is_basic_float_v<T>
[[nodiscard]] format_profile make_format_profile() {
  using S = typename T::spec;
  format_profile p;
  p.format = format_id_of<T>;
  p.name = std::string(format_name<T>);
  p.max_finite = S::decode(S::max_code);
  p.min_normal = S::decode(S::min_normal_code);
  p.min_positive = S::decode(S::denorm_min_code);
  p.overflow_threshold = detail::overflow_threshold_of<T>();
  p.min_binade = std::ilogb(p.min_positive);
  p.max_binade = std::ilogb(p.max_finite);
  const auto n = static_cast<std::size_t>(p.max_binade - p.min_binade + 1);
  std::vector<double> count(n, 0.0);
  for (std::uint32_t c = 0; c < (1U << S::bits); ++c) {
    const double v = S::decode(static_cast<typename S::storage_type>(c));
    if (std::isfinite(v) && v > 0) count[static_cast<std::size_t>(std::ilogb(v) - p.min_binade)] += 1;
  }
  p.significand_bits.resize(n);
  for (std::size_t i = 0; i < n; ++i) p.significand_bits[i] = count[i] > 0 ? 1.0 + std::log2(count[i]) : 0.0;

  p.class_of_binade.resize(n);
  if constexpr (requires { S::mantissa_width(0); }) {
    // Tapered (HiF8): one class per mantissa width; width 0 is the denormal range.
    p.classes = {{"3-bit", "|E| <= 3: 3-bit mantissa", 3},
                 {"2-bit", "4 <= |E| <= 7: 2-bit mantissa", 2},
                 {"1-bit", "8 <= |E| <= 15: 1-bit mantissa", 1},
                 {"denormal", "-22 <= E <= -16: no mantissa", 0}};
    for (int e = p.min_binade; e <= p.max_binade; ++e) {
      const int w = S::mantissa_width(e);
      p.class_of_binade[static_cast<std::size_t>(e - p.min_binade)] = static_cast<std::uint8_t>(w == 0 ? 3 : 3 - w);
    }
  } else {
    const int m = S::mantissa_bits;
    p.classes = {{"normal", std::to_string(S::min_exponent) + " <= E <= " + std::to_string(S::max_exponent) + ": " +
                                std::to_string(m) + "-bit mantissa",
                  m}};
    if (p.min_binade < S::min_exponent)
      p.classes.push_back({"subnormal", std::to_string(p.min_binade) + " <= E <= " + std::to_string(S::min_exponent - 1) +
                                            ": fewer mantissa bits",
                           0});
    for (int e = p.min_binade; e <= p.max_binade; ++e)
      p.class_of_binade[static_cast<std::size_t>(e - p.min_binade)] = static_cast<std::uint8_t>(e >= S::min_exponent ? 0 : 1);
  }
  p.below_class = p.classes.size();
  p.classes.push_back({"below range", "E < " + std::to_string(p.min_binade) + ": rounds to 0 or to the smallest value", -1});
  p.overflow_class = p.classes.size();
  p.classes.push_back({"overflow", "at or past the overflow threshold: clipped to +-max", -1});
  return p;
}

/// The profile of a format chosen at run time.
[[nodiscard]] inline format_profile make_format_profile(format_id f) {
  return visit_format(f, [](auto t) { return make_format_profile<typename decltype(t)::type>(); });
}

/// Every format's profile, built once (thread-safe) and kept for the program's lifetime, so
/// fidelity_stats may point at it.
[[nodiscard]] inline const format_profile& profile_of(format_id f) {
  static const std::vector<format_profile> all = [] {
    std::vector<format_profile> v;
    for_each_format([&](auto t) { v.push_back(make_format_profile<typename decltype(t)::type>()); });
    return v;
  }();
  return all.at(static_cast<std::size_t>(f));
}

}  // namespace minifloat::analysis
