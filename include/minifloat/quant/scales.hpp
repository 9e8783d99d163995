#pragma once
// fp32 scales for the tensor / channel / token / block granularities (scheme.hpp has the rules).
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>

#include "../formats/basic_float.hpp"
#include "../formats/numeric_limits.hpp"
#include "scheme.hpp"

namespace minifloat {

/// max |x| over the finite values; NaN and +-Inf are skipped so that one bad element does not
/// poison the scale of its whole group (it still quantizes: NaN -> NaN, Inf -> +-max).
[[nodiscard]] inline float finite_amax(std::span<const float> x) noexcept {
  float m = 0.0f;
  for (const float v : x) {
    const float a = std::fabs(v);
    if (a <= std::numeric_limits<float>::max() && a > m) m = a;
  }
  return m;
}

/// The fp32 scale of a group with this amax under `rule`, for element format Elem.
template <class Elem>
[[nodiscard]] inline float group_scale(float amax, scale_rule rule, int target) noexcept {
  if (rule == scale_rule::none || !(amax > 0.0f)) return 1.0f;
  if (rule == scale_rule::pow2) {
    // floor(log2 amax) from ilogb, exact for float32 subnormals too; 2^k is kept a float
    // (k >= -149), so tiny amax gets the smallest power of two rather than 0.
    const int k = std::max(std::ilogb(amax) - target, -149);
    return std::ldexp(1.0f, std::min(k, 127));
  }
  // max: amax / max_finite in float32. Tiny amax could make that underflow to 0 (and x / 0 = Inf):
  // the smallest positive float keeps every x / s finite or saturating.
  const float s = amax / static_cast<float>(std::numeric_limits<Elem>::max());
  return s > 0.0f ? s : std::numeric_limits<float>::denorm_min();
}

}  // namespace minifloat
