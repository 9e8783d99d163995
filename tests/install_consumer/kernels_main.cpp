// The compiled-kernels consumer: links minifloat::kernels (MINIFLOAT_EXTERN_KERNELS=1 comes with
// it), so this file compiles declarations only. Same output as main.cpp.
#include <minifloat/minifloat.hpp>

#include <iostream>

#include "workload.hpp"

#if !MINIFLOAT_EXTERN_KERNELS
#error "minifloat::kernels must define MINIFLOAT_EXTERN_KERNELS=1 for its users"
#endif

int main() {
  const float one = float(minifloat::float8_e4m3fn::from_bits(0x38));
  std::cout << one << '\n';  // first line must be "1"
  return one == 1.0f && run_workload() ? 0 : 1;
}
