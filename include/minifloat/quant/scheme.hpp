#pragma once
// A quantization scheme: every choice that turns a float tensor into codes + scales, in one
// value that a quantized tensor carries with it (so dequantization never guesses).
//
//   granularity  where scales live             scale rules
//   tensor       one fp32 scale                max | pow2 | none
//   channel      one fp32 scale per row        max | pow2 | none
//   token        one fp32 scale per row (same storage as channel, named for activations)
//   block RxC    one fp32 scale per RxC tile (partial edge tiles allowed; 1x128, 128x128, ...)
//   mx           one E8M0 scale per tile: 32 elements along `axis` (1x32 or 32x1), or a 32x32
//                tile when block_rows = block_cols = 32                floor | rceil | ceil | even
//
// Scale rules for fp32 scales (s multiplies on dequantization, x ~ s * decode(q)):
//   max   s = amax / max_finite(format), q = encode(x / s), the division in float32; amax 0 -> s = 1
//   pow2  s = 2^(floor(log2 amax) - T): x / s puts amax in the binade [2^T, 2^(T+1)). For HiF8
//         T = 15 - N_guard (the recipe's guard rule; N_guard 11 gives T = 4, the default)
//   none  s = 1 (a direct cast)
// Quantization always saturates; the rounding is the format's own nearest unless given.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>

#include "../core/errors.hpp"
#include "../formats/format_list.hpp"
#include "../formats/mx_scale.hpp"
#include "../formats/scale_rule.hpp"
#include "../core/policy.hpp"

namespace minifloat {

enum class granularity : std::uint8_t { tensor, channel, token, block, mx };

template <>
struct enum_names<granularity> {
  static constexpr std::array table{name_of(granularity::tensor, "tensor"), name_of(granularity::channel, "channel"),
                                    name_of(granularity::token, "token"), name_of(granularity::block, "block"),
                                    name_of(granularity::mx, "mx")};
};

constexpr std::optional<granularity> parse_granularity(std::string_view s) noexcept { return parse_enum<granularity>(s); }

/// The binades [lo, hi] of a format that hold a finite nonzero value: ilogb of its smallest
/// positive and of its largest finite value (hifloat8: -22 .. 15, float8_e4m3fn: -9 .. 8). A pow2
/// target T outside them puts the amax where every value flushes to zero (T < lo) or where values
/// near the amax clip to max (T > hi). {0, 0} for a format without such values (E8M0).
[[nodiscard]] inline std::pair<int, int> format_binades(format_id f) {
  return visit_format(f, [](auto t) -> std::pair<int, int> {
    using S = typename decltype(t)::type::spec;
    if constexpr (requires { S::denorm_min_code; S::max_code; }) {
      return {std::ilogb(S::decode(S::denorm_min_code)), std::ilogb(S::decode(S::max_code))};
    } else {
      return {0, 0};
    }
  });
}

struct quant_scheme {
  format_id format = format_id::hifloat8;
  granularity gran = granularity::tensor;
  std::size_t block_rows = 1;   // block: tile height; mx: 32 for 32x32 tiles, else ignored
  std::size_t block_cols = 128; // block: tile width;  mx: 32 (32x32 tiles, or 1-D blocks along axis)
  int axis = 1;                 // mx, 1-D blocks: the axis they run along (1 = along rows)
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

  /// MX: the tile one E8M0 scale covers (32x32 when block_rows = block_cols = 32, else the 1-D
  /// block of 32 along `axis`).
  [[nodiscard]] constexpr mx_tile tile() const noexcept {
    return block_rows == 32 && block_cols == 32 ? mx_tile::square32 : mx_tile_for_axis(axis);
  }

  /// Throws unsupported_error / shape_error for combinations that mean nothing.
  void validate() const {
    // Out-of-range enum values (a scheme built from untrusted bytes) name themselves.
    if (static_cast<unsigned>(format) >= std::tuple_size_v<all_formats>)
      throw unsupported_error("quant_scheme: format id " + std::to_string(static_cast<unsigned>(format)) +
                              " is not a format (expected 0.." + std::to_string(std::tuple_size_v<all_formats> - 1) + ")");
    if (!is_valid(gran))
      throw unsupported_error("quant_scheme: granularity " + std::to_string(static_cast<unsigned>(gran)) +
                              " is not a granularity (expected " + enum_list<granularity>() + ")");
    if (!is_valid(rule))
      throw unsupported_error("quant_scheme: scale rule " + std::to_string(static_cast<unsigned>(rule)) +
                              " is not a scale rule (expected " + enum_list<scale_rule>() + ")");
    if (!is_valid(round))
      throw unsupported_error("quant_scheme: rounding " + std::to_string(static_cast<unsigned>(round)) +
                              " is not a rounding mode (expected " + enum_list<rounding>() + ")");
    const bool mx_format = is_mx_element(format);
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
      if (round != rounding::nearest && round != rounding::nearest_even)
        throw unsupported_error("MX elements are rounded to nearest even (OCP MX 6.3); got rounding " +
                                std::string(to_string(round)));
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
    if (rule == scale_rule::pow2) check_pow2_target();
  }

 private:
  /// The pow2 target must put the amax inside the format's binades (format_binades); every entry
  /// point (quantize, parse_scheme, quantize_with_scales, the gemm/attention operand schemes, the
  /// CLI, Python) reaches this through validate(), so all refuse the same schemes with this text.
  void check_pow2_target() const {
    const auto [lo, hi] = format_binades(format);
    if (target >= lo && target <= hi) return;
    const bool below = target < lo;
    const bool hif8 = format == format_id::hifloat8;
    const std::string range = "2^" + std::to_string(lo) + " .. 2^" + std::to_string(hi);
    std::string what = "pow2 target T = " + std::to_string(target);
    if (hif8) what += " (N_guard " + std::to_string(15 - target) + ")";
    std::string expected = "expected T from " + std::to_string(lo) + " to " + std::to_string(hi);
    if (hif8) expected += " (N_guard from " + std::to_string(15 - hi) + " to " + std::to_string(15 - lo) + ")";
    throw shape_error(what + " puts the amax at 2^" + std::to_string(target) + ", outside the binades of " +
                      std::string(to_string(format)) + " (" + range + "): " +
                      (below ? "every value would flush to zero" : "values near the amax would be clipped to its max") +
                      "; " + expected);
  }

 public:

  /// A readable one-line description, e.g. "hifloat8 tensor pow2 T=4 nearest".
  [[nodiscard]] std::string describe() const {
    std::string s = std::string(to_string(format)) + " " + std::string(to_string(gran));
    if (gran == granularity::block) s += " " + std::to_string(block_rows) + "x" + std::to_string(block_cols);
    if (gran == granularity::mx) s += tile() == mx_tile::square32 ? " 32x32" : " axis=" + std::to_string(axis);
    s += " " + std::string(to_string(rule));
    if (rule == scale_rule::pow2) s += " T=" + std::to_string(target);
    s += " " + std::string(to_string(round));
    return s;
  }
};

}  // namespace minifloat
