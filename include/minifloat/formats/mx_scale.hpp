#pragma once
// OCP Microscaling (MX v1.0): the E8M0 shared scale of a block, under the four scale rules
// torchao names (ScaleCalculationMode), and the element formats MX allows.
// Sources: docs/formats/mx.md#emax_elem; pytorch/ao torchao/prototype/mx_formats/{config,mx_tensor}.py.
//
// Element formats and emax_elem (the exponent of the element's largest finite value):
//   float8_e4m3fn  (MXFP8)  max 0x7E = 1.75  * 2^8  = 448    emax 8
//   float8_e5m2    (MXFP8)  max 0x7B = 1.75  * 2^15 = 57344  emax 15
//   float6_e3m2fn  (MXFP6)  max 0x1F = 1.75  * 2^4  = 28     emax 4
//   float6_e2m3fn  (MXFP6)  max 0x1F = 1.875 * 2^2  = 7.5    emax 2
//   float4_e2m1fn  (MXFP4)  max 0x7  = 1.5   * 2^2  = 6      emax 2
//
// Scale code. Write the block's amax = max |V_i| as amax = s * 2^e with s in [1, 2) and
// e = floor(log2 amax), taken from the float's bits (fp32 subnormals are normalised first, so e is
// the true floor(log2 amax), down to -149). The element max is s_max * 2^emax. Then
//   floor  k = e - emax                                   (OCP MX 6.3; may clip: s > s_max)
//   ceil   k = ceil(log2 amax) - emax = e + [s > 1] - emax
//   even   k = e + [s rounded half-up to the element's M mantissa bits reaches 2] - emax
//            = e + [s >= 2 - 2^-(M+1)] - emax            (torchao EVEN: add half an ulp, mask)
//   rceil  k = ceil(log2(amax / max_elem)) = e + [s > s_max] - emax
// and code = clamp(k, -127, 127) + 127, scale X = 2^(code - 127).
// Special amax: NaN or +-Inf -> 0xFF (NaN scale, torchao/microxcaling/CANN golden); 0 -> 0x00
// (every source agrees: docs/formats/mx.md#special-blocks). The sign of amax is ignored. Only the top clamp is
// unreachable from finite fp32 input (e <= 127, emax >= 2); the bottom clamp is common.
//
// Why the comparisons above are exact. Every rule is an integer e plus a comparison of two
// 24-bit significands, so no log2 and no division is ever rounded:
//   * rceil: amax / max_elem = (s / s_max) * 2^(e - emax) with s / s_max in (1/2, 2), so
//     ceil(log2) = e - emax + [s > s_max]. torchao and TE instead round the quotient to fp32 first
//     (torchao: amax / max_pos; TE: amax * (1 / max_pos)). For torchao's division that changes
//     the result only when the quotient is an fp32 subnormal just above 2^-127, i.e. for exactly
//     one positive amax per format, amax = max_elem * 2^-127 + one ulp: torchao gets code 0 (and
//     clips that element by 2^-23), this library code 1. In the normal range the two agree,
//     because s_max has at most 4 significant bits: s > s_max means s - s_max >= 2^-23, so the
//     quotient exceeds a power of two by more than half an fp32 ulp and cannot round down onto it
//     (tests/unit/quant/test_mx.cpp checks both statements). TE's rounded reciprocal was not
//     analysed. With the exact rule, rceil never clips: |V_i| / X <= max_elem for every element.
//   * fp32-subnormal amax (< 2^-126). torchao reads e from the exponent field (-127 for every
//     subnormal); this library uses the true floor(log2), -127 .. -149. docs/formats/mx.md#comparison-with-torchao-and-te says both
//     clamp to the same scale; that holds for every rule here: whichever e is used (<= -127),
//     the unclamped k is at most -127 + 1 - emax <= -128 (emax >= 2), so the code is 0x00
//     either way (also checked by the tests against torchao's bit-field formulation).
#include <bit>
#include <concepts>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "basic_float.hpp"
#include "e8m0.hpp"
#include "float8.hpp"
#include "format_list.hpp"
#include "mx_elements.hpp"
#include "scale_rule.hpp"

namespace minifloat {

/// The shape of the tile one E8M0 scale covers. 1-D blocks of 32 run along a row (the layout
/// of a GEMM operand whose reduction axis is its last dim) or down a column; 2-D tiles of 32 x 32
/// give a tensor and its transpose the same codes and scales (one quantization serves both
/// orientations of a training GEMM; docs/formats/mx.md#2-d-mx-tiles).
enum class mx_tile : std::uint8_t {
  row32,     ///< 1 x 32, "axis 1": blocks along a row
  col32,     ///< 32 x 1, "axis 0": blocks down a column
  square32,  ///< 32 x 32
};

template <>
struct enum_names<mx_tile> {
  static constexpr std::array table{name_of(mx_tile::row32, "1x32"), name_of(mx_tile::col32, "32x1"),
                                    name_of(mx_tile::square32, "32x32")};
};

[[nodiscard]] constexpr std::size_t mx_tile_rows(mx_tile t) noexcept { return t == mx_tile::row32 ? 1 : 32; }
[[nodiscard]] constexpr std::size_t mx_tile_cols(mx_tile t) noexcept { return t == mx_tile::col32 ? 1 : 32; }
/// The 1-D tile along `axis` (1: along rows, 0: down columns).
[[nodiscard]] constexpr mx_tile mx_tile_for_axis(int axis) noexcept { return axis == 0 ? mx_tile::col32 : mx_tile::row32; }

/// emax_elem of docs/formats/mx.md#emax_elem: the exponent of the element's largest finite value.
template <mx_element Elem>
inline constexpr int mx_emax = 0;
template <> inline constexpr int mx_emax<float8_e4m3fn> = 8;
template <> inline constexpr int mx_emax<float8_e5m2> = 15;
template <> inline constexpr int mx_emax<float6_e3m2fn> = 4;
template <> inline constexpr int mx_emax<float6_e2m3fn> = 2;
template <> inline constexpr int mx_emax<float4_e2m1fn> = 2;

/// The E8M0 code of a NaN scale (a block holding NaN or Inf).
inline constexpr std::uint8_t mx_nan_scale_code = 0xFF;

namespace detail {

/// The significand of the element's max as a 24-bit integer in [2^23, 2^24) (E4M3: 1.75 -> 0xE00000).
template <mx_element Elem>
inline constexpr std::uint32_t mx_max_significand = [] {
  using S = typename Elem::spec;
  const unsigned m = S::max_code & ((1U << S::mantissa_bits) - 1U);
  return static_cast<std::uint32_t>(((1U << S::mantissa_bits) | m) << (23 - S::mantissa_bits));
}();

// The hand-written emax table agrees with the format definitions.
static_assert(mx_emax<float8_e4m3fn> == float8_e4m3fn::spec::max_exponent);
static_assert(mx_emax<float8_e5m2> == float8_e5m2::spec::max_exponent);
static_assert(mx_emax<float6_e3m2fn> == float6_e3m2fn::spec::max_exponent);
static_assert(mx_emax<float6_e2m3fn> == float6_e2m3fn::spec::max_exponent);
static_assert(mx_emax<float4_e2m1fn> == float4_e2m1fn::spec::max_exponent);
static_assert(mx_max_significand<float8_e4m3fn> == 0xE00000 && mx_max_significand<float4_e2m1fn> == 0xC00000);

/// |x| as fp32 bits. For non-negative floats the bit patterns order like the values, and every
/// NaN/Inf pattern (>= 0x7F800000) lies above every finite one, so an unsigned max over these
/// gives amax, or a non-finite pattern as soon as one element is NaN or Inf.
constexpr std::uint32_t abs_bits(float x) noexcept { return std::bit_cast<std::uint32_t>(x) & 0x7FFFFFFFU; }

inline constexpr std::uint32_t fp32_inf_bits = 0x7F800000U;

/// mx_scale_code from amax's |bits| (see the header comment for the rules).
template <mx_element Elem>
constexpr std::uint8_t mx_scale_code_from_abs_bits(std::uint32_t a, scale_rule rule) noexcept {
  if (a >= fp32_inf_bits) return mx_nan_scale_code;
  if (a == 0) return 0x00;
  // 1. amax = sig * 2^(e - 23), sig in [2^23, 2^24): normalise fp32 subnormals.
  std::uint32_t sig;
  int e;
  if (const int field = static_cast<int>(a >> 23); field != 0) {
    sig = (a & 0x7FFFFFU) | 0x800000U;
    e = field - 127;
  } else {
    const int shift = std::countl_zero(a) - 8;  // moves the leading one to bit 23
    sig = a << shift;
    e = -126 - shift;
  }
  // 2. The rule's exponent of X.
  constexpr int mbits = Elem::spec::mantissa_bits;
  int k = e - mx_emax<Elem>;
  switch (rule) {
    case scale_rule::ceil: k += sig != 0x800000U ? 1 : 0; break;
    // sig + half an element ulp (bit 22 - M) carries out of 24 bits: torchao's EVEN.
    case scale_rule::even: k += sig + (1U << (22 - mbits)) >= 0x1000000U ? 1 : 0; break;
    case scale_rule::rceil: k += sig > mx_max_significand<Elem> ? 1 : 0; break;
    default: break;  // floor (fp32 rules are not E8M0 rules; callers validate)
  }
  // 3. Finite stays finite: a rule that rounded the exponent up (rceil, ceil, even) at e = 127
  //    gives X = 2^(128 - emax); amax / X = s * 2^(emax - 1) then rounds (RNE, M bits) up to
  //    2^emax whenever s >= 2 - 2^-(M+1), and 2^emax * X = 2^128 is Inf in float32. Such a block
  //    (amax within half an element ulp of 2^128) takes the floor rule's scale instead, whose
  //    saturated max_elem * 2^(127 - emax) is finite. docs/formats/mx.md#scale-rules.
  if (k == 128 - mx_emax<Elem> && sig + (1U << (22 - mbits)) >= 0x1000000U) k = e - mx_emax<Elem>;
  // 4. Clamp to the E8M0 range and bias.
  k = k < -127 ? -127 : k > 127 ? 127 : k;
  return static_cast<std::uint8_t>(k + 127);
}

}  // namespace detail

/// The E8M0 scale code for a block whose largest magnitude is |amax| under `rule`:
/// 0xFF for NaN/Inf, 0x00 for zero, else clamp(k, -127, 127) + 127 (header comment). Exact.
template <mx_element Elem>
[[nodiscard]] constexpr std::uint8_t mx_scale_code(float amax, scale_rule rule = scale_rule::floor) noexcept {
  return detail::mx_scale_code_from_abs_bits<Elem>(detail::abs_bits(amax), rule);
}

/// The scale code of a block of values: max |x_i| (NaN/Inf anywhere -> 0xFF), then mx_scale_code.
/// An empty block has amax 0 (code 0x00).
template <mx_element Elem>
[[nodiscard]] constexpr std::uint8_t mx_block_scale_code(std::span<const float> block,
                                                         scale_rule rule = scale_rule::floor) noexcept {
  std::uint32_t a = 0;
  for (const float v : block) a = a < detail::abs_bits(v) ? detail::abs_bits(v) : a;
  return detail::mx_scale_code_from_abs_bits<Elem>(a, rule);
}

/// X = 2^(code - 127) as a float, exactly (code 0x00 = 2^-127 is an fp32 subnormal, bits
/// 0x00400000); NaN for 0xFF. Unlike `code << 23`, which gives 0 and +Inf for those two codes.
[[nodiscard]] constexpr float mx_scale_value(std::uint8_t code) noexcept {
  if (code == mx_nan_scale_code) return std::bit_cast<float>(0x7FC00000U);
  if (code == 0) return std::bit_cast<float>(0x00400000U);
  return std::bit_cast<float>(static_cast<std::uint32_t>(code) << 23);
}

}  // namespace minifloat
