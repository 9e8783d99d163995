#pragma once
// A quantization scheme: every choice that turns a float tensor into codes + scales, in one
// value that a quantized tensor carries with it (so dequantization never guesses).
//
//   granularity  where scales live             scale rules
//   tensor       one fp32 scale                max | pow2 | none
//   channel      one fp32 scale per row        max | pow2 | none
//   token        one fp32 scale per row (same storage as channel, named for activations)
//   block RxC    one fp32 scale per RxC tile (partial edge tiles allowed; 1x128, 128x128, ...)
//   mx           one E8M0 scale per 32 elements along `axis`   floor | rceil | ceil | even
//
// Scale rules for fp32 scales (s multiplies on dequantization, x ~ s * decode(q)):
//   max   s = amax / max_finite(format), q = encode(x / s), the division in float32; amax 0 -> s = 1
//   pow2  s = 2^(floor(log2 amax) - T): x / s puts amax in the binade [2^T, 2^(T+1)). For HiF8
//         T = 15 - N_guard (the recipe's guard rule; N_guard 11 gives T = 4, the default)
//   none  s = 1 (a direct cast)
// Quantization always saturates; the rounding is the format's own nearest unless given.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "../core/errors.hpp"
#include "../formats/format_list.hpp"
#include "../core/policy.hpp"

namespace minifloat {

enum class granularity : std::uint8_t { tensor, channel, token, block, mx };
enum class scale_rule : std::uint8_t { max, pow2, none, floor, rceil, ceil, even };

constexpr std::string_view to_string(granularity g) noexcept {
  switch (g) {
    case granularity::tensor: return "tensor";
    case granularity::channel: return "channel";
    case granularity::token: return "token";
    case granularity::block: return "block";
    case granularity::mx: return "mx";
  }
  return "?";
}
constexpr std::string_view to_string(scale_rule r) noexcept {
  switch (r) {
    case scale_rule::max: return "max";
    case scale_rule::pow2: return "pow2";
    case scale_rule::none: return "none";
    case scale_rule::floor: return "floor";
    case scale_rule::rceil: return "rceil";
    case scale_rule::ceil: return "ceil";
    case scale_rule::even: return "even";
  }
  return "?";
}
constexpr std::optional<granularity> parse_granularity(std::string_view s) noexcept {
  for (auto g : {granularity::tensor, granularity::channel, granularity::token, granularity::block, granularity::mx})
    if (to_string(g) == s) return g;
  return std::nullopt;
}
constexpr std::optional<scale_rule> parse_scale_rule(std::string_view s) noexcept {
  for (auto r : {scale_rule::max, scale_rule::pow2, scale_rule::none, scale_rule::floor, scale_rule::rceil,
                 scale_rule::ceil, scale_rule::even})
    if (to_string(r) == s) return r;
  return std::nullopt;
}
constexpr bool is_mx_rule(scale_rule r) noexcept {
  return r == scale_rule::floor || r == scale_rule::rceil || r == scale_rule::ceil || r == scale_rule::even;
}

/// T for the pow2 rule from the HiF8 recipe's guard: amax lands at 2^(15 - N_guard).
constexpr int pow2_target_from_guard(int n_guard) noexcept { return 15 - n_guard; }

struct quant_scheme {
  format_id format = format_id::hifloat8;
  granularity gran = granularity::tensor;
  std::size_t block_rows = 1;   // block: tile height; mx: 32 along axis 0, else 1
  std::size_t block_cols = 128; // block: tile width;  mx: 32 along axis 1, else 1
  int axis = 1;                 // mx: the axis the 32-element blocks run along (1 = along rows)
  scale_rule rule = scale_rule::max;
  int target = 4;               // pow2: T
  rounding round = rounding::nearest;
  /// rounding::stochastic only: element (r, c) uses random_bits(seed, r * cols + c) (random.hpp),
  /// the same stream the bulk kernels draw from, so every path gives the same codes.
  std::uint64_t seed = 0;

  friend bool operator==(const quant_scheme&, const quant_scheme&) = default;

  /// The defaults a user gets by naming only format and granularity: mx -> floor; hifloat8 ->
  /// pow2 with N_guard 11 (T = 4); every other format -> max.
  static quant_scheme make(format_id f, granularity g) {
    quant_scheme s;
    s.format = f;
    s.gran = g;
    s.rule = g == granularity::mx ? scale_rule::floor : f == format_id::hifloat8 ? scale_rule::pow2 : scale_rule::max;
    if (g == granularity::mx) s.block_rows = 1, s.block_cols = 32;
    return s;
  }

  /// Throws unsupported_error / shape_error for combinations that mean nothing.
  void validate() const {
    const bool mx_format = format == format_id::float8_e4m3fn || format == format_id::float8_e5m2 ||
                           format == format_id::float6_e3m2fn || format == format_id::float6_e2m3fn ||
                           format == format_id::float4_e2m1fn;
    if (format == format_id::float8_e8m0fnu)
      throw unsupported_error("float8_e8m0fnu is a scale format, not an element format; expected one of "
                              "hifloat8, float8_e4m3fn, float8_e5m2, float6_*, float4_e2m1fn, bfloat16, float16");
    if (gran == granularity::mx) {
      if (!mx_format)
        throw unsupported_error("granularity mx needs an MX element format (float8_e4m3fn, float8_e5m2, "
                                "float6_e3m2fn, float6_e2m3fn, float4_e2m1fn), got " + std::string(to_string(format)));
      if (!is_mx_rule(rule))
        throw unsupported_error("granularity mx takes scale rule floor, rceil, ceil or even, got " +
                                std::string(to_string(rule)));
      if (axis != 0 && axis != 1) throw shape_error("mx axis must be 0 or 1, got " + std::to_string(axis));
    } else {
      if (is_mx_rule(rule))
        throw unsupported_error("scale rule " + std::string(to_string(rule)) +
                                " is an MX (E8M0) rule; with fp32 scales use max, pow2 or none");
      if (gran == granularity::block && (block_rows == 0 || block_cols == 0))
        throw shape_error("block size must be at least 1x1, got " + std::to_string(block_rows) + "x" +
                          std::to_string(block_cols));
    }
    if (rule == scale_rule::pow2 && (target < -126 || target > 127))
      throw shape_error("pow2 target T must lie in [-126, 127], got " + std::to_string(target));
  }

  /// A readable one-line description, e.g. "hifloat8 tensor pow2 T=4 nearest".
  [[nodiscard]] std::string describe() const {
    std::string s = std::string(to_string(format)) + " " + std::string(to_string(gran));
    if (gran == granularity::block) s += " " + std::to_string(block_rows) + "x" + std::to_string(block_cols);
    if (gran == granularity::mx) s += " axis=" + std::to_string(axis);
    s += " " + std::string(to_string(rule));
    if (rule == scale_rule::pow2) s += " T=" + std::to_string(target);
    s += " " + std::string(to_string(round));
    return s;
  }
};

}  // namespace minifloat
