// Uses minifloat only through the installed package (see CMakeLists.txt next to this file).
#include <minifloat/minifloat.hpp>

#include <iostream>

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
  return one == 1.0f ? 0 : 1;
}
