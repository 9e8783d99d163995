#pragma once
// The bulk codecs' dispatch and definitions (the declarations and their contract: bulk.hpp): the
// one switch from a requested ISA level to the scalar, AVX2, AVX-512 or NEON kernels, and the
// argument checks every entry point makes before it. Included by bulk.hpp in header-only mode;
// compiled once into minifloat::kernels in compiled-kernels mode (core/config.hpp). Kernel code
// that dispatches on its own (simd/mx.hpp) includes it for MINIFLOAT_SIMD_DISPATCH.
#include "bulk.hpp"
#include "scalar/codec.hpp"
#if MINIFLOAT_SIMD_X86
#include "x86/avx2_codec.hpp"
#include "x86/avx512_codec.hpp"
#endif
#if MINIFLOAT_SIMD_NEON
#include "arm/neon_codec.hpp"
#endif

namespace minifloat::simd {

/// The SIMD kernel namespace compiled for this target (same functions, same signatures).
#if MINIFLOAT_SIMD_X86
namespace simd_ns = avx2;
#elif MINIFLOAT_SIMD_NEON
namespace simd_ns = neon;
#endif

/// Runs scalar_call (simd::scalar) or simd_call (simd::simd_ns) for the path `path` resolves
/// to, or returns unsupported_isa; isa::avx512 runs simd_call (AVX2). For kernels that have no
/// AVX-512 path (simd/mx.hpp). Without a SIMD namespace simd_call is dropped unparsed.
#if MINIFLOAT_SIMD_X86 || MINIFLOAT_SIMD_NEON
#define MINIFLOAT_SIMD_DISPATCH(path, scalar_call, simd_call)            \
  switch (::minifloat::simd::detail::resolve(path)) {                     \
    case ::minifloat::simd::isa::scalar: scalar_call; break;              \
    case ::minifloat::simd::isa::avx2:                                    \
    case ::minifloat::simd::isa::avx512:                                  \
    case ::minifloat::simd::isa::neon: simd_call; break;                  \
    default: return ::minifloat::simd::kernel_status::unsupported_isa;   \
  }
#else
#define MINIFLOAT_SIMD_DISPATCH(path, scalar_call, simd_call)            \
  switch (::minifloat::simd::detail::resolve(path)) {                     \
    case ::minifloat::simd::isa::scalar: scalar_call; break;              \
    default: return ::minifloat::simd::kernel_status::unsupported_isa;   \
  }
#endif

/// The bulk codecs' dispatch: `assign` (empty, or e.g. `amax =`) followed by the call, made in
/// the namespace of the path `path` resolves to (scalar::, avx2::, avx512::, neon::), or
/// unsupported_isa. Every level has its own kernels, so isa::avx2 runs AVX2 on an AVX-512 CPU.
#if MINIFLOAT_SIMD_X86
#define MINIFLOAT_BULK_ISA_CASES_(assign, ...)                                                 \
  case ::minifloat::simd::isa::avx2: assign ::minifloat::simd::avx2::__VA_ARGS__; break;       \
  case ::minifloat::simd::isa::avx512: assign ::minifloat::simd::avx512::__VA_ARGS__; break;
#elif MINIFLOAT_SIMD_NEON
#define MINIFLOAT_BULK_ISA_CASES_(assign, ...) \
  case ::minifloat::simd::isa::neon: assign ::minifloat::simd::neon::__VA_ARGS__; break;
#else
#define MINIFLOAT_BULK_ISA_CASES_(assign, ...)
#endif
#define MINIFLOAT_BULK_DISPATCH(path, assign, ...)                                           \
  switch (::minifloat::simd::detail::resolve(path)) {                                         \
    case ::minifloat::simd::isa::scalar: assign ::minifloat::simd::scalar::__VA_ARGS__; break; \
    MINIFLOAT_BULK_ISA_CASES_(assign, __VA_ARGS__)                                            \
    default: return ::minifloat::simd::kernel_status::unsupported_isa;                       \
  }

#if MINIFLOAT_DEFINE_KERNELS(MINIFLOAT_KERNELS_BULK)  // the entry points declared in bulk.hpp

namespace detail {

template <class T, class In>
MINIFLOAT_KERNEL_API kernel_status encode_impl(std::span<const In> x, std::span<code_t<T>> out, conversion c, const bulk_options& o) noexcept {
  if (bad_span(x.data(), x.size()) || bad_span(out.data(), out.size())) return kernel_status::null_pointer;
  if (out.size() != x.size()) return kernel_status::size_mismatch;
  MINIFLOAT_BULK_DISPATCH(o.path, , encode<T>(x.data(), x.size(), out.data(), c, o.seed, o.first_index))
  return kernel_status::ok;
}

template <class In>
MINIFLOAT_KERNEL_API kernel_status encode_fp4_packed_impl(std::span<const In> x, std::span<std::uint8_t> packed, conversion c,
                                     const bulk_options& o) noexcept {
  if (bad_span(x.data(), x.size()) || bad_span(packed.data(), packed.size())) return kernel_status::null_pointer;
  if (packed.size() != (x.size() + 1) / 2) return kernel_status::size_mismatch;
  MINIFLOAT_BULK_DISPATCH(o.path, , encode_fp4_packed(x.data(), x.size(), packed.data(), c, o.seed, o.first_index))
  return kernel_status::ok;
}

template <class T, class In>
MINIFLOAT_KERNEL_API kernel_status quantize_scaled_impl(std::span<const In> x, std::span<code_t<T>> out, float scale, float& amax,
                                   conversion c, const bulk_options& o) noexcept {
  if (bad_span(x.data(), x.size()) || bad_span(out.data(), out.size())) return kernel_status::null_pointer;
  if (out.size() != x.size()) return kernel_status::size_mismatch;
  MINIFLOAT_BULK_DISPATCH(o.path, amax =, encode_scaled<T>(x.data(), x.size(), out.data(), scale, c, o.seed, o.first_index))
  return kernel_status::ok;
}

template <class In>
MINIFLOAT_KERNEL_API kernel_status quantize_scaled_fp4_packed_impl(std::span<const In> x, std::span<std::uint8_t> packed, float scale,
                                              float& amax, conversion c, const bulk_options& o) noexcept {
  if (bad_span(x.data(), x.size()) || bad_span(packed.data(), packed.size())) return kernel_status::null_pointer;
  if (packed.size() != (x.size() + 1) / 2) return kernel_status::size_mismatch;
  MINIFLOAT_BULK_DISPATCH(o.path, amax =, encode_scaled_fp4_packed(x.data(), x.size(), packed.data(), scale, c, o.seed, o.first_index))
  return kernel_status::ok;
}

template <class In>
MINIFLOAT_KERNEL_API kernel_status finite_amax_impl(std::span<const In> x, float& amax, const bulk_options& o) noexcept {
  if (bad_span(x.data(), x.size())) return kernel_status::null_pointer;
  MINIFLOAT_BULK_DISPATCH(o.path, amax =, finite_amax(x.data(), x.size()))
  return kernel_status::ok;
}


template <class T>
MINIFLOAT_KERNEL_API kernel_status decode_impl(std::span<const code_t<T>> codes, std::span<float> out,
                                               const bulk_options& o) noexcept {
  if (bad_span(codes.data(), codes.size()) || bad_span(out.data(), out.size())) return kernel_status::null_pointer;
  if (out.size() != codes.size()) return kernel_status::size_mismatch;
  MINIFLOAT_BULK_DISPATCH(o.path, , decode<T>(codes.data(), codes.size(), out.data()))
  return kernel_status::ok;
}

template <class T>
MINIFLOAT_KERNEL_API kernel_status dequantize_scaled_impl(std::span<const code_t<T>> codes, std::span<float> out,
                                                          float scale, const bulk_options& o) noexcept {
  if (bad_span(codes.data(), codes.size()) || bad_span(out.data(), out.size())) return kernel_status::null_pointer;
  if (out.size() != codes.size()) return kernel_status::size_mismatch;
  MINIFLOAT_BULK_DISPATCH(o.path, , decode_scaled<T>(codes.data(), codes.size(), out.data(), scale))
  return kernel_status::ok;
}

}  // namespace detail

MINIFLOAT_KERNEL_API kernel_status decode_fp4_packed(std::span<const std::uint8_t> packed, std::span<float> out,
                                                     const bulk_options& o) noexcept {
  if (detail::bad_span(packed.data(), packed.size()) || detail::bad_span(out.data(), out.size()))
    return kernel_status::null_pointer;
  if (packed.size() != (out.size() + 1) / 2) return kernel_status::size_mismatch;
  MINIFLOAT_BULK_DISPATCH(o.path, , decode_fp4_packed(packed.data(), out.size(), out.data()))
  return kernel_status::ok;
}

MINIFLOAT_KERNEL_API kernel_status dequantize_scaled_fp4_packed(std::span<const std::uint8_t> packed,
                                                                std::span<float> out, float scale,
                                                                const bulk_options& o) noexcept {
  if (detail::bad_span(packed.data(), packed.size()) || detail::bad_span(out.data(), out.size()))
    return kernel_status::null_pointer;
  if (packed.size() != (out.size() + 1) / 2) return kernel_status::size_mismatch;
  MINIFLOAT_BULK_DISPATCH(o.path, , decode_scaled_fp4_packed(packed.data(), out.size(), out.data(), scale))
  return kernel_status::ok;
}

MINIFLOAT_KERNEL_API kernel_status pack_nibbles(std::span<const std::uint8_t> codes, std::span<std::uint8_t> packed,
                                                const bulk_options& o) noexcept {
  if (detail::bad_span(codes.data(), codes.size()) || detail::bad_span(packed.data(), packed.size()))
    return kernel_status::null_pointer;
  if (packed.size() != (codes.size() + 1) / 2) return kernel_status::size_mismatch;
  MINIFLOAT_BULK_DISPATCH(o.path, , pack_nibbles(codes.data(), codes.size(), packed.data()))
  return kernel_status::ok;
}

MINIFLOAT_KERNEL_API kernel_status unpack_nibbles(std::span<const std::uint8_t> packed, std::span<std::uint8_t> codes,
                                                  const bulk_options& o) noexcept {
  if (detail::bad_span(codes.data(), codes.size()) || detail::bad_span(packed.data(), packed.size()))
    return kernel_status::null_pointer;
  if (packed.size() != (codes.size() + 1) / 2) return kernel_status::size_mismatch;
  MINIFLOAT_BULK_DISPATCH(o.path, , unpack_nibbles(packed.data(), codes.size(), codes.data()))
  return kernel_status::ok;
}

#endif

}  // namespace minifloat::simd
