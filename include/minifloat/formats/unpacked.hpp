#pragma once
// A finite double as sign * sig * 2^(exp - 52) with sig in [2^52, 2^53): the common input of
// every encoder. float, bfloat16, float16 and every minifloat value widen to double exactly,
// so one rounding step from this form rounds each input exactly once.
#include <bit>
#include <cstdint>

#include "../core/config.hpp"
#include "../core/policy.hpp"

namespace minifloat::detail {

enum class value_kind : std::uint8_t { zero, finite, infinite, nan };

struct unpacked {
  value_kind kind = value_kind::zero;
  bool negative = false;
  int exp = 0;             // floor(log2 |x|) for finite x
  std::uint64_t sig = 0;   // 53-bit significand with the leading one at bit 52
};

constexpr unpacked unpack(double x) noexcept {
  const auto b = std::bit_cast<std::uint64_t>(x);
  unpacked u;
  u.negative = (b >> 63) != 0;
  const int biased = static_cast<int>((b >> 52) & 0x7FF);
  const std::uint64_t frac = b & ((std::uint64_t{1} << 52) - 1);
  if (biased == 0x7FF) {
    u.kind = frac ? value_kind::nan : value_kind::infinite;
    return u;
  }
  if (biased == 0) {
    if (frac == 0) return u;  // kind zero
    // Subnormal double: normalise so the leading one sits at bit 52.
    const int shift = std::countl_zero(frac) - 11;
    u.kind = value_kind::finite;
    u.sig = frac << shift;
    u.exp = -1022 - shift;
    return u;
  }
  u.kind = value_kind::finite;
  u.sig = frac | (std::uint64_t{1} << 52);
  u.exp = biased - 1023;
  return u;
}

/// 2^k as a double, for k in [-1074, 1023]; constexpr, unlike std::ldexp.
constexpr double exp2i(int k) noexcept {
  if (k >= -1022) return std::bit_cast<double>(static_cast<std::uint64_t>(k + 1023) << 52);
  return std::bit_cast<double>(std::uint64_t{1} << (k + 1074));
}

/// The rounding direction on the magnitude, once sign and format default are resolved.
enum class magnitude_rounding : std::uint8_t { nearest_even, nearest_away, truncate, away, stochastic };

constexpr magnitude_rounding resolve(rounding r, bool negative, rounding format_nearest) noexcept {
  if (r == rounding::nearest) r = format_nearest;
  switch (r) {
    case rounding::nearest_even: return magnitude_rounding::nearest_even;
    case rounding::nearest_away: return magnitude_rounding::nearest_away;
    case rounding::toward_zero: return magnitude_rounding::truncate;
    case rounding::upward: return negative ? magnitude_rounding::truncate : magnitude_rounding::away;
    case rounding::downward: return negative ? magnitude_rounding::away : magnitude_rounding::truncate;
    case rounding::stochastic: return magnitude_rounding::stochastic;
    case rounding::nearest: break;
  }
  return magnitude_rounding::nearest_even;
}

/// sig >> drop, split into what is kept and what the rounding rule needs to know about the rest.
struct split_significand {
  std::uint64_t kept = 0;
  bool inexact = false;       // any dropped bit is set
  bool above_half = false;    // dropped part > half an LSB
  bool exactly_half = false;  // dropped part == half an LSB
  std::uint32_t fraction32 = 0;  // floor(dropped part * 2^32), in LSB units (stochastic rounding)
};

constexpr split_significand split(std::uint64_t sig, int drop) noexcept {
  split_significand s;
  if (drop <= 0) {
    s.kept = sig << -drop;  // callers never ask for more than 11 extra bits
    return s;
  }
  if (drop >= 64) {
    // sig < 2^53 <= 2^(drop-11): far below half an LSB, but not zero.
    s.inexact = sig != 0;
    const int f_shift = drop - 32;  // fraction32 = sig >> (drop - 32)
    s.fraction32 = f_shift < 64 ? static_cast<std::uint32_t>(sig >> f_shift) : 0U;
    return s;
  }
  const std::uint64_t rem = sig & ((std::uint64_t{1} << drop) - 1);
  const std::uint64_t half = std::uint64_t{1} << (drop - 1);
  s.kept = sig >> drop;
  s.inexact = rem != 0;
  s.above_half = rem > half;
  s.exactly_half = rem == half;
  // The dropped part is rem / 2^drop of an LSB; keep its top 32 bits.
  s.fraction32 = drop >= 32 ? static_cast<std::uint32_t>(rem >> (drop - 32))
                            : static_cast<std::uint32_t>(rem << (32 - drop));
  return s;
}

/// Whether the magnitude rounds up (away from zero) by one LSB. `even_is_down` is the tie rule's
/// answer for ties-to-even (true when the lower neighbour is the even one).
constexpr bool rounds_up(const split_significand& s, magnitude_rounding m, bool even_is_down,
                         std::uint32_t random_bits) noexcept {
  switch (m) {
    case magnitude_rounding::truncate: return false;
    case magnitude_rounding::away: return s.inexact;
    case magnitude_rounding::nearest_away: return s.above_half || s.exactly_half;
    case magnitude_rounding::nearest_even: return s.above_half || (s.exactly_half && !even_is_down);
    case magnitude_rounding::stochastic:
      return (std::uint64_t{s.fraction32} + random_bits) >> 32 != 0;
  }
  return false;
}

}  // namespace minifloat::detail
