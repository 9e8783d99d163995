#pragma once
// mx_block<Elem, N>: one OCP MX block as a value type (an E8M0 scale plus N element codes), for
// tests and scalar code; tensors use mx_tensor_view (mx_tensor.hpp), which keeps codes and scales
// in separate arrays. Scale rules: mx_scale.hpp. Sources: docs/formats/mx.md#block-conversion.
//
// Quantize, in steps (OCP MX v1.0 6.3):
//   1. amax = max |V_i|; a NaN or Inf anywhere makes amax non-finite.
//   2. code = mx_scale_code<Elem>(amax, rule); X = 2^(code - 127).
//   3. P_i = narrow<Elem>(V_i / X) with round-to-nearest-even and saturation to +-max_elem.
//      V_i / X = V_i * 2^(127 - code) is computed in double, where it is exact: |V_i| <= 2^128
//      and 2^-127 <= X <= 2^127 keep it within [2^-276, 2^255]. So each element is rounded
//      exactly once, from the exact quotient (fp32 could overflow or lose subnormal bits here).
//   4. A NaN scale (code 0xFF) stores every element as +0 (there is nothing to scale by; the
//      Ascend golden does the same), and the block decodes to all NaN whatever its codes.
// Dequantize: V_i' = float(P_i) * X in fp32. That product is exact: element values are multiples
// of their denorm_min (>= 2^-16), so P_i * X is a multiple of 2^-143, which fp32 represents; it
// could only overflow, to +-Inf, when P_i * X >= 2^128. The floor rule never gets there from
// finite fp32 input (P_i * X <= max_elem * 2^(e - emax) < 2^128); rceil, ceil and even would for
// an amax within half an element ulp of 2^128 (e.g. FLT_MAX rounds to P * X = 2^128), so such a
// block takes floor's scale (mx_scale.hpp, step 3): finite input never dequantizes to Inf.
// (Flush-to-zero modes, e.g. -ffast-math, break the exact subnormal products.)
//
// Short blocks: quantize accepts 0..N values; the scale comes from those values only, and the
// elements past the end are +0 codes. dequantize writes as many values as its output span holds.
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>

#include "convert.hpp"
#include "unpacked.hpp"
#include "../core/errors.hpp"
#include "e8m0.hpp"
#include "float16.hpp"
#include "packed.hpp"
#include "mx_scale.hpp"

namespace minifloat {

/// Elements per block in every concrete OCP MX format.
inline constexpr std::size_t mx_block_size = 32;

/// The element conversion of MX quantization: RNE, then clamp to +-max_elem (OCP MX 6.3).
inline constexpr conversion mx_element_conversion{.round = rounding::nearest_even, .on_overflow = overflow::saturate};

namespace detail {

/// Inputs a block quantizer accepts; bfloat16 and float16 widen to float exactly.
template <class T>
concept mx_input = std::same_as<T, float> || std::same_as<T, bfloat16> || std::same_as<T, float16>;

/// 1 / X = 2^(127 - code) for a finite scale code (0x00 .. 0xFE).
constexpr double mx_inverse_scale(std::uint8_t code) noexcept { return exp2i(127 - static_cast<int>(code)); }

/// Step 3 for one element, given 1 / X.
template <mx_element Elem>
constexpr std::uint8_t mx_encode_scaled(float v, double inverse_scale) noexcept {
  return narrow<Elem>(static_cast<double>(v) * inverse_scale, mx_element_conversion).bits();
}

/// Steps 1-2 over n values of any mx_input.
template <mx_element Elem, class In>
constexpr std::uint8_t mx_run_scale_code(const In* x, std::size_t n, scale_rule rule) noexcept {
  std::uint32_t a = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t b = abs_bits(static_cast<float>(x[i]));
    a = a < b ? b : a;
  }
  return mx_scale_code_from_abs_bits<Elem>(a, rule);
}

[[noreturn]] inline void throw_mx_block_size(const char* who, std::size_t got, std::size_t n) {
  throw_shape(std::string(who) + ": a block holds at most " + std::to_string(n) + " values, got " +
              std::to_string(got));
}

}  // namespace detail

/// One element's code for a block with scale `scale_code` (step 3; +0 for a NaN scale).
template <mx_element Elem>
[[nodiscard]] constexpr Elem mx_encode_element(float v, std::uint8_t scale_code) noexcept {
  if (scale_code == mx_nan_scale_code) return Elem::from_bits(0);
  return Elem::from_bits(detail::mx_encode_scaled<Elem>(v, detail::mx_inverse_scale(scale_code)));
}

/// One element's value, float(P) * X, exact (or +-Inf past FLT_MAX); NaN for a NaN scale.
template <mx_element Elem>
[[nodiscard]] constexpr float mx_decode_element(Elem p, std::uint8_t scale_code) noexcept {
  return static_cast<float>(p) * mx_scale_value(scale_code);  // NaN * x is NaN
}

/// An MX block: the shared E8M0 scale and N element codes (one per Elem; 4- and 6-bit codes sit
/// in the low bits). Equality compares bits (scale code and element codes), not values.
template <mx_element Elem, std::size_t N = mx_block_size>
struct mx_block {
  static_assert(N > 0, "an MX block holds at least one element");
  using element_type = Elem;
  static constexpr std::size_t block_size = N;
  /// Bytes of the packed form: one scale byte plus N codes at sizeof_bits<Elem> each.
  static constexpr std::size_t packed_size = 1 + (N * static_cast<std::size_t>(sizeof_bits<Elem>) + 7) / 8;

  float8_e8m0fnu scale = float8_e8m0fnu::from_bits(0);
  std::array<Elem, N> elements{};

  /// Quantizes x.size() <= N values (a short block is fine: see the header comment).
  /// Throws shape_error if x holds more than N values.
  [[nodiscard]] static constexpr mx_block quantize(std::span<const float> x, scale_rule rule = scale_rule::floor) {
    return quantize_impl(x, rule);
  }
  [[nodiscard]] static constexpr mx_block quantize(std::span<const bfloat16> x, scale_rule rule = scale_rule::floor) {
    return quantize_impl(x, rule);
  }
  [[nodiscard]] static constexpr mx_block quantize(std::span<const float16> x, scale_rule rule = scale_rule::floor) {
    return quantize_impl(x, rule);
  }

  /// Writes the first out.size() <= N values. Throws shape_error if out is longer than N.
  constexpr void dequantize(std::span<float> out) const {
    if (out.size() > N) detail::throw_mx_block_size("mx_block::dequantize", out.size(), N);
    const std::uint8_t code = scale.bits();
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = mx_decode_element(elements[i], code);
  }
  /// All N values.
  [[nodiscard]] constexpr std::array<float, N> dequantize() const noexcept {
    std::array<float, N> out{};
    for (std::size_t i = 0; i < N; ++i) out[i] = mx_decode_element(elements[i], scale.bits());
    return out;
  }

  friend constexpr bool operator==(const mx_block& a, const mx_block& b) noexcept {
    if (a.scale.bits() != b.scale.bits()) return false;
    for (std::size_t i = 0; i < N; ++i)
      if (a.elements[i].bits() != b.elements[i].bits()) return false;
    return true;
  }

 private:
  template <class In>
  static constexpr mx_block quantize_impl(std::span<const In> x, scale_rule rule) {
    if (x.size() > N) detail::throw_mx_block_size("mx_block::quantize", x.size(), N);
    mx_block b;
    const std::uint8_t code = detail::mx_run_scale_code<Elem>(x.data(), x.size(), rule);
    b.scale = float8_e8m0fnu::from_bits(code);
    if (code == mx_nan_scale_code) return b;  // elements stay +0
    const double inv = detail::mx_inverse_scale(code);
    for (std::size_t i = 0; i < x.size(); ++i)
      b.elements[i] = Elem::from_bits(detail::mx_encode_scaled<Elem>(static_cast<float>(x[i]), inv));
    return b;
  }
};

}  // namespace minifloat
