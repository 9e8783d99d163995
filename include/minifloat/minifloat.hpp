#pragma once
// The value types and their scalar conversions: every format (hifloat8, the OCP FP8/FP6/FP4
// formats, float8_e8m0fnu, bfloat16, float16), narrow / encode / widen / decode under a rounding
// and overflow policy, std::numeric_limits, operator<<, and the closed list of formats. Cheap to
// include anywhere (docs/compile_times.md). Tensors, kernels and everything else: all.hpp.
// fmt support is opt-in: minifloat/fmt.hpp, target minifloat::fmt.
#include "core/config.hpp"
#include "core/policy.hpp"
#include "core/random.hpp"
#include "core/version.hpp"
#include "formats/basic_float.hpp"
#include "formats/convert.hpp"
#include "formats/e8m0.hpp"
#include "formats/float16.hpp"
#include "formats/float8.hpp"
#include "formats/format_list.hpp"
#include "formats/hifloat8.hpp"
#include "formats/iostream.hpp"
#include "formats/mx_elements.hpp"
#include "formats/numeric_limits.hpp"
