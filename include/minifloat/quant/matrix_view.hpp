#pragma once
// A non-owning 2-D view (rows x cols, row stride in elements), the input of quantize(). 1-D data
// is one row; N-D data is (prod(leading dims), last dim), as the CLI flattens it.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "../core/checked.hpp"
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
    const auto n = checked_mul_or(r, c);  // a wrapped r * c could equal a short buffer's size
    if (!n)
      throw shape_error("matrix_view: a " + std::to_string(r) + "x" + std::to_string(c) +
                        " matrix has more elements than fit in a 64-bit size; the buffer has " + std::to_string(s.size()));
    if (s.size() != *n)
      throw shape_error("matrix_view: a " + std::to_string(r) + "x" + std::to_string(c) + " matrix needs " +
                        std::to_string(*n) + " elements, the buffer has " + std::to_string(s.size()));
  }

  constexpr void validate() const {
    if (row_stride < cols && rows > 1)
      throw shape_error("matrix_view: row stride " + std::to_string(row_stride) + " is smaller than the row length " +
                        std::to_string(cols));
    if (data == nullptr && rows != 0 && cols != 0) throw shape_error("matrix_view: null data for a non-empty matrix");
    if (rows > 1 && !checked_add_or(checked_mul_or(rows - 1, row_stride).value_or(SIZE_MAX), cols).has_value())
      throw shape_error("matrix_view: " + std::to_string(rows) + " rows of stride " + std::to_string(row_stride) +
                        " span more elements than fit in a 64-bit size");
  }
  [[nodiscard]] constexpr std::size_t size() const noexcept { return rows * cols; }
  [[nodiscard]] constexpr bool contiguous() const noexcept { return row_stride == cols || rows <= 1; }
  [[nodiscard]] constexpr T* row(std::size_t r) const noexcept { return data + r * row_stride; }
  [[nodiscard]] constexpr T& operator()(std::size_t r, std::size_t c) const noexcept { return data[r * row_stride + c]; }
};

}  // namespace minifloat
