#pragma once
// 2-D OCP MX tensors: quantize / dequantize a row-major (rows, cols) fp32 (or bf16/fp16) matrix
// with one E8M0 scale per 32 consecutive elements along one axis, and the two scale layouts
// (plain, and the CANN paired layout). Block math: mx_block.hpp; scale rules: mx_scale.hpp.
//
// Axis. axis = 1: blocks run along a row (the last dim), e.g. A (m, k) with K last, the reduction
// axis of a GEMM's left operand. axis = 0: blocks run down a column, e.g. B (k, n).
//
// Codes: row-major (rows, cols). 8- and 6-bit formats: one code per byte (6-bit codes in the low
// bits). FP4: two codes per byte within each row, element 2i in the LOW nibble, 2i+1 in the HIGH
// nibble (PyTorch float4_e2m1fn_x2, CANN FLOAT4_E2M1; docs/formats/mx.md#fp4-nibble-packing), ceil(cols / 2) bytes
// per row; a row of odd length ends in a byte whose high nibble is 0.
//
// Plain scales: one byte per block, row-major over the block grid:
//   axis 1: (rows, ceil(cols / 32)), scale of (r, c) at r * ceil(cols / 32) + c / 32
//   axis 0: (ceil(rows / 32), cols), scale of (r, c) at (r / 32) * cols + c
// Short last block: when the blocked extent L (cols for axis 1, rows for axis 0) is not a
// multiple of 32, the last block of each row (column) holds L % 32 elements, and its scale comes
// from those elements only. Nothing outside the tensor is read or written.
//
// CANN paired scales (aclnnDynamicMxQuant "mxscale", aclnnQuantMatmulV5 MX scales; docs/formats/mx.md#scale-layouts): the block count along the axis is padded to even with a pad byte (0 by default, as the
// quantize op does), and the scales of blocks 2p and 2p+1 of the same row (column) are adjacent:
//   axis 1: (rows, ceil(kb / 2), 2), kb = ceil(cols / 32): each row's kb scales, padded to even.
//   axis 0: (ceil(mb / 2), cols, 2), mb = ceil(rows / 32): the (mb, cols) grid padded with pad
//           rows to (mb_pad, cols), viewed as (mb_pad / 2, 2, cols), transposed to
//           (mb_pad / 2, cols, 2) ("interleave every two rows").
// mx_scales_from_cann checks that every padding byte equals `pad`, so a successful
// plain -> CANN -> plain or CANN -> plain -> CANN round trip is the identity.
//
// Errors: shape_error (errors.hpp) for axis not 0/1, rows * cols overflowing size_t, and buffers
// whose size is not the one the shape needs (the message names both). Empty tensors (0 x n,
// n x 0) are valid and have empty buffers.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "../core/checked.hpp"
#include "../core/errors.hpp"
#include "../simd/mx.hpp"
#include "../formats/float16.hpp"
#include "../formats/packed.hpp"
#include "../formats/mx_block.hpp"
#include "../formats/mx_scale.hpp"

namespace minifloat {

namespace detail {

inline std::string mx_shape_string(std::size_t rows, std::size_t cols, int axis) {
  return std::to_string(rows) + "x" + std::to_string(cols) + " (axis " + std::to_string(axis) + ")";
}

/// Axis in {0, 1} and rows * cols representable.
inline void mx_check_shape(const char* who, std::size_t rows, std::size_t cols, int axis) {
  if (axis != 0 && axis != 1)
    throw_shape(std::string(who) + ": axis must be 0 (blocks down columns) or 1 (blocks along rows), got " +
                std::to_string(axis));
  if (cols != 0 && rows > std::numeric_limits<std::size_t>::max() / cols)
    throw_shape(std::string(who) + ": " + std::to_string(rows) + " x " + std::to_string(cols) +
                " elements overflow size_t");
}

[[noreturn]] inline void mx_throw_size(const char* who, const char* what, std::size_t got, std::size_t expected,
                                       const std::string& how) {
  throw_shape(std::string(who) + ": " + what + " needs " + std::to_string(expected) + " (" + how + "), got " +
              std::to_string(got));
}

/// x / out of a rows x cols tensor must hold rows * cols values.
inline void mx_check_values(const char* who, const char* what, std::size_t got, std::size_t rows, std::size_t cols) {
  if (got != rows * cols)
    mx_throw_size(who, what, got, rows * cols, "rows x cols = " + std::to_string(rows) + " x " + std::to_string(cols));
}

}  // namespace detail

/// Plain scale grid (scale rows, scale cols) of a (rows, cols) tensor blocked along `axis`.
/// Throws shape_error for a bad axis.
[[nodiscard]] inline std::array<std::size_t, 2> mx_scale_shape(std::size_t rows, std::size_t cols, int axis) {
  detail::mx_check_shape("mx_scale_shape", rows, cols, axis);
  return axis == 1 ? std::array<std::size_t, 2>{rows, detail::ceil_div(cols, mx_block_size)}
                   : std::array<std::size_t, 2>{detail::ceil_div(rows, mx_block_size), cols};
}

/// CANN paired scale shape: axis 1 (rows, ceil(kb / 2), 2); axis 0 (ceil(mb / 2), cols, 2).
[[nodiscard]] inline std::array<std::size_t, 3> mx_cann_scale_shape(std::size_t rows, std::size_t cols, int axis) {
  detail::mx_check_shape("mx_cann_scale_shape", rows, cols, axis);
  if (axis == 1) return {rows, detail::ceil_div(detail::ceil_div(cols, mx_block_size), 2), 2};
  return {detail::ceil_div(detail::ceil_div(rows, mx_block_size), 2), cols, 2};
}

/// Bytes of the codes of a (rows, cols) tensor of Elem (FP4: ceil(cols / 2) per row).
template <mx_element Elem>
[[nodiscard]] constexpr std::size_t mx_code_bytes(std::size_t rows, std::size_t cols) noexcept {
  return rows * packed_bytes(cols, sizeof_bits<Elem>);
}

/// A non-owning MX tensor: row-major codes and plain scales in separate spans (SoA), as kernels
/// and backends want them. Byte is `const std::uint8_t` (mx_tensor_view) or `std::uint8_t`
/// (mx_tensor_mutable_view, an output of mx_quantize_into).
template <mx_element Elem, class Byte>
class basic_mx_tensor_view {
  static_assert(std::is_same_v<std::remove_const_t<Byte>, std::uint8_t>);

 public:
  using element_type = Elem;

  /// The empty 0 x 0 tensor.
  constexpr basic_mx_tensor_view() noexcept = default;

  /// Checks the axis and that both spans have exactly the sizes the shape needs.
  basic_mx_tensor_view(std::size_t rows, std::size_t cols, int axis, scale_rule rule, std::span<Byte> codes,
                       std::span<Byte> scales)
      : rows_(rows), cols_(cols), axis_(axis), rule_(rule), codes_(codes), scales_(scales) {
    detail::mx_check_shape("mx_tensor_view", rows, cols, axis);
    const auto grid = mx_scale_shape(rows, cols, axis);
    const auto shape = [&] { return std::string(Elem::spec::name) + " " + detail::mx_shape_string(rows, cols, axis); };
    if (codes.size() != mx_code_bytes<Elem>(rows, cols))
      detail::mx_throw_size("mx_tensor_view", "codes", codes.size(), mx_code_bytes<Elem>(rows, cols),
                            shape() + ": " + std::to_string(rows) + " rows x " + std::to_string(row_bytes()) + " bytes");
    if (scales.size() != grid[0] * grid[1])
      detail::mx_throw_size("mx_tensor_view", "scales", scales.size(), grid[0] * grid[1],
                            shape() + ": " + std::to_string(grid[0]) + " x " + std::to_string(grid[1]) + " blocks");
  }

  /// A mutable view converts to a const one.
  template <class OtherByte>
    requires(std::is_const_v<Byte> && std::is_same_v<OtherByte, std::uint8_t>)
  constexpr basic_mx_tensor_view(basic_mx_tensor_view<Elem, OtherByte> v) noexcept  // NOLINT(google-explicit-constructor)
      : rows_(v.rows()), cols_(v.cols()), axis_(v.axis()), rule_(v.rule()), codes_(v.codes()), scales_(v.scales()) {}

  [[nodiscard]] constexpr std::size_t rows() const noexcept { return rows_; }
  [[nodiscard]] constexpr std::size_t cols() const noexcept { return cols_; }
  [[nodiscard]] constexpr std::size_t size() const noexcept { return rows_ * cols_; }
  [[nodiscard]] constexpr bool empty() const noexcept { return size() == 0; }
  [[nodiscard]] constexpr int axis() const noexcept { return axis_; }
  /// The rule the scales were made with (provenance; dequantization does not depend on it).
  [[nodiscard]] constexpr scale_rule rule() const noexcept { return rule_; }
  [[nodiscard]] constexpr std::span<Byte> codes() const noexcept { return codes_; }
  [[nodiscard]] constexpr std::span<Byte> scales() const noexcept { return scales_; }
  /// Bytes per row of codes.
  [[nodiscard]] constexpr std::size_t row_bytes() const noexcept { return packed_bytes(cols_, sizeof_bits<Elem>); }
  /// Columns of the plain scale grid (its row stride).
  [[nodiscard]] constexpr std::size_t scale_cols() const noexcept {
    return axis_ == 1 ? detail::ceil_div(cols_, mx_block_size) : cols_;
  }

  /// Element (r, c); r < rows(), c < cols() (unchecked).
  [[nodiscard]] constexpr Elem element(std::size_t r, std::size_t c) const noexcept {
    const std::span<const std::uint8_t> row = codes_.subspan(r * row_bytes(), row_bytes());
    if constexpr (sizeof_bits<Elem> == 4) return Elem::from_bits(nibble_at(row, c));
    else return Elem::from_bits(row[c]);
  }
  /// Scale code of the block holding (r, c) (unchecked).
  [[nodiscard]] constexpr std::uint8_t scale_code(std::size_t r, std::size_t c) const noexcept {
    return axis_ == 1 ? scales_[r * scale_cols() + c / mx_block_size] : scales_[(r / mx_block_size) * cols_ + c];
  }
  /// The dequantized value of (r, c), exact (unchecked).
  [[nodiscard]] constexpr float value(std::size_t r, std::size_t c) const noexcept {
    return mx_decode_element(element(r, c), scale_code(r, c));
  }

 private:
  std::size_t rows_ = 0;
  std::size_t cols_ = 0;
  int axis_ = 1;
  scale_rule rule_ = scale_rule::floor;
  std::span<Byte> codes_;
  std::span<Byte> scales_;
};

template <mx_element Elem>
using mx_tensor_view = basic_mx_tensor_view<Elem, const std::uint8_t>;
template <mx_element Elem>
using mx_tensor_mutable_view = basic_mx_tensor_view<Elem, std::uint8_t>;

namespace detail {
template <mx_element Elem, class In>
void mx_quantize_view(std::span<const In> x, mx_tensor_mutable_view<Elem> out, const simd::bulk_options& o) {
  mx_check_values("mx_quantize", "x", x.size(), out.rows(), out.cols());
  simd::check(simd::mx_quantize<Elem>(x, out.rows(), out.cols(), mx_tile_for_axis(out.axis()), out.rule(), out.codes(),
                                      out.scales(), o),
              "mx_quantize");
}
}  // namespace detail

/// Quantizes x (row-major, out.rows() x out.cols()) into out's codes and scales, blocked along
/// out.axis() with out.rule(), on the SIMD kernels (simd/mx.hpp: the bytes of the scalar
/// reference on every path; options.path picks one). Writes every byte of both buffers. Throws
/// shape_error if x.size() != rows * cols.
template <mx_element Elem>
void mx_quantize_into(std::span<const float> x, mx_tensor_mutable_view<Elem> out, const simd::bulk_options& o = {}) {
  detail::mx_quantize_view(x, out, o);
}
template <mx_element Elem>
void mx_quantize_into(std::span<const bfloat16> x, mx_tensor_mutable_view<Elem> out, const simd::bulk_options& o = {}) {
  detail::mx_quantize_view(x, out, o);
}
template <mx_element Elem>
void mx_quantize_into(std::span<const float16> x, mx_tensor_mutable_view<Elem> out, const simd::bulk_options& o = {}) {
  detail::mx_quantize_view(x, out, o);
}

/// Dequantizes every element into out (row-major, rows x cols): float(P) * X, exact; NaN for
/// elements of NaN-scale blocks. Throws shape_error if out.size() != rows * cols.
template <mx_element Elem, class Byte>
void mx_dequantize(basic_mx_tensor_view<Elem, Byte> q, std::span<float> out, const simd::bulk_options& o = {}) {
  detail::mx_check_values("mx_dequantize", "out", out.size(), q.rows(), q.cols());
  simd::check(simd::mx_dequantize<Elem>(std::span<const std::uint8_t>(q.codes()), std::span<const std::uint8_t>(q.scales()),
                                        q.rows(), q.cols(), mx_tile_for_axis(q.axis()), out, o),
              "mx_dequantize");
}

/// Plain scales -> CANN paired layout (header comment), padding with `pad` (0 as the CANN
/// quantize op writes; CATLASS's gen_data.py uses 127 = 1.0). Throws shape_error if `plain` does
/// not hold exactly the scale count of the shape.
[[nodiscard]] inline std::vector<std::uint8_t> mx_scales_to_cann(std::span<const std::uint8_t> plain, std::size_t rows,
                                                                 std::size_t cols, int axis, std::uint8_t pad = 0) {
  const auto grid = mx_scale_shape(rows, cols, axis);
  if (plain.size() != grid[0] * grid[1])
    detail::mx_throw_size("mx_scales_to_cann", "plain scales", plain.size(), grid[0] * grid[1],
                          detail::mx_shape_string(rows, cols, axis) + ": " + std::to_string(grid[0]) + " x " +
                              std::to_string(grid[1]) + " blocks");
  const auto cs = mx_cann_scale_shape(rows, cols, axis);
  std::vector<std::uint8_t> out(checked_product({cs[0], cs[1], cs[2]}, "mx_scales_to_cann: CANN scales"), pad);
  if (axis == 1) {
    // (rows, kb) -> (rows, kb_pad): each row padded to an even count.
    const std::size_t kb = grid[1], kb_pad = 2 * cs[1];
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t b = 0; b < kb; ++b) out[r * kb_pad + b] = plain[r * kb + b];
  } else {
    // (mb, cols) padded to (mb_pad, cols) = (mb_pad/2, 2, cols) -> (mb_pad/2, cols, 2).
    const std::size_t mb = grid[0];
    for (std::size_t b = 0; b < mb; ++b)
      for (std::size_t c = 0; c < cols; ++c) out[((b / 2) * cols + c) * 2 + (b % 2)] = plain[b * cols + c];
  }
  return out;
}

/// CANN paired layout -> plain scales. Throws shape_error if `cann` does not hold exactly
/// prod(mx_cann_scale_shape(rows, cols, axis)) bytes, or if a padding byte is not `pad` (so
/// accepting a buffer proves the conversion lossless).
[[nodiscard]] inline std::vector<std::uint8_t> mx_scales_from_cann(std::span<const std::uint8_t> cann, std::size_t rows,
                                                                   std::size_t cols, int axis, std::uint8_t pad = 0) {
  const auto cs = mx_cann_scale_shape(rows, cols, axis);
  if (cann.size() != checked_product({cs[0], cs[1], cs[2]}, "mx_scales_from_cann: CANN scales"))
    detail::mx_throw_size("mx_scales_from_cann", "CANN scales", cann.size(), cs[0] * cs[1] * cs[2],
                          detail::mx_shape_string(rows, cols, axis) + ": " + std::to_string(cs[0]) + " x " +
                              std::to_string(cs[1]) + " x 2");
  const auto grid = mx_scale_shape(rows, cols, axis);
  std::vector<std::uint8_t> plain(grid[0] * grid[1]);
  const auto bad_pad = [&](std::size_t at) {
    detail::throw_shape("mx_scales_from_cann: padding byte " + std::to_string(at) + " of the CANN scales of a " +
                        detail::mx_shape_string(rows, cols, axis) + " tensor is " + std::to_string(cann[at]) +
                        ", expected the pad byte " + std::to_string(pad));
  };
  if (axis == 1) {
    const std::size_t kb = grid[1], kb_pad = 2 * cs[1];
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t b = 0; b < kb; ++b) plain[r * kb + b] = cann[r * kb_pad + b];
      for (std::size_t b = kb; b < kb_pad; ++b)
        if (cann[r * kb_pad + b] != pad) bad_pad(r * kb_pad + b);
    }
  } else {
    const std::size_t mb = grid[0], mb_pad = 2 * cs[0];
    for (std::size_t b = 0; b < mb; ++b)
      for (std::size_t c = 0; c < cols; ++c) plain[b * cols + c] = cann[((b / 2) * cols + c) * 2 + (b % 2)];
    for (std::size_t b = mb; b < mb_pad; ++b)  // at most one padding row
      for (std::size_t c = 0; c < cols; ++c)
        if (const std::size_t at = ((b / 2) * cols + c) * 2 + (b % 2); cann[at] != pad) bad_pad(at);
  }
  return plain;
}

/// An owning MX tensor: codes and plain scales in two byte vectors (layout: header comment).
/// operator== compares shape, axis, rule and every byte.
template <mx_element Elem>
class mx_tensor {
 public:
  using element_type = Elem;

  /// The empty 0 x 0 tensor (axis 1, floor).
  mx_tensor() = default;

  /// A rows x cols tensor with every code and scale byte 0: a valid quantization of zeros.
  mx_tensor(std::size_t rows, std::size_t cols, int axis = 1, scale_rule rule = scale_rule::floor)
      : rows_(rows), cols_(cols), axis_(axis), rule_(rule) {
    detail::mx_check_shape("mx_tensor", rows, cols, axis);
    const auto grid = mx_scale_shape(rows, cols, axis);
    codes_.assign(mx_code_bytes<Elem>(rows, cols), 0);
    scales_.assign(grid[0] * grid[1], 0);
  }

  /// Copies existing codes and plain scales, after the same checks as mx_tensor_view (sizes,
  /// axis). Bytes are kept as given (bits above the element width are ignored when decoding).
  [[nodiscard]] static mx_tensor from_buffers(std::size_t rows, std::size_t cols, int axis, scale_rule rule,
                                              std::span<const std::uint8_t> codes,
                                              std::span<const std::uint8_t> scales) {
    const mx_tensor_view<Elem> v(rows, cols, axis, rule, codes, scales);  // validates
    mx_tensor t;
    t.rows_ = rows, t.cols_ = cols, t.axis_ = axis, t.rule_ = rule;
    t.codes_.assign(v.codes().begin(), v.codes().end());
    t.scales_.assign(v.scales().begin(), v.scales().end());
    return t;
  }

  [[nodiscard]] std::size_t rows() const noexcept { return rows_; }
  [[nodiscard]] std::size_t cols() const noexcept { return cols_; }
  [[nodiscard]] std::size_t size() const noexcept { return rows_ * cols_; }
  [[nodiscard]] bool empty() const noexcept { return size() == 0; }
  [[nodiscard]] int axis() const noexcept { return axis_; }
  [[nodiscard]] scale_rule rule() const noexcept { return rule_; }
  [[nodiscard]] std::span<const std::uint8_t> codes() const noexcept { return codes_; }
  [[nodiscard]] std::span<const std::uint8_t> scales() const noexcept { return scales_; }

  [[nodiscard]] mx_tensor_view<Elem> view() const {
    return {rows_, cols_, axis_, rule_, std::span<const std::uint8_t>(codes_), std::span<const std::uint8_t>(scales_)};
  }
  [[nodiscard]] mx_tensor_mutable_view<Elem> mutable_view() {
    return {rows_, cols_, axis_, rule_, std::span<std::uint8_t>(codes_), std::span<std::uint8_t>(scales_)};
  }

  /// Element (r, c), scale code of its block, and its value (unchecked indices).
  [[nodiscard]] Elem element(std::size_t r, std::size_t c) const { return view().element(r, c); }
  [[nodiscard]] std::uint8_t scale_code(std::size_t r, std::size_t c) const { return view().scale_code(r, c); }
  [[nodiscard]] float value(std::size_t r, std::size_t c) const { return view().value(r, c); }

  /// All values, row-major.
  [[nodiscard]] std::vector<float> dequantize() const {
    std::vector<float> out(size());
    mx_dequantize(view(), std::span<float>(out));
    return out;
  }

  /// The scales in the CANN paired layout (see the header comment).
  [[nodiscard]] std::vector<std::uint8_t> cann_scales(std::uint8_t pad = 0) const {
    return mx_scales_to_cann(scales_, rows_, cols_, axis_, pad);
  }

  friend bool operator==(const mx_tensor&, const mx_tensor&) = default;

 private:
  std::size_t rows_ = 0;
  std::size_t cols_ = 0;
  int axis_ = 1;
  scale_rule rule_ = scale_rule::floor;
  std::vector<std::uint8_t> codes_;
  std::vector<std::uint8_t> scales_;
};

/// Quantizes a row-major rows x cols tensor into a new mx_tensor (see mx_quantize_into).
/// Throws shape_error if x.size() != rows * cols or axis is not 0 or 1.
template <mx_element Elem, simd::bulk_input_range X>
[[nodiscard]] mx_tensor<Elem> mx_quantize(const X& x, std::size_t rows, std::size_t cols, int axis = 1,
                                          scale_rule rule = scale_rule::floor) {
  mx_tensor<Elem> t(rows, cols, axis, rule);
  mx_quantize_into(std::span<const simd::bulk_input_of<X>>(x), t.mutable_view());
  return t;
}

/// Dequantizes an owning tensor into out (rows * cols values, row-major).
template <mx_element Elem>
void mx_dequantize(const mx_tensor<Elem>& q, std::span<float> out) {
  mx_dequantize(q.view(), out);
}

}  // namespace minifloat
