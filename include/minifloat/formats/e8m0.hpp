#pragma once
// float8_e8m0fnu: the OCP MX shared scale (MX v1.0 section 5.4.1). EEEEEEEE, unsigned, bias 127.
//   value = 2^(E - 127), E = 0 .. 254: 0x00 = 2^-127 (a float32 subnormal), 0x7F = 1,
//   0xFE = 2^127 (max). 0xFF = NaN. No zero, no Inf, no subnormals, no sign.
// As a scalar conversion (ml_dtypes float8_e8m0fnu semantics, docs/formats/mx.md#scalar-conversion-to-e8m0): round to the
// nearest power of two with ties-to-even on the significand, which means a tie (1.5 * 2^k)
// always goes up; values below 2^-127 give 0x00 (nothing smaller exists). Zero, negative values,
// overflow and +-Inf give NaN (non-saturating) or 0x00 / 0xFE (saturating).
// This is *not* the MX scale rule: block scales come from floor(log2 amax) - emax (block/).
#include "basic_float.hpp"

namespace minifloat {

using float8_e8m0fnu = basic_float<exmy_spec<
    exmy_layout{.exponent_bits = 8, .mantissa_bits = 0, .bias = 127, .specials = nan_inf::nan_only,
                .is_signed = false, .has_zero = false},
    detail::name_of<"float8_e8m0fnu">>>;

}  // namespace minifloat
