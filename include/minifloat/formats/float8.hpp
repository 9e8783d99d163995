#pragma once
// OCP 8-bit floating point (OFP8 rev 1.0; Micikevicius et al. 2022, arXiv 2209.05433).
//
// float8_e4m3fn   S EEEE MMM, bias 7, no Inf ("fn": finite + NaN)
//   NaN      S.1111.111 (0x7F, 0xFF) only      max 0x7E = 1.75 * 2^8 = 448
//   min norm 0x08 = 2^-6                        denorm_min 0x01 = 2^-3 * 2^-6 = 2^-9
//   overflow (non-saturating) -> NaN; ties at 464 go down to 448 (mantissa 110 is even),
//   so |x| > 464 overflows; +-Inf -> NaN (sign kept), or +-448 when saturating.
//
// float8_e5m2     S EEEEE MM, bias 15, IEEE-style specials
//   Inf      S.11111.00 (0x7C, 0xFC)   NaN S.11111.{01,10,11}
//   max      0x7B = 1.75 * 2^15 = 57344  min norm 0x04 = 2^-14  denorm_min 0x01 = 2^-16
//   overflow -> Inf; 61440 is the tie between 57344 (odd) and 2^16 (even): it overflows.
// Rounding: ties-to-even by default (OCP). Sources and checks: docs/formats/ocp_fp8.md#layouts.
#include "basic_float.hpp"

namespace minifloat {

using float8_e4m3fn = basic_float<exmy_spec<
    exmy_layout{.exponent_bits = 4, .mantissa_bits = 3, .bias = 7, .specials = nan_inf::nan_only},
    detail::name_of<"float8_e4m3fn">>>;

using float8_e5m2 = basic_float<exmy_spec<
    exmy_layout{.exponent_bits = 5, .mantissa_bits = 2, .bias = 15, .specials = nan_inf::ieee},
    detail::name_of<"float8_e5m2">>>;

}  // namespace minifloat
