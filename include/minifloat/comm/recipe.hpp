#pragma once
// Wire recipes of the quantized collectives (comm/mpi.hpp, comm/reference.hpp): which format the
// payload travels in, where its scales live, how a flat vector is cut into chunks and shards, and
// exactly how many bytes each message has. Nothing here needs MPI.
//
// Formats (wire_format) and their scales:
//   fp32        raw float32, no scale (the reference)
//   bf16        bfloat16 codes, no scale: round to nearest even, saturating (as quantize() does)
//   hif8        HiF8 codes, one fp32 scale per chunk (flat collectives) or per row (all_to_all),
//               pow2 rule: s = 2^(floor(log2 amax) - T), T = hif8_target (default 3, so the amax
//               lands in [8, 16), the top of HiF8's 3-bit-mantissa band; quant/scheme.hpp)
//   e4m3, e5m2  OCP FP8 codes, one fp32 scale per chunk / row, max rule: s = amax / max_finite
//   mxfp8_e4m3, mxfp8_e5m2  OCP MX: one E8M0 scale per 32 elements (floor rule), blocks along the
//               vector (flat) or along each row (all_to_all)
// The amax of a scale group is its finite amax (Inf/NaN skipped, quant/scales.hpp), and every
// conversion rounds to the format's nearest and saturates: exactly minifloat::quantize() on that
// group with recipe::flat_scheme() / row_scheme().
//
// Chunks and shards (flat collectives). A vector of n elements is cut into chunks of `chunk`
// elements (a multiple of 32; the last one may be short). A chunk is the scale group of the
// per-tensor formats and the unit of sharding: shard k of P holds chunks
// [floor(nc k / P), floor(nc (k + 1) / P)), nc = ceil(n / chunk) (shard_range). Because the scale
// groups do not depend on P, neither does the quantization of one rank's contribution.
//
// Messages. Every message starts with an 8-byte header: a 32-bit flags word (bit 0: the sender saw
// Inf/NaN) and the 32-bit element (or row) count modulo 2^32, both little-endian, then the scales,
// then the codes:
//   flat range of len elements   scales: 4 * ceil(len / chunk) (hif8, e4m3, e5m2),
//                                ceil(len / 32) (mx), 0 (fp32, bf16); codes: len * element_bytes
//   `rows` rows of `cols`        scales: rows * 4 (hif8, e4m3, e5m2), rows * ceil(cols / 32) (mx),
//                                0 (fp32, bf16); codes: rows * cols * element_bytes
// Scales and codes are stored in the host's byte order, which must be little-endian (checked at
// compile time), so the wire format is the same on every supported host.
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "../core/checked.hpp"
#include "../core/errors.hpp"
#include "../formats/packed.hpp"
#include "../quant/scheme.hpp"

namespace minifloat::comm {

static_assert(std::endian::native == std::endian::little,
              "minifloat::comm stores wire scales and 16/32-bit codes in host order, which must be little-endian");

/// The ranks disagree (count, format, operation), or another rank passed invalid arguments: every
/// rank of the collective throws this (the rank at fault throws its own, more precise, error).
class mismatch_error : public shape_error {
 public:
  using shape_error::shape_error;
};

enum class wire_format : std::uint8_t { fp32, bf16, hif8, e4m3, e5m2, mxfp8_e4m3, mxfp8_e5m2 };

constexpr std::string_view to_string(wire_format f) noexcept {
  switch (f) {
    case wire_format::fp32: return "fp32";
    case wire_format::bf16: return "bf16";
    case wire_format::hif8: return "hif8";
    case wire_format::e4m3: return "e4m3";
    case wire_format::e5m2: return "e5m2";
    case wire_format::mxfp8_e4m3: return "mxfp8_e4m3";
    case wire_format::mxfp8_e5m2: return "mxfp8_e5m2";
  }
  return "?";
}

inline constexpr wire_format all_wire_formats[] = {wire_format::fp32, wire_format::bf16,       wire_format::hif8,
                                                   wire_format::e4m3, wire_format::e5m2,       wire_format::mxfp8_e4m3,
                                                   wire_format::mxfp8_e5m2};

constexpr std::optional<wire_format> parse_wire_format(std::string_view s) noexcept {
  for (const auto f : all_wire_formats)
    if (to_string(f) == s) return f;
  return std::nullopt;
}

/// The step verdict every rank agrees on: skip when any rank's contribution (or, for all_reduce,
/// the reduced sum) held Inf/NaN.
enum class step_verdict : std::uint8_t { apply, skip };

/// How the scales of a group are stored on the wire.
enum class scale_kind : std::uint8_t { none, fp32, e8m0 };

constexpr scale_kind scale_kind_of(wire_format f) noexcept {
  switch (f) {
    case wire_format::fp32:
    case wire_format::bf16: return scale_kind::none;
    case wire_format::hif8:
    case wire_format::e4m3:
    case wire_format::e5m2: return scale_kind::fp32;
    case wire_format::mxfp8_e4m3:
    case wire_format::mxfp8_e5m2: return scale_kind::e8m0;
  }
  return scale_kind::none;
}

/// Bytes of one element's code.
constexpr std::size_t element_bytes(wire_format f) noexcept {
  return f == wire_format::fp32 ? 4 : f == wire_format::bf16 ? 2 : 1;
}

inline constexpr std::size_t header_bytes = 8;
inline constexpr std::size_t mx_group = 32;

struct recipe {
  wire_format format = wire_format::hif8;
  std::size_t chunk = 1024;  ///< flat collectives: elements per chunk (fp32 scale group, shard unit)
  int hif8_target = 3;       ///< hif8: the pow2 target T (amax / s in [2^T, 2^(T+1)))
  /// all_reduce only: the format of the all-gather half (the reduced sum), when it differs from
  /// `format` (e.g. hif8 contributions, a bf16 sum: one 8-bit rounding fewer, more bytes).
  std::optional<wire_format> gather;

  static recipe of(wire_format f, std::size_t chunk = 1024) {
    recipe r;
    r.format = f;
    r.chunk = chunk;
    return r;
  }
  friend bool operator==(const recipe&, const recipe&) = default;

  /// The recipe of all_reduce's all-gather half.
  [[nodiscard]] recipe gather_recipe() const {
    recipe g = *this;
    g.format = gather.value_or(format);
    g.gather.reset();
    return g;
  }

  /// Throws shape_error / unsupported_error naming what is wrong.
  void validate() const {
    if (to_string(format) == "?" || (gather && to_string(*gather) == "?"))
      throw unsupported_error("comm recipe: unknown wire format");
    if (chunk == 0 || chunk % mx_group != 0)
      throw shape_error("comm recipe: chunk must be a positive multiple of 32 elements, got " + std::to_string(chunk));
    if (chunk > (std::size_t{1} << 30))
      throw shape_error("comm recipe: chunk must be at most 2^30 elements, got " + std::to_string(chunk));
    if (hif8_target < -126 || hif8_target > 14)
      throw shape_error("comm recipe: hif8_target must lie in [-126, 14] (HiF8's max is 2^15), got " +
                        std::to_string(hif8_target));
  }

  /// The scheme one chunk of a flat collective is quantized with (as a 1 x len tensor).
  [[nodiscard]] quant_scheme flat_scheme() const { return scheme(granularity::tensor); }
  /// The scheme the rows of all_to_all are quantized with (rows x cols, a scale per row).
  [[nodiscard]] quant_scheme row_scheme() const { return scheme(granularity::token); }

  /// e.g. "hif8 chunk=1024 T=3".
  [[nodiscard]] std::string describe() const {
    std::string s = std::string(to_string(format)) + " chunk=" + std::to_string(chunk);
    if (format == wire_format::hif8 || gather == wire_format::hif8) s += " T=" + std::to_string(hif8_target);
    if (gather) s += " gather=" + std::string(to_string(*gather));
    return s;
  }

 private:
  [[nodiscard]] quant_scheme scheme(granularity per_group) const {
    quant_scheme s;
    s.round = rounding::nearest;
    switch (format) {
      case wire_format::fp32:  // never quantized; a placeholder that quantize() accepts
      case wire_format::bf16: s.format = format_id::bfloat16, s.gran = per_group, s.rule = scale_rule::none; break;
      case wire_format::hif8:
        s.format = format_id::hifloat8, s.gran = per_group, s.rule = scale_rule::pow2, s.target = hif8_target;
        break;
      case wire_format::e4m3: s.format = format_id::float8_e4m3fn, s.gran = per_group, s.rule = scale_rule::max; break;
      case wire_format::e5m2: s.format = format_id::float8_e5m2, s.gran = per_group, s.rule = scale_rule::max; break;
      case wire_format::mxfp8_e4m3: s = quant_scheme::make(format_id::float8_e4m3fn, granularity::mx); break;
      case wire_format::mxfp8_e5m2: s = quant_scheme::make(format_id::float8_e5m2, granularity::mx); break;
    }
    return s;
  }
};

/// A half-open element range [begin, end).
struct index_range {
  std::size_t begin = 0, end = 0;
  [[nodiscard]] constexpr std::size_t size() const noexcept { return end - begin; }
  friend constexpr bool operator==(const index_range&, const index_range&) = default;
};

/// Chunks of an n-element vector.
[[nodiscard]] inline std::size_t chunk_count(std::size_t n, std::size_t chunk) { return minifloat::detail::ceil_div(n, chunk); }

/// Shard k of `parts` of an n-element vector: whole chunks, balanced by chunk count.
[[nodiscard]] inline index_range shard_range(std::size_t n, std::size_t parts, std::size_t chunk, std::size_t k) {
  if (parts == 0 || k >= parts)
    throw shape_error("shard_range: shard " + std::to_string(k) + " of " + std::to_string(parts) + " does not exist");
  const std::size_t nc = chunk_count(n, chunk);
  const auto chunk_at = [&](std::size_t i) { return checked_mul(nc, i, "shard_range: chunks x shard") / parts; };
  return {std::min(n, chunk_at(k) * chunk), std::min(n, chunk_at(k + 1) * chunk)};
}

/// Scale bytes of a flat range of len elements (the range starts on a chunk boundary).
[[nodiscard]] inline std::size_t flat_scale_bytes(std::size_t len, const recipe& r) {
  switch (scale_kind_of(r.format)) {
    case scale_kind::none: return 0;
    case scale_kind::fp32: return 4 * chunk_count(len, r.chunk);
    case scale_kind::e8m0: return minifloat::detail::ceil_div(len, mx_group);
  }
  return 0;
}
/// Bytes of the message carrying a flat range of len elements.
[[nodiscard]] inline std::size_t flat_message_bytes(std::size_t len, const recipe& r) {
  const std::size_t codes = checked_mul(len, element_bytes(r.format), "comm: message codes");
  return checked_add(header_bytes, checked_add(flat_scale_bytes(len, r), codes, "comm: message bytes"), "comm: message bytes");
}

/// Scale bytes of one row of `cols` elements (all_to_all).
[[nodiscard]] inline std::size_t row_scale_bytes(std::size_t cols, const recipe& r) {
  switch (scale_kind_of(r.format)) {
    case scale_kind::none: return 0;
    case scale_kind::fp32: return 4;
    case scale_kind::e8m0: return minifloat::detail::ceil_div(cols, mx_group);
  }
  return 0;
}
/// Bytes of the message carrying `rows` rows of `cols` elements.
[[nodiscard]] inline std::size_t row_message_bytes(std::size_t rows, std::size_t cols, const recipe& r) {
  const std::size_t per_row =
      checked_add(row_scale_bytes(cols, r), checked_mul(cols, element_bytes(r.format), "comm: row bytes"), "comm: row bytes");
  return checked_add(header_bytes, checked_mul(rows, per_row, "comm: message bytes"), "comm: message bytes");
}

/// Bytes one rank sends in all_reduce (reduce-scatter, then all-gather) of n elements over P ranks:
/// to every other rank its shard of this rank's contribution, then this rank's reduced shard.
[[nodiscard]] inline std::size_t all_reduce_bytes_sent(std::size_t n, std::size_t parts, std::size_t rank, const recipe& r) {
  std::size_t sent = 0;
  const std::size_t own = flat_message_bytes(shard_range(n, parts, r.chunk, rank).size(), r.gather_recipe());
  for (std::size_t k = 0; k < parts; ++k) {
    if (k == rank) continue;
    sent = checked_add(sent, flat_message_bytes(shard_range(n, parts, r.chunk, k).size(), r), "comm: bytes sent");
    sent = checked_add(sent, own, "comm: bytes sent");
  }
  return sent;
}

/// What a bandwidth-optimal (ring or reduce-scatter + all-gather) all-reduce of n plain values of
/// `bytes_per_value` bytes sends per rank: 2 (P - 1) / P of the vector (the MPI_Allreduce baseline
/// of the bench; Open MPI may pick another algorithm, which never sends less).
[[nodiscard]] constexpr double plain_all_reduce_bytes(std::size_t n, std::size_t parts, std::size_t bytes_per_value) noexcept {
  return parts == 0 ? 0.0
                    : 2.0 * static_cast<double>(parts - 1) / static_cast<double>(parts) * static_cast<double>(n) *
                          static_cast<double>(bytes_per_value);
}

}  // namespace minifloat::comm
