#pragma once
// The wire codec of the collectives (comm/mpi.hpp): message bodies (recipe.hpp's layout) written
// and read with the SIMD bulk codecs (simd/bulk.hpp, simd/mx.hpp). Every function gives the bits
// of minifloat::quantize() / dequantize() under recipe::flat_scheme() (one 1 x len tensor per
// chunk) or recipe::row_scheme() (rows x cols, a scale per row); comm/reference.hpp is written
// with those, and the unit tests compare the two. Nothing here needs MPI.
//
//   encode_flat(x, r, body)       x: a range that starts on a chunk boundary -> scales + codes;
//                                 returns whether x held Inf/NaN
//   decode_flat(body, r, out)     out[i] = the dequantized x[i]
//   accumulate_flat(body, r, acc) acc[i] += the dequantized x[i] (one fp32 add per element)
//   reduce_encode_flat(bodies, n, r, rg, out)   the sum of several bodies, re-quantized under rg
//                                 chunk by chunk (= accumulate_flat each, then encode_flat)
//   encode_rows / decode_rows     the same for rows x cols, one scale group per row
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <vector>

#include "../core/config.hpp"
#include "../quant/scales.hpp"
#include "../simd/bulk.hpp"
#include "../simd/mx.hpp"
#include "../simd/stream.hpp"
#include "recipe.hpp"

namespace minifloat::comm {

// --- the entry points (defined below; compiled once into minifloat::kernels in compiled-kernels
// mode, core/config.hpp) -----------------------------------------------------------------------

/// Quantizes x (a range starting on a chunk boundary) into body (flat_body_bytes(x.size()) bytes).
/// Returns true when x held Inf or NaN.
MINIFLOAT_KERNEL_API bool encode_flat(std::span<const float> x, const recipe& r, std::span<std::uint8_t> body);

/// Dequantizes a flat body of out.size() elements into out. `streamed`: through a chunk-sized
/// buffer and non-temporal stores (the caller fences, simd::stream_fence).
MINIFLOAT_KERNEL_API void decode_flat(std::span<const std::uint8_t> body, const recipe& r, std::span<float> out, bool streamed = false);

/// acc[i] += the dequantized element i of a flat body of acc.size() elements (fp32 adds, chunk by
/// chunk through a chunk-sized buffer that stays in cache).
MINIFLOAT_KERNEL_API void accumulate_flat(std::span<const std::uint8_t> body, const recipe& r, std::span<float> acc);

/// The owner's step of all_reduce, fused: chunk by chunk, the dequantized bodies (each of n
/// elements under r) are summed in their order onto +0 in fp32 -- exactly accumulate_flat of each
/// body in turn onto a zeroed shard -- and the chunk's sum is quantized under rg into out_body
/// (flat_body_bytes(n, rg) bytes) -- exactly encode_flat of that sum. The fp32 sum never leaves a
/// chunk-sized buffer, which saves the shard's round trips through memory. Returns whether the sum
/// held Inf or NaN.
MINIFLOAT_KERNEL_API bool reduce_encode_flat(std::span<const std::span<const std::uint8_t>> bodies, std::size_t n, const recipe& r,
                               const recipe& rg, std::span<std::uint8_t> out_body);

/// Quantizes rows x cols (row-major) with a scale group per row into body. Returns true when x
/// held Inf or NaN.
MINIFLOAT_KERNEL_API bool encode_rows(std::span<const float> x, std::size_t rows, std::size_t cols, const recipe& r,
                        std::span<std::uint8_t> body);

/// Dequantizes a row body into out (rows x cols, row-major).
MINIFLOAT_KERNEL_API void decode_rows(std::span<const std::uint8_t> body, std::size_t rows, std::size_t cols, const recipe& r,
                        std::span<float> out);

namespace detail {

/// Whether x holds Inf or NaN: one compare of the magnitude bits per element (vectorizes
/// without -ffast-math).
[[nodiscard]] inline bool has_nonfinite(std::span<const float> x) noexcept {
  std::uint32_t bad = 0;
  for (const float v : x) bad |= (std::bit_cast<std::uint32_t>(v) & 0x7FFFFFFFU) >= 0x7F800000U ? 1U : 0U;
  return bad != 0U;
}

/// Finite amax of x (simd::finite_amax, the bulk twin of quant/scales.hpp's) and whether x holds
/// Inf/NaN.
struct group_scan {
  float amax = 0.0f;
  bool nonfinite = false;
};
[[nodiscard]] inline group_scan scan_group(std::span<const float> x) {
  group_scan s;
  simd::check(simd::finite_amax(x, s.amax), "comm: finite_amax");
  s.nonfinite = has_nonfinite(x);
  return s;
}

inline void put_u32(std::uint8_t* p, std::uint32_t v) noexcept { std::memcpy(p, &v, 4); }
[[nodiscard]] inline std::uint32_t get_u32(const std::uint8_t* p) noexcept {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

inline constexpr std::uint32_t flag_nonfinite = 1U;

/// Writes the 8-byte header (recipe.hpp) at the start of msg.
inline void write_header(std::span<std::uint8_t> msg, bool nonfinite, std::size_t count) noexcept {
  put_u32(msg.data(), nonfinite ? flag_nonfinite : 0U);
  put_u32(msg.data() + 4, static_cast<std::uint32_t>(count & 0xFFFFFFFFU));
}
struct header {
  bool nonfinite = false;
  std::uint32_t count = 0;
};
[[nodiscard]] inline header read_header(std::span<const std::uint8_t> msg) noexcept {
  return {(get_u32(msg.data()) & flag_nonfinite) != 0U, get_u32(msg.data() + 4)};
}

/// Calls f(Elem{}) with the element type of a quantized wire format (not fp32 / bf16).
template <class F>
decltype(auto) visit_wire_element(wire_format f, F&& fn) {
  switch (f) {
    case wire_format::e4m3:
    case wire_format::mxfp8_e4m3: return fn(float8_e4m3fn{});
    case wire_format::e5m2:
    case wire_format::mxfp8_e5m2: return fn(float8_e5m2{});
    default: return fn(hifloat8{});
  }
}

/// Calls f(Elem{}) with the element type of an MX wire format.
template <class F>
decltype(auto) visit_mx_element(wire_format f, F&& fn) {
  if (f == wire_format::mxfp8_e5m2) return fn(float8_e5m2{});
  return fn(float8_e4m3fn{});
}

inline float get_scale(std::span<const std::uint8_t> scales, std::size_t g) noexcept {
  return std::bit_cast<float>(get_u32(scales.data() + 4 * g));
}

/// One scale group x -> codes (one byte each) with a fp32 scale; returns the group's scan.
template <class Elem>
group_scan encode_group(std::span<const float> x, const quant_scheme& s, std::span<std::uint8_t> codes, float& scale) {
  const group_scan sc = scan_group(x);
  scale = group_scale<Elem>(sc.amax, s.rule, s.target);
  float ignored = 0.0f;
  simd::check(simd::quantize_scaled<Elem>(x, codes, scale, ignored, saturating), "comm: quantize_scaled");
  return sc;
}

/// One fp32-scaled group's codes -> out[i] = decode(codes[i]) * scale.
template <class Elem>
void decode_group(std::span<const std::uint8_t> codes, float scale, std::span<float> out) {
  simd::check(simd::dequantize_scaled<Elem>(codes, out, scale), "comm: dequantize_scaled");
}

inline void encode_bf16(std::span<const float> x, std::span<std::uint8_t> codes, std::vector<std::uint16_t>& tmp) {
  tmp.resize(x.size());
  simd::check(simd::encode<bfloat16>(x, std::span<std::uint16_t>(tmp), saturating), "comm: encode bf16");
  if (!x.empty()) std::memcpy(codes.data(), tmp.data(), 2 * x.size());
}
inline void decode_bf16(std::span<const std::uint8_t> codes, std::span<float> out, std::vector<std::uint16_t>& tmp) {
  tmp.resize(out.size());
  if (!out.empty()) std::memcpy(tmp.data(), codes.data(), 2 * out.size());
  simd::check(simd::decode<bfloat16>(std::span<const std::uint16_t>(tmp), out), "comm: decode bf16");
}

/// Decodes chunk i (elements [i C, min(len, (i + 1) C)) of a flat body of len elements) into out.
inline void decode_flat_chunk(std::span<const std::uint8_t> body, std::size_t len, const recipe& r, std::size_t i,
                              std::span<float> out, std::vector<std::uint16_t>& tmp) {
  const std::size_t c0 = i * r.chunk, n = out.size();
  const std::size_t sb = flat_scale_bytes(len, r);
  const auto codes = body.subspan(sb + c0 * element_bytes(r.format), n * element_bytes(r.format));
  switch (scale_kind_of(r.format)) {
    case scale_kind::none:
      if (r.format == wire_format::fp32) {
        if (n != 0) std::memcpy(out.data(), codes.data(), 4 * n);
      } else {
        decode_bf16(codes, out, tmp);
      }
      return;
    case scale_kind::fp32:
      visit_wire_element(r.format, [&](auto e) { decode_group<decltype(e)>(codes, get_scale(body, i), out); });
      return;
    case scale_kind::e8m0:
      visit_mx_element(r.format, [&](auto e) {
        using Elem = decltype(e);
        const auto scales = body.subspan(c0 / mx_group, minifloat::detail::ceil_div(n, mx_group));
        simd::check(simd::mx_dequantize<Elem>(codes, scales, 1, n, mx_tile::row32, out),
                    "comm: mx_dequantize");
      });
      return;
  }
}

/// Writes the chunks of a flat body of len elements one at a time (any order), each exactly as
/// encode_flat writes it: the owner of a shard re-quantizes its sum chunk by chunk while the sum
/// is still in cache (reduce_encode_flat).
class flat_encoder {
 public:
  flat_encoder(const recipe& r, std::size_t len, std::span<std::uint8_t> body)
      : r_(r), s_(r.flat_scheme()), body_(body), codes_(body.subspan(flat_scale_bytes(len, r))) {}

  /// Chunk i from xc (its elements); returns whether xc held Inf or NaN.
  bool chunk(std::size_t i, std::span<const float> xc) {
    const std::size_t c0 = i * r_.chunk, m = xc.size(), eb = element_bytes(r_.format);
    const auto codes = codes_.subspan(c0 * eb, m * eb);
    switch (scale_kind_of(r_.format)) {
      case scale_kind::none: {
        const bool bad = has_nonfinite(xc);
        if (r_.format == wire_format::fp32) {
          if (m != 0) std::memcpy(codes.data(), xc.data(), 4 * m);
        } else {
          encode_bf16(xc, codes, tmp_);
        }
        return bad;
      }
      case scale_kind::fp32:
        return visit_wire_element(r_.format, [&](auto e) {
          float scale = 1.0f;
          const bool bad = encode_group<decltype(e)>(xc, s_, codes, scale).nonfinite;
          put_u32(body_.data() + 4 * i, std::bit_cast<std::uint32_t>(scale));
          return bad;
        });
      case scale_kind::e8m0: {
        const bool bad = has_nonfinite(xc);
        if (m == 0) return bad;
        visit_mx_element(r_.format, [&](auto e) {
          simd::check(simd::mx_quantize<decltype(e)>(xc, 1, m, mx_tile::row32, scale_rule::floor, codes,
                                                     body_.subspan(c0 / mx_group, minifloat::detail::ceil_div(m, mx_group))),
                      "comm: mx_quantize");
        });
        return bad;
      }
    }
    return false;
  }

 private:
  const recipe& r_;
  quant_scheme s_;
  std::span<std::uint8_t> body_, codes_;
  std::vector<std::uint16_t> tmp_;
};

}  // namespace detail

/// Body bytes (after the header) of a flat range of len elements.
[[nodiscard]] inline std::size_t flat_body_bytes(std::size_t len, const recipe& r) {
  return flat_message_bytes(len, r) - header_bytes;
}

#if MINIFLOAT_DEFINE_KERNELS(MINIFLOAT_KERNELS_COMM)  // declared and documented above
MINIFLOAT_KERNEL_API bool encode_flat(std::span<const float> x, const recipe& r, std::span<std::uint8_t> body) {
  if (body.size() != flat_body_bytes(x.size(), r))
    throw shape_error("comm::encode_flat: body needs " + std::to_string(flat_body_bytes(x.size(), r)) + " bytes, got " +
                      std::to_string(body.size()));
  const std::size_t n = x.size();
  detail::flat_encoder enc(r, n, body);
  bool bad = false;
  for (std::size_t c0 = 0, i = 0; c0 < n; c0 += r.chunk, ++i) bad = enc.chunk(i, x.subspan(c0, std::min(r.chunk, n - c0))) || bad;
  return bad;
}
#endif

/// Where the output of a decode is streamed past the caches (simd/stream.hpp): 16 MiB of fp32,
/// beyond what one core's caches hold, so the caller would not have read it from cache anyway.
inline constexpr std::size_t stream_output_elements = std::size_t{1} << 22;

/// Whether a decode of n elements under r into a destination of `total` elements streams: only
/// 8-bit codes (for fp32 and bf16 the extra copy through the buffer costs more than it saves).
[[nodiscard]] inline bool streams_output(const recipe& r, std::size_t total) noexcept {
  return total >= stream_output_elements && scale_kind_of(r.format) != scale_kind::none;
}

#if MINIFLOAT_DEFINE_KERNELS(MINIFLOAT_KERNELS_COMM)  // declared and documented above
MINIFLOAT_KERNEL_API void decode_flat(std::span<const std::uint8_t> body, const recipe& r, std::span<float> out, bool streamed) {
  const std::size_t n = out.size();
  if (body.size() != flat_body_bytes(n, r))
    throw shape_error("comm::decode_flat: " + std::to_string(n) + " elements need " +
                      std::to_string(flat_body_bytes(n, r)) + " body bytes, got " + std::to_string(body.size()));
  std::vector<std::uint16_t> tmp;
  std::vector<float> buf(streamed ? std::min(n, r.chunk) : 0);
  for (std::size_t c0 = 0, i = 0; c0 < n; c0 += r.chunk, ++i) {
    const auto oc = out.subspan(c0, std::min(r.chunk, n - c0));
    if (!streamed) {
      detail::decode_flat_chunk(body, n, r, i, oc, tmp);
      continue;
    }
    const auto bc = std::span<float>(buf).first(oc.size());
    detail::decode_flat_chunk(body, n, r, i, bc, tmp);
    simd::stream_copy(bc, oc);
  }
}

MINIFLOAT_KERNEL_API void accumulate_flat(std::span<const std::uint8_t> body, const recipe& r, std::span<float> acc) {
  const std::size_t n = acc.size();
  if (body.size() != flat_body_bytes(n, r))
    throw shape_error("comm::accumulate_flat: " + std::to_string(n) + " elements need " +
                      std::to_string(flat_body_bytes(n, r)) + " body bytes, got " + std::to_string(body.size()));
  std::vector<std::uint16_t> tmp;
  std::vector<float> d(std::min(n, r.chunk));
  for (std::size_t c0 = 0, i = 0; c0 < n; c0 += r.chunk, ++i) {
    const std::size_t m = std::min(r.chunk, n - c0);
    detail::decode_flat_chunk(body, n, r, i, std::span<float>(d).first(m), tmp);
    float* a = acc.data() + c0;
    for (std::size_t j = 0; j < m; ++j) a[j] += d[j];
  }
}

MINIFLOAT_KERNEL_API bool reduce_encode_flat(std::span<const std::span<const std::uint8_t>> bodies, std::size_t n, const recipe& r,
                               const recipe& rg, std::span<std::uint8_t> out_body) {
  for (const auto& b : bodies)
    if (b.size() != flat_body_bytes(n, r))
      throw shape_error("comm::reduce_encode_flat: " + std::to_string(n) + " elements need " +
                        std::to_string(flat_body_bytes(n, r)) + " body bytes, got " + std::to_string(b.size()));
  if (out_body.size() != flat_body_bytes(n, rg))
    throw shape_error("comm::reduce_encode_flat: the output body needs " + std::to_string(flat_body_bytes(n, rg)) +
                      " bytes, got " + std::to_string(out_body.size()));
  detail::flat_encoder enc(rg, n, out_body);
  std::vector<std::uint16_t> tmp;
  std::vector<float> sum(std::min(n, r.chunk)), d(sum.size());
  bool bad = false;
  for (std::size_t c0 = 0, i = 0; c0 < n; c0 += r.chunk, ++i) {
    const std::size_t m = std::min(r.chunk, n - c0);
    const std::span<float> s = std::span<float>(sum).first(m), dm = std::span<float>(d).first(m);
    std::fill(s.begin(), s.end(), 0.0f);
    for (const auto& b : bodies) {
      detail::decode_flat_chunk(b, n, r, i, dm, tmp);
      for (std::size_t j = 0; j < m; ++j) s[j] += dm[j];
    }
    bad = enc.chunk(i, s) || bad;
  }
  return bad;
}
#endif

/// Body bytes of `rows` rows of `cols` elements.
[[nodiscard]] inline std::size_t row_body_bytes(std::size_t rows, std::size_t cols, const recipe& r) {
  return row_message_bytes(rows, cols, r) - header_bytes;
}

#if MINIFLOAT_DEFINE_KERNELS(MINIFLOAT_KERNELS_COMM)  // declared and documented above
MINIFLOAT_KERNEL_API bool encode_rows(std::span<const float> x, std::size_t rows, std::size_t cols, const recipe& r,
                        std::span<std::uint8_t> body) {
  if (x.size() != checked_mul(rows, cols, "comm::encode_rows: rows x cols") || body.size() != row_body_bytes(rows, cols, r))
    throw shape_error("comm::encode_rows: " + std::to_string(rows) + " x " + std::to_string(cols) + " needs " +
                      std::to_string(rows * cols) + " values and " + std::to_string(row_body_bytes(rows, cols, r)) +
                      " body bytes, got " + std::to_string(x.size()) + " and " + std::to_string(body.size()));
  const std::size_t sb = rows * row_scale_bytes(cols, r), eb = element_bytes(r.format);
  const auto codes = body.subspan(sb);
  bool bad = false;
  switch (scale_kind_of(r.format)) {
    case scale_kind::none:
      bad = detail::has_nonfinite(x);
      if (r.format == wire_format::fp32) {
        if (!x.empty()) std::memcpy(codes.data(), x.data(), 4 * x.size());
      } else {
        std::vector<std::uint16_t> tmp;
        detail::encode_bf16(x, codes, tmp);
      }
      return bad;
    case scale_kind::fp32: {
      const quant_scheme s = r.row_scheme();
      detail::visit_wire_element(r.format, [&](auto e) {
        using Elem = decltype(e);
        for (std::size_t i = 0; i < rows; ++i) {
          float scale = 1.0f;
          bad = detail::encode_group<Elem>(x.subspan(i * cols, cols), s, codes.subspan(i * cols * eb, cols), scale).nonfinite || bad;
          detail::put_u32(body.data() + 4 * i, std::bit_cast<std::uint32_t>(scale));
        }
      });
      return bad;
    }
    case scale_kind::e8m0:
      bad = detail::has_nonfinite(x);
      if (x.empty()) return bad;
      detail::visit_mx_element(r.format, [&](auto e) {
        using Elem = decltype(e);
        simd::check(simd::mx_quantize<Elem>(x, rows, cols, mx_tile::row32, scale_rule::floor, codes, body.first(sb)),
                    "comm: mx_quantize");
      });
      return bad;
  }
  return bad;
}

MINIFLOAT_KERNEL_API void decode_rows(std::span<const std::uint8_t> body, std::size_t rows, std::size_t cols, const recipe& r,
                        std::span<float> out) {
  if (out.size() != checked_mul(rows, cols, "comm::decode_rows: rows x cols") || body.size() != row_body_bytes(rows, cols, r))
    throw shape_error("comm::decode_rows: " + std::to_string(rows) + " x " + std::to_string(cols) + " needs " +
                      std::to_string(rows * cols) + " values and " + std::to_string(row_body_bytes(rows, cols, r)) +
                      " body bytes, got " + std::to_string(out.size()) + " and " + std::to_string(body.size()));
  const std::size_t sb = rows * row_scale_bytes(cols, r), eb = element_bytes(r.format);
  const auto codes = body.subspan(sb);
  switch (scale_kind_of(r.format)) {
    case scale_kind::none:
      if (r.format == wire_format::fp32) {
        if (!out.empty()) std::memcpy(out.data(), codes.data(), 4 * out.size());
      } else {
        std::vector<std::uint16_t> tmp;
        detail::decode_bf16(codes, out, tmp);
      }
      return;
    case scale_kind::fp32:
      detail::visit_wire_element(r.format, [&](auto e) {
        for (std::size_t i = 0; i < rows; ++i)
          detail::decode_group<decltype(e)>(codes.subspan(i * cols * eb, cols), detail::get_scale(body, i),
                                            out.subspan(i * cols, cols));
      });
      return;
    case scale_kind::e8m0:
      if (out.empty()) return;
      detail::visit_mx_element(r.format, [&](auto e) {
        using Elem = decltype(e);
        simd::check(simd::mx_dequantize<Elem>(codes, body.first(sb), rows, cols, mx_tile::row32, out),
                    "comm: mx_dequantize");
      });
      return;
  }
}
#endif

}  // namespace minifloat::comm
