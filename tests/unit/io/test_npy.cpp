#include <algorithm>
#include <array>
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <minifloat/io/npy.hpp>
#include <random>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#ifndef MINIFLOAT_TEST_DATA_DIR
#define MINIFLOAT_TEST_DATA_DIR "tests/data"
#endif

#include "support/files.hpp"

namespace {

namespace fs = std::filesystem;
using test_support::io_error_message;
using test_support::read_bytes;
using test_support::temp_directory;
using minifloat::io_error;
using minifloat::npy_array;
using minifloat::npy_dtype;

fs::path fixture(std::string_view name) { return fs::path(MINIFLOAT_TEST_DATA_DIR) / "npy" / name; }

std::vector<std::byte> to_bytes(std::string_view text) {
  std::vector<std::byte> bytes(text.size());
  std::transform(text.begin(), text.end(), bytes.begin(), [](char c) { return static_cast<std::byte>(c); });
  return bytes;
}

// A .npy image with a hand-written header dict (no padding needed: readers must not rely on it).
std::vector<std::byte> make_npy(std::string_view dict, std::span<const std::byte> data = {}, unsigned major = 1,
                                unsigned minor = 0) {
  std::vector<std::byte> out = to_bytes("\x93NUMPY");
  out.push_back(static_cast<std::byte>(major));
  out.push_back(static_cast<std::byte>(minor));
  const std::size_t length_bytes = major == 1 ? 2 : 4;
  for (std::size_t i = 0; i < length_bytes; ++i) out.push_back(static_cast<std::byte>((dict.size() >> (8 * i)) & 0xFF));
  const std::vector<std::byte> text = to_bytes(dict);
  out.insert(out.end(), text.begin(), text.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

template <class T>
std::vector<std::byte> bytes_of(const std::vector<T>& values) {
  const auto view = std::as_bytes(std::span(values));
  return {view.begin(), view.end()};
}

template <class T>
std::vector<T> sample_values(std::size_t count) {
  std::vector<T> values(count);
  for (std::size_t i = 0; i < count; ++i) {
    if constexpr (std::is_floating_point_v<T>) {
      values[i] = static_cast<T>(static_cast<double>(i) * -0.75 + 0.125);
    } else {
      // Wraps on purpose so narrow types see their extremes and (signed) negatives.
      values[i] = static_cast<T>(i * 37 + 250);
    }
  }
  return values;
}

}  // namespace

TEST_CASE("npy: dtype table", "[io][npy]") {
  STATIC_REQUIRE(minifloat::npy_item_size(npy_dtype::float16) == 2);
  STATIC_REQUIRE(minifloat::npy_item_size(npy_dtype::float64) == 8);
  STATIC_REQUIRE(minifloat::npy_descr(npy_dtype::uint8) == "|u1");
  STATIC_REQUIRE(minifloat::npy_descr(npy_dtype::int32) == "<i4");
  STATIC_REQUIRE(minifloat::npy_dtype_of<float> == npy_dtype::float32);
  STATIC_REQUIRE(minifloat::npy_dtype_of<std::uint16_t> == npy_dtype::uint16);
  STATIC_REQUIRE(minifloat::npy_dtype_of<std::int8_t> == npy_dtype::int8);
  STATIC_REQUIRE(minifloat::npy_element<double>);
  STATIC_REQUIRE_FALSE(minifloat::npy_element<std::int64_t>);
  STATIC_REQUIRE_FALSE(minifloat::npy_element<std::byte>);
  CHECK(minifloat::npy_item_size(static_cast<npy_dtype>(99)) == 0);
  CHECK(minifloat::npy_dtype_name(npy_dtype::float16) == "float16");
}

TEMPLATE_TEST_CASE("npy: round trip every dtype and shape", "[io][npy]", float, double, std::uint8_t, std::uint16_t,
                   std::int8_t, std::int32_t) {
  const std::vector<std::size_t> shape =
      GENERATE(std::vector<std::size_t>{}, std::vector<std::size_t>{0}, std::vector<std::size_t>{5},
               std::vector<std::size_t>{2, 3}, std::vector<std::size_t>{2, 3, 4});
  std::size_t count = 1;
  for (const std::size_t extent : shape) count *= extent;
  const std::vector<TestType> values = sample_values<TestType>(count);
  const npy_dtype dtype = minifloat::npy_dtype_of<TestType>;
  CAPTURE(minifloat::npy_descr(dtype), minifloat::detail::npy_shape_repr(shape));

  SECTION("in memory") {
    const std::vector<std::byte> file = minifloat::serialize_npy(dtype, shape, std::as_bytes(std::span(values)));
    // Layout numpy relies on for mmap: version 1.0, data 64-byte aligned, header ends in '\n'.
    const std::size_t header_end =
        10 + (std::to_integer<std::size_t>(file[8]) | (std::to_integer<std::size_t>(file[9]) << 8));
    CHECK(file[6] == std::byte{1});
    CHECK(file[7] == std::byte{0});
    CHECK(header_end % 64 == 0);
    CHECK(file[header_end - 1] == std::byte{'\n'});
    CHECK(file.size() == header_end + count * sizeof(TestType));

    const npy_array array = minifloat::parse_npy(file);
    CHECK(array.dtype == dtype);
    CHECK(array.shape == shape);
    CHECK(array.size() == count);
    const auto read = array.template as<TestType>();
    CHECK(std::vector<TestType>(read.begin(), read.end()) == values);
  }
  SECTION("through a file, typed writer") {
    const temp_directory dir;
    minifloat::write_npy(dir / "a.npy", shape, values);
    const npy_array array = minifloat::read_npy(dir / "a.npy");
    CHECK(array.dtype == dtype);
    CHECK(array.shape == shape);
    const auto read = array.template as<TestType>();
    CHECK(std::vector<TestType>(read.begin(), read.end()) == values);

    // Writing what we read reproduces the file byte for byte.
    minifloat::write_npy(dir / "b.npy", array);
    CHECK(read_bytes(dir / "a.npy") == read_bytes(dir / "b.npy"));
  }
}

TEST_CASE("npy: float16 travels as uint16 bits", "[io][npy]") {
  const std::vector<std::uint16_t> bits{0x0000, 0x8000, 0x3C00, 0x7BFF, 0x0001, 0x7C00, 0xFC00, 0x7E00};
  const std::array<std::size_t, 2> shape{2, 4};
  const temp_directory dir;
  minifloat::write_npy(dir / "h.npy", npy_dtype::float16, shape, bits);
  const npy_array array = minifloat::read_npy(dir / "h.npy");
  REQUIRE(array.dtype == npy_dtype::float16);
  const auto read = array.as<std::uint16_t>();
  CHECK(std::vector<std::uint16_t>(read.begin(), read.end()) == bits);
  CHECK_THROWS_AS(array.as<float>(), io_error);

  // The explicit dtype must still fit the element type.
  const std::vector<float> floats(8, 1.0F);
  CHECK_THAT(io_error_message([&] { minifloat::write_npy(dir / "x.npy", npy_dtype::float16, shape, floats); }),
             Catch::Contains("float") && Catch::Contains("'<f2'"));
  CHECK_FALSE(fs::exists(dir / "x.npy"));
}

TEST_CASE("npy: reads files written by numpy", "[io][npy]") {
  SECTION("float32 (2, 3), version 1.0") {
    const npy_array a = minifloat::read_npy(fixture("good_v1_f4_2x3.npy"));
    CHECK(a.dtype == npy_dtype::float32);
    CHECK(a.shape == std::vector<std::size_t>{2, 3});
    const auto v = a.as<float>();
    REQUIRE(v.size() == 6);
    CHECK(v[0] == 0.0F);
    CHECK(v[1] == 0.5F);
    CHECK(v[2] == -1.25F);
    CHECK(v[3] == std::numeric_limits<float>::max());
    CHECK(v[4] == std::numeric_limits<float>::denorm_min());
    CHECK(std::bit_cast<std::uint32_t>(v[5]) == 0x80000000u);
  }
  SECTION("float64 (5,)") {
    const npy_array a = minifloat::read_npy(fixture("good_v1_f8_5.npy"));
    CHECK(a.dtype == npy_dtype::float64);
    CHECK(a.shape == std::vector<std::size_t>{5});
    const auto v = a.as<double>();
    REQUIRE(v.size() == 5);
    CHECK(v[0] == 1.0 / 3.0);
    CHECK(v[1] == -2.5);
    CHECK(v[2] == 1e300);
    CHECK(v[3] == std::numeric_limits<double>::infinity());
    CHECK(v[4] == std::numeric_limits<double>::denorm_min());
  }
  SECTION("float16 (3, 3)") {
    const npy_array a = minifloat::read_npy(fixture("good_v1_f2_3x3.npy"));
    CHECK(a.dtype == npy_dtype::float16);
    CHECK(a.shape == std::vector<std::size_t>{3, 3});
    const auto bits = a.as<std::uint16_t>();
    CHECK(std::vector<std::uint16_t>(bits.begin(), bits.end()) ==
          std::vector<std::uint16_t>{0x0000, 0x8000, 0x3C00, 0x7BFF, 0x0001, 0x7C00, 0xFC00, 0x7E00, 0x3554});
    const std::vector<float> f = minifloat::to_float32(a);
    REQUIRE(f.size() == 9);
    CHECK(std::bit_cast<std::uint32_t>(f[0]) == 0x00000000u);
    CHECK(std::bit_cast<std::uint32_t>(f[1]) == 0x80000000u);
    CHECK(f[2] == 1.0F);
    CHECK(f[3] == 65504.0F);
    CHECK(f[4] == std::ldexp(1.0F, -24));
    CHECK(f[5] == std::numeric_limits<float>::infinity());
    CHECK(f[6] == -std::numeric_limits<float>::infinity());
    CHECK(std::isnan(f[7]));
    CHECK(f[8] == 0.3330078125F);  // numpy: np.float16(0.333).astype(np.float32)
  }
  SECTION("uint8 scalar ()") {
    const npy_array a = minifloat::read_npy(fixture("good_v1_u1_scalar.npy"));
    CHECK(a.dtype == npy_dtype::uint8);
    CHECK(a.shape.empty());
    CHECK(a.size() == 1);
    REQUIRE(a.as<std::uint8_t>().size() == 1);
    CHECK(a.as<std::uint8_t>()[0] == 200);
  }
  SECTION("uint16 (2, 2)") {
    const npy_array a = minifloat::read_npy(fixture("good_v1_u2_2x2.npy"));
    CHECK(a.dtype == npy_dtype::uint16);
    const auto v = a.as<std::uint16_t>();
    CHECK(std::vector<std::uint16_t>(v.begin(), v.end()) == std::vector<std::uint16_t>{0, 1, 65535, 0x1234});
  }
  SECTION("int8 (4,)") {
    const npy_array a = minifloat::read_npy(fixture("good_v1_i1_4.npy"));
    CHECK(a.dtype == npy_dtype::int8);
    const auto v = a.as<std::int8_t>();
    CHECK(std::vector<std::int8_t>(v.begin(), v.end()) == std::vector<std::int8_t>{-128, -1, 0, 127});
  }
  SECTION("int32 (2, 3, 4)") {
    const npy_array a = minifloat::read_npy(fixture("good_v1_i4_2x3x4.npy"));
    CHECK(a.dtype == npy_dtype::int32);
    CHECK(a.shape == std::vector<std::size_t>{2, 3, 4});
    const auto v = a.as<std::int32_t>();
    REQUIRE(v.size() == 24);
    for (std::size_t i = 0; i < v.size(); ++i) CHECK(v[i] == static_cast<std::int32_t>(i) - 12);
  }
  SECTION("empty (0,) and (0, 3)") {
    const npy_array a = minifloat::read_npy(fixture("good_v1_f4_empty.npy"));
    CHECK(a.shape == std::vector<std::size_t>{0});
    CHECK(a.size() == 0);
    CHECK(a.as<float>().empty());
    CHECK(minifloat::to_float32(a).empty());
    const npy_array b = minifloat::read_npy(fixture("good_v1_f8_0x3.npy"));
    CHECK(b.shape == std::vector<std::size_t>{0, 3});
    CHECK(b.as<double>().empty());
  }
  SECTION("version 2.0 and 3.0") {
    const npy_array a = minifloat::read_npy(fixture("good_v2_f4_3.npy"));
    const auto v = a.as<float>();
    CHECK(std::vector<float>(v.begin(), v.end()) == std::vector<float>{1.5F, -2.0F, 3.25F});
    const npy_array b = minifloat::read_npy(fixture("good_v3_i4_3.npy"));
    const auto w = b.as<std::int32_t>();
    CHECK(std::vector<std::int32_t>(w.begin(), w.end()) == std::vector<std::int32_t>{7, -8, 9});
  }
}

TEST_CASE("npy: writer output is byte-identical to np.save", "[io][npy]") {
  const std::string name = GENERATE("good_v1_f4_2x3.npy", "good_v1_f8_5.npy", "good_v1_f2_3x3.npy",
                                    "good_v1_u1_scalar.npy", "good_v1_u2_2x2.npy", "good_v1_i1_4.npy",
                                    "good_v1_i4_2x3x4.npy", "good_v1_f4_empty.npy", "good_v1_f8_0x3.npy");
  CAPTURE(name);
  const std::vector<std::byte> original = read_bytes(fixture(name));
  const npy_array array = minifloat::parse_npy(original, name);
  CHECK(minifloat::serialize_npy(array.dtype, array.shape, array.data) == original);
}

TEST_CASE("npy: rejects bad files with a useful message", "[io][npy]") {
  const auto [bad_name, bad_word] = GENERATE(table<std::string, std::string>({
      {"bad_big_endian_f4.npy", "big-endian"},
      {"bad_fortran_f8_2x3.npy", "Fortran"},
      {"bad_truncated_f4.npy", "truncated"},
      {"bad_trailing_f4.npy", "trailing"},
      {"bad_magic.npy", "magic"},
      {"bad_complex_c8.npy", "dtype '<c8'"},
      {"bad_structured.npy", "dtype"},
  }));
  // Named copies: lambdas below capture them (capturing structured bindings needs C++20 rules
  // some compilers still warn about).
  const std::string name = bad_name;
  const std::string word = bad_word;
  CAPTURE(name);
  const std::string from_file = io_error_message([&] { (void)minifloat::read_npy(fixture(name)); });
  CHECK_THAT(from_file, Catch::Contains(word) && Catch::Contains(name) && Catch::Contains("expected"));
  CHECK(from_file.find('\n') == std::string::npos);
  const std::string from_memory = io_error_message([&] { (void)minifloat::parse_npy(read_bytes(fixture(name))); });
  CHECK_THAT(from_memory, Catch::StartsWith("<memory>: ") && Catch::Contains(word));
}

TEST_CASE("npy: header syntax numpy and Python accept", "[io][npy]") {
  const std::vector<std::byte> data = bytes_of(std::vector<float>{1, 2, 3, 4, 5, 6});
  const std::string dict =
      GENERATE(as<std::string>{},
               "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",  // numpy's own spelling
               "{'shape': (2, 3), 'fortran_order': False, 'descr': '<f4'}",    // any key order, no trailing comma
               "{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (2,3)}",
               "  {  'descr'  :'<f4' ,\n\t'fortran_order':False,'shape':( 2 , 3 , ) ,  }  \n",
               "{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 3L), }",  // Python 2 long suffix
               "{'descr': '|f4', 'fortran_order': False, 'shape': (2, 3), }" + std::string(100, ' ') + "\n");
  CAPTURE(dict);
  for (const unsigned major : {1U, 2U, 3U}) {
    const npy_array array = minifloat::parse_npy(make_npy(dict, data, major));
    CHECK(array.dtype == npy_dtype::float32);
    CHECK(array.shape == std::vector<std::size_t>{2, 3});
    CHECK(array.as<float>()[5] == 6.0F);
  }
}

TEST_CASE("npy: byte order of one-byte types does not matter", "[io][npy]") {
  const std::vector<std::byte> data{std::byte{0xFF}};
  for (const char* descr : {"'|i1'", "'<i1'", "'>i1'", "'=i1'"}) {
    const npy_array array = minifloat::parse_npy(
        make_npy(std::string("{'descr': ") + descr + ", 'fortran_order': False, 'shape': ()}", data));
    CHECK(array.as<std::int8_t>()[0] == -1);
  }
}

TEST_CASE("npy: header errors name the problem", "[io][npy]") {
  const auto [bad_dict, bad_word] = GENERATE(table<std::string, std::string>({
      {"{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", "big-endian"},
      {"{'descr': '>f8', 'fortran_order': False, 'shape': (1,), }", "big-endian"},
      {"{'descr': '<f4', 'fortran_order': True, 'shape': (1,), }", "Fortran"},
      {"{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", "unsupported dtype '<c8'"},
      {"{'descr': '<i8', 'fortran_order': False, 'shape': (1,), }", "unsupported dtype '<i8'"},
      {"{'descr': '=f4', 'fortran_order': False, 'shape': (1,), }", "unsupported dtype '=f4'"},
      {"{'descr': '<U10', 'fortran_order': False, 'shape': (1,), }", "unsupported dtype '<U10'"},
      {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", "structured"},
      {"{'descr': 4, 'fortran_order': False, 'shape': (1,), }", "quoted descr"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1), }", "(n,) is a 1-D shape"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': [1], }", "a tuple"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", "negative"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1.5,), }", "after the first dimension"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (,), }", "integer dimension"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,,), }", "integer dimension"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999,), }", "std::size_t"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (9223372036854775808, 2), }", "overflows"},
      {"{'descr': '<f4', 'fortran_order': 0, 'shape': (1,), }", "True or False"},
      {"{'descr': '<f4', 'fortran_order': Falsey, 'shape': (1,), }", "True or False"},
      {"{'descr': '<f4', 'fortran_order': False, }", "lacks 'shape'"},
      {"{}", "lacks 'descr', 'fortran_order', 'shape'"},
      {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}", "duplicate key 'descr'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'extra': 1}", "unexpected key 'extra'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} x", "after the closing '}'"},
      {"{'descr': '<f4' 'fortran_order': False, 'shape': (1,)}", "',' or '}'"},
      {"{'descr: '<f4', 'fortran_order': False, 'shape': (1,)}", "':'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,)", "end of the header"},
      {"{'descr': '<f\\4', 'fortran_order': False, 'shape': (1,)}", "escapes"},
      {"['descr', '<f4']", "'{'"},
      {"", "'{'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,)}\x01", "\\x01"},
  }));
  const std::string dict = bad_dict;
  const std::string word = bad_word;
  CAPTURE(dict);
  const std::vector<std::byte> file = make_npy(dict, std::vector<std::byte>(4));
  const std::string message = io_error_message([&] { (void)minifloat::parse_npy(file, "hand.npy"); });
  CHECK_THAT(message, Catch::StartsWith("hand.npy: ") && Catch::Contains(word) && Catch::Contains("expected"));
  CHECK(message.find('\n') == std::string::npos);
}

TEST_CASE("npy: dimension limits", "[io][npy]") {
  std::string shape_64;
  for (int i = 0; i < 64; ++i) shape_64 += "1, ";
  const npy_array deep = minifloat::parse_npy(
      make_npy("{'descr': '|u1', 'fortran_order': False, 'shape': (" + shape_64 + ")}", std::vector<std::byte>(1)));
  CHECK(deep.shape.size() == 64);
  CHECK_THAT(
      io_error_message([&] {
        (void)minifloat::parse_npy(make_npy("{'descr': '|u1', 'fortran_order': False, 'shape': (" + shape_64 + "1)}",
                                            std::vector<std::byte>(1)));
      }),
      Catch::Contains("at most 64"));

  // A zero extent makes the array empty however large the others are (numpy agrees).
  const npy_array empty =
      minifloat::parse_npy(make_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (18446744073709551615, 0)}"));
  CHECK(empty.size() == 0);
  // Elements fit in std::size_t, bytes do not.
  CHECK_THAT(io_error_message([] {
               (void)minifloat::parse_npy(
                   make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904,)}"));
             }),
             Catch::Contains("overflows"));
  // A plausible shape larger than the file is truncation, found before any allocation.
  CHECK_THAT(
      io_error_message([] {
        (void)minifloat::parse_npy(make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000000,)}"));
      }),
      Catch::Contains("truncated data"));
}

TEST_CASE("npy: preamble errors", "[io][npy]") {
  const std::string dict = "{'descr': '|u1', 'fortran_order': False, 'shape': (1,)}";
  const std::vector<std::byte> data{std::byte{7}};
  CHECK_THAT(io_error_message([&] { (void)minifloat::parse_npy(make_npy(dict, data, 4)); }),
             Catch::Contains("version 4.0; expected 1.0, 2.0 or 3.0"));
  CHECK_THAT(io_error_message([&] { (void)minifloat::parse_npy(make_npy(dict, data, 1, 1)); }),
             Catch::Contains("version 1.1"));
  CHECK_THAT(io_error_message([] { (void)minifloat::parse_npy({}); }), Catch::Contains("truncated preamble"));
  CHECK_THAT(io_error_message([] { (void)minifloat::parse_npy(to_bytes("PK\x03\x04")); }),
             Catch::Contains("bad magic 'PK\\x03\\x04'"));

  std::vector<std::byte> long_header = make_npy(dict, data);
  long_header[9] = std::byte{0x10};  // header length 0x10xx, far past the end
  CHECK_THAT(io_error_message([&] { (void)minifloat::parse_npy(long_header); }), Catch::Contains("truncated header"));
}

TEST_CASE("npy: as<T> checks the element type and size", "[io][npy]") {
  npy_array array;
  array.dtype = npy_dtype::float64;
  array.shape = {2};
  array.data.resize(16);
  CHECK(array.as<double>().size() == 2);
  CHECK_THAT(io_error_message([&] { (void)array.as<float>(); }),
             Catch::Contains("as<float>") && Catch::Contains("'<f8' (float64); expected '<f4' (float32)"));
  CHECK_THROWS_AS(array.as<std::int32_t>(), io_error);
  CHECK_THROWS_AS(array.as<std::uint16_t>(), io_error);
  array.data.resize(15);
  CHECK_THAT(io_error_message([&] { (void)array.as<double>(); }), Catch::Contains("15 bytes"));
  CHECK_THROWS_AS(minifloat::to_float32(array), io_error);
}

TEST_CASE("npy: to_float32", "[io][npy]") {
  SECTION("float64 rounds to nearest even, overflow included") {
    constexpr double flt_max = std::numeric_limits<float>::max();
    constexpr double inf = std::numeric_limits<double>::infinity();
    const std::vector<double> in{1.0 / 3.0,
                                 -0.0,
                                 1e-50,
                                 0x1.000001p0 /* tie, to even: 1 */,
                                 0x1.000003p0 /* tie, up */,
                                 flt_max,
                                 0x1.fffffefffffffp127 /* just below the threshold: FLT_MAX */,
                                 0x1.ffffffp127 /* the halfway point: inf */,
                                 -1e300,
                                 inf,
                                 std::nan("")};
    npy_array array{npy_dtype::float64, {in.size()}, bytes_of(in)};
    const std::vector<float> out = minifloat::to_float32(array);
    REQUIRE(out.size() == in.size());
    CHECK(out[0] == 1.0F / 3.0F);
    CHECK(std::bit_cast<std::uint32_t>(out[1]) == 0x80000000u);
    CHECK(out[2] == 0.0F);
    CHECK(out[3] == 1.0F);
    CHECK(out[4] == 0x1.000004p0F);
    CHECK(out[5] == std::numeric_limits<float>::max());
    CHECK(out[6] == std::numeric_limits<float>::max());
    CHECK(out[7] == std::numeric_limits<float>::infinity());
    CHECK(out[8] == -std::numeric_limits<float>::infinity());
    CHECK(out[9] == std::numeric_limits<float>::infinity());
    CHECK(std::isnan(out[10]));
  }
  SECTION("float16: all 65536 codes against an ldexp oracle") {
    std::vector<std::uint16_t> codes(65536);
    for (std::size_t i = 0; i < codes.size(); ++i) codes[i] = static_cast<std::uint16_t>(i);
    const npy_array array{npy_dtype::float16, {codes.size()}, bytes_of(codes)};
    const std::vector<float> out = minifloat::to_float32(array);
    REQUIRE(out.size() == codes.size());
    for (std::size_t i = 0; i < codes.size(); ++i) {
      const std::uint32_t code = codes[i];
      const int exponent = static_cast<int>((code >> 10) & 0x1F);
      const int fraction = static_cast<int>(code & 0x3FF);
      float expected = 0;
      if (exponent == 0x1F) {
        expected = fraction == 0 ? std::numeric_limits<float>::infinity() : std::numeric_limits<float>::quiet_NaN();
      } else if (exponent == 0) {
        expected = std::ldexp(static_cast<float>(fraction), -24);
      } else {
        expected = std::ldexp(static_cast<float>(fraction + 1024), exponent - 25);
      }
      if ((code & 0x8000) != 0) expected = -expected;
      if (std::isnan(expected)) {
        // NaN: a NaN of the same sign (minifloat::float16 decodes every NaN code to the quiet NaN).
        if (!std::isnan(out[i]) || std::signbit(out[i]) != ((code & 0x8000U) != 0)) FAIL_CHECK("NaN code " << code);
      } else if (std::bit_cast<std::uint32_t>(out[i]) != std::bit_cast<std::uint32_t>(expected)) {
        FAIL_CHECK("code " << code << " decoded to " << out[i] << ", expected " << expected);
      }
    }
  }
  SECTION("integer dtypes are not float inputs") {
    const npy_array array = minifloat::read_npy(fixture("good_v1_i4_2x3x4.npy"));
    CHECK_THAT(io_error_message([&] { (void)minifloat::to_float32(array); }),
               Catch::Contains("'<i4' (int32); expected a floating-point dtype"));
  }
}

TEST_CASE("npy: file system errors", "[io][npy]") {
  const temp_directory dir;
  const std::vector<float> values{1, 2};
  const std::array<std::size_t, 1> shape{2};
  CHECK_THAT(io_error_message([&] { (void)minifloat::read_npy(dir / "missing.npy"); }),
             Catch::Contains("missing.npy") && Catch::Contains("cannot open"));
  CHECK_THAT(io_error_message([&] { (void)minifloat::read_npy(dir / ""); }), Catch::Contains("directory"));
  CHECK_THAT(io_error_message([&] { minifloat::write_npy(dir / "no" / "such" / "dir.npy", shape, values); }),
             Catch::Contains("cannot open for writing"));

  const std::array<std::size_t, 1> wrong_shape{3};
  CHECK_THAT(io_error_message([&] { minifloat::write_npy(dir / "w.npy", wrong_shape, values); }),
             Catch::Contains("data has 8 bytes but shape (3,) of '<f4' needs 12"));
  CHECK_FALSE(fs::exists(dir / "w.npy"));
  CHECK_THAT(io_error_message([&] {
               minifloat::write_npy(dir / "w.npy", static_cast<npy_dtype>(42), shape, std::as_bytes(std::span(values)));
             }),
             Catch::Contains("invalid npy_dtype value 42"));
  const std::vector<std::size_t> deep(65, 1);
  CHECK_THAT(io_error_message([&] { minifloat::write_npy(dir / "w.npy", deep, std::vector<float>{1}); }),
             Catch::Contains("65 dimensions"));
}

TEST_CASE("npy: every proper prefix of a valid file is rejected", "[io][npy][robustness]") {
  const std::string name = GENERATE("good_v1_f4_2x3.npy", "good_v1_u1_scalar.npy", "good_v1_f4_empty.npy",
                                    "good_v2_f4_3.npy", "good_v3_i4_3.npy");
  CAPTURE(name);
  const std::vector<std::byte> file = read_bytes(fixture(name));
  REQUIRE_NOTHROW(minifloat::parse_npy(file));
  for (std::size_t length = 0; length < file.size(); ++length) {
    CAPTURE(length);
    // An exact-size copy, so the sanitizers see any read past the prefix.
    const std::vector<std::byte> prefix(file.begin(), file.begin() + static_cast<std::ptrdiff_t>(length));
    CHECK_THROWS_AS(minifloat::parse_npy(prefix), io_error);
  }
}

TEST_CASE("npy: read_npy rejects every proper prefix of a valid file", "[io][npy][robustness]") {
  // read_npy reads the preamble, header and data in separate steps, so it has its own
  // truncation paths to cover.
  const std::string name = GENERATE("good_v1_f4_2x3.npy", "good_v2_f4_3.npy");
  CAPTURE(name);
  const std::vector<std::byte> file = read_bytes(fixture(name));
  const temp_directory dir;
  for (std::size_t length = 0; length < file.size(); ++length) {
    CAPTURE(length);
    {
      std::ofstream out(dir / "prefix.npy", std::ios::binary | std::ios::trunc);
      out.write(reinterpret_cast<const char*>(file.data()), static_cast<std::streamsize>(length));
    }
    CHECK_THROWS_AS(minifloat::read_npy(dir / "prefix.npy"), io_error);
  }
}

TEST_CASE("npy: random corruption throws io_error or parses, never crashes", "[io][npy][robustness]") {
  const std::string name = GENERATE("good_v1_f4_2x3.npy", "good_v1_f2_3x3.npy", "good_v2_f4_3.npy");
  CAPTURE(name);
  const std::vector<std::byte> file = read_bytes(fixture(name));
  const std::size_t header_end = 128;  // np.save pads these small headers to 128 bytes
  std::mt19937 random(12345);
  std::uniform_int_distribution<std::size_t> position(0, header_end - 1);
  std::uniform_int_distribution<int> byte_value(0, 255);
  std::uniform_int_distribution<int> flips(1, 4);
  // Bytes a parser is most sensitive to, so flips hit interesting states more often than
  // uniform noise would.
  using namespace std::string_view_literals;
  constexpr std::string_view tokens = "{}()[],:'\" 0123456789-LTF<>|\n\x00\xff"sv;
  std::size_t accepted = 0;
  std::size_t rejected = 0;
  for (int round = 0; round < 20000; ++round) {
    std::vector<std::byte> mutated = file;
    for (int i = flips(random); i > 0; --i) {
      const std::size_t at = position(random);
      const int value = byte_value(random);
      mutated[at] = value < 128 ? static_cast<std::byte>(value)
                                : static_cast<std::byte>(tokens[static_cast<std::size_t>(value) % tokens.size()]);
    }
    if (round % 7 == 0) mutated.resize(position(random) + header_end / 2);  // and cut it short
    try {
      const npy_array array = minifloat::parse_npy(mutated);
      // Whatever was accepted must be self-consistent.
      REQUIRE(array.data.size() == array.size() * minifloat::npy_item_size(array.dtype));
      ++accepted;
    } catch (const io_error& e) {
      REQUIRE(std::string_view(e.what()).find('\n') == std::string_view::npos);
      ++rejected;
    }
  }
  CHECK(accepted > 0);
  CHECK(rejected > 0);
}
