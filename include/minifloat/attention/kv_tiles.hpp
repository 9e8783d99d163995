#pragma once
// The decode layouts of a KV cache (docs/attention.md#key-tiles): where the byte of one element
// lives when a cache stores K as key tiles and V as key pairs instead of row-major rows.
//
// Why: a decode block multiplies every cached key by only a few query rows, so the kernel is
// bound by how much work each cached byte costs. Row-major K gives each (row, key) dot product
// in 16 fp32 lanes that must be summed across the vector, a third of the shuffles of the
// row-major kernel; with the keys of a tile in the lanes, a vector op works on 16 keys at once
// and S arrives with one key per lane. V pairs put keys j and j + 1 of a column in one 32-bit
// word, the operand vdpbf16ps multiplies by the pair (P_j, P_j+1).
//
// Both layouts hold the element format's codes (8-bit codes, or bfloat16 words) unchanged, in
// an order chosen so that the AVX-512 table decoder (x86/pieces.hpp, decode64) leaves each
// 64-byte unit as two vectors of bfloat16 pair words ready to multiply:
//   key tiles (K)   16 keys a tile; row_bytes = round_up(d, 4) x element bytes per key. Code8: a
//                   unit of 64 bytes holds channels 4u .. 4u + 3 of the tile's keys, decoding to
//                   w0 (channels 4u, 4u + 1) and w1 (4u + 2, 4u + 3); bfloat16: a unit holds
//                   one channel pair. In a word vector, 32-bit lane L holds key L ^ 1 of the
//                   tile (so that key pairs (2m, 2m + 1) of P arrive in lane order after the
//                   fp32 -> bfloat16 packing), the even channel in the high word.
//   key pairs (V)   keys 2p and 2p + 1 together; row_bytes = round_up(dv, 64) x element bytes
//                   per key. Code8: a unit of 64 bytes holds columns 32g .. 32g + 31, decoding
//                   to w0 (columns 32g .. +15) and w1 (32g + 16 .. +31); bfloat16: a unit holds 16
//                   columns. 32-bit lane m holds one column, key 2p in the high word.
// The high word first: vdpbf16ps adds a pair's high product before its low one, so both the
// dot over d (channels 0, 1, 2, ...) and P V (keys j, j + 1, ...) run in natural order.
// Padding (channels past d or dv, keys past the last one) holds code 0, which is +0 in every
// format stored this way.
#include <cstddef>

namespace minifloat::attention {

/// How a kv_view's rows are laid out.
enum class kv_order : unsigned char { rows, key_tiles, key_pairs };

namespace tiles {

inline constexpr std::size_t tile_keys = 16;

[[nodiscard]] constexpr std::size_t round_up(std::size_t x, std::size_t m) noexcept { return (x + m - 1) / m * m; }

/// Bytes per key of a layout (the kv_view's row_bytes): a tile of K is 16 of them, a pair of V 2.
[[nodiscard]] constexpr std::size_t key_tile_row_bytes(std::size_t d, std::size_t elem_bytes) noexcept {
  return round_up(d, 4) * elem_bytes;
}
[[nodiscard]] constexpr std::size_t key_pair_row_bytes(std::size_t dv, std::size_t elem_bytes) noexcept {
  return round_up(dv, 64) * elem_bytes;
}

/// Position of word k (0 .. 31) of decode64's vector h (0, 1) in the 64-byte unit of codes it
/// decodes: the decoder's byte unpacks interleave inside 128-bit lanes.
[[nodiscard]] constexpr std::size_t code_byte(std::size_t h, std::size_t k) noexcept { return 16 * (k / 8) + 8 * h + k % 8; }

/// Byte offset of element (key, c) of a key-tiled K (elem_bytes 1: code8, 2: bfloat16).
[[nodiscard]] constexpr std::size_t key_tile_offset(std::size_t key, std::size_t c, std::size_t row_bytes, std::size_t elem_bytes) noexcept {
  const std::size_t tile = key / tile_keys, lane = (key % tile_keys) ^ 1U, word = 2 * lane + (c % 2 == 0 ? 1 : 0);
  const std::size_t base = tile * tile_keys * row_bytes;
  if (elem_bytes == 1) return base + (c / 4) * 64 + code_byte((c / 2) % 2, word);
  return base + (c / 2) * 64 + 2 * word;
}

/// Byte offset of element (key, c) of a key-paired V.
[[nodiscard]] constexpr std::size_t key_pair_offset(std::size_t key, std::size_t c, std::size_t row_bytes, std::size_t elem_bytes) noexcept {
  const std::size_t base = (key / 2) * 2 * row_bytes, word = 2 * (c % 16) + (key % 2 == 0 ? 1 : 0);
  if (elem_bytes == 1) return base + (c / 32) * 64 + code_byte((c % 32) / 16, word);
  return base + (c / 16) * 64 + 2 * word;
}

/// Keys a layout stores for `keys` keys (the padding the last tile or pair carries).
[[nodiscard]] constexpr std::size_t stored_keys(kv_order o, std::size_t keys) noexcept {
  return o == kv_order::key_tiles ? round_up(keys, tile_keys) : o == kv_order::key_pairs ? round_up(keys, 2) : keys;
}

}  // namespace tiles

}  // namespace minifloat::attention
