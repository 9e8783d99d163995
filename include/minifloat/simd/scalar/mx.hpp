#pragma once
// Scalar twins of the MX kernels: the block layer itself (block/mx_tensor.hpp), called on raw
// buffers. simd::avx2 provides the same two functions and must give the same bytes.
//
//   mx_quantize<Elem>(x, rows, cols, axis, rule, codes, scales)
//       x: rows * cols values, row-major; codes: rows * packed_bytes(cols, bits) bytes (FP4 two
//       per byte within each row); scales: the plain E8M0 grid of mx_scale_shape(rows, cols, axis).
//   mx_dequantize<Elem>(codes, scales, rows, cols, axis, out)
//       out: rows * cols floats, float(P) * X.
// Preconditions (checked by simd/mx.hpp): axis 0 or 1, buffers of exactly those sizes.
#include <cstddef>
#include <cstdint>
#include <span>

#include "../../quant/mx_tensor.hpp"

namespace minifloat::simd::scalar {

template <mx_element Elem, class In>
void mx_quantize(const In* x, std::size_t rows, std::size_t cols, int axis, mx_scale_rule rule, std::uint8_t* codes,
                 std::uint8_t* scales) noexcept {
  const auto grid = mx_scale_shape(rows, cols, axis);
  const mx_tensor_mutable_view<Elem> out(rows, cols, axis, rule, std::span(codes, mx_code_bytes<Elem>(rows, cols)),
                                         std::span(scales, grid[0] * grid[1]));
  mx_quantize_into(std::span<const In>(x, rows * cols), out);
}

template <mx_element Elem>
void mx_dequantize(const std::uint8_t* codes, const std::uint8_t* scales, std::size_t rows, std::size_t cols, int axis,
                   float* out) noexcept {
  const auto grid = mx_scale_shape(rows, cols, axis);
  const mx_tensor_view<Elem> q(rows, cols, axis, mx_scale_rule::floor, std::span(codes, mx_code_bytes<Elem>(rows, cols)),
                               std::span(scales, grid[0] * grid[1]));
  minifloat::mx_dequantize(q, std::span(out, rows * cols));
}

}  // namespace minifloat::simd::scalar
