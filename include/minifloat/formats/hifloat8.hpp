#pragma once
// hifloat8: Huawei Ascend's tapered 8-bit float. The bit layout, special codes, limits and
// rounding rules are documented in hifloat8_spec.hpp, beside the codec that implements them.
#include "basic_float.hpp"
#include "hifloat8_spec.hpp"

namespace minifloat {

using hifloat8 = basic_float<hifloat8_spec>;

}  // namespace minifloat
