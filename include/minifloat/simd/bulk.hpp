#pragma once
// Bulk quantize/dequantize over spans: any length, any alignment, every format, every rounding
// mode and overflow policy of policy.hpp, inputs float32 / bfloat16 / float16. Each call runs on
// one thread (simd/threads.hpp splits a span over threads) and picks its ISA path as
// bulk_dispatch.hpp describes (where the definitions are: included here in header-only mode,
// compiled once into minifloat::kernels in compiled-kernels mode, core/config.hpp); every path gives the bits of the scalar reference (convert.hpp).
//
//   encode<T>(x, codes, conversion, options)          codes[i] = encode<T>(x[i], conversion, r_i)
//   decode<T>(codes, out)                             out[i] = float(T::from_bits(codes[i]))
//   encode_fp4_packed / decode_fp4_packed             the same, two FP4 codes per byte (packed.hpp)
//   quantize_scaled<T>(x, codes, s, amax, conversion) codes[i] = encode<T>(x[i] / s) (float32
//                                                     division) and amax = max |x| over the finite
//                                                     x, in one pass (delayed scaling's QuantMax)
//   dequantize_scaled<T>(codes, out, s)               out[i] = float(T::from_bits(codes[i])) * s
//   finite_amax(x, amax)                              amax alone (quant/scales.hpp finite_amax)
//   pack_nibbles / unpack_nibbles                     FP4 codes <-> nibble pairs
// r_i = random_bits(options.seed, options.first_index + i) for rounding::stochastic, so results
// do not depend on the ISA path or on how a span is split.
//
// Every function is noexcept and returns kernel_status (options.hpp): null_pointer for a null
// span with a non-zero size, size_mismatch when the output does not have the input's length
// (FP4 packed: (n + 1) / 2 bytes), unsupported_isa for a forced path the CPU lacks. Outputs are
// untouched unless the status is ok. simd::check(status, "who") throws instead.
//
// ISA paths (docs/simd.md): simd::scalar (the ground truth), simd::avx2 (AVX2 + FMA + F16C;
// chosen at run time, or statically with -mavx2 -mfma -mf16c), simd::avx512 (the avx512 level
// of isa.hpp, chosen at run time) and simd::neon (AArch64, static). bulk_options::path caps the
// level (isa::avx2 runs the AVX2 kernels on an AVX-512 CPU).
//
// Floating-point environment: encode/decode use integer arithmetic, plus on the AVX-512 path a
// float32 add with embedded rounding ({rn-sae}) for ties-to-even into the formats of at most 8
// bits, so they do not depend on the rounding mode; FTZ/DAZ do not matter either (DAZ zeroes only
// float32 subnormal inputs, which round to zero in those formats). The scaled functions divide
// (or multiply by an exact reciprocal) in float32 exactly as the scalar reference does, so they
// agree under any rounding mode. Under DAZ (-ffast-math on x86) the scalar reference itself
// changes: widening a float32 subnormal to double reads it as zero, while the integer kernels
// encode its bits, so the paths can differ on subnormal inputs there (bf16, fp16 and directed
// modes). In the default environment every path is bit-identical.
#include <cstddef>
#include <cstdint>
#include <ranges>
#include <span>
#include <type_traits>

#include "../formats/e8m0.hpp"
#include "../formats/float16.hpp"
#include "../formats/float8.hpp"
#include "../formats/hifloat8.hpp"
#include "../formats/mx_elements.hpp"
#include "../core/config.hpp"
#include "options.hpp"
#include "isa.hpp"

namespace minifloat::simd {

/// The element types a bulk encoder reads.
template <class T>
concept bulk_input = std::same_as<T, float> || std::same_as<T, bfloat16> || std::same_as<T, float16>;

/// A contiguous range of bulk inputs (a std::vector, std::span or array of float, bfloat16 or
/// float16), for the functions that take any of the three input types in one signature.
template <class X>
using bulk_input_of = std::remove_cv_t<std::ranges::range_value_t<X>>;
template <class X>
concept bulk_input_range = std::ranges::contiguous_range<X> && bulk_input<bulk_input_of<X>>;

/// The storage of T's codes in a bulk buffer (FP4/FP6: one code per byte, in the low bits).
template <class T>
using code_t = typename T::storage_type;

namespace detail {

// The dispatched kernels behind the functions below, defined in bulk_dispatch.hpp (and
// instantiated there for every format and input type in compiled-kernels mode).
template <class T, class In>
MINIFLOAT_KERNEL_API kernel_status encode_impl(std::span<const In> x, std::span<code_t<T>> out, conversion c,
                                               const bulk_options& o) noexcept;
template <class T, class In>
MINIFLOAT_KERNEL_API kernel_status quantize_scaled_impl(std::span<const In> x, std::span<code_t<T>> out, float scale,
                                                        float& amax, conversion c, const bulk_options& o) noexcept;
template <class T>
MINIFLOAT_KERNEL_API kernel_status decode_impl(std::span<const code_t<T>> codes, std::span<float> out,
                                               const bulk_options& o) noexcept;
template <class T>
MINIFLOAT_KERNEL_API kernel_status dequantize_scaled_impl(std::span<const code_t<T>> codes, std::span<float> out,
                                                          float scale, const bulk_options& o) noexcept;
template <class In>
MINIFLOAT_KERNEL_API kernel_status encode_fp4_packed_impl(std::span<const In> x, std::span<std::uint8_t> packed,
                                                          conversion c, const bulk_options& o) noexcept;
template <class In>
MINIFLOAT_KERNEL_API kernel_status quantize_scaled_fp4_packed_impl(std::span<const In> x, std::span<std::uint8_t> packed,
                                                                   float scale, float& amax, conversion c,
                                                                   const bulk_options& o) noexcept;
template <class In>
MINIFLOAT_KERNEL_API kernel_status finite_amax_impl(std::span<const In> x, float& amax, const bulk_options& o) noexcept;

}  // namespace detail

// --- encode --------------------------------------------------------------------------------------

template <class T>
[[nodiscard]] kernel_status encode(std::span<const float> x, std::span<code_t<T>> codes, conversion c = {},
                                   const bulk_options& o = {}) noexcept {
  return detail::encode_impl<T>(x, codes, c, o);
}
template <class T>
[[nodiscard]] kernel_status encode(std::span<const bfloat16> x, std::span<code_t<T>> codes, conversion c = {},
                                   const bulk_options& o = {}) noexcept {
  return detail::encode_impl<T>(x, codes, c, o);
}
template <class T>
[[nodiscard]] kernel_status encode(std::span<const float16> x, std::span<code_t<T>> codes, conversion c = {},
                                   const bulk_options& o = {}) noexcept {
  return detail::encode_impl<T>(x, codes, c, o);
}

/// FP4 (float4_e2m1fn) codes two per byte; `packed` holds (x.size() + 1) / 2 bytes.
[[nodiscard]] inline kernel_status encode_fp4_packed(std::span<const float> x, std::span<std::uint8_t> packed,
                                                     conversion c = {}, const bulk_options& o = {}) noexcept {
  return detail::encode_fp4_packed_impl(x, packed, c, o);
}
[[nodiscard]] inline kernel_status encode_fp4_packed(std::span<const bfloat16> x, std::span<std::uint8_t> packed,
                                                     conversion c = {}, const bulk_options& o = {}) noexcept {
  return detail::encode_fp4_packed_impl(x, packed, c, o);
}
[[nodiscard]] inline kernel_status encode_fp4_packed(std::span<const float16> x, std::span<std::uint8_t> packed,
                                                     conversion c = {}, const bulk_options& o = {}) noexcept {
  return detail::encode_fp4_packed_impl(x, packed, c, o);
}

// --- decode --------------------------------------------------------------------------------------

template <class T>
[[nodiscard]] kernel_status decode(std::span<const code_t<T>> codes, std::span<float> out,
                                   const bulk_options& o = {}) noexcept {
  return detail::decode_impl<T>(codes, out, o);
}

/// `packed` holds (out.size() + 1) / 2 bytes of FP4 nibble pairs.
[[nodiscard]] MINIFLOAT_KERNEL_API kernel_status decode_fp4_packed(std::span<const std::uint8_t> packed,
                                                                   std::span<float> out,
                                                                   const bulk_options& o = {}) noexcept;

// --- scaled --------------------------------------------------------------------------------------

/// codes[i] = encode<T>(x[i] / scale, c) with the division in float32, and amax = max |x[i]| over
/// the finite x[i] (0 if none), in one pass. The default conversion saturates, as quantize() does.
template <class T>
[[nodiscard]] kernel_status quantize_scaled(std::span<const float> x, std::span<code_t<T>> codes, float scale,
                                            float& amax, conversion c = saturating,
                                            const bulk_options& o = {}) noexcept {
  return detail::quantize_scaled_impl<T>(x, codes, scale, amax, c, o);
}
template <class T>
[[nodiscard]] kernel_status quantize_scaled(std::span<const bfloat16> x, std::span<code_t<T>> codes, float scale,
                                            float& amax, conversion c = saturating,
                                            const bulk_options& o = {}) noexcept {
  return detail::quantize_scaled_impl<T>(x, codes, scale, amax, c, o);
}
template <class T>
[[nodiscard]] kernel_status quantize_scaled(std::span<const float16> x, std::span<code_t<T>> codes, float scale,
                                            float& amax, conversion c = saturating,
                                            const bulk_options& o = {}) noexcept {
  return detail::quantize_scaled_impl<T>(x, codes, scale, amax, c, o);
}

[[nodiscard]] inline kernel_status quantize_scaled_fp4_packed(std::span<const float> x, std::span<std::uint8_t> packed,
                                                              float scale, float& amax, conversion c = saturating,
                                                              const bulk_options& o = {}) noexcept {
  return detail::quantize_scaled_fp4_packed_impl(x, packed, scale, amax, c, o);
}
[[nodiscard]] inline kernel_status quantize_scaled_fp4_packed(std::span<const bfloat16> x,
                                                              std::span<std::uint8_t> packed, float scale, float& amax,
                                                              conversion c = saturating,
                                                              const bulk_options& o = {}) noexcept {
  return detail::quantize_scaled_fp4_packed_impl(x, packed, scale, amax, c, o);
}
[[nodiscard]] inline kernel_status quantize_scaled_fp4_packed(std::span<const float16> x,
                                                              std::span<std::uint8_t> packed, float scale, float& amax,
                                                              conversion c = saturating,
                                                              const bulk_options& o = {}) noexcept {
  return detail::quantize_scaled_fp4_packed_impl(x, packed, scale, amax, c, o);
}

/// out[i] = float(T::from_bits(codes[i])) * scale (one float32 multiply, like dequantize()).
template <class T>
[[nodiscard]] kernel_status dequantize_scaled(std::span<const code_t<T>> codes, std::span<float> out, float scale,
                                              const bulk_options& o = {}) noexcept {
  return detail::dequantize_scaled_impl<T>(codes, out, scale, o);
}

[[nodiscard]] MINIFLOAT_KERNEL_API kernel_status dequantize_scaled_fp4_packed(std::span<const std::uint8_t> packed,
                                                                              std::span<float> out, float scale,
                                                                              const bulk_options& o = {}) noexcept;

/// max |x[i]| over the finite x[i] (NaN and +-Inf skipped), 0 for none: quant/scales.hpp's
/// finite_amax.
[[nodiscard]] inline kernel_status finite_amax(std::span<const float> x, float& amax, const bulk_options& o = {}) noexcept {
  return detail::finite_amax_impl(x, amax, o);
}
[[nodiscard]] inline kernel_status finite_amax(std::span<const bfloat16> x, float& amax,
                                               const bulk_options& o = {}) noexcept {
  return detail::finite_amax_impl(x, amax, o);
}
[[nodiscard]] inline kernel_status finite_amax(std::span<const float16> x, float& amax,
                                               const bulk_options& o = {}) noexcept {
  return detail::finite_amax_impl(x, amax, o);
}

// --- FP4 nibbles ---------------------------------------------------------------------------------

/// codes.size() 4-bit codes (high bits ignored) -> (codes.size() + 1) / 2 bytes.
[[nodiscard]] MINIFLOAT_KERNEL_API kernel_status pack_nibbles(std::span<const std::uint8_t> codes,
                                                              std::span<std::uint8_t> packed,
                                                              const bulk_options& o = {}) noexcept;

/// (codes.size() + 1) / 2 bytes -> codes.size() codes, one per byte.
[[nodiscard]] MINIFLOAT_KERNEL_API kernel_status unpack_nibbles(std::span<const std::uint8_t> packed,
                                                                std::span<std::uint8_t> codes,
                                                                const bulk_options& o = {}) noexcept;

}  // namespace minifloat::simd

#if MINIFLOAT_DEFINE_KERNELS(MINIFLOAT_KERNELS_BULK)
#include "bulk_dispatch.hpp"
#endif
