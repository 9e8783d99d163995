#pragma once
// fp32 scales: the amax scans every scale rule starts from, and the rules max / pow2 / none
// (formats/scale_rule.hpp; docs/formats/scaling.md) for the tensor / channel / token / block
// granularities and the per-tensor recipes. E8M0 (MX) scales: formats/mx_scale.hpp.
//
// Finite stays finite. A rule's scale s is accepted only if the largest value the group can
// produce, decode(encode(amax / s)) * s in float32, is finite (quantization is monotone, so then
// every dequantized code of the group is). Otherwise s is doubled (a pow2 scale stays a power of
// two) until it is, which costs precision only for amax within a code step of 2^128; should even
// that fail (amax within half a step of 2^128 in every binade), s becomes the largest power of two
// at which the format's max finite value times s is finite, and the amax saturates to it.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>

#include "../formats/basic_float.hpp"
#include "../formats/convert.hpp"
#include "../formats/numeric_limits.hpp"
#include "../formats/scale_rule.hpp"
#include "../simd/bulk.hpp"
#include "matrix_view.hpp"

namespace minifloat {

/// max |x| over the finite values; NaN and +-Inf are skipped so that one bad element does not
/// poison the scale of its whole group (it still quantizes: NaN -> NaN, Inf -> +-max). The bulk
/// kernel (simd::finite_amax), on the widest ISA path.
[[nodiscard]] inline float finite_amax(std::span<const float> x) noexcept {
  float a = 0.0f;
  (void)simd::finite_amax(x, a);  // cannot fail: a valid span, the automatic path
  return a;
}

/// What one pass over a step's tensor found.
struct amax_stats {
  float amax = 0.0f;          ///< max |x| over the finite elements (0 if none)
  std::size_t nonfinite = 0;  ///< number of Inf/NaN elements
  std::size_t count = 0;      ///< elements scanned
  /// No Inf/NaN element, and an amax a recipe can use: finite and not negative. Stats that come
  /// from elsewhere (an all-reduce, a caller) can carry an Inf, NaN or negative amax with
  /// nonfinite = 0; the recipes treat those like an Inf/NaN step: a skip that never enters the
  /// history.
  [[nodiscard]] constexpr bool finite() const noexcept {
    return nonfinite == 0 && amax >= 0.0f && amax <= std::numeric_limits<float>::max();
  }
};

/// Finite amax and Inf/NaN count of a (possibly strided) matrix, in one pass over the float32
/// bit patterns (branch-free, so the compiler vectorises it): |x| bits >= 0x7F800000 is Inf/NaN,
/// and the finite ones order like their values.
[[nodiscard]] inline amax_stats scan_amax(matrix_view<const float> x) noexcept {
  amax_stats s;
  s.count = x.size();
  std::uint32_t m = 0;
  for (std::size_t r = 0; r < x.rows; ++r) {
    const float* row = x.row(r);
    std::uint32_t mr = 0;
    std::size_t bad = 0;
    for (std::size_t c = 0; c < x.cols; ++c) {
      const std::uint32_t a = std::bit_cast<std::uint32_t>(row[c]) & 0x7FFFFFFFU;
      const bool finite = a < 0x7F800000U;
      bad += finite ? 0U : 1U;
      const std::uint32_t f = finite ? a : 0U;
      mr = mr < f ? f : mr;
    }
    m = std::max(m, mr);
    s.nonfinite += bad;
  }
  s.amax = std::bit_cast<float>(m);
  return s;
}
[[nodiscard]] inline amax_stats scan_amax(std::span<const float> x) noexcept {
  return scan_amax(matrix_view<const float>(x.data(), 1, x.size(), x.size()));
}

namespace detail {

/// Whether the group's largest value, amax, dequantizes to a finite float32 at scale s.
template <class Elem>
[[nodiscard]] inline bool dequantizes_finite(float amax, float s) noexcept {
  const float q = static_cast<float>(narrow<Elem>(amax / s, saturating));
  return std::isfinite(q * s);
}

/// The finite-stays-finite adjustment of the header comment.
template <class Elem>
[[nodiscard]] inline float finite_scale(float amax, float s) noexcept {
  if (dequantizes_finite<Elem>(amax, s)) return s;
  for (int i = 0; i < 8 && s <= std::numeric_limits<float>::max() / 2; ++i) {
    s *= 2.0f;
    if (dequantizes_finite<Elem>(amax, s)) return s;
  }
  // max_finite * 2^k < 2^128 for k = 127 - ilogb(max_finite).
  return std::ldexp(1.0f, 127 - std::ilogb(static_cast<float>(std::numeric_limits<Elem>::max())));
}

}  // namespace detail

/// The fp32 scale of a group with this finite amax under `rule` (max, pow2 or none), for element
/// format Elem; 1 for amax 0. `target` is pow2's T.
template <class Elem>
[[nodiscard]] inline float group_scale(float amax, scale_rule rule, int target) noexcept {
  if (rule == scale_rule::none || !(amax > 0.0f)) return 1.0f;
  float s;
  if (rule == scale_rule::pow2) {
    // floor(log2 amax) from ilogb, exact for float32 subnormals too; 2^k is kept a float
    // (k >= -149), so tiny amax gets the smallest power of two rather than 0.
    const int k = std::max(std::ilogb(amax) - target, -149);
    s = std::ldexp(1.0f, std::min(k, 127));
  } else {
    // max: amax / max_finite in float32. Tiny amax could make that underflow to 0 (and x / 0 =
    // Inf): the smallest positive float keeps every x / s finite or saturating.
    s = amax / static_cast<float>(std::numeric_limits<Elem>::max());
    if (!(s > 0.0f)) s = std::numeric_limits<float>::denorm_min();
  }
  return detail::finite_scale<Elem>(amax, s);
}

}  // namespace minifloat
