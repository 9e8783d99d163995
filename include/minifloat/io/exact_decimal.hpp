#pragma once
// The exact decimal text of a double: every digit of its value, none rounded away.
//
// Every finite double is m * 2^e with an integer m, so it is a dyadic rational whose decimal
// expansion ends: for e < 0 it is m * 5^-e / 10^-e, i.e. the digits of the integer m * 5^-e with
// the point -e places from the right (2^-22 = 2384185791015625 / 10^22); for e >= 0 it is the
// integer m * 2^e. The values of the formats here are short such expansions (HiF8's smallest,
// 2^-22, has 16 significant digits; bfloat16's largest, 255 * 2^120, has 39), so a table can
// print them exactly instead of rounding to 8 or 9 digits.
//
//   exact_decimal(0x1p-22)   "2.384185791015625e-07"
//   exact_decimal(448)       "448"
//   exact_decimal(-0.0)      "-0"        nan, inf, -inf for the specials
//
// The text is the shorter of the fixed ("0.001953125") and the scientific ("1.953125e-03", at
// least two exponent digits) spellings, fixed on a tie, like std::to_chars' shortest output.
// Both read back (strtod, Python float(), numpy) as exactly the same double.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace minifloat {

namespace detail {

/// A non-negative integer in base 10^9 limbs, least significant first: just enough arithmetic
/// (multiply by a small factor) for exact_decimal.
class decimal_integer {
 public:
  explicit decimal_integer(std::uint64_t v) {
    do {
      limbs_.push_back(static_cast<std::uint32_t>(v % base));
      v /= base;
    } while (v != 0);
  }
  void multiply(std::uint32_t f) {
    std::uint64_t carry = 0;
    for (auto& l : limbs_) {
      const std::uint64_t p = static_cast<std::uint64_t>(l) * f + carry;
      l = static_cast<std::uint32_t>(p % base);
      carry = p / base;
    }
    while (carry != 0) {
      limbs_.push_back(static_cast<std::uint32_t>(carry % base));
      carry /= base;
    }
  }
  [[nodiscard]] std::string digits() const {
    std::string s = std::to_string(limbs_.back());
    for (std::size_t i = limbs_.size() - 1; i-- > 0;) {
      const std::string part = std::to_string(limbs_[i]);
      s.append(9 - part.size(), '0');
      s += part;
    }
    return s;
  }

 private:
  static constexpr std::uint64_t base = 1'000'000'000;
  std::vector<std::uint32_t> limbs_;
};

}  // namespace detail

/// The exact value of x in decimal (see the top of this file).
[[nodiscard]] inline std::string exact_decimal(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  const std::string sign = std::signbit(x) ? "-" : "";
  if (x == 0) return sign + "0";
  // 1. x = m * 2^e, m an odd integer below 2^53
  int e2 = 0;
  const double fr = std::frexp(std::fabs(x), &e2);  // fr in [0.5, 1)
  auto m = static_cast<std::uint64_t>(std::ldexp(fr, 53));
  e2 -= 53;
  while ((m & 1U) == 0) m >>= 1, ++e2;
  // 2. the digits of m * 2^e2 (e2 >= 0) or of m * 5^-e2 with the point -e2 places from the right
  detail::decimal_integer n(m);
  int point = 0;  // value = digits * 10^-point
  if (e2 >= 0) {
    for (int i = 0; i < e2; ++i) n.multiply(2);
  } else {
    for (int i = 0; i < -e2; ++i) n.multiply(5);
    point = -e2;
  }
  std::string digits = n.digits();
  // 3. value = 0.d1 d2 ... dk * 10^exp10 with d1 != 0; trailing zeros carry no information
  const int exp10 = static_cast<int>(digits.size()) - point;
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  const auto k = static_cast<int>(digits.size());

  std::string fixed;
  if (exp10 <= 0) {
    fixed = "0." + std::string(static_cast<std::size_t>(-exp10), '0') + digits;
  } else if (exp10 >= k) {
    fixed = digits + std::string(static_cast<std::size_t>(exp10 - k), '0');
  } else {
    fixed = digits.substr(0, static_cast<std::size_t>(exp10)) + "." + digits.substr(static_cast<std::size_t>(exp10));
  }
  const int sci_exp = exp10 - 1;
  std::string exp_text = std::to_string(std::abs(sci_exp));
  if (exp_text.size() < 2) exp_text.insert(0, "0");
  const std::string sci = digits.substr(0, 1) + (k > 1 ? "." + digits.substr(1) : std::string()) + "e" +
                          (sci_exp < 0 ? "-" : "+") + exp_text;
  return sign + (sci.size() < fixed.size() ? sci : fixed);
}

}  // namespace minifloat
