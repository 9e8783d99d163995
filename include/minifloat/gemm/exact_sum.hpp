#pragma once
// An exact accumulator (a Kulisch-style long fixed-point number) for the GEMM reference: every
// term a * b * s_a * s_b (+ bias) is added without rounding, and the sum is rounded once.
//
// Range. Every finite term is an integer times a power of two. Element values: the smallest
// quantum is HiF8's 2^-22 (E5M2 2^-16, E4M3 2^-9, FP6/FP4 >= 2^-4); the largest is < 2^16.
// Scales: fp32 (quantum >= 2^-149, < 2^128) or E8M0 (2^-127 .. 2^127). So a product of two
// elements and two scales is a multiple of 2^-342 and below 2^288, and a bias (fp32) lies in
// the same range. 12 limbs of 64 bits, bit 0 = 2^-352, hold +-2^415 in two's complement:
// > 2^127 * 2^288 = the sum of 2^127 maximal terms, far more than any K.
//
// Each term's integer part is at most 4 + 4 + 24 + 24 = 56 bits (trailing zeros stripped), so
// it is one uint64 added at a bit offset: two limbs plus a carry.
//
// Non-finite terms (a NaN or Inf element, a NaN E8M0 scale) are tracked apart and give the IEEE
// result: NaN if any NaN, 0 * Inf or +Inf + -Inf occurs, else +-Inf.
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace minifloat::detail::gemm {

/// x = sig * 2^exp with sig an odd integer (or 0); x finite.
struct int_pow2 {
  std::uint64_t sig = 0;
  int exp = 0;
  bool negative = false;
};

inline int_pow2 split_float(float x) noexcept {
  const std::uint32_t b = std::bit_cast<std::uint32_t>(x);
  int_pow2 r;
  r.negative = (b >> 31) != 0;
  const std::uint32_t field = (b >> 23) & 0xFFU;
  std::uint32_t m = b & 0x7FFFFFU;
  int e;
  if (field == 0) {
    e = -149;
  } else {
    m |= 0x800000U;
    e = static_cast<int>(field) - 150;
  }
  if (m == 0) return r;
  const int tz = std::countr_zero(m);
  r.sig = m >> tz;
  r.exp = e + tz;
  return r;
}

class exact_sum {
 public:
  static constexpr int limbs = 12;
  static constexpr int lsb_exp = -352;

  void clear() noexcept { *this = exact_sum{}; }

  /// Adds the product of four floats exactly (two element values and two scales).
  void add_product(float a, float b, float sa, float sb) noexcept {
    if (!std::isfinite(a) || !std::isfinite(b) || !std::isfinite(sa) || !std::isfinite(sb)) {
      add_special(static_cast<double>(a) * static_cast<double>(b) * static_cast<double>(sa) *
                  static_cast<double>(sb), a, b, sa, sb);
      return;
    }
    const int_pow2 x = split_float(a), y = split_float(b), u = split_float(sa), v = split_float(sb);
    if (x.sig == 0 || y.sig == 0 || u.sig == 0 || v.sig == 0) return;
    // x.sig, y.sig <= 2^24 but element values have <= 4 significant bits; scales <= 24 bits.
    const std::uint64_t p = x.sig * y.sig, q = u.sig * v.sig;  // each fits: <= 2^48
    if (std::bit_width(p) + std::bit_width(q) <= 64) {
      add_scaled(p * q, x.exp + y.exp + u.exp + v.exp, x.negative != y.negative);
    } else {  // not reached by the element formats GEMM accepts (<= 4 significant bits); still exact
      add_scaled(p, x.exp + y.exp + u.exp + v.exp, x.negative != y.negative, q);
    }
  }

  /// Adds one float exactly (a bias).
  void add(float x) noexcept {
    if (!std::isfinite(x)) {
      add_special(static_cast<double>(x), x, 1.0f, 1.0f, 1.0f);
      return;
    }
    const int_pow2 s = split_float(x);
    if (s.sig != 0) add_scaled(s.sig, s.exp, s.negative);
  }

  /// The sum rounded once to nearest-even with `digits` significant bits, subnormal quantum
  /// 2^(min_exp - digits + 1) and overflow to +-Inf at 2^max_exp. float32: (24, -126, 128);
  /// bfloat16: (8, -126, 128); double: (53, -1022, 1024). The result is exact in a double.
  /// An exact zero gives +0.
  [[nodiscard]] double round(int digits, int min_exp = -126, int max_exp = 128) const noexcept {
    if (nan_ || (pos_inf_ && neg_inf_)) return std::numeric_limits<double>::quiet_NaN();
    if (pos_inf_) return std::numeric_limits<double>::infinity();
    if (neg_inf_) return -std::numeric_limits<double>::infinity();
    std::array<std::uint64_t, limbs> m = v_;
    const bool negative = (m[limbs - 1] >> 63) != 0;
    if (negative) {  // two's complement negate
      unsigned carry = 1;
      for (auto& w : m) {
        w = ~w + carry;
        carry = (carry != 0 && w == 0) ? 1U : 0U;
      }
    }
    int top = limbs - 1;
    while (top >= 0 && m[static_cast<std::size_t>(top)] == 0) --top;
    if (top < 0) return 0.0;
    // Leading one at absolute bit position `lead` (value 2^(lead + lsb_exp)).
    const int lead = top * 64 + 63 - std::countl_zero(m[static_cast<std::size_t>(top)]);
    const int e_lead = lead + lsb_exp;  // floor(log2 |sum|)
    // The quantum of the result: 2^(e_lead - digits + 1), but not below the subnormal quantum.
    const int q_exp = std::max(e_lead - digits + 1, min_exp - digits + 1);
    const int q_pos = q_exp - lsb_exp;  // bit position of the quantum
    // kept = floor(|sum| / 2^q_exp) (at most `digits` bits), then nearest-even on the rest.
    std::uint64_t kept = 0;
    for (int bit = lead; bit >= q_pos && bit >= 0; --bit) kept = (kept << 1) | get_bit(m, bit);
    bool half = false, sticky = false;
    if (q_pos >= 1) {
      half = get_bit(m, q_pos - 1) != 0;
      const int below = q_pos - 1;  // bits [0, below) decide the sticky bit
      for (int w = 0; w < below / 64 && !sticky; ++w) sticky = m[static_cast<std::size_t>(w)] != 0;
      for (int bit = (below / 64) * 64; bit < below && !sticky; ++bit) sticky = get_bit(m, bit) != 0;
    }
    if (half && (sticky || (kept & 1U) != 0)) ++kept;
    const double mag = std::ldexp(static_cast<double>(kept), q_exp);  // exact: kept <= 2^digits
    const double r = mag >= std::ldexp(1.0, max_exp) ? std::numeric_limits<double>::infinity() : mag;
    return negative ? -r : r;
  }
  [[nodiscard]] float round_float() const noexcept { return static_cast<float>(round(24)); }

 private:
  static std::uint64_t get_bit(const std::array<std::uint64_t, limbs>& m, int bit) noexcept {
    return (m[static_cast<std::size_t>(bit / 64)] >> (bit % 64)) & 1U;
  }

  void add_special(double prod, float a, float b, float sa, float sb) noexcept {
    (void)a, (void)b, (void)sa, (void)sb;
    if (std::isnan(prod)) nan_ = true;
    else if (prod > 0) pos_inf_ = true;
    else if (prod < 0) neg_inf_ = true;
    else nan_ = true;  // cannot happen (0 * Inf is NaN above)
  }

  /// Adds (or subtracts) sig * 2^exp, sig < 2^64.
  void add_scaled(std::uint64_t sig, int exp, bool negative) noexcept {
    const int pos = exp - lsb_exp;  // >= 0 by the range argument
    const int i = pos / 64, s = pos % 64;
    const std::uint64_t lo = sig << s;
    const std::uint64_t hi = s == 0 ? 0 : sig >> (64 - s);
    if (!negative) {
      add_at(i, lo);
      if (hi != 0) add_at(i + 1, hi);
    } else {
      sub_at(i, lo);
      if (hi != 0) sub_at(i + 1, hi);
    }
  }
  /// p * q * 2^exp where the product may exceed 64 bits (p, q < 2^48): in 16-bit pieces of q.
  void add_scaled(std::uint64_t p, int exp, bool negative, std::uint64_t q) noexcept {
    for (int piece = 0; piece < 3; ++piece) add_scaled(p * ((q >> (16 * piece)) & 0xFFFFU), exp + 16 * piece, negative);
  }
  void add_at(int i, std::uint64_t x) noexcept {
    for (auto j = static_cast<std::size_t>(i); j < limbs && x != 0; ++j) {
      const std::uint64_t old = v_[j];
      v_[j] = old + x;
      x = v_[j] < old ? 1U : 0U;
    }
  }
  void sub_at(int i, std::uint64_t x) noexcept {
    for (auto j = static_cast<std::size_t>(i); j < limbs && x != 0; ++j) {
      const std::uint64_t old = v_[j];
      v_[j] = old - x;
      x = old < x ? 1U : 0U;
    }
  }

  std::array<std::uint64_t, limbs> v_{};
  bool nan_ = false, pos_inf_ = false, neg_inf_ = false;
};

}  // namespace minifloat::detail::gemm
