// minifloat::kernels: the wire codec of the collectives (comm/codec.hpp) compiled once
// (compiled-kernels mode, core/config.hpp).
#define MINIFLOAT_BUILDING_KERNELS MINIFLOAT_KERNELS_COMM
#include <minifloat/comm/codec.hpp>
