#pragma once
// How a value that is not representable becomes a code: the rounding rule and what happens
// past the largest finite value. Both are enums, never bools, so a call site reads as a sentence:
//   narrow<float8_e5m2>(x, {.round = rounding::toward_zero, .on_overflow = overflow::saturate})
#include <cstdint>
#include <optional>
#include <string_view>

#include "enum_names.hpp"

namespace minifloat {

enum class rounding : std::uint8_t {
  /// The format's own round-to-nearest: ties-away for hifloat8 (Ascend "round"/_rna),
  /// ties-to-even for every other format (OCP FP8/MX, IEEE). This is the default.
  nearest,
  /// Round to nearest, ties to the even significand (IEEE roundTiesToEven). For hifloat8,
  /// where no source defines it, the tie goes to the neighbour whose *code* has LSB 0
  /// (docs/formats/hifloat8.md#ties-to-even).
  nearest_even,
  /// Round to nearest, ties away from zero (IEEE roundTiesToAway).
  nearest_away,
  /// Truncate the magnitude; never turns a finite input into Inf/NaN (stops at +-max).
  toward_zero,
  /// Toward +infinity; overflows only for positive inputs.
  upward,
  /// Toward -infinity; overflows only for negative inputs.
  downward,
  /// Stochastic rounding with caller-supplied random bits r (32 bits). Let f in [0, 1) be the
  /// part of |x| below the kept LSB, in units of that LSB, and F = floor(f * 2^32). The
  /// magnitude rounds away from zero iff F + r >= 2^32; otherwise it truncates. So the result
  /// is exact on representable inputs, rounds up with probability F / 2^32 (unbiased up to
  /// 2^-32 of an LSB) and is a pure function of (x, r). Overflow behaves as for `nearest`.
  stochastic,
};

enum class overflow : std::uint8_t {
  /// Values past the largest finite value become Inf (formats with Inf: E5M2, HiF8, fp16,
  /// bf16) or NaN (E4M3, E8M0); +-Inf inputs stay infinite (or become NaN in E4M3).
  /// Formats with neither (E3M2, E2M3, E2M1) always saturate.
  non_saturating,
  /// Overflow and +-Inf inputs give +-max (OCP "satfinite", PTX .satfinite); NaN stays NaN.
  saturate,
  /// As `saturate`, and NaN becomes +0: the Ascend hardware's saturating mode for HiF8
  /// (asc_float2hif8_rna_sat). Valid for every format.
  saturate_nan_to_zero,
};

/// A complete conversion policy. The default, `conversion{}`, is each format's documented
/// default: its own nearest rounding, non-saturating.
struct conversion {
  rounding round = rounding::nearest;
  overflow on_overflow = overflow::non_saturating;
  friend constexpr bool operator==(conversion, conversion) = default;
};

inline constexpr conversion saturating{rounding::nearest, overflow::saturate};

template <>
struct enum_names<rounding> {
  static constexpr std::array table{
      name_of(rounding::nearest, "nearest"),         name_of(rounding::nearest_even, "nearest_even"),
      name_of(rounding::nearest_away, "nearest_away"), name_of(rounding::toward_zero, "toward_zero"),
      name_of(rounding::upward, "upward"),           name_of(rounding::downward, "downward"),
      name_of(rounding::stochastic, "stochastic")};
};

template <>
struct enum_names<overflow> {
  static constexpr std::array table{name_of(overflow::non_saturating, "non_saturating"),
                                    name_of(overflow::saturate, "saturate"),
                                    name_of(overflow::saturate_nan_to_zero, "saturate_nan_to_zero")};
};

constexpr std::optional<rounding> parse_rounding(std::string_view s) noexcept { return parse_enum<rounding>(s); }
constexpr std::optional<overflow> parse_overflow(std::string_view s) noexcept { return parse_enum<overflow>(s); }

}  // namespace minifloat
