#pragma once
// Bulk OCP MX quantize/dequantize over the block layer's views (block/mx_tensor.hpp): the same
// bytes as mx_quantize_into / mx_dequantize, at SIMD speed. Per block of 32 along the view's
// axis: amax, the E8M0 scale by the view's rule, RNE + saturating element encode, FP4 nibble
// packing; a block holding NaN or Inf gets the NaN scale 0xFF and zero codes.
//
//   mx_quantize_into(x, out_view, options)   x: rows * cols float / bfloat16 / float16, row-major
//   mx_dequantize(view, out, options)        out: rows * cols floats, float(P) * X
//
// noexcept, kernel_status as in bulk.hpp (the views were validated when they were made).
// ISA paths: AVX2 (x86_avx2/mx.hpp); on AArch64 the NEON path runs the scalar twins for MX.
// Dequantized NaN payloads: an element that is itself NaN (E4M3/E5M2) under a NaN scale is NaN
// on every path, but which of the two NaNs the multiply returns is not specified (x86 returns
// the first operand, and a compiler may commute the scalar multiply).
#include <cstddef>
#include <cstdint>
#include <span>

#include "../quant/mx_tensor.hpp"
#include "bulk.hpp"
#include "scalar/mx.hpp"
#if MINIFLOAT_SIMD_X86
#include "avx2/mx.hpp"
#endif

namespace minifloat::simd::detail {
// MX kernels exist for AVX2; on AArch64 the NEON path runs the scalar twins.
#if MINIFLOAT_SIMD_X86
namespace mx_simd_ns = avx2;
#elif MINIFLOAT_SIMD_NEON
namespace mx_simd_ns = reference;
#endif
}  // namespace minifloat::simd::detail

namespace minifloat::simd {

namespace detail {

template <mx_element Elem, class In>
kernel_status mx_quantize_impl(std::span<const In> x, mx_tensor_mutable_view<Elem> out, const bulk_options& o) noexcept {
  if (bad_span(x.data(), x.size())) return kernel_status::null_pointer;
  if (x.size() != out.rows() * out.cols()) return kernel_status::size_mismatch;
  if (out.empty()) return resolve(o.path) == isa::automatic ? kernel_status::unsupported_isa : kernel_status::ok;
  MINIFLOAT_SIMD_DISPATCH(
      o.path,
      scalar::mx_quantize<Elem>(x.data(), out.rows(), out.cols(), out.axis(), out.rule(), out.codes().data(),
                                   out.scales().data()),
      mx_simd_ns::mx_quantize<Elem>(x.data(), out.rows(), out.cols(), out.axis(), out.rule(), out.codes().data(),
                                  out.scales().data()))
  return kernel_status::ok;
}

}  // namespace detail

template <mx_element Elem>
[[nodiscard]] kernel_status mx_quantize_into(std::span<const float> x, mx_tensor_mutable_view<Elem> out,
                                             const bulk_options& o = {}) noexcept {
  return detail::mx_quantize_impl<Elem>(x, out, o);
}
template <mx_element Elem>
[[nodiscard]] kernel_status mx_quantize_into(std::span<const bfloat16> x, mx_tensor_mutable_view<Elem> out,
                                             const bulk_options& o = {}) noexcept {
  return detail::mx_quantize_impl<Elem>(x, out, o);
}
template <mx_element Elem>
[[nodiscard]] kernel_status mx_quantize_into(std::span<const float16> x, mx_tensor_mutable_view<Elem> out,
                                             const bulk_options& o = {}) noexcept {
  return detail::mx_quantize_impl<Elem>(x, out, o);
}

template <mx_element Elem>
[[nodiscard]] kernel_status mx_dequantize(mx_tensor_view<Elem> q, std::span<float> out,
                                          const bulk_options& o = {}) noexcept {
  if (detail::bad_span(out.data(), out.size())) return kernel_status::null_pointer;
  if (out.size() != q.rows() * q.cols()) return kernel_status::size_mismatch;
  if (q.empty()) return detail::resolve(o.path) == isa::automatic ? kernel_status::unsupported_isa : kernel_status::ok;
  MINIFLOAT_SIMD_DISPATCH(
      o.path,
      scalar::mx_dequantize<Elem>(q.codes().data(), q.scales().data(), q.rows(), q.cols(), q.axis(), out.data()),
      detail::mx_simd_ns::mx_dequantize<Elem>(q.codes().data(), q.scales().data(), q.rows(), q.cols(), q.axis(), out.data()))
  return kernel_status::ok;
}
template <mx_element Elem>
[[nodiscard]] kernel_status mx_dequantize(mx_tensor_mutable_view<Elem> q, std::span<float> out,
                                          const bulk_options& o = {}) noexcept {
  return mx_dequantize(mx_tensor_view<Elem>(q), out, o);
}

}  // namespace minifloat::simd
