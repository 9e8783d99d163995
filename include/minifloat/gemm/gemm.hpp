#pragma once
// Quantized GEMM / GEMV / grouped GEMM (umbrella). See operand.hpp (accepted operands and
// layouts), reference.hpp (the definition: exact and fp32_blocks modes), blocked.hpp (the fast
// path and gemm_config; kernels.hpp, kernels_avx512.hpp), grouped.hpp (MoE), packed_weights.hpp
// + gemv_packed.hpp (weights packed once for the decode-phase GEMV). docs/gemm.md: the orders
// and why every fast path computes fp32_blocks bit for bit; error bound vs the exact reference:
// reference.hpp; speed: bench/README.md "## GEMM".
#include "blocked.hpp"
#include "gemv_packed.hpp"
#include "grouped.hpp"
#include "operand.hpp"
#include "packed_weights.hpp"
#include "reference.hpp"
