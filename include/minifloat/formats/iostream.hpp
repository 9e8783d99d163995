#pragma once
// operator<< prints the value as a float would.
#include <ostream>

#include "basic_float.hpp"

namespace minifloat {
template <class S>
std::ostream& operator<<(std::ostream& os, basic_float<S> x) {
  return os << static_cast<float>(x);
}
}  // namespace minifloat
