#pragma once
// The quantized tensor and THE quantize engine: codes + scales + shape + the scheme that made
// them, owning (quantized_tensor) or not (quantized_tensor_view); quantize(),
// quantize_with_scales(), dequantize(), fake_quantize().
//
// Storage (row-major over the 2-D shape rows x cols):
//   codes   one byte per element for 6- and 8-bit formats; FP4 two per byte within each row
//           (element 2i in the low nibble, ceil(cols / 2) bytes a row); 16-bit formats two bytes
//           a code, little-endian.
//   scales  fp32, row-major over the scale grid: tensor 1x1; channel/token rows x 1;
//           block ceil(rows/R) x ceil(cols/C); empty for mx.
//   mx_scales  E8M0 codes, row-major over the tile grid: 1x32 (axis 1) rows x ceil(cols/32);
//           32x1 (axis 0) ceil(rows/32) x cols; 32x32 ceil(rows/32) x ceil(cols/32)
//           (quant/mx_tensor.hpp converts the 1-D layouts to the CANN paired layout).
//
// The engine behind quantize()/dequantize() is quant/quantize_engine.hpp: included here in
// header-only mode, compiled once into minifloat::kernels in compiled-kernels mode
// (core/config.hpp), where this header declares the entry points and stays light.
#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "../core/checked.hpp"
#include "../core/errors.hpp"
#include "../core/random.hpp"
#include "../core/config.hpp"
#include "../formats/format_list.hpp"
#include "../formats/packed.hpp"
#include "../simd/isa.hpp"
#include "matrix_view.hpp"
#include "scheme.hpp"

namespace minifloat {

/// How a quantize / dequantize call runs (never what it computes: every choice gives the same
/// bits).
struct quantize_options {
  /// The ISA level (simd/isa.hpp); simd::isa::scalar is the reference path.
  simd::isa path = simd::isa::automatic;
  /// Threads to split the rows over (0: all hardware threads).
  unsigned threads = 1;
};

namespace detail {

using minifloat::format_bits;

/// Bytes of one row of codes (shape_error when they do not fit in size_t: bfloat16 with 2^63 columns).
inline std::size_t code_row_bytes(format_id f, std::size_t cols) {
  return packed_bytes_checked(cols, format_bits(f), "quantized tensor: row of codes");
}

/// The tile one scale covers, as (rows, cols) of elements (mx: the E8M0 tile).
inline std::pair<std::size_t, std::size_t> scale_tile(const quant_scheme& s, std::size_t rows, std::size_t cols) {
  switch (s.gran) {
    case granularity::tensor: return {std::max<std::size_t>(rows, 1), std::max<std::size_t>(cols, 1)};
    case granularity::channel:
    case granularity::token: return {1, std::max<std::size_t>(cols, 1)};
    case granularity::block: return {s.block_rows, s.block_cols};
    case granularity::mx: return {mx_tile_rows(s.tile()), mx_tile_cols(s.tile())};
  }
  return {1, 1};
}

inline unsigned get_code(std::span<const std::uint8_t> row, int bits, std::size_t c) {
  if (bits == 4) return nibble_at(row, c);
  if (bits > 8) return row[2 * c] | (static_cast<unsigned>(row[2 * c + 1]) << 8);
  return row[c];
}

}  // namespace detail

/// Non-owning view of a quantized tensor; every size is checked against the scheme on creation.
struct quantized_tensor_view {
  quant_scheme scheme;
  std::size_t rows = 0, cols = 0;
  std::span<const std::uint8_t> codes;
  std::span<const float> scales;
  std::span<const std::uint8_t> mx_scales;

  [[nodiscard]] std::size_t scale_grid_rows() const {
    return rows == 0 || cols == 0 ? 0 : detail::ceil_div(rows, detail::scale_tile(scheme, rows, cols).first);
  }
  [[nodiscard]] std::size_t scale_grid_cols() const {
    return rows == 0 || cols == 0 ? 0 : detail::ceil_div(cols, detail::scale_tile(scheme, rows, cols).second);
  }
  /// Code bytes the shape needs (shape_error if that does not fit in size_t).
  [[nodiscard]] std::size_t code_bytes() const {
    return checked_mul(rows, detail::code_row_bytes(scheme.format, cols), "quantized tensor: rows x row bytes");
  }
  /// Scales the shape needs.
  [[nodiscard]] std::size_t scale_count() const {
    return checked_mul(scale_grid_rows(), scale_grid_cols(), "quantized tensor: scale grid");
  }

  void validate() const {
    scheme.validate();
    (void)checked_mul(rows, cols, "quantized tensor: rows x cols");
    const std::size_t want_codes = code_bytes();
    if (codes.size() != want_codes)
      throw shape_error("quantized tensor " + std::to_string(rows) + "x" + std::to_string(cols) + " of " +
                        std::string(to_string(scheme.format)) + " needs " + std::to_string(want_codes) +
                        " code bytes, got " + std::to_string(codes.size()));
    const std::size_t grid = scale_count();
    const bool mx = scheme.gran == granularity::mx;
    if ((mx ? mx_scales.size() : scales.size()) != grid)
      throw shape_error("quantized tensor " + std::to_string(rows) + "x" + std::to_string(cols) + " with " +
                        scheme.describe() + " needs " + std::to_string(grid) + (mx ? " E8M0" : " fp32") +
                        " scales (" + std::to_string(scale_grid_rows()) + "x" + std::to_string(scale_grid_cols()) +
                        "), got " + std::to_string(mx ? mx_scales.size() : scales.size()));
    if ((mx ? scales.size() : mx_scales.size()) != 0)
      throw shape_error(std::string("quantized tensor with ") + (mx ? "mx" : "fp32") + " scales must not carry " +
                        (mx ? "fp32" : "E8M0") + " scales");
  }
};

class quantized_tensor {
 public:
  quantized_tensor() = default;

  /// Adopts existing buffers (e.g. read from files); throws shape_error if any size is off and
  /// std::invalid_argument for an fp32 scale that is not finite and positive (a scales file holds
  /// whatever it holds; such a scale would dequantize to NaN, Inf or flipped signs).
  static quantized_tensor from_parts(const quant_scheme& s, std::size_t rows, std::size_t cols,
                                     std::vector<std::uint8_t> codes, std::vector<float> scales,
                                     std::vector<std::uint8_t> mx_scales) {
    quantized_tensor q;
    q.scheme_ = s, q.rows_ = rows, q.cols_ = cols;
    q.codes_ = std::move(codes), q.scales_ = std::move(scales), q.mx_scales_ = std::move(mx_scales);
    q.view().validate();
    for (std::size_t i = 0; i < q.scales_.size(); ++i)
      if (const float sc = q.scales_[i]; !(sc > 0.0f) || !std::isfinite(sc))
        throw std::invalid_argument("from_parts: scale " + std::to_string(i) + " is " + std::to_string(sc) +
                                    "; expected a finite, positive fp32 scale");
    return q;
  }

  [[nodiscard]] const quant_scheme& scheme() const noexcept { return scheme_; }
  [[nodiscard]] std::size_t rows() const noexcept { return rows_; }
  [[nodiscard]] std::size_t cols() const noexcept { return cols_; }
  [[nodiscard]] std::span<const std::uint8_t> codes() const noexcept { return codes_; }
  [[nodiscard]] std::span<const float> scales() const noexcept { return scales_; }
  [[nodiscard]] std::span<const std::uint8_t> mx_scales() const noexcept { return mx_scales_; }
  [[nodiscard]] quantized_tensor_view view() const noexcept {
    return {scheme_, rows_, cols_, codes_, scales_, mx_scales_};
  }
  /// Element (r, c)'s code, unpacked; std::out_of_range outside rows() x cols().
  [[nodiscard]] unsigned code(std::size_t r, std::size_t c) const {
    if (r >= rows_ || c >= cols_)
      throw std::out_of_range("quantized_tensor::code: element (" + std::to_string(r) + ", " + std::to_string(c) +
                              ") of a " + std::to_string(rows_) + "x" + std::to_string(cols_) + " tensor");
    const auto rb = detail::code_row_bytes(scheme_.format, cols_);
    return detail::get_code(std::span(codes_).subspan(r * rb, rb), format_bits(scheme_.format), c);
  }

 private:
  quant_scheme scheme_;
  std::size_t rows_ = 0, cols_ = 0;
  std::vector<std::uint8_t> codes_;
  std::vector<float> scales_;
  std::vector<std::uint8_t> mx_scales_;
};

// --- the entry points (definitions: quantize_engine.hpp) -----------------------------------------

/// Quantizes a rows x cols matrix under `s` (validated first). Rounding is s.round; the
/// conversion always saturates. `o` picks the path and thread count, never the result.
MINIFLOAT_KERNEL_API quantized_tensor quantize(matrix_view<const float> x, const quant_scheme& s,
                                               const quantize_options& o = {});

/// Static scaling: quantizes with the given fp32 scales (one per group, row-major over the scale
/// grid) instead of computing them: the delayed-scaling and calibration path, and the way to
/// re-quantize dequantized data exactly (quantize_with_scales(dequantize(q), s, q.scales())
/// reproduces q's codes; recomputing scales need not, since rounding can move amax into the
/// next binade). Not for mx, whose scales are always computed from the block. Finite stays
/// finite: a scale under which a finite element of its group would dequantize to Inf (2^127
/// with hifloat8, whose codes reach 2^15) is refused with std::invalid_argument before any work
/// (check_scales_keep_finite); scales whose product with the format's max is finite cost nothing.
MINIFLOAT_KERNEL_API quantized_tensor quantize_with_scales(matrix_view<const float> x, const quant_scheme& s,
                                                           std::span<const float> scales,
                                                           const quantize_options& o = {});

/// Writes rows * cols floats, row-major: code value times its scale, one float32 multiply.
MINIFLOAT_KERNEL_API void dequantize(const quantized_tensor_view& q, std::span<float> out,
                                     const quantize_options& o = {});

/// Throws std::invalid_argument if a caller's fp32 scales would turn a finite value of x into
/// Inf on dequantization (detail::check_given_scales_finite); part of quantize_with_scales'
/// checks (detail::check_static_scales, which backends run too), and what a cache holding one
/// static scale runs before it changes anything.
MINIFLOAT_KERNEL_API void check_scales_keep_finite(matrix_view<const float> x, const quant_scheme& s,
                                                   std::span<const float> scales, const quantize_options& o = {});

inline quantized_tensor quantize(std::span<const float> x, std::size_t rows, std::size_t cols, const quant_scheme& s,
                                 const quantize_options& o = {}) {
  return quantize(matrix_view<const float>(x, rows, cols), s, o);
}

inline quantized_tensor quantize_with_scales(std::span<const float> x, std::size_t rows, std::size_t cols,
                                             const quant_scheme& s, std::span<const float> scales,
                                             const quantize_options& o = {}) {
  return quantize_with_scales(matrix_view<const float>(x, rows, cols), s, scales, o);
}

[[nodiscard]] inline std::vector<float> dequantize(const quantized_tensor_view& q, const quantize_options& o = {}) {
  q.validate();
  std::vector<float> out(q.rows * q.cols);
  dequantize(q, out, o);
  return out;
}
[[nodiscard]] inline std::vector<float> dequantize(const quantized_tensor& q, const quantize_options& o = {}) {
  return dequantize(q.view(), o);
}

/// quantize then dequantize in one call: what the quantized tensor stands for, as floats.
[[nodiscard]] inline std::vector<float> fake_quantize(matrix_view<const float> x, const quant_scheme& s,
                                                      const quantize_options& o = {}) {
  return dequantize(quantize(x, s, o), o);
}
[[nodiscard]] inline std::vector<float> fake_quantize(std::span<const float> x, std::size_t rows, std::size_t cols,
                                                      const quant_scheme& s, const quantize_options& o = {}) {
  return fake_quantize(matrix_view<const float>(x, rows, cols), s, o);
}

}  // namespace minifloat

#if MINIFLOAT_DEFINE_KERNELS(MINIFLOAT_KERNELS_QUANT)
#include "quantize_engine.hpp"
#endif
