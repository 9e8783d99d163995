// The ml_dtypes float8 variants (formats/float8_variants.hpp, docs/formats/fp8_variants.md): the
// documented limits, special codes and overflow boundaries, written out as numbers so a change of
// a spec shows up here as well as in the oracle sweep (test_conversion_oracle.cpp).
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include <minifloat/minifloat.hpp>

using namespace minifloat;

namespace {

template <class T>
unsigned code(double x, conversion c = {}) {
  return encode<T>(x, c);
}
template <class T>
double value(unsigned c) {
  return static_cast<double>(T::from_bits(static_cast<typename T::storage_type>(c)));
}

struct limits_row {
  double max, min_normal, denorm_min;
  unsigned max_code;
};

template <class T>
void check_limits(const limits_row& r) {
  using L = std::numeric_limits<T>;
  CHECK(static_cast<double>(L::max()) == r.max);
  CHECK(static_cast<double>(L::lowest()) == -r.max);
  CHECK(static_cast<double>(L::min()) == r.min_normal);
  CHECK(static_cast<double>(L::denorm_min()) == r.denorm_min);
  CHECK(L::max().bits() == r.max_code);
  CHECK(value<T>(r.max_code) == r.max);
}

constexpr conversion kSat{rounding::nearest, overflow::saturate};
constexpr conversion kNanToZero{rounding::nearest, overflow::saturate_nan_to_zero};

}  // namespace

TEST_CASE("fnuz formats: one NaN at 0x80, no -0, no Inf", "[formats][fp8_variants]") {
  check_limits<float8_e4m3fnuz>({240.0, 0x1p-7, 0x1p-10, 0x7F});
  check_limits<float8_e5m2fnuz>({57344.0, 0x1p-15, 0x1p-17, 0x7F});
  check_limits<float8_e4m3b11fnuz>({30.0, 0x1p-10, 0x1p-13, 0x7F});

  const auto each = [](auto tag) {
    using T = typename decltype(tag)::type;
    INFO(format_name<T>);
    CHECK_FALSE(std::numeric_limits<T>::has_infinity);
    CHECK(std::numeric_limits<T>::has_quiet_NaN);
    CHECK(std::numeric_limits<T>::quiet_NaN().bits() == 0x80);
    for (unsigned c = 0; c < 256; ++c) CHECK(std::isnan(value<T>(c)) == (c == 0x80));
    CHECK(code<T>(0.0) == 0x00);
    CHECK(code<T>(-0.0) == 0x00);  // -0 has no code of its own
    CHECK(code<T>(-std::numeric_limits<double>::denorm_min()) == 0x00);  // rounds to +0, not to the NaN
    CHECK(code<T>(-std::numeric_limits<double>::denorm_min(), {rounding::downward}) == 0x81);
    CHECK(code<T>(std::nan("")) == 0x80);
    CHECK(code<T>(-std::nan("")) == 0x80);
    CHECK(code<T>(std::nan(""), kNanToZero) == 0x00);
    CHECK(code<T>(INFINITY) == 0x80);   // non-saturating: no Inf, so NaN
    CHECK(code<T>(-INFINITY) == 0x80);
    CHECK(code<T>(INFINITY, kSat) == 0x7F);
    CHECK(code<T>(-INFINITY, kSat) == 0xFF);
    CHECK((-T::from_bits(0x00)).bits() == 0x00);  // negation keeps +0 and NaN
    CHECK((-T::from_bits(0x80)).bits() == 0x80);
    CHECK((-T::from_bits(0x01)).bits() == 0x81);
  };
  each(type_tag<float8_e4m3fnuz>{});
  each(type_tag<float8_e5m2fnuz>{});
  each(type_tag<float8_e4m3b11fnuz>{});
}

TEST_CASE("fnuz formats: the overflow boundary is the tie with the next power of two", "[formats][fp8_variants]") {
  // e4m3fnuz: 240 = 1.1110000 * 2^7 has mantissa 111 (odd), so the tie 248 goes up to 256: overflow.
  CHECK(code<float8_e4m3fnuz>(247.99) == 0x7F);
  CHECK(code<float8_e4m3fnuz>(248.0) == 0x80);
  CHECK(code<float8_e4m3fnuz>(-248.0) == 0x80);
  CHECK(code<float8_e4m3fnuz>(248.0, kSat) == 0x7F);
  CHECK(code<float8_e4m3fnuz>(-248.0, kSat) == 0xFF);
  CHECK(code<float8_e4m3fnuz>(1e6, {rounding::toward_zero}) == 0x7F);  // truncation never overflows
  // e5m2fnuz: 57344 = 1.11 * 2^15 (odd), the tie 61440 overflows.
  CHECK(code<float8_e5m2fnuz>(61439.0) == 0x7F);
  CHECK(code<float8_e5m2fnuz>(61440.0) == 0x80);
  // e4m3b11fnuz: 30 = 1.111 * 2^4 (odd), the tie 31 overflows.
  CHECK(code<float8_e4m3b11fnuz>(30.99) == 0x7F);
  CHECK(code<float8_e4m3b11fnuz>(31.0) == 0x80);
  // Values near 1: the bias moves the grid (1.0 = exponent field == bias).
  CHECK(code<float8_e4m3fnuz>(1.0) == 0x40);
  CHECK(code<float8_e5m2fnuz>(1.0) == 0x40);
  CHECK(code<float8_e4m3b11fnuz>(1.0) == 0x58);
}

TEST_CASE("IEEE-like e3m4 and e4m3: Inf, NaNs and signed zeros", "[formats][fp8_variants]") {
  check_limits<float8_e3m4>({15.5, 0x1p-2, 0x1p-6, 0x6F});
  check_limits<float8_e4m3>({240.0, 0x1p-6, 0x1p-9, 0x77});

  CHECK(std::numeric_limits<float8_e3m4>::infinity().bits() == 0x70);
  CHECK(std::numeric_limits<float8_e4m3>::infinity().bits() == 0x78);
  CHECK(value<float8_e3m4>(0xF0) == -INFINITY);
  CHECK(value<float8_e4m3>(0xF8) == -INFINITY);
  for (unsigned m = 1; m < 16; ++m) CHECK(std::isnan(value<float8_e3m4>(0x70 | m)));
  for (unsigned m = 1; m < 8; ++m) CHECK(std::isnan(value<float8_e4m3>(0x78 | m)));
  CHECK(code<float8_e3m4>(-0.0) == 0x80);
  CHECK(code<float8_e4m3>(-0.0) == 0x80);
  // e3m4: 15.5 = 1.1111 * 2^3 (odd), the tie 15.75 rounds to 16 = Inf.
  CHECK(code<float8_e3m4>(15.74) == 0x6F);
  CHECK(code<float8_e3m4>(15.75) == 0x70);
  CHECK(code<float8_e3m4>(-15.75) == 0xF0);
  CHECK(code<float8_e3m4>(15.75, kSat) == 0x6F);
  // e4m3: 240 = 1.111 * 2^7 (odd), the tie 248 goes to 256 = Inf.
  CHECK(code<float8_e4m3>(247.9) == 0x77);
  CHECK(code<float8_e4m3>(248.0) == 0x78);
  CHECK(code<float8_e4m3>(1.0) == 0x38);
  CHECK(code<float8_e3m4>(1.0) == 0x30);
  // e3m4 has 16 subnormals: 2^-6 .. 15 * 2^-6.
  for (unsigned m = 1; m < 16; ++m) CHECK(value<float8_e3m4>(m) == m * 0x1p-6);
}

TEST_CASE("the variants are in the closed format list, named as ml_dtypes names them", "[formats][fp8_variants]") {
  for (const char* name : {"float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e4m3b11fnuz", "float8_e3m4", "float8_e4m3"}) {
    INFO(name);
    const auto id = parse_format(name);
    REQUIRE(id.has_value());
    CHECK(to_string(*id) == name);
    CHECK(format_bits(*id) == 8);
    CHECK_FALSE(is_mx_element(*id));
  }
  // Appended after float16, so the ids written into files before them keep their meaning.
  CHECK(static_cast<int>(format_id::float16) == 8);
  CHECK(static_cast<int>(format_id::float8_e4m3fnuz) == 9);
  CHECK(static_cast<int>(format_id::float8_e4m3) == 13);
}
