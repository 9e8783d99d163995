#pragma once
// Quantized GEMM / GEMV / grouped GEMM (umbrella). See operand.hpp (accepted operands and
// layouts), reference.hpp (the definition: exact and fp32_blocks modes), blocked.hpp (the fast
// path and gemm_config), grouped.hpp (MoE). Error bound of the fast path vs the exact
// reference: reference.hpp / bench/README.md "## GEMM".
#include "blocked.hpp"
#include "grouped.hpp"
#include "operand.hpp"
#include "reference.hpp"
