#pragma once
// Sub-byte storage. FP4 codes travel two per byte: element 2i in the LOW nibble, element 2i+1 in
// the HIGH nibble (PyTorch float4_e2m1fn_x2, CANN FLOAT4_E2M1, CATLASS _pack_fp4_nibbles;
// docs/formats/mx.md#fp4-nibble-packing). A row of odd length ends in a byte whose high nibble is 0. FP6 codes are
// kept one per byte (low 6 bits), as ml_dtypes and the CANN FLOAT6 dtypes do.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "../core/errors.hpp"

namespace minifloat {

namespace detail {
/// ceil(a / b) for b > 0, without the a + b - 1 that can wrap.
constexpr std::size_t ceil_div(std::size_t a, std::size_t b) noexcept { return a / b + (a % b != 0 ? 1 : 0); }
}  // namespace detail

/// Logical width of a format's code in bits (4 for FP4), as opposed to sizeof.
template <class T>
inline constexpr int sizeof_bits = T::spec::bits;

/// Bytes needed to store n codes of a `bits`-wide format. FP4 rounds up without n + 1 (which
/// wraps at SIZE_MAX); 16-bit formats can still wrap for n >= 2^63: sizes from callers go
/// through packed_bytes_checked.
constexpr std::size_t packed_bytes(std::size_t n, int bits) noexcept {
  return bits == 4 ? detail::ceil_div(n, 2) : n * static_cast<std::size_t>(bits > 8 ? 2 : 1);
}

/// packed_bytes, or shape_error naming `what` when the byte count does not fit in std::size_t.
inline std::size_t packed_bytes_checked(std::size_t n, int bits, const char* what) {
  if (bits > 8 && n > SIZE_MAX / 2)
    throw shape_error(std::string(what) + ": " + std::to_string(n) + " codes of 2 bytes (" + std::to_string(bits) +
                      "-bit format) do not fit in a 64-bit size");
  return packed_bytes(n, bits);
}

/// Packs n 4-bit codes (one per byte, high bits ignored) into (n + 1) / 2 bytes.
inline void pack_nibbles(std::span<const std::uint8_t> codes, std::span<std::uint8_t> packed) {
  detail::require_shape(packed.size() == (codes.size() + 1) / 2,
                        "pack_nibbles: " + std::to_string(codes.size()) + " codes need " +
                            std::to_string((codes.size() + 1) / 2) + " bytes, got " + std::to_string(packed.size()));
  for (std::size_t i = 0; i < packed.size(); ++i) {
    const unsigned lo = codes[2 * i] & 0xFU;
    const unsigned hi = 2 * i + 1 < codes.size() ? codes[2 * i + 1] & 0xFU : 0U;
    packed[i] = static_cast<std::uint8_t>(lo | (hi << 4));
  }
}

/// Unpacks n 4-bit codes from (n + 1) / 2 bytes.
inline void unpack_nibbles(std::span<const std::uint8_t> packed, std::span<std::uint8_t> codes) {
  detail::require_shape(packed.size() == (codes.size() + 1) / 2,
                        "unpack_nibbles: " + std::to_string(codes.size()) + " codes need " +
                            std::to_string((codes.size() + 1) / 2) + " bytes, got " + std::to_string(packed.size()));
  for (std::size_t i = 0; i < codes.size(); ++i)
    codes[i] = static_cast<std::uint8_t>((unsigned{packed[i / 2]} >> (4 * (i & 1))) & 0xFU);
}

/// Sets element i of a nibble-packed buffer to the 4-bit `code`, keeping the other nibble.
constexpr void set_nibble(std::span<std::uint8_t> packed, std::size_t i, unsigned code) noexcept {
  std::uint8_t& b = packed[i / 2];
  b = (i & 1U) != 0 ? static_cast<std::uint8_t>((b & 0x0FU) | ((code & 0x0FU) << 4))
                    : static_cast<std::uint8_t>((b & 0xF0U) | (code & 0x0FU));
}

/// The code of element i in a nibble-packed buffer.
constexpr std::uint8_t nibble_at(std::span<const std::uint8_t> packed, std::size_t i) noexcept {
  return static_cast<std::uint8_t>((unsigned{packed[i / 2]} >> (4 * (i & 1))) & 0xFU);
}

}  // namespace minifloat
