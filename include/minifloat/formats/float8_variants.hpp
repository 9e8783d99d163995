#pragma once
// The other 8-bit floats of the ML ecosystem (ml_dtypes, ONNX, MLIR), beyond OCP's two: definitions,
// exact values and sources in docs/formats/fp8_variants.md.
//
// "fnuz" formats (finite, NaN, unsigned zero): no Inf, no -0; the negative-zero code 0x80 is the
// one NaN, so every result that rounds to zero is +0 and non-saturating overflow gives 0x80.
//   float8_e4m3fnuz     S EEEE MMM, bias 8    max 0x7F = 1.875 * 2^7 = 240   min normal 2^-7
//                       denorm_min 2^-10; |x| >= 248 overflows (248 is the tie 240 / 256: 256 is even)
//   float8_e5m2fnuz     S EEEEE MM, bias 16   max 0x7F = 1.75 * 2^15 = 57344  min normal 2^-15
//                       denorm_min 2^-17; |x| >= 61440 overflows
//   float8_e4m3b11fnuz  S EEEE MMM, bias 11   max 0x7F = 1.875 * 2^4 = 30     min normal 2^-10
//                       denorm_min 2^-13; |x| >= 31 overflows
// IEEE-754-like formats (exponent all ones: mantissa 0 is Inf, the rest NaN; signed zeros):
//   float8_e3m4         S EEE MMMM, bias 3    max 0x6F = 1.9375 * 2^3 = 15.5  min normal 2^-2
//                       denorm_min 2^-6; Inf 0x70; |x| >= 15.75 overflows (the tie goes to 16, even)
//   float8_e4m3         S EEEE MMM, bias 7    max 0x77 = 1.875 * 2^7 = 240    min normal 2^-6
//                       denorm_min 2^-9; Inf 0x78; |x| >= 248 overflows
// Rounding: ties-to-even by default, every mode of policy.hpp.
#include "basic_float.hpp"

namespace minifloat {

using float8_e4m3fnuz = basic_float<exmy_spec<
    exmy_layout{.exponent_bits = 4, .mantissa_bits = 3, .bias = 8, .specials = nan_inf::fnuz},
    detail::name_of<"float8_e4m3fnuz">>>;

using float8_e5m2fnuz = basic_float<exmy_spec<
    exmy_layout{.exponent_bits = 5, .mantissa_bits = 2, .bias = 16, .specials = nan_inf::fnuz},
    detail::name_of<"float8_e5m2fnuz">>>;

using float8_e4m3b11fnuz = basic_float<exmy_spec<
    exmy_layout{.exponent_bits = 4, .mantissa_bits = 3, .bias = 11, .specials = nan_inf::fnuz},
    detail::name_of<"float8_e4m3b11fnuz">>>;

using float8_e3m4 = basic_float<exmy_spec<
    exmy_layout{.exponent_bits = 3, .mantissa_bits = 4, .bias = 3, .specials = nan_inf::ieee},
    detail::name_of<"float8_e3m4">>>;

using float8_e4m3 = basic_float<exmy_spec<
    exmy_layout{.exponent_bits = 4, .mantissa_bits = 3, .bias = 7, .specials = nan_inf::ieee},
    detail::name_of<"float8_e4m3">>>;

}  // namespace minifloat
