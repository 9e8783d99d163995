// io/exact_decimal.hpp against glibc's printf (which prints the exact binary value for any
// precision) and strtold, on every code of every format, and on doubles from the extremes.
#include <minifloat/io/exact_decimal.hpp>
#include <minifloat/formats/format_list.hpp>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>

namespace {

/// The exact decimal of v in fixed notation from printf: v = m * 2^e (m odd) has exactly -e
/// fraction digits when e < 0, so "%.*f" with that precision prints it without rounding;
/// trailing zeros and a bare point are dropped.
std::string printf_fixed(double v) {
  int e = 0;
  const double fr = std::frexp(std::fabs(v), &e);
  long long m = std::llround(std::ldexp(fr, 53));
  e -= 53;
  while (m != 0 && (m & 1) == 0) m >>= 1, ++e;
  const int digits = e < 0 ? -e : 0;
  std::string buf(static_cast<std::size_t>(digits) + 400, '\0');
  const int n = std::snprintf(buf.data(), buf.size(), "%.*f", digits, v);
  buf.resize(static_cast<std::size_t>(n));
  if (buf.find('.') != std::string::npos) {
    while (buf.back() == '0') buf.pop_back();
    if (buf.back() == '.') buf.pop_back();
  }
  return buf;
}

/// Our text rewritten in fixed notation ("2.5e-03" -> "0.0025"), to compare digit for digit.
std::string to_fixed(const std::string& s) {
  const auto epos = s.find('e');
  if (epos == std::string::npos) return s;
  std::string sign, mant = s.substr(0, epos);
  if (mant[0] == '-') sign = "-", mant.erase(0, 1);
  const int exp = std::stoi(s.substr(epos + 1));
  std::string digits = mant;
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  const int point = 1 + exp;  // digits before the decimal point
  std::string out;
  if (point <= 0) {
    out = "0." + std::string(static_cast<std::size_t>(-point), '0') + digits;
  } else if (point >= static_cast<int>(digits.size())) {
    out = digits + std::string(static_cast<std::size_t>(point) - digits.size(), '0');
  } else {
    out = digits.substr(0, static_cast<std::size_t>(point)) + "." + digits.substr(static_cast<std::size_t>(point));
  }
  return sign + out;
}

void check_exact(double v) {
  const std::string s = minifloat::exact_decimal(v);
  INFO("value " << v << " printed as " << s);
  // 1. it reads back as the same double (and as the same long double: no digit is lost)
  REQUIRE(std::strtod(s.c_str(), nullptr) == v);
  REQUIRE(std::strtold(s.c_str(), nullptr) == static_cast<long double>(v));
  // 2. every digit agrees with glibc's exact expansion
  REQUIRE(to_fixed(s) == printf_fixed(v));
  // 3. shortest of the two spellings, no trailing zeros in a fraction
  if (s.find('.') != std::string::npos && s.find('e') == std::string::npos) REQUIRE(s.back() != '0');
}

}  // namespace

TEST_CASE("exact decimal: known values", "[io][exact_decimal]") {
  using minifloat::exact_decimal;
  CHECK(exact_decimal(0x1p-22) == "2.384185791015625e-07");
  CHECK(exact_decimal(448) == "448");
  CHECK(exact_decimal(0.5) == "0.5");
  CHECK(exact_decimal(0.001953125) == "0.001953125");
  CHECK(exact_decimal(32768) == "32768");
  CHECK(exact_decimal(-1.75) == "-1.75");
  CHECK(exact_decimal(0.0) == "0");
  CHECK(exact_decimal(-0.0) == "-0");
  CHECK(exact_decimal(std::numeric_limits<double>::infinity()) == "inf");
  CHECK(exact_decimal(-std::numeric_limits<double>::infinity()) == "-inf");
  CHECK(exact_decimal(std::nan("")) == "nan");
  CHECK(exact_decimal(0x1p100) == "1267650600228229401496703205376");
  CHECK(exact_decimal(255 * 0x1p120) == "338953138925153547590470800371487866880");  // bfloat16 max (fixed is shorter)
  CHECK(exact_decimal(0x1p-133) == "9.18354961579912115600575419704879435795832466228193376178712270530013483949005603790283203125e-41");
}

TEST_CASE("exact decimal: every code of every format", "[io][exact_decimal]") {
  std::size_t checked = 0;
  minifloat::for_each_format([&](auto t) {
    using T = typename decltype(t)::type;
    for (std::uint32_t c = 0; c < (1U << T::spec::bits); ++c) {
      const double v = static_cast<double>(T::from_bits(static_cast<typename T::storage_type>(c)));
      if (!std::isfinite(v)) continue;
      check_exact(v);
      ++checked;
    }
  });
  CHECK(checked > 129000);  // bfloat16 and float16 hold most of them
}

TEST_CASE("exact decimal: doubles at the extremes", "[io][exact_decimal]") {
  for (const double v : {std::numeric_limits<double>::max(), std::numeric_limits<double>::min(),
                         std::numeric_limits<double>::denorm_min(), 0.1, 1.0 / 3.0, 123456789.125, 1e300, 1e-300,
                         static_cast<double>(std::numeric_limits<float>::max()),
                         static_cast<double>(std::numeric_limits<float>::denorm_min())})
    check_exact(v);
}
