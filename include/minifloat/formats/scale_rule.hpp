#pragma once
// The one vocabulary of scale rules: how the largest magnitude of a group of values (its amax)
// becomes the group's scale. fp32 scales (tensor, channel, token, block granularities, and the
// per-tensor recipes) take max, pow2 or none; E8M0 scales (MX) take floor, rceil, ceil or even.
// docs/formats/scaling.md and docs/formats/mx.md#scale-rules define each rule.
#include <cstdint>
#include <optional>
#include <string_view>

#include "../core/enum_names.hpp"

namespace minifloat {

enum class scale_rule : std::uint8_t {
  max,    ///< s = amax / max_finite(format) (TE's rule with margin 0)
  pow2,   ///< s = 2^(floor(log2 amax) - T): the amax lands in binade T (HiF8: T = 15 - N_guard)
  none,   ///< s = 1, a direct cast
  floor,  ///< E8M0: 2^(floor(log2 amax) - emax), OCP MX v1.0 6.3 (may clip the amax)
  rceil,  ///< E8M0: 2^ceil(log2(amax / max_elem)), never clips (cuBLAS, TE, DeepGEMM UE8M0)
  ceil,   ///< E8M0: 2^(ceil(log2 amax) - emax)
  even,   ///< E8M0: amax rounded half-up to the element's mantissa width, then floor
};

template <>
struct enum_names<scale_rule> {
  static constexpr std::array table{name_of(scale_rule::max, "max"),     name_of(scale_rule::pow2, "pow2"),
                                    name_of(scale_rule::none, "none"),   name_of(scale_rule::floor, "floor"),
                                    name_of(scale_rule::rceil, "rceil"), name_of(scale_rule::ceil, "ceil"),
                                    name_of(scale_rule::even, "even")};
};

constexpr std::optional<scale_rule> parse_scale_rule(std::string_view s) noexcept { return parse_enum<scale_rule>(s); }

/// The rules that produce E8M0 (MX) scales.
constexpr bool is_mx_rule(scale_rule r) noexcept {
  return r == scale_rule::floor || r == scale_rule::rceil || r == scale_rule::ceil || r == scale_rule::even;
}

/// T for the pow2 rule from the HiF8 recipe's guard: amax lands at 2^(15 - N_guard).
constexpr int pow2_target_from_guard(int n_guard) noexcept { return 15 - n_guard; }

}  // namespace minifloat
