#pragma once
// A non-owning 2-D view (rows x cols, row stride in elements), the input of quantize(). 1-D data
// is one row; N-D data is (prod(leading dims), last dim), as the CLI flattens it.
#include <cstddef>
#include <span>
#include <string>

#include "../core/errors.hpp"

namespace minifloat {

template <class T>
struct matrix_view {
  T* data = nullptr;
  std::size_t rows = 0;
  std::size_t cols = 0;
  std::size_t row_stride = 0;  // elements between row starts; >= cols

  constexpr matrix_view() = default;
  constexpr matrix_view(T* d, std::size_t r, std::size_t c, std::size_t stride) : data(d), rows(r), cols(c), row_stride(stride) {
    validate();
  }
  /// A contiguous row-major matrix over a span, which must hold exactly rows * cols elements.
  constexpr matrix_view(std::span<T> s, std::size_t r, std::size_t c) : data(s.data()), rows(r), cols(c), row_stride(c) {
    if (s.size() != r * c)
      throw shape_error("matrix_view: a " + std::to_string(r) + "x" + std::to_string(c) + " matrix needs " +
                        std::to_string(r * c) + " elements, the buffer has " + std::to_string(s.size()));
  }

  constexpr void validate() const {
    if (row_stride < cols && rows > 1)
      throw shape_error("matrix_view: row stride " + std::to_string(row_stride) + " is smaller than the row length " +
                        std::to_string(cols));
    if (data == nullptr && rows * cols != 0) throw shape_error("matrix_view: null data for a non-empty matrix");
  }
  [[nodiscard]] constexpr std::size_t size() const noexcept { return rows * cols; }
  [[nodiscard]] constexpr bool contiguous() const noexcept { return row_stride == cols || rows <= 1; }
  [[nodiscard]] constexpr T* row(std::size_t r) const noexcept { return data + r * row_stride; }
  [[nodiscard]] constexpr T& operator()(std::size_t r, std::size_t c) const noexcept { return data[r * row_stride + c]; }
};

}  // namespace minifloat
