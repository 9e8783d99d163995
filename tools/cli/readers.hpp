#pragma once
// The one rule for float inputs of every command that computes on them (quantize, gemm,
// attention): a float32, float64 or float16 .npy file, read as float32; a finite float64 value
// beyond float32's range is refused (exit 1) naming the value and the element, rather than
// becoming +-Inf and then NaN or garbage in the results. (analyze measures such files instead:
// it counts those values and reports them; docs/errors.md.)
#include <minifloat/io/npy.hpp>
// (io first: npy.hpp's enumerator float16 would shadow minifloat::float16 under -Wshadow)

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "paths.hpp"

namespace minifloat::cli {

struct float_tensor {
  std::vector<std::size_t> shape;
  std::vector<float> values;
};

/// A value for a message: 9 significant digits (a float round-trips), powers of two as 2^k.
[[nodiscard]] inline std::string brief(double v) {
  int e = 0;
  if (std::isfinite(v) && v > 0 && std::frexp(v, &e) == 0.5) return "2^" + std::to_string(e - 1);
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

/// Reads `path` as float32 values under the rule above.
[[nodiscard]] inline float_tensor read_float_tensor(const std::string& path) {
  const npy_array in = read_npy(path);
  if (!npy_is_float(in.dtype))
    throw io_error(terminal_text(path) + ": dtype '" + std::string(npy_descr(in.dtype)) + "' (" +
                   std::string(npy_dtype_name(in.dtype)) + ") is not floating point; expected '<f4', '<f8' or '<f2'");
  std::size_t overflows = 0;
  float_tensor t{in.shape, to_float32(in, path, &overflows)};
  if (overflows != 0) {
    const auto d = in.as<double>();
    std::size_t i = 0;
    while (i < d.size() && !(std::isfinite(d[i]) && std::isinf(t.values[i]))) ++i;
    throw io_error(terminal_text(path) + ": float64 value " + brief(i < d.size() ? d[i] : NAN) + " at element " +
                   std::to_string(i) + " does not fit float32 (" + std::to_string(overflows) +
                   " such values); expected values within +-3.40282347e+38");
  }
  return t;
}

}  // namespace minifloat::cli
