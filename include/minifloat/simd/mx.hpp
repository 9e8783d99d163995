#pragma once
// Bulk OCP MX quantize/dequantize on raw buffers, one E8M0 scale per tile (1x32, 32x1 or 32x32;
// formats/mx_scale.hpp mx_tile). Per tile: amax, the E8M0 scale by the rule, RNE + saturating
// element encode, FP4 nibble packing; a tile holding NaN or Inf gets the NaN scale 0xFF and zero
// codes. The bytes are those of simd/scalar/mx.hpp (the reference) on every ISA path.
//
//   mx_quantize<Elem>(x, rows, cols, tile, rule, codes, scales, options)
//       x: rows * cols float / bfloat16 / float16, row-major;
//       codes: rows * packed_bytes(cols, bits of Elem) bytes; scales: mx_scale_count(...) bytes
//   mx_dequantize<Elem>(codes, scales, rows, cols, tile, out, options)
//       out: rows * cols floats, float(P) * X
//
// noexcept, kernel_status as in bulk.hpp: null_pointer, size_mismatch (buffer sizes, or a
// rows * cols that does not fit in size_t), bad_argument (a rule that is not an MX rule),
// unsupported_isa. ISA paths: AVX2 (x86/avx2_mx.hpp), AVX-512 (x86/avx512_mx.hpp); on AArch64 the
// scalar reference. Dequantized NaN payloads: an element that is itself NaN (E4M3/E5M2) under a
// NaN scale is NaN on every path, but which of the two NaNs the multiply returns is not
// specified (x86 returns the first operand, and a compiler may commute the scalar multiply).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "../core/checked.hpp"
#include "../formats/float16.hpp"
#include "../formats/mx_scale.hpp"
#include "../formats/packed.hpp"
#include "bulk_dispatch.hpp"
#include "scalar/mx.hpp"
#if MINIFLOAT_SIMD_X86
#include "x86/avx2_mx.hpp"
#include "x86/avx512_mx.hpp"
#endif

namespace minifloat::simd {

/// Bytes of E8M0 scales an MX tensor of this shape and tile has, or nullopt if it overflows.
[[nodiscard]] constexpr std::optional<std::size_t> mx_scale_count(std::size_t rows, std::size_t cols,
                                                                  mx_tile tile) noexcept {
  if (rows == 0 || cols == 0) return std::size_t{0};
  return checked_mul_or(minifloat::detail::ceil_div(rows, mx_tile_rows(tile)),
                        minifloat::detail::ceil_div(cols, mx_tile_cols(tile)));
}

/// Bytes of element codes, or nullopt if it overflows.
template <mx_element Elem>
[[nodiscard]] constexpr std::optional<std::size_t> mx_code_count(std::size_t rows, std::size_t cols) noexcept {
  return checked_mul_or(rows, packed_bytes(cols, sizeof_bits<Elem>));
}

namespace detail {

template <mx_element Elem>
constexpr kernel_status mx_check(std::size_t rows, std::size_t cols, mx_tile tile, std::size_t values,
                                 std::size_t codes, std::size_t scales) noexcept {
  const auto n = checked_mul_or(rows, cols);
  const auto nc = mx_code_count<Elem>(rows, cols);
  const auto ns = mx_scale_count(rows, cols, tile);
  if (!n || !nc || !ns) return kernel_status::size_mismatch;
  if (values != *n || codes != *nc || scales != *ns) return kernel_status::size_mismatch;
  if (static_cast<unsigned>(tile) > static_cast<unsigned>(mx_tile::square32)) return kernel_status::bad_argument;
  return kernel_status::ok;
}

template <mx_element Elem, class In>
kernel_status mx_quantize_impl(std::span<const In> x, std::size_t rows, std::size_t cols, mx_tile tile, scale_rule rule,
                               std::span<std::uint8_t> codes, std::span<std::uint8_t> scales,
                               const bulk_options& o) noexcept {
  if (bad_span(x.data(), x.size()) || bad_span(codes.data(), codes.size()) || bad_span(scales.data(), scales.size()))
    return kernel_status::null_pointer;
  if (!is_mx_rule(rule)) return kernel_status::bad_argument;
  if (const auto s = mx_check<Elem>(rows, cols, tile, x.size(), codes.size(), scales.size()); s != kernel_status::ok)
    return s;
  switch (resolve(o.path)) {
    case isa::scalar:
      scalar::mx_quantize<Elem>(x.data(), rows, cols, tile, rule, codes.data(), scales.data());
      break;
#if MINIFLOAT_SIMD_X86
    case isa::avx2: avx2::mx_quantize<Elem>(x.data(), rows, cols, tile, rule, codes.data(), scales.data()); break;
    case isa::avx512: avx512::mx_quantize<Elem>(x.data(), rows, cols, tile, rule, codes.data(), scales.data()); break;
#endif
#if MINIFLOAT_SIMD_NEON
    case isa::neon: scalar::mx_quantize<Elem>(x.data(), rows, cols, tile, rule, codes.data(), scales.data()); break;
#endif
    default: return kernel_status::unsupported_isa;
  }
  return kernel_status::ok;
}

}  // namespace detail

/// x: float, bfloat16 or float16 values (any contiguous range of them).
template <mx_element Elem, bulk_input_range X>
[[nodiscard]] kernel_status mx_quantize(const X& x, std::size_t rows, std::size_t cols, mx_tile tile, scale_rule rule,
                                        std::span<std::uint8_t> codes, std::span<std::uint8_t> scales,
                                        const bulk_options& o = {}) noexcept {
  return detail::mx_quantize_impl<Elem>(std::span<const bulk_input_of<X>>(x), rows, cols, tile, rule, codes, scales, o);
}

template <mx_element Elem>
[[nodiscard]] kernel_status mx_dequantize(std::span<const std::uint8_t> codes, std::span<const std::uint8_t> scales,
                                          std::size_t rows, std::size_t cols, mx_tile tile, std::span<float> out,
                                          const bulk_options& o = {}) noexcept {
  if (detail::bad_span(out.data(), out.size()) || detail::bad_span(codes.data(), codes.size()) ||
      detail::bad_span(scales.data(), scales.size()))
    return kernel_status::null_pointer;
  if (const auto s = detail::mx_check<Elem>(rows, cols, tile, out.size(), codes.size(), scales.size());
      s != kernel_status::ok)
    return s;
  switch (detail::resolve(o.path)) {
    case isa::scalar: scalar::mx_dequantize<Elem>(codes.data(), scales.data(), rows, cols, tile, out.data()); break;
#if MINIFLOAT_SIMD_X86
    case isa::avx2: avx2::mx_dequantize<Elem>(codes.data(), scales.data(), rows, cols, tile, out.data()); break;
    case isa::avx512: avx512::mx_dequantize<Elem>(codes.data(), scales.data(), rows, cols, tile, out.data()); break;
#endif
#if MINIFLOAT_SIMD_NEON
    case isa::neon: scalar::mx_dequantize<Elem>(codes.data(), scales.data(), rows, cols, tile, out.data()); break;
#endif
    default: return kernel_status::unsupported_isa;
  }
  return kernel_status::ok;
}

}  // namespace minifloat::simd
