#pragma once
// The ISA-neutral half of the bulk codecs: per-call constants derived from a conversion, the
// compile-time tables the encoders and decoders read, and the small enums the kernel loops are
// templated on. No vector types here: every ISA namespace (simd/avx2, simd/neon, simd/avx512)
// uses these as they are, and writes the vector half once through simd/lanes/codec_logic.hpp.
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "../../formats/basic_float.hpp"
#include "../../formats/convert.hpp"
#include "../../formats/hifloat8.hpp"
#include "../options.hpp"

namespace minifloat::simd::detail {

/// The directed kind in lanes: a lane rounds away from zero iff (its sign bit ^ away_xor's) is
/// set and away_enable. upward: the positive lanes; downward: the negative ones; toward_zero: none.
struct directed_lanes {
  std::uint32_t away_xor = 0;
  bool away_enable = false;
  static constexpr directed_lanes from(rounding r) noexcept {
    if (r == rounding::upward) return {0x80000000U, true};
    if (r == rounding::downward) return {0x00000000U, true};
    return {0U, false};
  }
};

/// E8M0-like: an IEEE-like layout without a zero (float8_e8m0fnu).
template <class Spec>
constexpr bool e8m0_like() noexcept {
  if constexpr (requires { Spec::layout; }) return !Spec::layout.has_zero;
  else return false;
}
template <class Spec>
inline constexpr bool is_e8m0_like = e8m0_like<Spec>();

/// The three codes every encoder may substitute, from the conversion's overflow policy. Every
/// format's overflow code is max_code or max_code + 1, which is why overflow is one `min`.
template <class Spec>
struct overflow_codes {
  std::uint32_t ovf;      ///< overflow and +-Inf when the lane does not truncate (no sign)
  std::uint32_t max;      ///< max finite magnitude code
  std::uint32_t nan_out;  ///< code of a NaN input
  static constexpr overflow_codes from(conversion c) noexcept {
    if constexpr (std::is_same_v<Spec, hifloat8_spec>) {
      const bool sat = c.on_overflow != overflow::non_saturating;
      return {sat ? 0x6EU : 0x6FU, 0x6EU, c.on_overflow == overflow::saturate_nan_to_zero ? 0U : 0x80U};
    } else {
      const bool sat = c.on_overflow != overflow::non_saturating || Spec::layout.specials == nan_inf::none;
      const std::uint32_t ovf = sat                                        ? Spec::max_code
                                : Spec::layout.specials == nan_inf::ieee ? Spec::inf_code
                                                                          : Spec::nan_code;
      const bool nan_zero = !Spec::has_nan || c.on_overflow == overflow::saturate_nan_to_zero;
      return {ovf, Spec::max_code, nan_zero ? 0U : static_cast<std::uint32_t>(Spec::nan_code)};
    }
  }
};

// ------------------------------------------------------------------------------------------------
// HiF8 (hifloat8_spec.hpp): the LSB of binade E is 2^(E - w(E)), w = 3, 2, 1 for |E| <= 3, 7,
// 15, 0 in the denormal binades E = -22 .. -16, and every |x| < 2^-22 shares the LSB 2^-22 (the
// encoders give those lanes E = -23 and w = -1). Code = base(E') + m, where E' is the binade
// after rounding (E + 1 on a carry) and base(E) = hifloat8_spec::pack(E, 0): for |E| <= 15 a
// 16-entry table of pack(|E|, 0) plus the exponent-sign bit pack(-|E|, 0) ^ pack(|E|, 0); E + 23
// in the denormal binades. pack(15, 1) = 0x6F is the Inf code, so E' = 15 with m = 1 is
// overflow, like E' >= 16.
struct hif8_tables {
  std::array<std::uint8_t, 16> width{}, base{}, negbit{};
  static constexpr hif8_tables make() noexcept {
    hif8_tables t;
    for (int a = 0; a < 16; ++a) {
      const auto u = static_cast<std::size_t>(a);
      t.width[u] = static_cast<std::uint8_t>(hifloat8_spec::mantissa_width(a));
      t.base[u] = hifloat8_spec::pack(a, 0);
      t.negbit[u] = static_cast<std::uint8_t>(a == 0 ? 0 : (hifloat8_spec::pack(-a, 0) ^ hifloat8_spec::pack(a, 0)));
    }
    return t;
  }
};
inline constexpr hif8_tables hif8_table_data = hif8_tables::make();
// The structure the encoder relies on: one exponent-sign bit per binade, m in the low w bits.
static_assert([] {
  for (int e = -15; e <= 15; ++e) {
    const int a = e < 0 ? -e : e;
    const unsigned w = static_cast<unsigned>(hifloat8_spec::mantissa_width(e));
    for (unsigned m = 0; m < (1U << w); ++m) {
      const unsigned want = hif8_table_data.base[static_cast<std::size_t>(a)] |
                            (e < 0 ? hif8_table_data.negbit[static_cast<std::size_t>(a)] : 0U);
      if (hifloat8_spec::pack(e, m) != want + m) return false;
    }
  }
  for (int e = -22; e <= -16; ++e)
    if (hifloat8_spec::pack(e, 0) != static_cast<unsigned>(e + 23)) return false;
  return hifloat8_spec::pack(15, 1) == hifloat8_spec::inf_code;
}());

/// HiF8 ties-away (the default) as a table: with ties away from zero the rounding of |x| at w <= 3
/// mantissa bits depends only on the top w + 1 mantissa bits (the half bit decides, nothing below
/// it matters), so the code of |x| is a function of its float32 biased exponent and its top 4
/// mantissa bits: rows of 16 entries for the exponents FirstRow .. FirstRow + Rows - 1 (callers
/// clamp into them), taken from the scalar codec itself. Every cell is checked at compile time to
/// be constant (its lowest and highest pattern encode alike, and encode is monotone).
template <class Entry, std::uint32_t FirstRow, std::uint32_t Rows>
struct hif8_away_table {
  static constexpr std::uint32_t first_row = FirstRow, rows = Rows;
  std::array<Entry, Rows * 16> code{};
  bool cells_constant = true;
  static constexpr hif8_away_table make() noexcept {
    hif8_away_table t;
    for (std::uint32_t row = 0; row < rows; ++row)
      for (std::uint32_t cell = 0; cell < 16; ++cell) {
        const std::uint32_t lo = ((first_row + row) << 23) | (cell << 19);
        const std::uint32_t hi = lo | 0x7FFFFU;
        const std::uint8_t c_lo = minifloat::encode<hifloat8>(std::bit_cast<float>(lo), conversion{rounding::nearest_away});
        const std::uint8_t c_hi = minifloat::encode<hifloat8>(std::bit_cast<float>(hi), conversion{rounding::nearest_away});
        if (c_lo != c_hi) t.cells_constant = false;
        t.code[row * 16 + cell] = static_cast<Entry>(c_lo);
      }
    return t;
  }
};

// ------------------------------------------------------------------------------------------------
// Loop parameters

enum class scale_kind : std::uint8_t { none, multiply, divide };
enum class store_kind : std::uint8_t { u8, u16, nibbles };
enum class decode_store : std::uint8_t { plain, scaled };

template <class T>
inline constexpr store_kind store_for = T::spec::bits > 8 ? store_kind::u16 : store_kind::u8;

/// Bytes of output for n codes stored as St.
template <store_kind St>
constexpr std::size_t out_bytes(std::size_t n) noexcept {
  return St == store_kind::u16 ? 2 * n : St == store_kind::u8 ? n : (n + 1) / 2;
}

/// The scale stage for x / s: when s = 2^k with 1/s a normal float, x * (1/s) is the same
/// correctly rounded quotient (both round the exact x * 2^-k once) and much cheaper than a divide.
inline bool reciprocal_is_exact(float s, float& inv) noexcept {
  const std::uint32_t b = std::bit_cast<std::uint32_t>(s);
  const std::uint32_t field = (b >> 23) & 0xFFU;
  if ((b & 0x807FFFFFU) != 0 || field == 0 || field >= 254) return false;  // 2^k, k in [-126, 126]
  inv = std::bit_cast<float>((254U - field) << 23);
  return true;
}

/// The float32 bit patterns of the (at most 8) subnormal magnitudes of an IEEE-like format of
/// at most 8 bits, from the format's own decode table.
template <class Spec>
inline constexpr std::array<std::uint32_t, 8> subnormal_bits = [] {
  std::array<std::uint32_t, 8> t{};
  if constexpr (requires { Spec::mantissa_bits; }) {
    static_assert(Spec::mantissa_bits <= 3, "at most 8 subnormal magnitudes");
    for (std::size_t m = 0; m < (std::size_t{1} << Spec::mantissa_bits); ++m)
      t[m] = std::bit_cast<std::uint32_t>(minifloat::detail::decode_table<Spec>[m]);
  }
  return t;
}();

}  // namespace minifloat::simd::detail
