// minifloat::kernels: GEMM, GEMV, grouped GEMM and their references (gemm/entry_points.hpp)
// compiled once (compiled-kernels mode, core/config.hpp).
#define MINIFLOAT_BUILDING_KERNELS MINIFLOAT_KERNELS_GEMM
#include <minifloat/gemm/gemm.hpp>
