// minifloat::kernels: the attention forward, backward, decode step and references
// (attention/entry_points.hpp) compiled once (compiled-kernels mode, core/config.hpp).
#define MINIFLOAT_BUILDING_KERNELS MINIFLOAT_KERNELS_ATTENTION
#include <minifloat/attention/attention.hpp>
