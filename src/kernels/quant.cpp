// minifloat::kernels: the quantize engine of quant/quantized_tensor.hpp compiled once
// (compiled-kernels mode, core/config.hpp).
#define MINIFLOAT_BUILDING_KERNELS MINIFLOAT_KERNELS_QUANT
#include <minifloat/quant/quantized_tensor.hpp>
