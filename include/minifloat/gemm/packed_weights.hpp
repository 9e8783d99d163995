#pragma once
// packed_weights: a GEMM B operand (the weights) reordered once for the weight-streaming GEMV,
// the decode phase of inference: M <= 8 activation rows against a large, fixed weight matrix.
//
// Why a second layout: B as stored, (N, K) "weights (out, in)", keeps K contiguous, while the
// fp32_blocks order (reference.hpp) is one fma chain per output over k ascending, so a SIMD
// GEMV works on vectors of 8 *outputs* per k. Read straight from (N, K), every 64 codes need an
// 8 x 8 byte transpose before they can be decoded, and that costs more than the decode. Packing
// moves the same code bytes, once, into panels where each k holds the codes of 64 outputs side
// by side: the GEMV (gemv_packed.hpp) then reads every weight byte once, sequentially, decodes
// it and multiplies. Nothing is re-quantized: the codes and scales are the tensor's own (HiF8
// codes are stored re-labelled by magnitude rank, a bijection; code() returns the original), so
// results are bit-identical to gemm() on the unpacked tensor (the fp32_blocks order). The packed
// object owns its storage: it stays valid after the tensor it was packed from is gone.
//
// Layout (public so that kernel authors can read it; panel_rows = 64, the last panel padded
// with code 0, which is +0 in every accepted format):
//   codes   [panel][k][64 bytes]   8- and 6-bit formats, one code per byte
//           [panel][k][32 bytes]   float4_e2m1fn; byte j: low nibble one row, high nibble another
//           byte_of(r) gives the byte (and nibble) of panel row r: the lane order of the AVX2
//           decoder, so that decoded vector v holds rows 8v .. 8v + 7 in order. Per 32 rows:
//             float8_e4m3fn, float8_e5m2   row 8v + d at byte 4d + v (byte v of 32-bit lane d)
//             others (bfloat16 route)      byte unpacks interleave the two 128-bit halves:
//                                          row 8v + d at byte
//                                          (v / 2) * 8 + (v % 2) + (d < 4 ? 2d : 16 + 2(d - 4))
//           hifloat8 bytes hold sign | rank of the magnitude among HiF8's 128 (hif8_ranks).
//   scales  B's scale tiles along K: one tile (tensor, channel, block R x K): fp32 per output,
//           row_scales()[n] (padded to whole panels); several tiles (MX, block R x C, C < K):
//           per panel, tile and panel row: E8M0 bytes (mx_tile_scales) or fp32 (tile_scales),
//           [panel][tile][64].
//   special_panel(q): the panel holds a NaN or Inf code, or an E8M0 scale 0x00 (2^-127) or 0xFF
//           (NaN); the GEMV runs it with the scalar twin (real weights have none).
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>


#include "operand.hpp"

namespace minifloat {

namespace detail::gemm {

/// How the AVX2 GEMV decodes a packed format (and so which byte order packing uses).
enum class packed_decoder : std::uint8_t {
  shift_e4m3,   ///< float8_e4m3fn: shifts place the code as the bfloat16 of 2^-120 x
  shift_e5m2,   ///< float8_e5m2: shifts place the code as the bfloat16 of 2^-112 x
  bf16_nibble,  ///< float4_e2m1fn: two 16-entry vpshufb tables give the bfloat16's two bytes
  rank_hif8,    ///< hifloat8 stored as sign | magnitude rank: bfloat16 = base + rank * step
  bf16_lut,     ///< float6: the 128-entry lut128 (simd/decode_tables.hpp) gives the bfloat16's two bytes
};

inline packed_decoder packed_decoder_of(format_id f) noexcept {
  switch (f) {
    case format_id::float8_e4m3fn: return packed_decoder::shift_e4m3;
    case format_id::float8_e5m2: return packed_decoder::shift_e5m2;
    case format_id::float4_e2m1fn: return packed_decoder::bf16_nibble;
    case format_id::hifloat8: return packed_decoder::rank_hif8;
    default: return packed_decoder::bf16_lut;
  }
}

/// Byte of row r (0..31) within a 32-byte group, bfloat16 route (layout comment above).
constexpr std::size_t bf16_route_byte(std::size_t r) noexcept {
  const std::size_t v = r / 8, d = r % 8;
  return (v / 2) * 8 + (v % 2) + (d < 4 ? 2 * d : 16 + 2 * (d - 4));
}

/// hifloat8 by magnitude rank. Sorted by value, HiF8's 128 magnitudes (zero, 7 denormals,
/// 31 binades of 2-8 values, Inf) fall into 16 runs of 8 ranks, each run inside one precision
/// class, so within run g the bfloat16 pattern is linear in the rank: base[g] + (rank % 8) *
/// step[g] (step 2^(7 - w), carries run into the exponent as they should). Rank 0 is zero,
/// which the decoder maps to 0 separately; rank 127 is Inf (a special, see special panels).
struct hif8_ranks {
  std::uint8_t rank_of[128] = {};    // magnitude code -> rank
  std::uint8_t code_of[128] = {};    // rank -> magnitude code
  std::uint16_t base[16] = {}, step[16] = {};
  bool ok = false;                   // the linear form holds for ranks 1..126 (checked)
};

constexpr hif8_ranks make_hif8_ranks() {
  hif8_ranks r;
  const auto& table = simd::detail::decode_values<hifloat8_spec>;
  std::array<unsigned, 128> order{};
  for (unsigned c = 0; c < 128; ++c) order[c] = c;
  std::sort(order.begin(), order.end(), [&](unsigned x, unsigned y) { return table[x] < table[y]; });
  for (unsigned k = 0; k < 128; ++k) r.code_of[k] = static_cast<std::uint8_t>(order[k]), r.rank_of[order[k]] = static_cast<std::uint8_t>(k);
  const auto word = [&](unsigned k) { return static_cast<std::uint32_t>(std::bit_cast<std::uint32_t>(table[order[k]]) >> 16); };
  r.ok = table[order[0]] == 0.0f;
  for (unsigned g = 0; g < 16; ++g) {
    const unsigned k0 = g == 0 ? 1 : 8 * g;  // run 0 starts after zero
    const std::uint32_t step = word(k0 + 1) - word(k0);
    r.step[g] = static_cast<std::uint16_t>(step);
    r.base[g] = static_cast<std::uint16_t>(word(k0) - (k0 - 8 * g) * step);
    for (unsigned k = k0; k < 8 * g + 8 && k < 127; ++k)
      r.ok = r.ok && (std::bit_cast<std::uint32_t>(table[order[k]]) & 0xFFFFU) == 0 &&
             word(k) == r.base[g] + (k - 8 * g) * step;
  }
  return r;
}

/// The rank table, built at compile time from HiF8's decode table (once, in the kernels library,
/// in compiled-kernels mode).
MINIFLOAT_KERNEL_API const hif8_ranks& hif8_rank_table() noexcept;
#if MINIFLOAT_DEFINE_KERNELS(MINIFLOAT_KERNELS_GEMM)
MINIFLOAT_KERNEL_API const hif8_ranks& hif8_rank_table() noexcept {
  static constexpr hif8_ranks ranks = make_hif8_ranks();
  return ranks;
}
#endif

/// Codes the AVX2 decoders do not handle (NaN, Inf): panels holding one run the scalar twin.
inline bool packed_special(format_id f, unsigned code) noexcept {
  switch (f) {
    case format_id::float8_e4m3fn: return (code & 0x7FU) == 0x7FU;
    case format_id::float8_e5m2: return (code & 0x7CU) == 0x7CU;
    case format_id::hifloat8: return code == 0x80U || (code & 0x7FU) == 0x6FU;
    default: return false;
  }
}

}  // namespace detail::gemm

/// What packing B would allocate, as validate_packed_weights reports it.
struct packed_weights_shape {
  std::size_t n = 0, k = 0;
  std::size_t storage_bytes = 0;  ///< codes and scales (packed_weights::storage_bytes after packing)
};

/// B packed for gemm(a, packed_weights, ...) (gemv_packed.hpp). See the header comment.
class packed_weights {
 public:
  static constexpr std::size_t panel_rows = 64;

  packed_weights() = default;

  /// Packs B, stored (N, K) with gemm_layout::nk or (K, N) with gemm_layout::kn; the same
  /// operand rules (and errors) as gemm() (operand.hpp).
  explicit packed_weights(const quantized_tensor_view& b, gemm_layout layout = gemm_layout::nk) {
    const detail::gemm::operand o = detail::gemm::make_operand(b, 'B', layout);
    format_ = o.format;
    bits_ = o.bits;
    n_ = o.outer, k_ = o.k;
    mx_ = o.mx;
    tile_k_ = o.k_extent();
    one_tile_ = !o.mx && (o.stride_k == 0 || o.tile_k >= k_);
    decoder_ = detail::gemm::packed_decoder_of(format_);
    const auto& ranks = detail::gemm::hif8_rank_table();
    if (decoder_ == detail::gemm::packed_decoder::rank_hif8 && !ranks.ok) decoder_ = detail::gemm::packed_decoder::bf16_lut;
    const bool by_rank = decoder_ == detail::gemm::packed_decoder::rank_hif8;
    if (n_ == 0 || k_ == 0) return;  // nothing to store: gemm() never reads codes or scales then
    const std::size_t panels = this->panels(), sb = slice_bytes();
    codes_.assign(checked_product({panels, k_, sb}, "packed_weights: code bytes (panels x K x bytes per slice)"), 0);
    std::vector<std::size_t> where(panel_rows);
    std::vector<unsigned> shift(panel_rows);
    for (std::size_t r = 0; r < panel_rows; ++r) {
      const auto [byte, nib] = byte_of(r);
      where[r] = byte, shift[r] = 4U * static_cast<unsigned>(nib);
    }
    special_panels_.assign(panels, false);
    for (std::size_t q = 0; q < panels; ++q)
      for (std::size_t r = 0; r < panel_rows && q * panel_rows + r < n_; ++r) {
        const std::size_t i = q * panel_rows + r;
        std::uint8_t* dst = codes_.data() + q * k_ * sb + where[r];
        for (std::size_t kk = 0; kk < k_; ++kk) {
          unsigned c = o.code(i, kk);
          if (detail::gemm::packed_special(format_, c)) special_panels_[q] = true;
          if (by_rank) c = (c & 0x80U) | ranks.rank_of[c & 0x7FU];
          dst[kk * sb] = static_cast<std::uint8_t>(dst[kk * sb] | (c << shift[r]));
        }
      }
    if (one_tile_) {
      row_scales_.assign(panels * panel_rows, 0.0f);  // padded: SIMD loads whole panels
      for (std::size_t i = 0; i < n_; ++i) row_scales_[i] = o.scale(i, 0);
      return;
    }
    const std::size_t tiles = detail::ceil_div(k_, tile_k_);
    const std::size_t grid = checked_product({panels, tiles, panel_rows}, "packed_weights: scales (panels x tiles x 64)");
    if (mx_) mx_tile_scales_.assign(grid, 0);
    else tile_scales_.assign(grid, 0.0f);
    for (std::size_t q = 0; q < panels; ++q)
      for (std::size_t t = 0; t < tiles; ++t)
        for (std::size_t r = 0; r < panel_rows && q * panel_rows + r < n_; ++r) {
          const std::size_t i = q * panel_rows + r, at = (q * tiles + t) * panel_rows + r;
          if (mx_) {
            const std::uint8_t e = o.mx_scales[((i + o.outer_offset) / o.tile_outer) * o.stride_outer + t * o.stride_k];
            mx_tile_scales_[at] = e;
            if (e == 0 || e == mx_nan_scale_code) special_panels_[q] = true;  // 2^-127 and NaN: not e << 23
          }
          else tile_scales_[at] = o.scale(i, t * tile_k_);
        }
  }

  [[nodiscard]] format_id format() const noexcept { return format_; }
  [[nodiscard]] std::size_t n() const noexcept { return n_; }  ///< outputs (rows of B as (N, K))
  [[nodiscard]] std::size_t k() const noexcept { return k_; }
  [[nodiscard]] bool empty() const noexcept { return n_ == 0 && k_ == 0; }
  [[nodiscard]] std::size_t panels() const noexcept { return detail::ceil_div(n_, panel_rows); }
  /// Bytes of one k of one panel: 64, or 32 for float4_e2m1fn.
  [[nodiscard]] std::size_t slice_bytes() const noexcept { return bits_ == 4 ? panel_rows / 2 : panel_rows; }
  /// Byte and nibble (0 low, 1 high; always 0 for byte formats) of panel row r in a slice.
  [[nodiscard]] std::pair<std::size_t, int> byte_of(std::size_t r) const noexcept {
    using detail::gemm::packed_decoder;
    if (decoder_ == packed_decoder::shift_e4m3 || decoder_ == packed_decoder::shift_e5m2)
      return {(r / 32) * 32 + 4 * (r % 8) + (r % 32) / 8, 0};  // row 8v + d at byte 4d + v
    if (bits_ == 4) return {detail::gemm::bf16_route_byte(r % 32), static_cast<int>(r / 32)};
    return {(r / 32) * 32 + detail::gemm::bf16_route_byte(r % 32), 0};
  }
  /// The code of output n at k, read back from the packed layout.
  [[nodiscard]] unsigned code(std::size_t n, std::size_t kk) const noexcept {
    const auto [byte, nib] = byte_of(n % panel_rows);
    const unsigned b = codes_[(n / panel_rows) * k_ * slice_bytes() + kk * slice_bytes() + byte];
    if (decoder_ == detail::gemm::packed_decoder::rank_hif8)
      return (b & 0x80U) | detail::gemm::hif8_rank_table().code_of[b & 0x7FU];
    return bits_ == 4 ? (b >> (4 * nib)) & 0xFU : b;
  }
  /// K extent of one B scale tile (K itself when one tile covers K; 32 for MX).
  [[nodiscard]] std::size_t tile_k() const noexcept { return one_tile_ ? std::max<std::size_t>(k_, 1) : tile_k_; }
  [[nodiscard]] bool one_tile() const noexcept { return one_tile_; }
  [[nodiscard]] bool mx() const noexcept { return mx_; }
  /// B's scale of output n for k (any layout above).
  [[nodiscard]] float scale(std::size_t n, std::size_t kk) const noexcept {
    if (one_tile_) return row_scales_[n];
    const std::size_t tiles = (k_ + tile_k_ - 1) / tile_k_;
    const std::size_t at = ((n / panel_rows) * tiles + kk / tile_k_) * panel_rows + n % panel_rows;
    return mx_ ? mx_scale_value(mx_tile_scales_[at]) : tile_scales_[at];
  }
  [[nodiscard]] const std::vector<std::uint8_t>& codes() const noexcept { return codes_; }
  [[nodiscard]] const std::vector<float>& row_scales() const noexcept { return row_scales_; }
  [[nodiscard]] const std::vector<float>& tile_scales() const noexcept { return tile_scales_; }
  [[nodiscard]] const std::vector<std::uint8_t>& mx_tile_scales() const noexcept { return mx_tile_scales_; }
  /// Storage in bytes (codes and scales): what one GEMV streams.
  [[nodiscard]] std::size_t storage_bytes() const noexcept {
    return codes_.size() + mx_tile_scales_.size() + 4 * (row_scales_.size() + tile_scales_.size());
  }
  /// True when panel q holds a NaN or Inf code (packed_special) or an E8M0 scale of 0 or NaN:
  /// that panel runs the scalar twin.
  [[nodiscard]] bool special_panel(std::size_t q) const noexcept { return q < special_panels_.size() && special_panels_[q]; }
  [[nodiscard]] detail::gemm::packed_decoder decoder() const noexcept { return decoder_; }

  /// A stand-in operand carrying only B's scale-tile shape, for detail::gemm::k_block.
  [[nodiscard]] detail::gemm::operand tile_shape() const noexcept {
    detail::gemm::operand o;
    o.format = format_, o.bits = bits_, o.outer = n_, o.k = k_, o.mx = mx_;
    o.tile_k = one_tile_ ? std::max<std::size_t>(k_, 1) : tile_k_;
    o.stride_k = one_tile_ ? 0 : 1;
    o.table = &detail::gemm::decode_table_of(format_);
    return o;
  }

 private:
  format_id format_ = format_id::float8_e4m3fn;
  int bits_ = 8;
  std::size_t n_ = 0, k_ = 0, tile_k_ = 1;
  bool mx_ = false, one_tile_ = true;
  detail::gemm::packed_decoder decoder_ = detail::gemm::packed_decoder::shift_e4m3;
  std::vector<bool> special_panels_;
  std::vector<std::uint8_t> codes_;
  std::vector<float> row_scales_, tile_scales_;
  std::vector<std::uint8_t> mx_tile_scales_;
};

/// Every check packed_weights(b, layout) makes before it reads a code or allocates: the
/// operand rules of gemm() for B and every size in checked arithmetic. Throws as the
/// constructor does; reads no data. A B with N = 0 or K = 0 packs to nothing (storage_bytes 0).
inline packed_weights_shape validate_packed_weights(const quantized_tensor_view& b, gemm_layout layout = gemm_layout::nk) {
  const detail::gemm::operand o = detail::gemm::make_operand(b, 'B', layout);
  packed_weights_shape r{o.outer, o.k, 0};
  if (o.outer == 0 || o.k == 0) return r;
  const std::size_t rows = packed_weights::panel_rows, panels = detail::ceil_div(o.outer, rows);
  const std::size_t slice = o.bits == 4 ? rows / 2 : rows;
  const std::size_t codes = checked_product({panels, o.k, slice}, "packed_weights: code bytes (panels x K x bytes per slice)");
  const bool one_tile = !o.mx && (o.stride_k == 0 || o.tile_k >= o.k);
  const std::size_t tiles = one_tile ? 1 : detail::ceil_div(o.k, o.k_extent());
  const std::size_t scales = checked_product({panels, tiles, rows, o.mx ? std::size_t{1} : sizeof(float)},
                                             "packed_weights: scale bytes (panels x tiles x 64)");
  r.storage_bytes = checked_add(codes, scales, "packed_weights: storage bytes");
  return r;
}

}  // namespace minifloat
