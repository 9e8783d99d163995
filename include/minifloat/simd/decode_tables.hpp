#pragma once
// The one home of per-format decode data: every table a decoder of an element format of at
// most 8 bits looks its codes up in, built once at compile time from the format's own decode
// table (formats/basic_float.hpp detail::decode_table), so no kernel carries a copy.
//
//   decode_values<Spec>      256 floats indexed by the whole byte; codes past the format's width
//                            repeat (FP4 every 16, FP6 every 64), as basic_float::from_bits masks
//   decode_values_of(id)     the same by run-time format id; nullptr for wider formats
//   bf16_bytes<Spec, N>      the high and low bytes of the bfloat16 of codes 0 .. N-1: the
//                            vpermb / vpermi2b form (simd/x86/avx512_codec.hpp, gemm/x86/
//                            avx512.hpp, attention/x86/pieces.hpp), plus the facts those decoders
//                            check about bit 7 and code 0x80
//   cascade_bytes<Spec, N>   bf16_bytes pre-XORed for simd/x86/avx2_codec.hpp's vpshufb cascade
//   lut128_of(id)            bf16_bytes pre-XORed for gemm/x86/avx2.hpp's vpshufb cascade
//
// Why the bytes are enough: every value of these formats has at most 4 significant bits and an
// exponent inside bfloat16's range, so float32 = bf16 << 16 (the facts below say where not, and
// each decoder checks them). NaN codes below 0x80 decode to 0x7FC00000, whose bytes are the
// quiet NaN 0x7F, 0xC0 the decoders want.
//
// The two vpshufb cascades are the same idea run in opposite directions (8 lookups of 16 bytes
// XORed together, out-of-range lookups cancelling); their kernels index them differently, and
// reading one from the other's layout would change the kernels' instructions, so both layouts
// are derived here from the same bytes.
//
// Constexpr data and plain functions only: no intrinsics, nothing above formats/.
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>

#include "../formats/basic_float.hpp"
#include "../formats/format_list.hpp"
#include "../formats/packed.hpp"

namespace minifloat::simd::detail {

/// The 256 values of a format of at most 8 bits, indexed by the code byte.
template <class Spec>
inline constexpr std::array<float, 256> decode_values = [] {
  std::array<float, 256> r{};
  const auto& t = minifloat::detail::decode_table<Spec>;
  for (unsigned c = 0; c < 256; ++c) r[c] = t[c & (t.size() - 1)];
  return r;
}();

/// decode_values by format id: ids 0 .. 15, room for every format_id (callers may ask for any of
/// them; the wider formats and unused ids hold nullptr).
inline constexpr std::array<const std::array<float, 256>*, 16> decode_values_by_id = [] {
  std::array<const std::array<float, 256>*, 16> r{};
  for_each_format([&](auto tag) {
    using E = typename decltype(tag)::type;
    if constexpr (sizeof_bits<E> <= 8) r[static_cast<std::size_t>(format_id_of<E>)] = &decode_values<typename E::spec>;
  });
  return r;
}();

/// The values of format f's codes; nullptr for a format of more than 8 bits.
constexpr const std::array<float, 256>* decode_values_of(format_id f) noexcept {
  const auto i = static_cast<std::size_t>(f);
  return i < decode_values_by_id.size() ? decode_values_by_id[i] : nullptr;
}

/// The bfloat16 bytes of codes 0 .. N-1 (a table index is the code, or its magnitude bits when
/// N = 128 and bit 7 is a sign), and what the decoders that use them check.
template <std::size_t N>
struct bf16_byte_table {
  alignas(64) std::array<std::uint8_t, N> hi{}, lo{};
  bool low_half_zero = true;   ///< every entry's float (NaNs too) is a bfloat16
  bool sign_symmetric = true;  ///< decode(c | 0x80) = -decode(c) bitwise for c in 1 .. 127
  std::uint32_t code80 = 0;    ///< float bits of code 0x80
  /// Bit 7 of a code is a sign (sign7) or ignored; nan80: code 0x80 is NaN (HiF8). ok: every
  /// non-NaN value of codes 0 .. 127 is a bfloat16 and bit 7 is one or the other (NaN pairs
  /// count as either), with 0x80 -0 or NaN when it is a sign.
  bool sign7 = false, nan80 = false, ok = false;
};

template <class Spec, std::size_t N>
constexpr bf16_byte_table<N> make_bf16_bytes() noexcept {
  static_assert(N <= 256);
  bf16_byte_table<N> l;
  const auto& t = decode_values<Spec>;
  const auto is_nan = [](float x) { return x != x; };  // std::isnan is not constexpr in C++20
  for (std::size_t c = 0; c < N; ++c) {
    const std::uint32_t b = std::bit_cast<std::uint32_t>(t[c]);
    if ((b & 0xFFFFU) != 0) l.low_half_zero = false;
    l.hi[c] = static_cast<std::uint8_t>(b >> 24);
    l.lo[c] = static_cast<std::uint8_t>((b >> 16) & 0xFFU);
  }
  l.code80 = std::bit_cast<std::uint32_t>(t[0x80]);
  for (std::size_t c = 1; c < 128; ++c)
    if (std::bit_cast<std::uint32_t>(t[c | 0x80]) != (std::bit_cast<std::uint32_t>(t[c]) | 0x80000000U))
      l.sign_symmetric = false;
  l.ok = true;
  bool same = true, sign = true;
  for (unsigned c = 0; c < 128; ++c) {
    const float x = t[c], y = t[c | 0x80U];
    const std::uint32_t bx = std::bit_cast<std::uint32_t>(x), by = std::bit_cast<std::uint32_t>(y);
    if ((bx & 0xFFFFU) != 0 && !is_nan(x)) l.ok = false;
    same = same && (bx == by || (is_nan(x) && is_nan(y)));
    if (c != 0) sign = sign && (by == (bx ^ 0x80000000U) || (is_nan(x) && is_nan(y)));
  }
  l.sign7 = !same;
  l.nan80 = l.sign7 && is_nan(t[0x80]);
  if (!same && !(sign && (l.code80 == 0x80000000U || l.nan80))) l.ok = false;
  return l;
}

/// Spec's bf16 bytes with N entries (128 by default: indexed by code & 0x7F).
template <class Spec, std::size_t N = 128>
inline constexpr bf16_byte_table<N> bf16_bytes = make_bf16_bytes<Spec, N>();

/// bf16_bytes<Spec, N> pre-XORed for a cascade that walks the 16-entry sub-tables upwards
/// (simd/x86/avx2_codec.hpp): entry j of sub-table t holds T[16t + j] ^ T[16(t-1) + j] (T[-1] = 0).
template <std::size_t N>
struct cascade_table {
  static constexpr std::size_t tables = N / 16;
  std::array<std::uint8_t, N> hi{}, lo{};
};

template <class Spec, std::size_t N>
inline constexpr cascade_table<N> cascade_bytes = [] {
  const auto& b = bf16_bytes<Spec, N>;
  cascade_table<N> l;
  for (std::size_t c = 0; c < N; ++c) {
    l.hi[c] = static_cast<std::uint8_t>(b.hi[c] ^ (c >= 16 ? b.hi[c - 16] : 0));
    l.lo[c] = static_cast<std::uint8_t>(b.lo[c] ^ (c >= 16 ? b.lo[c - 16] : 0));
  }
  return l;
}();

/// bf16_bytes<Spec> pre-XORed for a cascade that walks the sub-tables downwards (gemm/x86/
/// avx2.hpp, index c + 0x80 - 16(h+1)): dh[h] = T[h] ^ T[h+1], dh[7] = T[7] over the 8
/// sub-tables of 16. sign7: bit 7 is the sign (HiF8, whose 0x80 is NaN); otherwise it is
/// ignored (6-bit codes). ok: the decoder may use it (every value exact in bfloat16, bit 7 so).
struct lut128 {
  std::uint8_t dh[8][16] = {}, dl[8][16] = {};
  bool sign7 = false;
  bool ok = false;
};

template <class Spec>
constexpr lut128 make_lut128() noexcept {
  const auto& t = decode_values<Spec>;
  const auto& b = bf16_bytes<Spec>;
  const auto is_nan = [](float x) { return x != x; };
  lut128 l;
  l.ok = true;
  for (unsigned c = 0; c < 128; ++c) {
    const std::uint32_t v = std::bit_cast<std::uint32_t>(t[c]);
    if ((v & 0xFFFFU) != 0 && !is_nan(t[c])) l.ok = false;
  }
  // Bit 7: ignored (t[c | 0x80] == t[c]) or a sign (t[c | 0x80] == -t[c]) except code 0x80.
  bool same = true, sign = true;
  for (unsigned c = 0; c < 128; ++c) {
    const std::uint32_t lo = std::bit_cast<std::uint32_t>(t[c]), hi = std::bit_cast<std::uint32_t>(t[c | 0x80U]);
    same = same && lo == hi;
    if (c != 0) sign = sign && hi == (lo ^ 0x80000000U);
  }
  if (!same && !(sign && is_nan(t[0x80]) && t[0] == 0.0f)) l.ok = false;
  l.sign7 = !same;
  for (unsigned h = 0; h < 8; ++h)
    for (unsigned i = 0; i < 16; ++i) {
      const unsigned c = 16 * h + i, n = c + 16;
      l.dh[h][i] = static_cast<std::uint8_t>(b.hi[c] ^ (h < 7 ? b.hi[n] : 0));
      l.dl[h][i] = static_cast<std::uint8_t>(b.lo[c] ^ (h < 7 ? b.lo[n] : 0));
    }
  return l;
}

/// The lut128 of each format the AVX2 GEMM decodes through one (the 8-bit IEEE-like formats
/// and FP4 have arithmetic decoders there).
inline constexpr lut128 lut128_hifloat8 = make_lut128<hifloat8_spec>();
inline constexpr lut128 lut128_e3m2 = make_lut128<float6_e3m2fn::spec>();
inline constexpr lut128 lut128_e2m3 = make_lut128<float6_e2m3fn::spec>();
inline constexpr lut128 lut128_none{};

constexpr const lut128& lut128_of(format_id f) noexcept {
  switch (f) {
    case format_id::hifloat8: return lut128_hifloat8;
    case format_id::float6_e3m2fn: return lut128_e3m2;
    case format_id::float6_e2m3fn: return lut128_e2m3;
    default: return lut128_none;
  }
}

/// The 128-entry bf16 bytes by format id (the vpermi2b decoders of gemm and attention), or
/// nullptr: FP4 (two codes a byte) and every table that is not ok.
constexpr const bf16_byte_table<128>* bf16_bytes_of(format_id f) noexcept {
  const bf16_byte_table<128>* l = nullptr;
  switch (f) {
    case format_id::hifloat8: l = &bf16_bytes<hifloat8_spec>; break;
    case format_id::float8_e4m3fn: l = &bf16_bytes<float8_e4m3fn::spec>; break;
    case format_id::float8_e5m2: l = &bf16_bytes<float8_e5m2::spec>; break;
    case format_id::float6_e3m2fn: l = &bf16_bytes<float6_e3m2fn::spec>; break;
    case format_id::float6_e2m3fn: l = &bf16_bytes<float6_e2m3fn::spec>; break;
    default: break;
  }
  return l != nullptr && l->ok ? l : nullptr;
}

}  // namespace minifloat::simd::detail
