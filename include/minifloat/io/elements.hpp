#pragma once
// Element decoding shared by the file readers (npy.hpp, safetensors.hpp): the bytes of a tensor
// as float32, through the library's own value types and bulk decoder, so a float16 or FP8
// element read from a file is decoded by exactly the code that decodes it everywhere else.
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "../formats/float16.hpp"
#include "../formats/float8.hpp"
#include "../simd/bulk.hpp"
#include "error.hpp"

namespace minifloat {

/// How the elements of a file dtype become float32.
// GCC's -Wshadow flags the enumerators named like the value types although scoped enumerators
// cannot shadow anything.
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wshadow"
#endif
enum class element_decoding : std::uint8_t {
  none,           ///< not floating point (integers, bool): no conversion offered
  float32,        ///< as is
  float64,        ///< rounded to nearest even (overflow to infinity)
  float16,        ///< exact, minifloat::float16
  bfloat16,       ///< exact, minifloat::bfloat16
  float8_e4m3fn,  ///< exact, minifloat::float8_e4m3fn (safetensors F8_E4M3)
  float8_e5m2,    ///< exact, minifloat::float8_e5m2 (safetensors F8_E5M2)
};
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

namespace detail {

// double to float with IEEE round-to-nearest-even, overflow included. C++ leaves converting a
// finite double beyond float's range undefined ([conv.double]) even though IEEE 754 defines it,
// so overflow is spelled out: |x| >= 2^128 - 2^103 (halfway from FLT_MAX = 2^128 - 2^104 to
// 2^128, where ties go to the even 2^128, i.e. infinity) becomes infinity, anything below that
// and above FLT_MAX rounds down to FLT_MAX.
[[nodiscard]] inline float double_to_float(double x) noexcept {
  constexpr double overflow_threshold = 0x1.ffffffp127;  // 2^128 - 2^103
  constexpr float max = std::numeric_limits<float>::max();
  constexpr float inf = std::numeric_limits<float>::infinity();
  if (std::isnan(x)) return static_cast<float>(x);  // NaN converts fine; keeps sign, quiets
  if (x >= overflow_threshold) return inf;
  if (x <= -overflow_threshold) return -inf;
  if (x > static_cast<double>(max)) return max;
  if (x < -static_cast<double>(max)) return -max;
  return static_cast<float>(x);
}

template <class T>
void decode_format_elements(std::span<const std::byte> bytes, std::span<float> out) {
  using code = typename T::storage_type;
  std::vector<code> codes(out.size());
  // little-endian storage in the file and (static_assert in the readers) on the host
  if (!codes.empty()) std::memcpy(codes.data(), bytes.data(), codes.size() * sizeof(code));
  simd::check(simd::decode<T>(std::span<const code>(codes), out), "decode_elements");
}

}  // namespace detail

/// Bytes per element of a decoding (0 for none).
[[nodiscard]] constexpr std::size_t element_size(element_decoding d) noexcept {
  switch (d) {
    case element_decoding::none: return 0;
    case element_decoding::float32: return 4;
    case element_decoding::float64: return 8;
    case element_decoding::float16:
    case element_decoding::bfloat16: return 2;
    case element_decoding::float8_e4m3fn:
    case element_decoding::float8_e5m2: return 1;
  }
  return 0;
}

/// The elements in `bytes` (little-endian, a whole number of elements) as float32. `what`
/// names the tensor in the io_error for a decoding of none or a ragged byte count. With
/// `overflows`, it receives the number of finite float64 elements too large for float32 (they
/// became +-Inf), so a caller can refuse them instead of computing with infinities.
[[nodiscard]] inline std::vector<float> decode_elements(element_decoding d, std::span<const std::byte> bytes,
                                                        const std::string& what, std::size_t* overflows = nullptr) {
  if (overflows != nullptr) *overflows = 0;
  const std::size_t item = element_size(d);
  if (item == 0) throw io_error(what + ": not a floating-point dtype; expected a float tensor");
  if (bytes.size() % item != 0)
    throw io_error(what + ": " + std::to_string(bytes.size()) + " bytes are not a whole number of " +
                   std::to_string(item) + "-byte elements");
  std::vector<float> out(bytes.size() / item);
  if (out.empty()) return out;
  switch (d) {
    case element_decoding::float32:
      std::memcpy(out.data(), bytes.data(), bytes.size());
      break;
    case element_decoding::float64:
      for (std::size_t i = 0; i < out.size(); ++i) {
        double v = 0;
        std::memcpy(&v, bytes.data() + i * 8, 8);
        out[i] = detail::double_to_float(v);
        if (overflows != nullptr && std::isinf(out[i]) && std::isfinite(v)) ++*overflows;
      }
      break;
    case element_decoding::float16: detail::decode_format_elements<float16>(bytes, out); break;
    case element_decoding::bfloat16: detail::decode_format_elements<bfloat16>(bytes, out); break;
    case element_decoding::float8_e4m3fn: detail::decode_format_elements<float8_e4m3fn>(bytes, out); break;
    case element_decoding::float8_e5m2: detail::decode_format_elements<float8_e5m2>(bytes, out); break;
    case element_decoding::none: break;
  }
  return out;
}

}  // namespace minifloat
