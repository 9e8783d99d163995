#pragma once
// The Python QuantizedTensor (quant.cpp) and the float32 input conversion shared with recipes.cpp.
#include <string>
#include <vector>

#include <minifloat/io/tensor_files.hpp>
#include <minifloat/quant/matrix_view.hpp>
#include <minifloat/quant/quantized_tensor.hpp>

#include "common.hpp"

namespace minifloat::python {

/// A quantized_tensor plus the shape it was made from. N-D data is quantized as the matrix
/// (prod(leading dims), last dim) (flatten_mode::last_axis, the CLI's default) or (first dim,
/// prod(rest)) (first_axis, `--flatten first`: conv weights, channel = output channel).
struct py_quantized {
  quantized_tensor q;
  std::vector<py::ssize_t> shape;
  std::string name;  // scheme_name(q.scheme())
  flatten_mode flatten = flatten_mode::last_axis;
};

/// "last" / "first" -> flatten_mode (ValueError otherwise).
flatten_mode parse_flatten_arg(const std::string& s, const char* who);

/// x as float32 rows: a view of x itself when it is a float32 array whose rows are contiguous
/// (any row stride), else a C-contiguous float32 copy (float64 is rounded to float32 once, other
/// minifloat dtypes and integers convert exactly or by numpy's rule). `keep` owns the memory.
struct float_rows {
  py::array keep;
  matrix_view<const float> view;
  std::vector<py::ssize_t> shape;
};
float_rows as_float_rows(const py::handle& x, const char* who, flatten_mode mode = flatten_mode::last_axis);

}  // namespace minifloat::python
