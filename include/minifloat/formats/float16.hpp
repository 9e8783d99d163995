#pragma once
// The 16-bit storage types, from the same template as the 8-bit formats, so a bfloat16 or
// float16 input or output goes through exactly the same conversion code.
//
// bfloat16  S EEEEEEEE MMMMMMM, bias 127 (the top half of a float32). max 0x7F7F ~ 3.39e38,
//           min norm 0x0080 = 2^-126, denorm_min 0x0001 = 2^-133, Inf 0x7F80, NaN 0x7FC0.
// float16   IEEE 754 binary16: S EEEEE MMMMMMMMMM, bias 15. max 0x7BFF = 65504,
//           min norm 0x0400 = 2^-14, denorm_min 0x0001 = 2^-24, Inf 0x7C00, NaN 0x7E00.
// Default conversion: round to nearest even, overflow to Inf (IEEE).
#include "basic_float.hpp"

namespace minifloat {

using bfloat16 = basic_float<exmy_spec<
    exmy_layout{.exponent_bits = 8, .mantissa_bits = 7, .bias = 127, .specials = nan_inf::ieee},
    detail::name_of<"bfloat16">>>;

using float16 = basic_float<exmy_spec<
    exmy_layout{.exponent_bits = 5, .mantissa_bits = 10, .bias = 15, .specials = nan_inf::ieee},
    detail::name_of<"float16">>>;

}  // namespace minifloat
