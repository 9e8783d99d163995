#pragma once
// OCP Microscaling (MX v1.0) sub-byte element formats, section 5.3. No Inf, no NaN: every code
// is finite, so conversion always saturates (overflow and +-Inf give +-max). NaN has no code:
// it converts to +0 here (the MX spec leaves it implementation-defined; in an MX block the
// shared E8M0 scale carries NaN instead). One code per byte, in the low bits; packing two FP4
// codes per byte is a container concern (block/).
//
// float6_e3m2fn  S EEE MM, bias 3:  max 0x1F = 1.75 * 2^4 = 28;  min norm 0x04 = 2^-2;
//                                   denorm_min 0x01 = 0.25 * 2^-2 = 0.0625
// float6_e2m3fn  S EE MMM, bias 1:  max 0x1F = 1.875 * 2^2 = 7.5; min norm 0x08 = 1;
//                                   denorm_min 0x01 = 0.125
// float4_e2m1fn  S EE M, bias 1:    max 0x7 = 1.5 * 2^2 = 6; min norm 0x2 = 1; denorm_min 0x1 = 0.5
//                                   codes 0..7 = 0, 0.5, 1, 1.5, 2, 3, 4, 6; 8..15 their negatives
// Rounding: ties-to-even by default (e.g. E2M1: 0.25 -> 0, 0.75 -> 1, 2.5 -> 2, 5 -> 4).
// Sources: docs/formats/mx.md#fp6-and-fp4-codes.
#include "basic_float.hpp"

namespace minifloat {

using float6_e3m2fn = basic_float<exmy_spec<
    exmy_layout{.exponent_bits = 3, .mantissa_bits = 2, .bias = 3, .specials = nan_inf::none},
    detail::name_of<"float6_e3m2fn">>>;

using float6_e2m3fn = basic_float<exmy_spec<
    exmy_layout{.exponent_bits = 2, .mantissa_bits = 3, .bias = 1, .specials = nan_inf::none},
    detail::name_of<"float6_e2m3fn">>>;

using float4_e2m1fn = basic_float<exmy_spec<
    exmy_layout{.exponent_bits = 2, .mantissa_bits = 1, .bias = 1, .specials = nan_inf::none},
    detail::name_of<"float4_e2m1fn">>>;

}  // namespace minifloat
