#pragma once
// The quantized tensor: codes + scales + shape + the scheme that made them, owning
// (quantized_tensor) or not (quantized_tensor_view); quantize(), dequantize(), fake_quantize().
//
// Storage (row-major over the 2-D shape rows x cols):
//   codes   one byte per element for 6- and 8-bit formats; FP4 two per byte within each row
//           (element 2i in the low nibble, ceil(cols / 2) bytes a row); 16-bit formats two bytes
//           a code, little-endian.
//   scales  fp32, row-major over the scale grid: tensor 1x1; channel/token rows x 1;
//           block ceil(rows/R) x ceil(cols/C); empty for mx.
//   mx_scales  E8M0 codes in the plain layout: axis 1 -> rows x ceil(cols/32); axis 0 ->
//           ceil(rows/32) x cols (block/mx_tensor.hpp converts to the CANN paired layout).
#include <cstddef>
#include <cmath>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "mx_tensor.hpp"
#include "../formats/convert.hpp"
#include "../core/errors.hpp"
#include "../formats/format_list.hpp"
#include "../formats/packed.hpp"
#include "../core/random.hpp"
#include "matrix_view.hpp"
#include "scales.hpp"
#include "scheme.hpp"

namespace minifloat {

namespace detail {

inline int format_bits(format_id f) {
  return visit_format(f, [](auto t) { return sizeof_bits<typename decltype(t)::type>; });
}

/// Bytes of one row of codes.
inline std::size_t code_row_bytes(format_id f, std::size_t cols) { return packed_bytes(cols, format_bits(f)); }

/// The tile one fp32 scale covers, as (rows, cols) of elements.
inline std::pair<std::size_t, std::size_t> scale_tile(const quant_scheme& s, std::size_t rows, std::size_t cols) {
  switch (s.gran) {
    case granularity::tensor: return {std::max<std::size_t>(rows, 1), std::max<std::size_t>(cols, 1)};
    case granularity::channel:
    case granularity::token: return {1, std::max<std::size_t>(cols, 1)};
    case granularity::block: return {s.block_rows, s.block_cols};
    case granularity::mx: return s.axis == 1 ? std::pair<std::size_t, std::size_t>{1, 32} : std::pair<std::size_t, std::size_t>{32, 1};
  }
  return {1, 1};
}

inline void put_code(std::span<std::uint8_t> row, int bits, std::size_t c, unsigned code) {
  if (bits == 4) {
    auto& b = row[c / 2];
    b = static_cast<std::uint8_t>((c & 1) ? ((b & 0x0FU) | (code << 4)) : ((b & 0xF0U) | (code & 0xFU)));
  } else if (bits > 8) {
    row[2 * c] = static_cast<std::uint8_t>(code & 0xFFU);
    row[2 * c + 1] = static_cast<std::uint8_t>(code >> 8);
  } else {
    row[c] = static_cast<std::uint8_t>(code);
  }
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
    return rows == 0 ? 0 : detail::ceil_div(rows, detail::scale_tile(scheme, rows, cols).first);
  }
  [[nodiscard]] std::size_t scale_grid_cols() const {
    return cols == 0 ? 0 : detail::ceil_div(cols, detail::scale_tile(scheme, rows, cols).second);
  }

  void validate() const {
    scheme.validate();
    const std::size_t want_codes = rows * detail::code_row_bytes(scheme.format, cols);
    if (codes.size() != want_codes)
      throw shape_error("quantized tensor " + std::to_string(rows) + "x" + std::to_string(cols) + " of " +
                        std::string(to_string(scheme.format)) + " needs " + std::to_string(want_codes) +
                        " code bytes, got " + std::to_string(codes.size()));
    const std::size_t grid = scale_grid_rows() * scale_grid_cols();
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

  /// Adopts existing buffers (e.g. read from files); throws shape_error if any size is off.
  static quantized_tensor from_parts(const quant_scheme& s, std::size_t rows, std::size_t cols,
                                     std::vector<std::uint8_t> codes, std::vector<float> scales,
                                     std::vector<std::uint8_t> mx_scales) {
    quantized_tensor q;
    q.scheme_ = s, q.rows_ = rows, q.cols_ = cols;
    q.codes_ = std::move(codes), q.scales_ = std::move(scales), q.mx_scales_ = std::move(mx_scales);
    q.view().validate();
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
  /// Element (r, c)'s code, unpacked.
  [[nodiscard]] unsigned code(std::size_t r, std::size_t c) const {
    const auto rb = detail::code_row_bytes(scheme_.format, cols_);
    return detail::get_code(std::span(codes_).subspan(r * rb, rb), detail::format_bits(scheme_.format), c);
  }

 private:
  friend quantized_tensor quantize(matrix_view<const float>, const quant_scheme&);
  friend quantized_tensor quantize_with_scales(matrix_view<const float>, const quant_scheme&, std::span<const float>);
  quant_scheme scheme_;
  std::size_t rows_ = 0, cols_ = 0;
  std::vector<std::uint8_t> codes_;
  std::vector<float> scales_;
  std::vector<std::uint8_t> mx_scales_;
};

namespace detail {

/// With `given_scales` empty the scales are computed from each group's amax; otherwise they are
/// used as they are (static scaling).
template <class Elem>
void quantize_scaled(matrix_view<const float> x, const quant_scheme& s, std::span<std::uint8_t> codes,
                     std::span<float> scales, std::span<const float> given_scales = {}) {
  const auto [tr, tc] = scale_tile(s, x.rows, x.cols);
  const std::size_t gr = x.rows == 0 ? 0 : ceil_div(x.rows, tr), gc = x.cols == 0 ? 0 : ceil_div(x.cols, tc);
  const std::size_t rb = code_row_bytes(s.format, x.cols);
  const conversion conv{s.round, overflow::saturate};
  constexpr int bits = sizeof_bits<Elem>;
  for (std::size_t bi = 0; bi < gr; ++bi)
    for (std::size_t bj = 0; bj < gc; ++bj) {
      const std::size_t r0 = bi * tr, r1 = std::min(x.rows, r0 + tr), c0 = bj * tc, c1 = std::min(x.cols, c0 + tc);
      float scale;
      if (given_scales.empty()) {
        float amax = 0.0f;
        for (std::size_t r = r0; r < r1; ++r) amax = std::max(amax, finite_amax(std::span(x.row(r) + c0, c1 - c0)));
        scale = group_scale<Elem>(amax, s.rule, s.target);
      } else {
        scale = given_scales[bi * gc + bj];
      }
      scales[bi * gc + bj] = scale;
      for (std::size_t r = r0; r < r1; ++r) {
        auto row = codes.subspan(r * rb, rb);
        for (std::size_t c = c0; c < c1; ++c) {
          const std::uint32_t rnd = s.round == rounding::stochastic ? random_bits(s.seed, r * x.cols + c) : 0U;
          put_code(row, bits, c, narrow<Elem>(x(r, c) / scale, conv, rnd).bits());
        }
      }
    }
}

template <class Elem>
void dequantize_scaled(const quantized_tensor_view& q, std::span<float> out) {
  const auto [tr, tc] = scale_tile(q.scheme, q.rows, q.cols);
  const std::size_t gc = q.scale_grid_cols(), rb = code_row_bytes(q.scheme.format, q.cols);
  constexpr int bits = sizeof_bits<Elem>;
  for (std::size_t r = 0; r < q.rows; ++r) {
    const auto row = q.codes.subspan(r * rb, rb);
    for (std::size_t c = 0; c < q.cols; ++c) {
      const float v = static_cast<float>(Elem::from_bits(static_cast<typename Elem::storage_type>(get_code(row, bits, c))));
      out[r * q.cols + c] = v * q.scales[(r / tr) * gc + c / tc];
    }
  }
}

/// x as one contiguous row-major span: x itself when it already is, else a copy made in `storage`
/// (MX quantization runs over dense rows).
inline std::span<const float> contiguous_rows(matrix_view<const float> x, std::vector<float>& storage) {
  if (x.contiguous()) return std::span(x.data, x.size());
  storage.clear();
  storage.reserve(x.size());
  for (std::size_t r = 0; r < x.rows; ++r) storage.insert(storage.end(), x.row(r), x.row(r) + x.cols);
  return storage;
}

/// quantize()'s rule for MX elements (shared with simd::quantize): OCP MX 6.3 rounds them to
/// nearest even, so any other rounding is refused rather than silently replaced.
inline void check_mx_rounding(const quant_scheme& s) {
  if (s.round != rounding::nearest && s.round != rounding::nearest_even)
    throw unsupported_error("MX elements are rounded to nearest even (OCP MX 6.3); got rounding " +
                            std::string(to_string(s.round)));
}

/// quantize_with_scales' argument checks (shared with simd::quantize_with_scales): a valid
/// fp32-scaled scheme and matrix, one finite positive scale per group of the scale grid.
inline void check_static_scales(matrix_view<const float> x, const quant_scheme& s, std::span<const float> scales) {
  s.validate();
  x.validate();
  if (s.gran == granularity::mx)
    throw unsupported_error("quantize_with_scales takes fp32-scaled schemes; mx scales come from each block");
  const quantized_tensor_view shape{s, x.rows, x.cols, {}, {}, {}};
  const std::size_t grid = shape.scale_grid_rows() * shape.scale_grid_cols();
  if (scales.size() != grid)
    throw shape_error("quantize_with_scales: " + s.describe() + " on " + std::to_string(x.rows) + "x" +
                      std::to_string(x.cols) + " needs " + std::to_string(grid) + " scales, got " +
                      std::to_string(scales.size()));
  for (const float sc : scales)
    if (!(sc > 0.0f) || !std::isfinite(sc))
      throw std::invalid_argument("quantize_with_scales: scales must be finite and positive, got " + std::to_string(sc));
}

/// dequantize()'s argument checks (shared with simd::dequantize): a valid tensor view and
/// rows * cols output floats.
inline void check_dequantize_output(const quantized_tensor_view& q, std::span<const float> out) {
  q.validate();
  if (out.size() != q.rows * q.cols)
    throw shape_error("dequantize: output needs " + std::to_string(q.rows * q.cols) + " floats (" +
                      std::to_string(q.rows) + "x" + std::to_string(q.cols) + "), got " + std::to_string(out.size()));
}

inline mx_scale_rule to_mx_rule(scale_rule r) {
  switch (r) {
    case scale_rule::rceil: return mx_scale_rule::rceil;
    case scale_rule::ceil: return mx_scale_rule::ceil;
    case scale_rule::even: return mx_scale_rule::even;
    default: return mx_scale_rule::floor;
  }
}

}  // namespace detail

/// Quantizes a rows x cols matrix under `s` (validated first). Rounding is s.round; the
/// conversion always saturates.
inline quantized_tensor quantize(matrix_view<const float> x, const quant_scheme& s) {
  s.validate();
  x.validate();
  quantized_tensor q;
  q.scheme_ = s, q.rows_ = x.rows, q.cols_ = x.cols;
  q.codes_.assign(x.rows * detail::code_row_bytes(s.format, x.cols), 0);
  visit_format(s.format, [&](auto t) {
    using Elem = typename decltype(t)::type;
    if constexpr (mx_element<Elem>) {
      if (s.gran == granularity::mx) {
        detail::check_mx_rounding(s);
        std::vector<float> dense;
        const std::span<const float> src = detail::contiguous_rows(x, dense);
        auto m = mx_quantize<Elem>(src, x.rows, x.cols, s.axis, detail::to_mx_rule(s.rule));
        q.codes_.assign(m.codes().begin(), m.codes().end());
        q.mx_scales_.assign(m.scales().begin(), m.scales().end());
        return;
      }
    }
    const auto v = q.view();
    q.scales_.assign(v.scale_grid_rows() * v.scale_grid_cols(), 1.0f);
    detail::quantize_scaled<Elem>(x, s, q.codes_, q.scales_);
  });
  return q;
}

/// Static scaling: quantizes with the given fp32 scales (one per group, row-major over the scale
/// grid) instead of computing them: the delayed-scaling and calibration path, and the way to
/// re-quantize dequantized data exactly (quantize_with_scales(dequantize(q), s, q.scales())
/// reproduces q's codes; recomputing scales need not, since rounding can move amax into the
/// next binade). Not for mx, whose scales are always computed from the block.
inline quantized_tensor quantize_with_scales(matrix_view<const float> x, const quant_scheme& s,
                                             std::span<const float> scales) {
  detail::check_static_scales(x, s, scales);
  quantized_tensor q;
  q.scheme_ = s, q.rows_ = x.rows, q.cols_ = x.cols;
  q.codes_.assign(x.rows * detail::code_row_bytes(s.format, x.cols), 0);
  q.scales_.assign(scales.begin(), scales.end());
  visit_format(s.format, [&](auto t) {
    detail::quantize_scaled<typename decltype(t)::type>(x, s, q.codes_, q.scales_, scales);
  });
  return q;
}

inline quantized_tensor quantize(std::span<const float> x, std::size_t rows, std::size_t cols, const quant_scheme& s) {
  return quantize(matrix_view<const float>(x, rows, cols), s);
}

/// Writes rows * cols floats, row-major.
inline void dequantize(const quantized_tensor_view& q, std::span<float> out) {
  detail::check_dequantize_output(q, out);
  visit_format(q.scheme.format, [&](auto t) {
    using Elem = typename decltype(t)::type;
    if constexpr (mx_element<Elem>) {
      if (q.scheme.gran == granularity::mx) {
        const auto m = mx_tensor_view<Elem>(q.rows, q.cols, q.scheme.axis, detail::to_mx_rule(q.scheme.rule), q.codes,
                                            q.mx_scales);
        mx_dequantize(m, out);
        return;
      }
    }
    detail::dequantize_scaled<Elem>(q, out);
  });
}

[[nodiscard]] inline std::vector<float> dequantize(const quantized_tensor_view& q) {
  std::vector<float> out(q.rows * q.cols);
  dequantize(q, out);
  return out;
}
[[nodiscard]] inline std::vector<float> dequantize(const quantized_tensor& q) { return dequantize(q.view()); }

/// quantize then dequantize in one call: what the quantized tensor stands for, as floats.
[[nodiscard]] inline std::vector<float> fake_quantize(matrix_view<const float> x, const quant_scheme& s) {
  return dequantize(quantize(x, s));
}
[[nodiscard]] inline std::vector<float> fake_quantize(std::span<const float> x, std::size_t rows, std::size_t cols,
                                                      const quant_scheme& s) {
  return fake_quantize(matrix_view<const float>(x, rows, cols), s);
}

}  // namespace minifloat
