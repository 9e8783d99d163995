#pragma once
// Scaling recipes: current and delayed per-tensor scaling, static calibration. Not part of the
// umbrella minifloat.hpp (it pulls in the quantized-tensor machinery); include this instead.
#include "calibration.hpp"
#include "current_scaling.hpp"
#include "delayed_scaling.hpp"
#include "scaling_rule.hpp"
#include "tensor_role.hpp"
