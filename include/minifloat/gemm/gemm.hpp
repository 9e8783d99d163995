#pragma once
// Quantized GEMM / GEMV / grouped GEMM (umbrella). entry_points.hpp declares what it offers
// (and gemm_config); operand.hpp: the accepted operands and layouts; reference.hpp: the
// definition (exact and fp32_blocks modes); blocked.hpp: the fast path (kernels.hpp and
// x86/); grouped.hpp: MoE; packed_weights.hpp + gemv_packed.hpp: weights packed
// once for the decode-phase GEMV. docs/gemm.md: the orders and why every fast path computes
// fp32_blocks bit for bit; error bound vs the exact reference: reference.hpp; speed:
// bench/README.md "## GEMM".
#include "entry_points.hpp"
#include "operand.hpp"
#include "packed_weights.hpp"

#if MINIFLOAT_DEFINE_KERNELS(MINIFLOAT_KERNELS_GEMM)  // header-only mode: the definitions (compiled-kernels mode: the library)
#include "blocked.hpp"
#include "gemv_packed.hpp"
#include "grouped.hpp"
#include "reference.hpp"
#endif
