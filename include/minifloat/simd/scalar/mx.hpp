#pragma once
// The scalar reference of MX quantization on raw buffers: the OCP MX block algorithm of
// formats/mx_block.hpp (docs/formats/mx.md#block-conversion) applied to every tile of a row-major
// (rows, cols) matrix. Every ISA path (simd::avx2, ...) provides the same two functions and is
// accepted only when it writes the same bytes.
//
//   mx_quantize<Elem>(x, rows, cols, tile, rule, codes, scales)
//       x: rows * cols values (float, bfloat16 or float16), row-major;
//       codes: rows * packed_bytes(cols, bits) bytes (FP4 two per byte within each row, element
//              2i in the low nibble; an odd row ends in a byte whose high nibble is 0);
//       scales: the E8M0 grid ceil(rows / tile_rows) x ceil(cols / tile_cols), row-major
//              (1x32: rows x ceil(cols/32); 32x1: ceil(rows/32) x cols; 32x32: both ceil).
//   mx_dequantize<Elem>(codes, scales, rows, cols, tile, out)
//       out: rows * cols floats, float(P) * X (one float32 multiply).
// Per tile: amax = the unsigned max of |x| bit patterns (NaN/Inf sort above every finite value
// and give the NaN scale 0xFF), the E8M0 code by the rule (mx_scale_code_from_abs_bits), then each
// element x * 2^(127 - code) computed in double (exact) and rounded once, RNE, saturating; under
// a NaN scale every code is +0. Tiles at the right and bottom edges hold what is left (a short
// block's scale comes from its own elements). Preconditions (checked by simd/mx.hpp): buffers
// of exactly those sizes, a rule that is an MX rule.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "../../formats/float16.hpp"
#include "../../formats/mx_block.hpp"
#include "../../formats/mx_scale.hpp"
#include "../../formats/packed.hpp"

namespace minifloat::simd::scalar {

template <mx_element Elem, class In>
void mx_quantize(const In* x, std::size_t rows, std::size_t cols, mx_tile tile, scale_rule rule, std::uint8_t* codes,
                 std::uint8_t* scales) noexcept {
  if (rows == 0 || cols == 0) return;
  const std::size_t tr = mx_tile_rows(tile), tc = mx_tile_cols(tile);
  const std::size_t grid_cols = minifloat::detail::ceil_div(cols, tc);
  const std::size_t row_bytes = packed_bytes(cols, sizeof_bits<Elem>);
  for (std::size_t r = 0; r < rows; ++r)  // FP4 rows are written nibble by nibble: start from 0
    for (std::size_t i = 0; i < row_bytes; ++i) codes[r * row_bytes + i] = 0;
  for (std::size_t r0 = 0; r0 < rows; r0 += tr) {
    const std::size_t r1 = rows - r0 < tr ? rows : r0 + tr;
    for (std::size_t c0 = 0; c0 < cols; c0 += tc) {
      const std::size_t c1 = cols - c0 < tc ? cols : c0 + tc;
      std::uint32_t amax = 0;
      for (std::size_t r = r0; r < r1; ++r)
        for (std::size_t c = c0; c < c1; ++c) {
          const std::uint32_t a = minifloat::detail::abs_bits(static_cast<float>(x[r * cols + c]));
          amax = amax < a ? a : amax;
        }
      const std::uint8_t code = minifloat::detail::mx_scale_code_from_abs_bits<Elem>(amax, rule);
      scales[(r0 / tr) * grid_cols + c0 / tc] = code;
      if (code == mx_nan_scale_code) continue;  // codes stay +0
      const double inv = minifloat::detail::mx_inverse_scale(code);
      for (std::size_t r = r0; r < r1; ++r) {
        for (std::size_t c = c0; c < c1; ++c) {
          const std::uint8_t q = minifloat::detail::mx_encode_scaled<Elem>(static_cast<float>(x[r * cols + c]), inv);
          if constexpr (sizeof_bits<Elem> == 4) set_nibble(std::span(codes + r * row_bytes, row_bytes), c, q);
          else codes[r * row_bytes + c] = q;
        }
      }
    }
  }
}

template <mx_element Elem>
void mx_dequantize(const std::uint8_t* codes, const std::uint8_t* scales, std::size_t rows, std::size_t cols,
                   mx_tile tile, float* out) noexcept {
  const std::size_t tr = mx_tile_rows(tile), tc = mx_tile_cols(tile);
  const std::size_t grid_cols = cols == 0 ? 0 : minifloat::detail::ceil_div(cols, tc);
  const std::size_t row_bytes = packed_bytes(cols, sizeof_bits<Elem>);
  for (std::size_t r = 0; r < rows; ++r) {
    const std::span<const std::uint8_t> row(codes + r * row_bytes, row_bytes);
    const std::uint8_t* const sr = scales + (r / tr) * grid_cols;
    for (std::size_t c = 0; c < cols; ++c) {
      const std::uint8_t code = sizeof_bits<Elem> == 4 ? nibble_at(row, c) : row[c];
      out[r * cols + c] = mx_decode_element(Elem::from_bits(code), sr[c / tc]);
    }
  }
}

}  // namespace minifloat::simd::scalar
