#pragma once
// Scalar twins of the bulk codec kernels: one element at a time through the scalar reference
// codecs (convert.hpp). Every ISA namespace (simd::avx2, ...) provides the same functions
// with the same signatures, and is accepted only when it gives the same bits as these.
//
// Conventions shared by all ISA namespaces (preconditions are checked by simd/bulk.hpp):
//   * pointers are valid for n elements (n may be 0; then they may be null); any alignment;
//   * In is float, bfloat16 or float16 (bf16/fp16 widen to float exactly);
//   * rounding::stochastic: element i uses random_bits(seed, first_index + i);
//   * FP4 "packed" buffers hold (n + 1) / 2 bytes, element 2i in the low nibble of byte i,
//     element 2i + 1 in the high nibble; for odd n the last high nibble is written as 0;
//   * scaled encode computes x / scale in float32 (as quant/quantized_tensor.hpp does) and
//     returns max |x| over the finite inputs (NaN and +-Inf skipped, as finite_amax), 0 if none.
#include <bit>
#include <cstddef>
#include <cstdint>

#include "../../formats/convert.hpp"
#include "../../formats/float16.hpp"
#include "../../formats/mx_elements.hpp"
#include "../../core/random.hpp"

namespace minifloat::simd::scalar {

namespace detail {

template <class In>
constexpr float to_float(In v) noexcept {
  return static_cast<float>(v);
}

/// |v| as bits if v is finite, else 0: finite amax as an unsigned max (bit order = value order
/// for non-negative floats).
constexpr std::uint32_t finite_abs_bits(float v) noexcept {
  const std::uint32_t a = std::bit_cast<std::uint32_t>(v) & 0x7FFFFFFFU;
  return a < 0x7F800000U ? a : 0U;
}

template <class T>
constexpr typename T::storage_type encode_one(float v, conversion c, std::uint64_t seed, std::uint64_t index) noexcept {
  const std::uint32_t r = c.round == rounding::stochastic ? random_bits(seed, index) : 0U;
  return ::minifloat::encode<T>(v, c, r);
}

}  // namespace detail

template <class T, class In>
void encode(const In* x, std::size_t n, typename T::storage_type* out, conversion c, std::uint64_t seed,
            std::uint64_t first_index) noexcept {
  for (std::size_t i = 0; i < n; ++i) out[i] = detail::encode_one<T>(detail::to_float(x[i]), c, seed, first_index + i);
}

template <class In>
void encode_fp4_packed(const In* x, std::size_t n, std::uint8_t* out, conversion c, std::uint64_t seed,
                       std::uint64_t first_index) noexcept {
  for (std::size_t i = 0; i < n; i += 2) {
    const unsigned lo = detail::encode_one<float4_e2m1fn>(detail::to_float(x[i]), c, seed, first_index + i);
    const unsigned hi =
        i + 1 < n ? detail::encode_one<float4_e2m1fn>(detail::to_float(x[i + 1]), c, seed, first_index + i + 1) : 0U;
    out[i / 2] = static_cast<std::uint8_t>(lo | (hi << 4));
  }
}

template <class T, class In>
float encode_scaled(const In* x, std::size_t n, typename T::storage_type* out, float scale, conversion c,
                    std::uint64_t seed, std::uint64_t first_index) noexcept {
  std::uint32_t amax = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const float v = detail::to_float(x[i]);
    amax = amax < detail::finite_abs_bits(v) ? detail::finite_abs_bits(v) : amax;
    out[i] = detail::encode_one<T>(v / scale, c, seed, first_index + i);
  }
  return std::bit_cast<float>(amax);
}

template <class In>
float encode_scaled_fp4_packed(const In* x, std::size_t n, std::uint8_t* out, float scale, conversion c,
                               std::uint64_t seed, std::uint64_t first_index) noexcept {
  std::uint32_t amax = 0;
  for (std::size_t i = 0; i < n; i += 2) {
    unsigned codes[2] = {0U, 0U};
    for (std::size_t j = i; j < i + 2 && j < n; ++j) {
      const float v = detail::to_float(x[j]);
      amax = amax < detail::finite_abs_bits(v) ? detail::finite_abs_bits(v) : amax;
      codes[j - i] = detail::encode_one<float4_e2m1fn>(v / scale, c, seed, first_index + j);
    }
    out[i / 2] = static_cast<std::uint8_t>(codes[0] | (codes[1] << 4));
  }
  return std::bit_cast<float>(amax);
}

template <class In>
float finite_amax(const In* x, std::size_t n) noexcept {
  std::uint32_t amax = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t a = detail::finite_abs_bits(detail::to_float(x[i]));
    amax = amax < a ? a : amax;
  }
  return std::bit_cast<float>(amax);
}

template <class T>
void decode(const typename T::storage_type* codes, std::size_t n, float* out) noexcept {
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(T::from_bits(codes[i]));
}

inline void decode_fp4_packed(const std::uint8_t* packed, std::size_t n, float* out) noexcept {
  for (std::size_t i = 0; i < n; ++i)
    out[i] = static_cast<float>(float4_e2m1fn::from_bits(static_cast<std::uint8_t>(static_cast<unsigned>(packed[i / 2]) >> (4 * (i & 1)))));
}

template <class T>
void decode_scaled(const typename T::storage_type* codes, std::size_t n, float* out, float scale) noexcept {
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(T::from_bits(codes[i])) * scale;
}

inline void decode_scaled_fp4_packed(const std::uint8_t* packed, std::size_t n, float* out, float scale) noexcept {
  for (std::size_t i = 0; i < n; ++i)
    out[i] = static_cast<float>(float4_e2m1fn::from_bits(static_cast<std::uint8_t>(static_cast<unsigned>(packed[i / 2]) >> (4 * (i & 1))))) *
             scale;
}

/// n 4-bit codes (one per byte, high bits ignored) -> (n + 1) / 2 bytes.
inline void pack_nibbles(const std::uint8_t* codes, std::size_t n, std::uint8_t* packed) noexcept {
  for (std::size_t i = 0; i < n; i += 2) {
    const unsigned lo = codes[i] & 0xFU;
    const unsigned hi = i + 1 < n ? codes[i + 1] & 0xFU : 0U;
    packed[i / 2] = static_cast<std::uint8_t>(lo | (hi << 4));
  }
}

/// (n + 1) / 2 bytes -> n 4-bit codes, one per byte.
inline void unpack_nibbles(const std::uint8_t* packed, std::size_t n, std::uint8_t* codes) noexcept {
  for (std::size_t i = 0; i < n; ++i) codes[i] = static_cast<std::uint8_t>((static_cast<unsigned>(packed[i / 2]) >> (4 * (i & 1))) & 0xFU);
}

}  // namespace minifloat::simd::scalar
