// Uses minifloat only through the installed package (see CMakeLists.txt next to this file),
// header-only: every kernel it calls is compiled here (kernels_main.cpp links them instead).
#include <minifloat/minifloat.hpp>

#include <iostream>

#include "workload.hpp"

#if MINIFLOAT_EXTERN_KERNELS
#error "minifloat::minifloat is header-only: MINIFLOAT_EXTERN_KERNELS must not be set"
#endif

#if defined(CONSUMER_WITH_FMT)
#include <fmt/format.h>
#if __has_include(<minifloat/fmt.hpp>)
#include <minifloat/fmt.hpp>  // the header behind minifloat::fmt must compile against fmt
#endif
#endif

static_assert(sizeof(minifloat::hifloat8) == 1);

int main() {
  const float one = float(minifloat::float8_e4m3fn::from_bits(0x38));
  std::cout << one << '\n';  // first line must be "1"
#if defined(CONSUMER_WITH_FMT)
  std::cout << fmt::format("fmt: {}", one) << '\n';
#endif
  return one == 1.0f && run_workload() ? 0 : 1;
}
