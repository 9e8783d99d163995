#pragma once
// GEMM operands: which quantized tensors a low-precision GEMM accepts as A and B, and how each
// is read as "element value times scale" at (row of the product, k).
//
//   C (M x N) = A (M x K) * B (K x N) [+ bias (N)], every operand a quantized_tensor_view
//   (quant/quantized_tensor.hpp): codes row-major, fp32 scale grid or E8M0 (MX) scales.
//
// Layouts (the aclnnQuantMatmulV5 x1 / x2 shapes, docs/formats/ascend.md#gemm-operators):
//   A                 stored (M, K) row-major                            x1 (m, k)
//   B, gemm_layout::kn  stored (K, N) row-major                          x2 (k, n), transposeX2 = false
//   B, gemm_layout::nk  stored (N, K) row-major: "weights (out, in)"     x2 (n, k), transposeX2 = true
//
// Scale granularities accepted (tile = how many elements one scale covers):
//   operand    granularity        meaning in the GEMM                    tile (outer x K)
//   A (M,K)    tensor             one scale                              M x K
//              token | channel    per token (row m)                      1 x K
//              block R x C        R tokens x C channels (DeepSeek 1x128) R x C
//              mx, axis 1         E8M0 per 32 along K (MXFP8/6/4)        1 x 32
//   B nk (N,K) tensor             one scale                              N x K
//              channel | token    per output channel (row n)             1 x K
//              block R x C        R outputs x C along K (128x128)        R x C
//              mx, axis 1         E8M0 per 32 along K                    1 x 32
//   B kn (K,N) tensor             one scale                              N x K
//              block R x C        R along K x C outputs; per output      C x R
//                                 channel is block K x 1
//              mx, axis 0         E8M0 per 32 along K                    1 x 32
//   any        mx, 32x32 tiles    E8M0 per 32x32 tile (block=32x32)      32 x 32
// A 32x32-tiled tensor is read in either orientation from the same codes and scales: stored
// (R, C), it is A or B nk with K = C, or B kn with K = R (so X and X^T, or W as B nk and B kn,
// share one quantization; the transposed use of A is a byte transpose of codes and grid).
// Rejected with unsupported_error (the message says what to use instead): MX blocks that run
// along M or N (A axis 0, B nk axis 1 is fine, B kn axis 1 is not), channel/token scales of a
// B stored (K, N) (they would scale rows of K, the reduction axis: use block K x 1, or store
// B as (N, K)), 16-bit formats and the E8M0 scale format as elements.
//
// K not a multiple of 32 with MX: accepted. The quantized tensor already defines the short last
// block (quantized_tensor.hpp / block/mx_tensor.hpp: its scale comes from its own elements), so
// nothing is padded and nothing outside the tensor is read. (CANN pads the scale count to even;
// that is a storage detail of the paired layout, not of the values.)
//
// Mapping to aclnnQuantMatmulV5 (docs/formats/ascend.md#gemm-operators), for the backend: x1 = A codes (m, k);
// x2 = B codes, transposeX2 = (layout == nk); x1Scale = A scales ((m,) per token, none or (1,)
// per tensor, MX: mx_scales_to_cann of the plain E8M0 grid); x2Scale = B scales ((n,) per
// channel -- nk channel or kn block K x 1 --, (1,) per tensor, MX likewise); bias fp32 (n,);
// out fp32 or bf16; groupSize MX = [1, 1, 32], DeepSeek G-B = [1, 128, 128] (A block 1 x 128,
// B block 128 x 128). grouped.hpp maps to aclnnGroupedMatmulV4 with groupListType = counts.
//
// K blocks of the fp32 accumulation order (reference.hpp): L = the smaller K extent of the
// two scale tiles (capped at K). Every L-block must lie inside one A scale tile and one B scale
// tile, i.e. each tile K extent must be a multiple of L or cover all of K; otherwise
// unsupported_error (e.g. A 1x96 with B 128x128).
#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "../core/checked.hpp"
#include "../core/config.hpp"
#include "../core/errors.hpp"
#include "../formats/mx_scale.hpp"
#include "../formats/format_list.hpp"
#include "../quant/quantized_tensor.hpp"
#include "../simd/decode_tables.hpp"

namespace minifloat {

/// How B is stored: (K, N) row-major or (N, K) row-major (see the header comment).
enum class gemm_layout : std::uint8_t { kn, nk };

constexpr std::string_view to_string(gemm_layout l) noexcept { return l == gemm_layout::kn ? "kn" : "nk"; }

namespace detail::gemm {

inline bool is_gemm_element(format_id f) noexcept {
  return f == format_id::hifloat8 || f == format_id::float8_e4m3fn || f == format_id::float8_e5m2 ||
         f == format_id::float6_e3m2fn || f == format_id::float6_e2m3fn || f == format_id::float4_e2m1fn;
}

/// The decode table of an element format of at most 8 bits (simd/decode_tables.hpp); nullptr
/// for any other format. Out of line in compiled-kernels mode: the tables are built at compile
/// time, once.
MINIFLOAT_KERNEL_API const std::array<float, 256>* decode_table_ptr(format_id f) noexcept;
#if MINIFLOAT_DEFINE_KERNELS(MINIFLOAT_KERNELS_GEMM)
MINIFLOAT_KERNEL_API const std::array<float, 256>* decode_table_ptr(format_id f) noexcept {
  return simd::detail::decode_values_of(f);
}
#endif

inline const std::array<float, 256>& decode_table_of(format_id f) { return *decode_table_ptr(f); }

/// One operand normalised to (outer index i, reduction index k): A has i = m, B has i = n.
/// Element (i, k) and its scale are read the same way whatever the stored layout.
struct operand {
  format_id format = format_id::hifloat8;
  int bits = 8;                         // 4, 6 or 8 (6-bit codes one per byte)
  const std::uint8_t* codes = nullptr;  // the stored matrix's codes
  std::size_t row_bytes = 0;            // bytes per stored row
  bool k_major = true;                  // stored rows are indexed by i (k contiguous): A, B nk
  std::size_t outer = 0, k = 0;         // logical extents (i range, K)
  std::size_t outer_offset = 0;         // grouped GEMM: row i of this operand is stored row i + offset
  // scales
  bool mx = false;
  const float* scales = nullptr;        // fp32 grid (mx == false)
  const std::uint8_t* mx_scales = nullptr;  // E8M0 grid (mx == true)
  std::size_t tile_outer = 1, tile_k = 1;   // scale tile extents in (i, k)
  std::size_t stride_outer = 0, stride_k = 0;  // grid index = (i / tile_outer) * stride_outer + (k / tile_k) * stride_k
  const std::array<float, 256>* table = nullptr;

  [[nodiscard]] unsigned code(std::size_t i, std::size_t kk) const noexcept {
    const std::size_t r = k_major ? i + outer_offset : kk;
    const std::size_t c = k_major ? kk : i + outer_offset;
    const std::uint8_t* row = codes + r * row_bytes;
    if (bits == 4) return (row[c / 2] >> (4 * (c & 1))) & 0xFU;
    return row[c];
  }
  [[nodiscard]] float value(std::size_t i, std::size_t kk) const noexcept { return (*table)[code(i, kk)]; }
  [[nodiscard]] float scale(std::size_t i, std::size_t kk) const noexcept { return scale_at(scale_row(i) + scale_col(kk)); }
  /// scale(i, kk) in parts, for loops that hoist the divisions: the grid offset of row i, of
  /// column kk, and the scale at a grid offset.
  [[nodiscard]] std::size_t scale_row(std::size_t i) const noexcept { return ((i + outer_offset) / tile_outer) * stride_outer; }
  [[nodiscard]] std::size_t scale_col(std::size_t kk) const noexcept { return (kk / tile_k) * stride_k; }
  [[nodiscard]] float scale_at(std::size_t at) const noexcept { return mx ? mx_scale_value(mx_scales[at]) : scales[at]; }
  /// The K extent over which the scale is constant (capped at K; at least 1).
  [[nodiscard]] std::size_t k_extent() const noexcept { return std::max<std::size_t>(1, std::min(tile_k, k)); }
};

inline std::string shape_str(std::size_t r, std::size_t c) { return std::to_string(r) + "x" + std::to_string(c); }

/// The view's code and scale counts in checked arithmetic (core/checked.hpp), compared with its
/// spans before anything else looks at them: a rows x cols that does not fit in a size_t is a
/// shape_error here, never a wrapped count that happens to match a short span. Reads no data.
inline void check_view_sizes(const quantized_tensor_view& q, const std::string& who) {
  q.scheme.validate();
  const int bits = format_bits(q.scheme.format);
  const std::size_t row_bytes = bits == 4   ? q.cols / 2 + q.cols % 2
                                : bits > 8 ? checked_mul(q.cols, 2, who + ": bytes per row")
                                           : q.cols;
  const std::size_t codes = checked_mul(q.rows, row_bytes, who + ": code bytes (rows x bytes per row)");
  if (q.codes.size() != codes)
    throw shape_error(who + " is " + std::to_string(q.rows) + "x" + std::to_string(q.cols) + " of " +
                      std::string(to_string(q.scheme.format)) + ", which needs " + std::to_string(codes) +
                      " code bytes, got " + std::to_string(q.codes.size()));
  (void)checked_mul(q.scale_grid_rows(), q.scale_grid_cols(), who + ": scale grid");
  q.validate();  // the same counts again (they fit now), and the scale spans
}

/// Normalises A (role 'A') or B (role 'B', with its layout) after validating the view.
inline operand make_operand(const quantized_tensor_view& q, char role, gemm_layout layout) {
  const std::string who = role == 'A' ? "gemm: A" : "gemm: B (" + std::string(to_string(layout)) + ")";
  check_view_sizes(q, who);
  const quant_scheme& s = q.scheme;
  if (!is_gemm_element(s.format))
    throw unsupported_error(who + " has element format " + std::string(to_string(s.format)) +
                            "; expected hifloat8, float8_e4m3fn, float8_e5m2, float6_e3m2fn, float6_e2m3fn or "
                            "float4_e2m1fn");
  operand o;
  o.format = s.format;
  o.bits = format_bits(s.format);
  o.codes = q.codes.data();
  o.row_bytes = code_row_bytes(s.format, q.cols);
  o.table = &decode_table_of(s.format);
  const bool k_major = role == 'A' || layout == gemm_layout::nk;
  o.k_major = k_major;
  o.outer = k_major ? q.rows : q.cols;
  o.k = k_major ? q.cols : q.rows;
  const std::size_t gc = q.scale_grid_cols();
  if (s.gran == granularity::mx) {
    const int want_axis = k_major ? 1 : 0;
    const bool square = s.tile() == mx_tile::square32;  // a 32x32 tile runs along K in either layout
    if (!square && s.axis != want_axis)
      throw unsupported_error(who + " is MX-blocked along axis " + std::to_string(s.axis) +
                              ", i.e. along " + (role == 'A' ? "M" : "N") +
                              "; GEMM needs the 32-element blocks along K: axis " + std::to_string(want_axis) +
                              " for a " + (k_major ? "(rows, K)" : "(K, N)") + " operand");
    o.mx = true;
    o.mx_scales = q.mx_scales.data();
    o.tile_outer = square ? 32 : 1;
    o.tile_k = 32;
    o.stride_outer = k_major ? gc : 1;
    o.stride_k = k_major ? 1 : gc;
    return o;
  }
  o.scales = q.scales.data();
  const auto [tr, tc] = scale_tile(s, q.rows, q.cols);
  if (!k_major && (s.gran == granularity::channel || s.gran == granularity::token))
    throw unsupported_error(who + " stored (K, N) = " + shape_str(q.rows, q.cols) + " has granularity " +
                            std::string(to_string(s.gran)) +
                            ", one scale per stored row, i.e. per k of the reduction axis; for one scale per output "
                            "channel use granularity block " + std::to_string(q.rows) +
                            "x1 (block_rows = K, block_cols = 1), or store B as (N, K) with layout nk");
  // Stored grid is (rows / tr) x (cols / tc), row-major with gc columns.
  if (k_major) {
    o.tile_outer = tr, o.tile_k = tc, o.stride_outer = gc, o.stride_k = 1;
  } else {
    o.tile_outer = tc, o.tile_k = tr, o.stride_outer = 1, o.stride_k = gc;
  }
  if (s.gran == granularity::tensor) o.stride_outer = o.stride_k = 0, o.tile_outer = o.tile_k = 1;
  return o;
}

/// The K-block length L of the fp32 accumulation order for this pair (header comment).
inline std::size_t k_block(const operand& a, const operand& b) {
  const std::size_t la = a.k_extent(), lb = b.k_extent(), k = a.k;
  if (k == 0) return 1;
  const bool a_all = a.mx ? false : (a.stride_k == 0 || a.tile_k >= k);
  const bool b_all = b.mx ? false : (b.stride_k == 0 || b.tile_k >= k);
  const std::size_t ea = a_all ? k : la, eb = b_all ? k : lb;
  const std::size_t l = std::min(ea, eb);
  const auto fits = [&](std::size_t e, bool all) { return all || e % l == 0; };
  if (!fits(ea, a_all) || !fits(eb, b_all))
    throw unsupported_error("gemm: the scale blocks along K do not nest: A covers " + std::to_string(ea) +
                            " and B " + std::to_string(eb) +
                            " elements of K per scale; one must be a multiple of the other (or cover all of K = " +
                            std::to_string(k) + ")");
  return l;
}

/// Checks A (M x K) against B and the output/bias sizes; returns {A, B, L}.
struct problem {
  operand a, b;
  std::size_t m = 0, n = 0, k = 0, l = 1;
};

/// M x N in checked arithmetic, compared with the output's size.
inline std::size_t check_out_size(std::size_t m, std::size_t n, std::size_t out_size, const char* who) {
  const std::size_t mn = checked_mul(m, n, std::string(who) + ": output M x N");
  if (out_size != mn)
    throw shape_error(std::string(who) + ": output needs M x N = " + shape_str(m, n) + " = " + std::to_string(mn) +
                      " values, got " + std::to_string(out_size));
  return mn;
}

inline problem make_problem(const quantized_tensor_view& a, const quantized_tensor_view& b, gemm_layout layout,
                            std::size_t bias_size, std::size_t out_size) {
  problem p;
  p.a = make_operand(a, 'A', gemm_layout::nk);
  p.b = make_operand(b, 'B', layout);
  if (p.a.k != p.b.k)
    throw shape_error("gemm: A is " + shape_str(a.rows, a.cols) + " (M x K) but B stored " +
                      std::string(layout == gemm_layout::kn ? "(K, N)" : "(N, K)") + " is " +
                      shape_str(b.rows, b.cols) + ": K must agree (" + std::to_string(p.a.k) + " vs " +
                      std::to_string(p.b.k) + ")");
  p.m = p.a.outer, p.n = p.b.outer, p.k = p.a.k;
  if (bias_size != 0 && bias_size != p.n)
    throw shape_error("gemm: bias needs N = " + std::to_string(p.n) + " floats (or none), got " +
                      std::to_string(bias_size));
  check_out_size(p.m, p.n, out_size, "gemm");
  p.l = k_block(p.a, p.b);
  return p;
}

}  // namespace detail::gemm

/// The sizes of one GEMM as validate_gemm and friends accept them.
struct gemm_shape {
  std::size_t m = 0, n = 0, k = 0;
  std::size_t k_block = 1;  ///< L of the fp32 accumulation order (reference.hpp)
};

/// Every check gemm() and gemm_reference() make before they touch a code or a scale: operand
/// formats and granularities, the view sizes against their spans (checked arithmetic), K, the
/// bias (0 or N floats) and the output (M x N, checked) sizes. Throws shape_error /
/// unsupported_error as they do; reads no data, so a fuzzer can call it with any sizes.
inline gemm_shape validate_gemm(const quantized_tensor_view& a, const quantized_tensor_view& b, gemm_layout layout,
                                std::size_t bias_size, std::size_t out_size) {
  const auto p = detail::gemm::make_problem(a, b, layout, bias_size, out_size);
  return {p.m, p.n, p.k, p.l};
}

}  // namespace minifloat
