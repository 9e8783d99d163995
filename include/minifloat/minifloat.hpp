#pragma once
// Umbrella header: every format, conversions, limits and streaming. fmt support is opt-in
// (minifloat/fmt.hpp, target minifloat::fmt).
#include "basic_float.hpp"
#include "config.hpp"
#include "convert.hpp"
#include "format_list.hpp"
#include "formats/e8m0.hpp"
#include "formats/float16.hpp"
#include "formats/float8.hpp"
#include "formats/hifloat8.hpp"
#include "formats/mx_elements.hpp"
#include "iostream.hpp"
#include "numeric_limits.hpp"
#include "policy.hpp"
#include "random.hpp"
#include "spec.hpp"
#include "version.hpp"
