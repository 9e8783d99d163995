#pragma once
// Per-tensor, per-channel/token and block-scaled quantization (quant/scheme.hpp) on the bulk
// kernels: the same codes and fp32 scales as minifloat::quantize / quantize_with_scales and the
// same values as minifloat::dequantize (quant/quantized_tensor.hpp), bit for bit, for every
// granularity (mx goes to simd/mx.hpp). Per scale group: the finite amax of the group
// (bulk finite_amax over its row segments), group_scale<Elem>() (the very same scalar function),
// then quantize_scaled on each row segment (x / s in float32, saturating, the scheme's rounding).
//
// For rounding::stochastic, element (r, c) draws random_bits(options.seed, options.first_index +
// r * cols + c), like every bulk kernel; minifloat::quantize draws random_bits(scheme.seed,
// r * cols + c), so the two agree when options.seed == scheme.seed and first_index is 0.
//
// These are ordinary throwing functions, like the originals (shape_error, unsupported_error,
// std::invalid_argument for the same conditions, kernel errors through simd::check).
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "../quant/quantized_tensor.hpp"
#include "bulk.hpp"
#include "mx.hpp"

namespace minifloat::simd {

namespace detail {

/// Writes one row's codes (one per element in `row_codes`) into its slice of the code buffer.
template <class Elem>
void store_row_codes(std::span<const code_t<Elem>> row_codes, std::span<std::uint8_t> dst, const bulk_options& o) {
  if (row_codes.empty()) return;
  if constexpr (sizeof_bits<Elem> == 4) {
    check(pack_nibbles(row_codes, dst, o), "simd::quantize");
  } else if constexpr (sizeof(code_t<Elem>) == 2) {
    static_assert(std::endian::native == std::endian::little, "16-bit codes are stored little-endian");
    std::memcpy(dst.data(), row_codes.data(), row_codes.size_bytes());
  } else {
    std::memcpy(dst.data(), row_codes.data(), row_codes.size());
  }
}

/// One row's codes, one per element, from its slice of the code buffer.
template <class Elem>
void load_row_codes(std::span<const std::uint8_t> src, std::span<code_t<Elem>> row_codes, const bulk_options& o) {
  if (row_codes.empty()) return;
  if constexpr (sizeof_bits<Elem> == 4) {
    check(unpack_nibbles(src, row_codes, o), "simd::dequantize");
  } else {
    std::memcpy(row_codes.data(), src.data(), row_codes.size_bytes());
  }
}

template <class Elem>
void quantize_scaled_groups(matrix_view<const float> x, const quant_scheme& s, std::span<std::uint8_t> codes,
                            std::span<float> scales, std::span<const float> given_scales, const bulk_options& o) {
  const auto [tr, tc] = minifloat::detail::scale_tile(s, x.rows, x.cols);
  const std::size_t gr = x.rows == 0 ? 0 : minifloat::detail::ceil_div(x.rows, tr);
  const std::size_t gc = x.cols == 0 ? 0 : minifloat::detail::ceil_div(x.cols, tc);
  const std::size_t rb = minifloat::detail::code_row_bytes(s.format, x.cols);
  const conversion conv{s.round, overflow::saturate};
  std::vector<code_t<Elem>> row(x.cols);
  for (std::size_t bi = 0; bi < gr; ++bi) {
    const std::size_t r0 = bi * tr, r1 = std::min(x.rows, r0 + tr);
    // 1. the scales of this band of groups
    for (std::size_t bj = 0; bj < gc; ++bj) {
      const std::size_t c0 = bj * tc, c1 = std::min(x.cols, c0 + tc);
      float scale;
      if (given_scales.empty()) {
        float amax = 0.0f;
        for (std::size_t r = r0; r < r1; ++r) {
          float a = 0.0f;
          check(finite_amax(std::span<const float>(x.row(r) + c0, c1 - c0), a, o), "simd::quantize");
          amax = std::max(amax, a);
        }
        scale = group_scale<Elem>(amax, s.rule, s.target);
      } else {
        scale = given_scales[bi * gc + bj];
      }
      scales[bi * gc + bj] = scale;
    }
    // 2. the codes, row by row
    for (std::size_t r = r0; r < r1; ++r) {
      for (std::size_t bj = 0; bj < gc; ++bj) {
        const std::size_t c0 = bj * tc, c1 = std::min(x.cols, c0 + tc);
        bulk_options oc = o;
        oc.first_index = o.first_index + r * x.cols + c0;
        float unused = 0.0f;
        check(quantize_scaled<Elem>(std::span<const float>(x.row(r) + c0, c1 - c0),
                                    std::span<code_t<Elem>>(row).subspan(c0, c1 - c0), scales[bi * gc + bj], unused, conv, oc),
              "simd::quantize");
      }
      store_row_codes<Elem>(row, codes.subspan(r * rb, rb), o);
    }
  }
}

template <class Elem>
void dequantize_scaled_groups(const quantized_tensor_view& q, std::span<float> out, const bulk_options& o) {
  const auto [tr, tc] = minifloat::detail::scale_tile(q.scheme, q.rows, q.cols);
  const std::size_t gc = q.scale_grid_cols(), rb = minifloat::detail::code_row_bytes(q.scheme.format, q.cols);
  std::vector<code_t<Elem>> row(q.cols);
  for (std::size_t r = 0; r < q.rows; ++r) {
    load_row_codes<Elem>(q.codes.subspan(r * rb, rb), row, o);
    for (std::size_t bj = 0; bj < gc; ++bj) {
      const std::size_t c0 = bj * tc, c1 = std::min(q.cols, c0 + tc);
      check(dequantize_scaled<Elem>(std::span<const code_t<Elem>>(row).subspan(c0, c1 - c0),
                                    out.subspan(r * q.cols + c0, c1 - c0), q.scales[(r / tr) * gc + bj], o),
            "simd::dequantize");
    }
  }
}

}  // namespace detail

/// minifloat::quantize(x, s) on the bulk kernels (same codes and scales; see the header comment
/// for stochastic rounding).
[[nodiscard]] inline quantized_tensor quantize(matrix_view<const float> x, const quant_scheme& s,
                                               const bulk_options& o = {}) {
  s.validate();
  x.validate();
  std::vector<std::uint8_t> codes(x.rows * minifloat::detail::code_row_bytes(s.format, x.cols), 0);
  std::vector<float> scales;
  std::vector<std::uint8_t> mx_scales;
  visit_format(s.format, [&](auto t) {
    using Elem = typename decltype(t)::type;
    if constexpr (mx_element<Elem>) {
      if (s.gran == granularity::mx) {
        minifloat::detail::check_mx_rounding(s);
        std::vector<float> dense;
        const std::span<const float> src = minifloat::detail::contiguous_rows(x, dense);
        mx_tensor<Elem> m(x.rows, x.cols, s.axis, minifloat::detail::to_mx_rule(s.rule));
        check(mx_quantize_into<Elem>(src, m.mutable_view(), o), "simd::quantize");
        codes.assign(m.codes().begin(), m.codes().end());
        mx_scales.assign(m.scales().begin(), m.scales().end());
        return;
      }
    }
    const quantized_tensor_view shape{s, x.rows, x.cols, {}, {}, {}};
    scales.assign(shape.scale_grid_rows() * shape.scale_grid_cols(), 1.0f);
    detail::quantize_scaled_groups<Elem>(x, s, codes, scales, {}, o);
  });
  return quantized_tensor::from_parts(s, x.rows, x.cols, std::move(codes), std::move(scales), std::move(mx_scales));
}

inline quantized_tensor quantize(std::span<const float> x, std::size_t rows, std::size_t cols, const quant_scheme& s,
                                 const bulk_options& o = {}) {
  return quantize(matrix_view<const float>(x, rows, cols), s, o);
}

/// minifloat::quantize_with_scales(x, s, scales) on the bulk kernels.
[[nodiscard]] inline quantized_tensor quantize_with_scales(matrix_view<const float> x, const quant_scheme& s,
                                                           std::span<const float> scales, const bulk_options& o = {}) {
  minifloat::detail::check_static_scales(x, s, scales);
  std::vector<std::uint8_t> codes(x.rows * minifloat::detail::code_row_bytes(s.format, x.cols), 0);
  std::vector<float> out_scales(scales.begin(), scales.end());
  visit_format(s.format, [&](auto t) {
    detail::quantize_scaled_groups<typename decltype(t)::type>(x, s, codes, out_scales, scales, o);
  });
  return quantized_tensor::from_parts(s, x.rows, x.cols, std::move(codes), std::move(out_scales), {});
}

/// minifloat::dequantize(q, out) on the bulk kernels: rows * cols floats, row-major.
inline void dequantize(const quantized_tensor_view& q, std::span<float> out, const bulk_options& o = {}) {
  minifloat::detail::check_dequantize_output(q, out);
  visit_format(q.scheme.format, [&](auto t) {
    using Elem = typename decltype(t)::type;
    if constexpr (mx_element<Elem>) {
      if (q.scheme.gran == granularity::mx) {
        const mx_tensor_view<Elem> m(q.rows, q.cols, q.scheme.axis, minifloat::detail::to_mx_rule(q.scheme.rule),
                                     q.codes, q.mx_scales);
        check(mx_dequantize<Elem>(m, out, o), "simd::dequantize");
        return;
      }
    }
    detail::dequantize_scaled_groups<Elem>(q, out, o);
  });
}

[[nodiscard]] inline std::vector<float> dequantize(const quantized_tensor& q, const bulk_options& o = {}) {
  std::vector<float> out(q.rows() * q.cols());
  dequantize(q.view(), out, o);
  return out;
}

}  // namespace minifloat::simd
