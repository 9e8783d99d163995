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
// 64-byte unit as two vectors of bfloat16 pair words ready to multiply, and so that each step of
// the decode kernel reads its operand front to back. Keys come in groups of 64 (the kernel's
// chunk); a group is one stretch of 64 x row_bytes bytes, in the order the kernel reads it:
//   key tiles (K)   4 tiles of 16 keys a group; row_bytes = round_up(d, 4) x element bytes per
//                   key. Code8: a unit of 64 bytes holds channels 4u .. 4u + 3 of one tile's
//                   keys, decoding to w0 (channels 4u, 4u + 1) and w1 (4u + 2, 4u + 3), and the
//                   group stores unit u of its tiles 0 .. 3 side by side (256 bytes), then unit
//                   u + 1; bfloat16: a unit holds one channel pair, the 4 tiles' units of pair v
//                   side by side. In a word vector, 32-bit lane L holds key L ^ 1 of the tile (so
//                   that key pairs (2m, 2m + 1) of P arrive in lane order after the fp32 ->
//                   bfloat16 packing), the even channel in the high word.
//   key pairs (V)   keys 2p and 2p + 1 together; row_bytes = round_up(dv, 64) x element bytes
//                   per key. The group stores columns 64b .. 64b + 63 of its 32 pairs, pair by
//                   pair, then block b + 1. Code8: a unit of 64 bytes holds 32 columns of a pair,
//                   decoding to w0 (the first 16) and w1 (the next 16); bfloat16: a unit holds 16
//                   columns. 32-bit lane m holds one column, key 2p in the high word.
// Why front to back: one core's hardware prefetchers follow a forward stream but not the four
// interleaved ones that tiles in separate stretches (and V's blocks in separate halves of each
// pair) made, which left the kernel waiting on software prefetches (docs/attention.md#key-tiles).
// The high word first: vdpbf16ps adds a pair's high product before its low one, so both the
// dot over d (channels 0, 1, 2, ...) and P V (keys j, j + 1, ...) run in natural order.
// Padding (channels past d or dv, keys past the last one up to the group's 64) holds code 0,
// which is +0 in every format stored this way.
#include <cstddef>

namespace minifloat::attention {

/// How a kv_view's rows are laid out.
enum class kv_order : unsigned char { rows, key_tiles, key_pairs };

namespace tiles {

inline constexpr std::size_t tile_keys = 16;
/// Keys of a group: the decode kernel's chunk (kernel.hpp, chunk_keys), 4 tiles or 32 pairs.
inline constexpr std::size_t group_keys = 64;
/// Bytes of a unit of one tile (code8: 4 channels; bfloat16: 1 channel pair) and of the 4 tiles'
/// units side by side.
inline constexpr std::size_t unit_bytes = 64, group_unit_bytes = 4 * unit_bytes;

[[nodiscard]] constexpr std::size_t round_up(std::size_t x, std::size_t m) noexcept { return (x + m - 1) / m * m; }

/// Bytes per key of a layout (the kv_view's row_bytes): a group is 64 of them.
[[nodiscard]] constexpr std::size_t key_tile_row_bytes(std::size_t d, std::size_t elem_bytes) noexcept {
  return round_up(d, 4) * elem_bytes;
}
[[nodiscard]] constexpr std::size_t key_pair_row_bytes(std::size_t dv, std::size_t elem_bytes) noexcept {
  return round_up(dv, 64) * elem_bytes;
}

/// Bytes of one pair's 64 columns in a key-paired V (the pair stride within a column block).
[[nodiscard]] constexpr std::size_t pair_block_bytes(std::size_t elem_bytes) noexcept { return 2 * 64 * elem_bytes; }

/// Position of word k (0 .. 31) of decode64's vector h (0, 1) in the 64-byte unit of codes it
/// decodes: the decoder's byte unpacks interleave inside 128-bit lanes.
[[nodiscard]] constexpr std::size_t code_byte(std::size_t h, std::size_t k) noexcept { return 16 * (k / 8) + 8 * h + k % 8; }

/// Byte offset of element (key, c) of a key-tiled K (elem_bytes 1: code8, 2: bfloat16).
[[nodiscard]] constexpr std::size_t key_tile_offset(std::size_t key, std::size_t c, std::size_t row_bytes, std::size_t elem_bytes) noexcept {
  const std::size_t tile = (key % group_keys) / tile_keys, lane = (key % tile_keys) ^ 1U, word = 2 * lane + (c % 2 == 0 ? 1 : 0);
  const std::size_t base = key / group_keys * group_keys * row_bytes + tile * unit_bytes;
  if (elem_bytes == 1) return base + (c / 4) * group_unit_bytes + code_byte((c / 2) % 2, word);
  return base + (c / 2) * group_unit_bytes + 2 * word;
}

/// Byte offset of element (key, c) of a key-paired V.
[[nodiscard]] constexpr std::size_t key_pair_offset(std::size_t key, std::size_t c, std::size_t row_bytes, std::size_t elem_bytes) noexcept {
  const std::size_t pb = pair_block_bytes(elem_bytes);
  const std::size_t base = key / group_keys * group_keys * row_bytes + (c / 64) * (group_keys / 2) * pb + (key % group_keys) / 2 * pb;
  const std::size_t word = 2 * (c % 16) + (key % 2 == 0 ? 1 : 0), cb = c % 64;
  if (elem_bytes == 1) return base + (cb / 32) * 64 + code_byte((cb % 32) / 16, word);
  return base + (cb / 16) * 64 + 2 * word;
}

/// Keys a layout stores for `keys` keys (the padding the last group carries).
[[nodiscard]] constexpr std::size_t stored_keys(kv_order o, std::size_t keys) noexcept {
  return o == kv_order::rows ? keys : round_up(keys, group_keys);
}

}  // namespace tiles

}  // namespace minifloat::attention
