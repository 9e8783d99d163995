#pragma once
// Typed exceptions. Every message names what was wrong and what was expected, so a caller can
// print what() as it is. (File-format problems are minifloat::io_error, in io/error.hpp.)
#include <stdexcept>
#include <string>

namespace minifloat {

/// Shapes, strides, block geometry or buffer sizes that do not fit together.
class shape_error : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// A valid request this library (or this backend) does not support: a format/granularity pair,
/// a rounding mode a backend lacks, an unknown name.
class unsupported_error : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

namespace detail {
[[noreturn]] inline void throw_shape(const std::string& what) { throw shape_error(what); }
inline void require_shape(bool ok, const std::string& what) {
  if (!ok) throw shape_error(what);
}
}  // namespace detail

}  // namespace minifloat
