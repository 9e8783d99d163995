#pragma once
// The tiled attention kernel: one block of up to 64 query rows (the query heads of one KV group
// and a few query positions) against the keys of one (batch, KV head), read as stored (8-bit
// codes, bfloat16 or fp32 rows), with an online softmax over chunks of 64 keys.
//
// The fast path's order of operations (docs/attention.md#the-fast-path), per chunk of 64 keys:
//   S_rj   = s_factor * sum_d q_rd k_jd           (fp32 accumulation; k = code value x MX scale)
//   m'     = max(m, max_j S_rj over the visible keys);  alpha = exp(m - m')
//   P~_rj  = exp(S_rj - m')                        (the running max: this is where P is quantized)
//   l      = l * alpha + sum_j P~_rj
//   P^_rj  = decode(encode_F(P~_rj / p_scale))     (F's default rounding, saturating; P~ if no F)
//   acc_r  = acc_r * alpha + v_factor * sum_j P^_rj v_j
// and out_r = acc_r / l (0 if l = 0). s_factor = softmax scale x the tensor scales of Q and K;
// v_factor = V's tensor scale x p_scale. The scalar twin (here) and the AMX path (x86/amx.hpp)
// follow this order; they differ only in how the fp32 sums are ordered and split.
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "../formats/format_list.hpp"
#include "../formats/mx_scale.hpp"
#include "../formats/packed.hpp"
#include "../simd/decode_tables.hpp"
#include "../simd/isa.hpp"
#include "kv_tiles.hpp"
#include "recipe.hpp"

namespace minifloat::attention {

/// How one K or V operand is stored.
enum class element_kind : std::uint8_t { f32, bf16, code8 };

/// One (batch, KV head) K or V: rows x cols as stored, row-major or in a decode layout
/// (kv_tiles.hpp: 8-bit codes or bfloat16 without MX scales only).
struct kv_view {
  element_kind kind = element_kind::f32;
  format_id format = format_id::float8_e4m3fn;  ///< code8: the element format
  const std::uint8_t* data = nullptr;
  std::size_t row_bytes = 0;                   ///< stride between rows, in bytes (a decode layout: bytes per key)
  std::size_t rows = 0, cols = 0;
  float scale = 1.0f;                          ///< per-tensor scale (folded into s_factor / v_factor)
  const std::uint8_t* mx = nullptr;            ///< E8M0 scales or null
  std::size_t mx_stride = 0;                   ///< bytes between rows of the scale grid
  int mx_axis = 1;                             ///< 1: [row][ceil(cols/32)] (K); 0: [ceil(rows/32)][cols] (V)
  /// Every MX-scaled value is a normal bfloat16 (the AMX path's condition, x86/amx.hpp); set by
  /// whoever builds the view (mx_bf16_exact below), so no kernel call rescans the scales.
  bool mx_bf16_exact = true;
  /// The smallest E8M0 scale code of the view, set with mx_bf16_exact (0, the smallest there
  /// is, where unknown): how fine the grid of its values can be (x86/avx512_panels.hpp).
  std::uint8_t mx_lo = 0;
  kv_order order = kv_order::rows;

  [[nodiscard]] std::size_t element_bytes() const noexcept { return kind == element_kind::code8 ? 1 : kind == element_kind::bf16 ? 2 : 4; }
  /// Byte offset of element (r, c) from data.
  [[nodiscard]] std::size_t offset(std::size_t r, std::size_t c) const noexcept {
    switch (order) {
      case kv_order::key_tiles: return tiles::key_tile_offset(r, c, row_bytes, element_bytes());
      case kv_order::key_pairs: return tiles::key_pair_offset(r, c, row_bytes, element_bytes());
      case kv_order::rows: break;
    }
    return r * row_bytes + c * element_bytes();
  }

  [[nodiscard]] std::uint8_t mx_code(std::size_t r, std::size_t c) const noexcept {
    return mx_axis == 1 ? mx[r * mx_stride + c / 32] : mx[(r / 32) * mx_stride + c];
  }
  /// Element (r, c) times its MX scale (the tensor scale is not applied).
  [[nodiscard]] float value(std::size_t r, std::size_t c) const noexcept;
};

namespace detail {

/// The 256 values of an 8-bit (or narrower) element format's codes (simd/decode_tables.hpp);
/// all zero for a wider format.
inline const std::array<float, 256>& code_values(format_id f) noexcept {
  static constexpr std::array<float, 256> none{};
  const std::array<float, 256>* t = simd::detail::decode_values_of(f);
  return t != nullptr ? *t : none;
}

/// Whether E8M0 scales in [lo, hi] keep every non-zero value of the 8-bit format f a normal
/// bfloat16 (E4M3 values span 2^-9 .. 2^8, E5M2 2^-16 .. 2^15).
inline bool mx_bf16_exact(format_id f, std::uint8_t lo, std::uint8_t hi) noexcept {
  const int emin = f == format_id::float8_e4m3fn ? -9 : -16, emax = f == format_id::float8_e4m3fn ? 8 : 15;
  return hi != 0xFF && static_cast<int>(lo) - 127 + emin >= -126 && static_cast<int>(hi) - 127 + emax <= 127;
}

inline float bf16_value(std::uint16_t bits) noexcept { return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16); }

}  // namespace detail

inline float kv_view::value(std::size_t r, std::size_t c) const noexcept {
  const std::uint8_t* at = data + offset(r, c);
  float x = 0.0f;
  switch (kind) {
    case element_kind::f32: std::memcpy(&x, at, 4); return x;
    case element_kind::bf16: {
      std::uint16_t b = 0;
      std::memcpy(&b, at, 2);
      return detail::bf16_value(b);
    }
    case element_kind::code8: x = detail::code_values(format)[*at]; break;
  }
  return mx == nullptr ? x : x * mx_scale_value(mx_code(r, c));
}

/// One block of query rows against one K/V pair (see the header comment).
struct block_args {
  kv_view k, v;                 ///< same rows (Tk); k.cols = d, v.cols = dv
  std::size_t rows = 0;         ///< <= max_block_rows
  const float* q = nullptr;     ///< rows x d query values (their tensor scale is in s_factor)
  std::size_t q_stride = 0;
  const std::size_t* limit = nullptr;  ///< keys visible to each row (<= Tk)
  float s_factor = 1.0f, v_factor = 1.0f;
  static_format p;              ///< P's format; its scale is in v_factor
  float* out = nullptr;         ///< rows x dv
  std::size_t out_stride = 0;
  float* m = nullptr;           ///< per row: running max (S units), -inf if nothing visible
  float* l = nullptr;           ///< per row: sum of P~
};

inline constexpr std::size_t max_block_rows = 64;
inline constexpr std::size_t chunk_keys = 64;
static_assert(chunk_keys == tiles::group_keys, "a chunk of the decode kernel is one group of the decode layouts");

namespace detail {

/// The scalar twin of the fast path: plain fp32 loops in the order of the header comment.
inline void run_block_scalar(const block_args& a) {
  const std::size_t d = a.k.cols, dv = a.v.cols, rows = a.rows;
  std::size_t kmax = 0;
  for (std::size_t r = 0; r < rows; ++r) kmax = std::max(kmax, a.limit[r]);
  std::vector<float> acc(rows * dv, 0.0f), kf(chunk_keys * d), vf(chunk_keys * dv), pf(chunk_keys);
  std::vector<float> mrow(rows, -std::numeric_limits<float>::infinity()), lrow(rows, 0.0f);
  std::vector<float> s(chunk_keys);
  for (std::size_t c0 = 0; c0 < kmax; c0 += chunk_keys) {
    const std::size_t n = std::min(chunk_keys, kmax - c0);
    for (std::size_t j = 0; j < n; ++j)
      for (std::size_t c = 0; c < d; ++c) kf[j * d + c] = a.k.value(c0 + j, c);
    for (std::size_t j = 0; j < n; ++j)
      for (std::size_t c = 0; c < dv; ++c) vf[j * dv + c] = a.v.value(c0 + j, c);
    for (std::size_t r = 0; r < rows; ++r) {
      const std::size_t vis = a.limit[r] > c0 ? std::min(n, a.limit[r] - c0) : 0;
      if (vis == 0) continue;
      const float* q = a.q + r * a.q_stride;
      float mc = -std::numeric_limits<float>::infinity();
      for (std::size_t j = 0; j < vis; ++j) {
        float t = 0.0f;
        for (std::size_t c = 0; c < d; ++c) t = std::fma(q[c], kf[j * d + c], t);
        s[j] = t * a.s_factor;
        mc = std::max(mc, s[j]);
      }
      const float mn = std::max(mrow[r], mc);
      const float alpha = mrow[r] == -std::numeric_limits<float>::infinity() ? 0.0f : std::exp(mrow[r] - mn);
      float lsum = 0.0f;
      for (std::size_t j = 0; j < vis; ++j) {
        const float e = std::exp(s[j] - mn);
        lsum += e;
        pf[j] = round_static_unscaled(e, a.p);
      }
      lrow[r] = lrow[r] * alpha + lsum;
      mrow[r] = mn;
      float* o = acc.data() + r * dv;
      for (std::size_t c = 0; c < dv; ++c) {
        float part = 0.0f;
        for (std::size_t j = 0; j < vis; ++j) part = std::fma(pf[j], vf[j * dv + c], part);
        o[c] = std::fma(part, a.v_factor, o[c] * alpha);
      }
    }
  }
  for (std::size_t r = 0; r < rows; ++r) {
    float* o = a.out + r * a.out_stride;
    for (std::size_t c = 0; c < dv; ++c) o[c] = lrow[r] > 0.0f ? acc[r * dv + c] / lrow[r] : 0.0f;
    a.m[r] = mrow[r], a.l[r] = lrow[r];
  }
}

}  // namespace detail

}  // namespace minifloat::attention
