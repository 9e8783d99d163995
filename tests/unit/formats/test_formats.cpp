// Every format, every code: decode/encode round trips, limits against the decode table, value
// order, classification, negation, hashing. (The conversion oracle lives in
// test_conversion_oracle.cpp; this file checks the value-type surface.)
#include <catch2/catch.hpp>

#include <cmath>
#include <sstream>
#include <unordered_set>
#include <vector>

#include <minifloat/minifloat.hpp>

using namespace minifloat;

namespace {
template <class T>
std::vector<T> all_codes() {
  std::vector<T> v;
  for (unsigned c = 0; c < (1U << T::spec::bits); ++c) v.push_back(T::from_bits(static_cast<typename T::storage_type>(c)));
  return v;
}
template <class T>
typename T::storage_type canonical_nan() {
  return std::numeric_limits<T>::quiet_NaN().bits();
}
}  // namespace

TEMPLATE_LIST_TEST_CASE("every code round-trips decode -> encode bit-exactly", "[formats]", all_formats) {
  using T = TestType;
  for (const T x : all_codes<T>()) {
    const float f = static_cast<float>(x);
    const T back = narrow<T>(f);
    if (isnan(x)) {
      CHECK(std::isnan(f));
      CHECK(back.bits() == canonical_nan<T>());
    } else if (T::spec::sign_mask == 0 || !(f == 0.0f) || T::spec::has_signed_zero) {
      INFO(format_name<T> << " code " << unsigned{x.bits()} << " value " << f);
      CHECK(back.bits() == x.bits());
    }
    // The same through double and through every conversion policy that keeps exact values.
    for (auto r : {rounding::nearest_even, rounding::nearest_away, rounding::toward_zero, rounding::upward,
                   rounding::downward, rounding::stochastic})
      for (auto o : {overflow::non_saturating, overflow::saturate}) {
        if (isnan(x)) continue;
        if (isinf(x) && o == overflow::saturate) continue;
        CHECK(narrow<T>(static_cast<double>(x), {r, o}, 0xFFFFFFFFu).bits() == x.bits());
      }
  }
}

TEMPLATE_LIST_TEST_CASE("numeric_limits agree with the decode table", "[formats][limits]", all_formats) {
  using T = TestType;
  using L = std::numeric_limits<T>;
  double max_finite = -1, min_pos = INFINITY, min_normal_seen = INFINITY;
  bool any_inf = false, any_nan = false;
  for (const T x : all_codes<T>()) {
    const double v = static_cast<double>(x);
    if (std::isnan(v)) { any_nan = true; continue; }
    if (std::isinf(v)) { any_inf = true; continue; }
    max_finite = std::max(max_finite, std::fabs(v));
    if (v > 0) min_pos = std::min(min_pos, v);
    if (classify(x) == value_class::normal && v > 0) min_normal_seen = std::min(min_normal_seen, v);
  }
  CHECK(static_cast<double>(L::max()) == max_finite);
  CHECK(static_cast<double>(L::denorm_min()) == min_pos);
  CHECK(static_cast<double>(L::min()) == min_normal_seen);
  CHECK(L::has_infinity == any_inf);
  CHECK(L::has_quiet_NaN == any_nan);
  if (L::has_infinity) CHECK(std::isinf(static_cast<float>(L::infinity())));
  if (L::has_quiet_NaN) CHECK(isnan(L::quiet_NaN()));
  if (L::is_signed) CHECK(static_cast<double>(L::lowest()) == -max_finite);
  // epsilon: the gap between 1 and the next value above it.
  double next_above_one = INFINITY;
  for (const T x : all_codes<T>())
    if (double v = static_cast<double>(x); v > 1.0 && v < next_above_one) next_above_one = v;
  CHECK(static_cast<double>(L::epsilon()) == next_above_one - 1.0);
  CHECK(std::ldexp(1.0, L::min_exponent - 1) == static_cast<double>(L::min()));
  CHECK(static_cast<double>(L::max()) < std::ldexp(1.0, L::max_exponent));
  CHECK(static_cast<double>(L::max()) >= std::ldexp(1.0, L::max_exponent - 1));
}

TEMPLATE_LIST_TEST_CASE("comparison is by value and monotone", "[formats][order]", all_formats) {
  using T = TestType;
  auto codes = all_codes<T>();
  std::erase_if(codes, [](T x) { return isnan(x); });
  std::sort(codes.begin(), codes.end(), [](T a, T b) { return static_cast<double>(a) < static_cast<double>(b); });
  for (std::size_t i = 1; i < codes.size(); ++i) {
    const T a = codes[i - 1], b = codes[i];
    CHECK(a <= b);
    CHECK(!(b < a));
    CHECK((a == b) == (static_cast<double>(a) == static_cast<double>(b)));
    // The encoder is monotone too: the midpoint of neighbours rounds to one of them.
    if (std::isfinite(static_cast<double>(a)) && std::isfinite(static_cast<double>(b)) && a < b) {
      const double mid = (static_cast<double>(a) + static_cast<double>(b)) / 2;
      const T m = narrow<T>(mid);
      CHECK((m == a || m == b));
    }
  }
  if constexpr (!std::is_same_v<T, float8_e8m0fnu> && !std::is_same_v<T, float4_e2m1fn> && std::numeric_limits<T>::has_quiet_NaN) {
    const T nan = std::numeric_limits<T>::quiet_NaN();
    CHECK(!(nan == nan));
    CHECK(!(nan < T(1.0)));
    CHECK(!(nan > T(1.0)));
  }
}

TEMPLATE_LIST_TEST_CASE("negation, classification, hashing", "[formats]", all_formats) {
  using T = TestType;
  std::hash<T> h;
  for (const T x : all_codes<T>()) {
    const double v = static_cast<double>(x);
    if (T::spec::sign_mask != 0) {
      const T n = -x;
      if (std::isnan(v)) {
        CHECK(isnan(n));
      } else {
        CHECK(static_cast<double>(n) == -v);
        CHECK((-n).bits() == x.bits());
      }
    }
    CHECK(isnan(x) == std::isnan(v));
    CHECK(isinf(x) == std::isinf(v));
    CHECK(isfinite(x) == std::isfinite(v));
    if (!std::isnan(v)) CHECK(signbit(x) == std::signbit(v));
    const auto cls = classify(x);
    if (std::isnan(v)) CHECK(cls == value_class::nan);
    else if (std::isinf(v)) CHECK(cls == value_class::infinite);
    else if (v == 0) CHECK(cls == value_class::zero);
    else CHECK((cls == value_class::normal) == (std::fabs(v) >= static_cast<double>(std::numeric_limits<T>::min())));
    if (!std::isnan(v))
      for (const T y : {T::from_bits(0), x})
        if (x == y) CHECK(h(x) == h(y));
  }
}

TEST_CASE("hifloat8 has one zero and one NaN, and negation keeps them", "[hifloat8]") {
  CHECK((-hifloat8::from_bits(0x00)).bits() == 0x00);
  CHECK((-hifloat8::from_bits(0x80)).bits() == 0x80);
  CHECK(narrow<hifloat8>(-0.0f).bits() == 0x00);
  CHECK(narrow<hifloat8>(-1e-30f).bits() == 0x00);
  CHECK((-hifloat8(1.0f)).bits() == 0x88);
  CHECK(!signbit(hifloat8::from_bits(0x80)));
}

TEST_CASE("hifloat8: code order is not value order", "[hifloat8][order]") {
  const auto big = hifloat8::from_bits(0x6E), small = hifloat8::from_bits(0x70);
  CHECK(big.bits() < small.bits());
  CHECK(small < big);
  CHECK(static_cast<float>(small) == std::ldexp(1.0f, -8));
}

TEST_CASE("16-bit storage types match IEEE and float32 truncation", "[formats][ieee16]") {
  // bfloat16 is the top half of a float32: every bf16 code decodes to the float with those bits.
  for (unsigned c = 0; c < 65536; ++c) {
    const float f = std::bit_cast<float>(static_cast<std::uint32_t>(c) << 16);
    const float g = static_cast<float>(bfloat16::from_bits(static_cast<std::uint16_t>(c)));
    if (std::isnan(f)) CHECK(std::isnan(g));
    else CHECK(std::bit_cast<std::uint32_t>(f) == std::bit_cast<std::uint32_t>(g));
  }
  // float16 against the textbook formula.
  for (unsigned c = 0; c < 65536; ++c) {
    const unsigned e = (c >> 10) & 31, m = c & 1023;
    double v = e == 0 ? std::ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : std::ldexp(1024 + m, static_cast<int>(e) - 25);
    if (c & 0x8000) v = -v;
    const double g = static_cast<double>(float16::from_bits(static_cast<std::uint16_t>(c)));
    if (std::isnan(v)) CHECK(std::isnan(g));
    else CHECK(g == v);
  }
}

TEST_CASE("constexpr surface", "[formats][constexpr]") {
  static_assert(float8_e4m3fn::from_bits(0x7E) == float8_e4m3fn(448.0f));
  static_assert(static_cast<float>(float4_e2m1fn(5.0f)) == 4.0f);
  static_assert(narrow<float8_e5m2, saturating>(1e9f).bits() == 0x7B);
  static_assert(std::numeric_limits<hifloat8>::max().bits() == 0x6E);
  static_assert(-hifloat8::from_bits(0x00) == hifloat8::zero());
  static_assert(hifloat8(3.0f) < hifloat8(4.0f));
  SUCCEED();
}

TEST_CASE("streaming prints the value", "[formats][io]") {
  std::ostringstream os;
  os << hifloat8(1.5f) << ' ' << float4_e2m1fn(-6.0f);
  CHECK(os.str() == "1.5 -6");
}

TEST_CASE("version header matches", "[version]") {
  CHECK(std::string(MINIFLOAT_VERSION_STRING) == std::to_string(MINIFLOAT_VERSION_MAJOR) + "." +
                                                      std::to_string(MINIFLOAT_VERSION_MINOR) + "." +
                                                      std::to_string(MINIFLOAT_VERSION_PATCH));
}

#if defined(MINIFLOAT_TEST_WITH_FMT)
#include <minifloat/fmt.hpp>
TEST_CASE("fmt formats the value and the code", "[formats][fmt]") {
  CHECK(fmt::format("{}", hifloat8(1.5f)) == "1.5");
  CHECK(fmt::format("{:.2f}", float8_e4m3fn(3.0f)) == "3.00");
  CHECK(fmt::format("{:x}", hifloat8::from_bits(0x6E)) == "0x6e");
  CHECK(fmt::format("{:b}", float4_e2m1fn::from_bits(0x5)) == "0b0101");
  CHECK(fmt::format("{:x}", bfloat16(1.0f)) == "0x3f80");
  CHECK(fmt::format("{:>6}", float8_e5m2(2.0f)) == "     2");
}
#endif
