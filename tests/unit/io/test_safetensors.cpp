// .safetensors reader and writer: the fixtures of tests/data/safetensors (make_fixtures.py), hand-made
// headers for every validation rule, and mutated files that must fail cleanly (io_error, no crash).
#include <minifloat/io/safetensors.hpp>
#include <minifloat/io/tensor_files.hpp>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#ifndef MINIFLOAT_TEST_DATA_DIR
#define MINIFLOAT_TEST_DATA_DIR "tests/data"
#endif

#include "support/files.hpp"

namespace {

namespace fs = std::filesystem;
using test_support::read_bytes;
using test_support::temp_directory;
using test_support::write_bytes;
using minifloat::io_error;
using minifloat::safetensors_dtype;

fs::path fixture(std::string_view name) { return fs::path(MINIFLOAT_TEST_DATA_DIR) / "safetensors" / name; }

/// A file image with a hand-written header (no padding) and `data_size` zero bytes of data.
std::vector<std::byte> image(std::string_view json, std::size_t data_size) {
  std::vector<std::byte> out(8 + json.size() + data_size, std::byte{0});
  const std::uint64_t n = json.size();
  for (std::size_t i = 0; i < 8; ++i) out[i] = static_cast<std::byte>((n >> (8 * i)) & 0xFFU);
  std::memcpy(out.data() + 8, json.data(), json.size());
  return out;
}

std::string error_of(std::span<const std::byte> bytes) {
  try {
    (void)minifloat::parse_safetensors(bytes, "img");
  } catch (const io_error& e) {
    return e.what();
  }
  return "";
}

/// n one-element F32 tensors t00000, t00001, ... holding 0, 1, 2, ..., stored in name order. The
/// header lists them in that order too, or (scrambled) in a fixed pseudo-random order.
std::vector<std::byte> many_tensors(std::size_t n, bool scrambled) {
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  std::uint64_t state = 2024;
  for (std::size_t i = n; scrambled && i > 1; --i) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    std::swap(order[i - 1], order[(state >> 33) % i]);
  }
  std::string json = "{";
  char name[16];
  for (const std::size_t i : order) {
    std::snprintf(name, sizeof name, "t%05zu", i);
    json += (json.size() > 1 ? ",\"" : "\"") + std::string(name) + "\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[" +
            std::to_string(4 * i) + "," + std::to_string(4 * i + 4) + "]}";
  }
  json += "}";
  auto out = image(json, 4 * n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto v = static_cast<float>(i);
    std::memcpy(out.data() + 8 + json.size() + 4 * i, &v, 4);
  }
  return out;
}

minifloat::safetensors_reader_counts work_since(const minifloat::safetensors_reader_counts& before) {
  const auto now = minifloat::safetensors_reader_work();
  return {now.headers_parsed - before.headers_parsed, now.header_bytes - before.header_bytes,
          now.name_comparisons - before.name_comparisons, now.order_comparisons - before.order_comparisons};
}

std::vector<std::byte> floats_bytes(std::initializer_list<float> v) {
  std::vector<std::byte> b(v.size() * 4);
  std::memcpy(b.data(), std::data(v), b.size());
  return b;
}

}  // namespace

TEST_CASE("safetensors: dtype table", "[io][safetensors]") {
  CHECK(minifloat::parse_safetensors_dtype("BF16") == safetensors_dtype::BF16);
  CHECK(minifloat::safetensors_item_size(safetensors_dtype::F64) == 8);
  CHECK(minifloat::safetensors_item_size(safetensors_dtype::F8_E4M3) == 1);
  CHECK(minifloat::safetensors_dtype_name(safetensors_dtype::U64) == "U64");
  CHECK_FALSE(minifloat::parse_safetensors_dtype("F33"));
  CHECK_FALSE(minifloat::parse_safetensors_dtype("f32"));
  CHECK(minifloat::safetensors_is_float(safetensors_dtype::F16));
  CHECK_FALSE(minifloat::safetensors_is_float(safetensors_dtype::I64));
}

TEST_CASE("safetensors: the good fixture reads exactly", "[io][safetensors]") {
  const auto h = minifloat::read_safetensors_header(fixture("good_mixed.safetensors"));
  REQUIRE(h.tensors.size() == 5);
  // Data order: descending item size, then name (the reference writer's order).
  CHECK(h.tensors[0].name == "double");
  CHECK(h.tensors[1].name == "ids");
  CHECK(h.tensors[2].name == "weight");
  REQUIRE(h.metadata.size() == 2);
  CHECK(h.metadata[0] == std::pair<std::string, std::string>{"format", "pt"});
  CHECK(h.data_offset == 8 + h.header_size);
  CHECK(h.header_size % 8 == 0);

  const auto* w = h.find("weight");
  REQUIRE(w != nullptr);
  CHECK(w->dtype == safetensors_dtype::F32);
  CHECK(w->shape == std::vector<std::size_t>{2, 3});
  const auto f32 = minifloat::safetensors_to_float32(w->dtype, minifloat::read_safetensors_bytes(
                                                                   fixture("good_mixed.safetensors"), h, *w));
  CHECK(f32 == std::vector<float>{1.0f, -2.5f, 0.125f, 3.0e-5f, 0.0f, 448.0f});

  const auto file = minifloat::read_safetensors(fixture("good_mixed.safetensors"));
  const auto half = minifloat::safetensors_to_float32(safetensors_dtype::F16, file.bytes(*file.header.find("half")));
  CHECK(half == std::vector<float>{1.0f, -0.5f, 65504.0f, std::ldexp(1.0f, -24)});
  const auto brain = minifloat::safetensors_to_float32(safetensors_dtype::BF16, file.bytes(*file.header.find("brain")));
  CHECK(brain == std::vector<float>{1.0f, -3.0f, 0.5f, std::ldexp(1.0f, 100)});
  const auto dbl = minifloat::safetensors_to_float32(safetensors_dtype::F64, file.bytes(*file.header.find("double")));
  REQUIRE(dbl.size() == 3);
  CHECK(dbl[0] == 0.1f);
  CHECK(dbl[1] == -std::numeric_limits<float>::infinity());  // -1e300 overflows float
  CHECK(dbl[2] == std::numeric_limits<float>::denorm_min());
  CHECK_THROWS_AS(minifloat::safetensors_to_float32(safetensors_dtype::I64, file.bytes(*file.header.find("ids"))), io_error);
}

TEST_CASE("safetensors: empty files, scalars and zero-size tensors", "[io][safetensors]") {
  CHECK(minifloat::read_safetensors_header(fixture("good_empty.safetensors")).tensors.empty());
  const auto f = minifloat::read_safetensors(fixture("good_scalar_empty.safetensors"));
  const auto* s = f.header.find("scalar");
  REQUIRE(s != nullptr);
  CHECK(s->shape.empty());
  CHECK(s->size() == 1);
  CHECK(minifloat::safetensors_to_float32(s->dtype, f.bytes(*s)) == std::vector<float>{2.0f});
  const auto* z = f.header.find("nothing");
  REQUIRE(z != nullptr);
  CHECK(z->size() == 0);
  CHECK(z->begin == z->end);
}

TEST_CASE("safetensors: serialize -> parse round trip", "[io][safetensors]") {
  std::vector<minifloat::safetensors_entry> in = {
      {"b.weight", safetensors_dtype::F32, {2, 2}, floats_bytes({1, 2, 3, 4})},
      {"a \"quoted\" \\ name", safetensors_dtype::F32, {1}, floats_bytes({-1})},
      {"u8", safetensors_dtype::U8, {3}, {std::byte{1}, std::byte{2}, std::byte{3}}},
  };
  const auto bytes = minifloat::serialize_safetensors(in, {{"k", "v\n"}});
  const auto f = minifloat::parse_safetensors(bytes);
  REQUIRE(f.header.tensors.size() == 3);
  CHECK(f.header.metadata.at(0).second == "v\n");
  const auto* q = f.header.find("a \"quoted\" \\ name");
  REQUIRE(q != nullptr);
  CHECK(minifloat::safetensors_to_float32(q->dtype, f.bytes(*q)) == std::vector<float>{-1});
  CHECK(minifloat::safetensors_to_float32(safetensors_dtype::F32, f.bytes(*f.header.find("b.weight"))) ==
        std::vector<float>{1, 2, 3, 4});
  CHECK(f.bytes(*f.header.find("u8")).size() == 3);

  const temp_directory dir;
  const auto tmp = dir / "roundtrip.safetensors";
  minifloat::write_safetensors(tmp, in);
  CHECK(minifloat::read_safetensors(tmp).header.tensors.size() == 3);
}

TEST_CASE("safetensors: JSON details the reader accepts", "[io][safetensors]") {
  // Whitespace, escapes (incl. a surrogate pair), unknown keys with nested values, key order.
  const std::string json =
      "{ \"__metadata__\" : { \"k\" : \"\\u00e9\\ud83d\\ude00\" } ,\n"
      "  \"t\\u0031\" : { \"extra\": [1, {\"x\": [true, false, null, -1.5e3]}], \"data_offsets\" : [0, 4],"
      " \"shape\" : [ 1 ], \"dtype\" : \"F32\" } }   ";
  const auto f = minifloat::parse_safetensors(image(json, 4));
  REQUIRE(f.header.tensors.size() == 1);
  CHECK(f.header.tensors[0].name == "t1");
  CHECK(f.header.metadata[0].second == "\xc3\xa9\xf0\x9f\x98\x80");
}

TEST_CASE("safetensors: malformed fixtures are clear errors", "[io][safetensors]") {
  const std::pair<const char*, const char*> cases[] = {
      {"bad_short.safetensors", "expected at least 8"},
      {"bad_truncated_header.safetensors", "runs past the end"},
      {"bad_truncated_data.safetensors", "run past the data buffer"},
      {"bad_trailing.safetensors", "expected them to end exactly at the end of the file"},
      {"bad_huge_length.safetensors", "exceeds 100000000"},
      {"bad_unknown_dtype.safetensors", "unknown dtype \"F33\""},
      {"bad_overlap.safetensors", "overlap the previous tensor"},
      {"bad_offsets_past_end.safetensors", "hold 80 bytes"},
      {"bad_size_mismatch.safetensors", "need 12"},
      {"bad_gap.safetensors", "leave a gap"},
      {"bad_json.safetensors", "expected ',' or '}'"},
      {"bad_not_object.safetensors", "does not start with '{'"},
      {"bad_negative_shape.safetensors", "negative"},
      {"bad_duplicate_name.safetensors", "duplicate tensor name"},
      {"bad_utf8.safetensors", "invalid UTF-8"},
  };
  for (const auto& [file, message] : cases) {
    INFO(file);
    std::string what;
    try {
      (void)minifloat::read_safetensors(fixture(file));
    } catch (const io_error& e) {
      what = e.what();
    }
    CHECK_THAT(what, Catch::Contains(message));
    CHECK_THAT(what, Catch::Contains(file));  // the message names the file
    // The header-only path validates the same way.
    CHECK_THROWS_AS(minifloat::read_safetensors_header(fixture(file)), io_error);
  }
  CHECK_THROWS_AS(minifloat::read_safetensors_header(fixture("does_not_exist.safetensors")), io_error);
}

TEST_CASE("safetensors: header rules, one at a time", "[io][safetensors]") {
  const std::string ok = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  CHECK(error_of(image(ok, 8)).empty());
  CHECK_THAT(error_of(image(ok, 7)), Catch::Contains("run past"));
  CHECK_THAT(error_of(image(ok, 9)), Catch::Contains("end exactly"));
  CHECK_THAT(error_of(image(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8)),
             Catch::Contains("end before begin"));
  CHECK_THAT(error_of(image(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})", 9)),
             Catch::Contains("overlap"));
  CHECK_THAT(error_of(image(R"({"a":{"dtype":"F32","shape":[01],"data_offsets":[0,4]}})", 4)), Catch::Contains("leading zero"));
  CHECK_THAT(error_of(image(R"({"a":{"dtype":"F32","shape":[1.0],"data_offsets":[0,4]}})", 4)), Catch::Contains("not an integer"));
  CHECK_THAT(error_of(image(R"({"a":{"dtype":"F32","shape":[99999999999999999999],"data_offsets":[0,4]}})", 4)),
             Catch::Contains("overflows 64 bits"));
  CHECK_THAT(error_of(image(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}})", 4)),
             Catch::Contains("shape overflows"));
  CHECK_THAT(error_of(image(R"({"a":{"dtype":"F32","shape":[1]}})", 4)), Catch::Contains("lacks \"data_offsets\""));
  CHECK_THAT(error_of(image(R"({"a":{"dtype":"F32","dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 4)),
             Catch::Contains("duplicate key"));
  CHECK_THAT(error_of(image(R"({"__metadata__":{"k":1}})", 0)), Catch::Contains("not a string"));
  CHECK_THAT(error_of(image(R"({"__metadata__":{},"__metadata__":{}})", 0)), Catch::Contains("at most once"));
  CHECK_THAT(error_of(image(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4,8]}})", 4)), Catch::Contains("']'"));
  CHECK_THAT(error_of(image(R"( {})", 0)), Catch::Contains("start with '{'"));
  CHECK_THAT(error_of(image(R"({} x)", 0)), Catch::Contains("after the closing"));
  CHECK_THAT(error_of(image("{\"a\\ud800\":1}", 0)), Catch::Contains("surrogate"));
  CHECK_THAT(error_of(image("{\"a\x01\":1}", 0)), Catch::Contains("control character"));
  // Deep nesting inside an unknown key is cut off, not recursed into without limit.
  std::string deep = R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":)" + std::string(200, '[') +
                     std::string(200, ']') + "}}";
  CHECK_THAT(error_of(image(deep, 4)), Catch::Contains("nesting"));
}

TEST_CASE("safetensors: mutated files throw io_error or parse, never crash", "[io][safetensors]") {
  const auto good = read_bytes(fixture("good_mixed.safetensors"));
  std::uint64_t state = 12345;
  auto next = [&] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<std::size_t>(state >> 33);
  };
  int parsed = 0, rejected = 0;
  for (int round = 0; round < 3000; ++round) {
    auto b = good;
    const int edits = 1 + static_cast<int>(next() % 4);
    for (int e = 0; e < edits; ++e) {
      const std::size_t at = next() % b.size();
      switch (next() % 3) {
        case 0: b[at] = static_cast<std::byte>(next() & 0xFF); break;               // flip a byte
        case 1: b.erase(b.begin() + static_cast<std::ptrdiff_t>(at)); break;        // drop a byte
        default: b.resize(at); break;                                               // truncate
      }
      if (b.empty()) break;
    }
    try {
      const auto f = minifloat::parse_safetensors(b);
      for (const auto& t : f.header.tensors) {
        REQUIRE(t.end <= f.data.size());
        if (minifloat::safetensors_is_float(t.dtype)) (void)minifloat::safetensors_to_float32(t.dtype, f.bytes(t));
      }
      ++parsed;
    } catch (const io_error&) {
      ++rejected;
    }
  }
  CHECK(rejected > 0);
  CHECK(parsed + rejected == 3000);
}

TEST_CASE("safetensors: N tensors cost one header parse and at most N log N comparisons", "[io][safetensors]") {
  // Instead of a wall time (2 shared cores): the reader's own counters. The quadratic reader parsed
  // the header once per loaded tensor and compared each name with every earlier one: N^2 / 2 =
  // 8,000,000 comparisons and 4,001 parses of the whole header for N = 4,000.
  const temp_directory dir;
  std::uint64_t comparisons_per_n[2][2] = {};
  for (const bool scrambled : {false, true}) {
    for (const std::size_t n : {std::size_t{1000}, std::size_t{4000}}) {
      INFO("n = " << n << (scrambled ? ", header order scrambled" : ", header in data order"));
      const auto bytes = many_tensors(n, scrambled);
      const auto path = dir / ("n" + std::to_string(n) + (scrambled ? "_scrambled" : "") + ".safetensors");
      write_bytes(path, bytes);
      const std::uint64_t header_bytes = bytes.size() - 8 - 4 * n;

      const auto before = minifloat::safetensors_reader_work();
      const auto sources = minifloat::list_tensor_sources({path});
      REQUIRE(sources.size() == n);
      for (std::size_t i = 0; i < n; ++i) {
        const auto t = minifloat::load_tensor(sources[i]);  // name order = data order here
        REQUIRE(t.values == std::vector<float>{static_cast<float>(i)});
      }
      const auto w = work_since(before);
      CHECK(w.headers_parsed == 1);  // listing parses it; the n loads reuse it
      CHECK(w.header_bytes == header_bytes);
      const auto log2n = static_cast<std::uint64_t>(std::bit_width(n));  // 10 for 1,000, 12 for 4,000
      CHECK(w.name_comparisons <= 2 * n * log2n);
      if (scrambled) {
        CHECK(w.order_comparisons <= 2 * n * log2n);  // the stable sort
      } else {
        CHECK(w.order_comparisons == n - 1);  // the order check alone: linear
      }
      comparisons_per_n[scrambled ? 1 : 0][n == 4000 ? 1 : 0] = w.name_comparisons + w.order_comparisons;
    }
    // 4x the tensors, at most 4 x (12 / 10) x slack the work; a quadratic step would make it 16x.
    CHECK(comparisons_per_n[scrambled ? 1 : 0][1] <= 6 * comparisons_per_n[scrambled ? 1 : 0][0]);
  }

  // A source built by hand has no header: its load parses the file's header once.
  minifloat::tensor_source by_hand;
  by_hand.name = by_hand.tensor = "t00003";
  by_hand.file = dir / "n1000.safetensors";
  by_hand.kind = minifloat::tensor_file_kind::safetensors;
  const auto before = minifloat::safetensors_reader_work();
  CHECK(minifloat::load_tensor(by_hand).values == std::vector<float>{3.0f});
  CHECK(work_since(before).headers_parsed == 1);

  // The kept header must still describe the file: one that changed size since the listing is an
  // error, not a read at stale offsets.
  const auto sources = minifloat::list_tensor_sources({dir / "n1000.safetensors"});
  write_bytes(dir / "n1000.safetensors", many_tensors(999, false));
  CHECK_THROWS_WITH(minifloat::load_tensor(sources[0]), Catch::Contains("file changed?"));
}

TEST_CASE("safetensors: duplicates are reported where the second one starts", "[io][safetensors]") {
  const std::string t = R"({"dtype":"U8","shape":[1],"data_offsets":[)";
  const std::string json = R"({"b":)" + t + R"(0,1]},"a":)" + t + R"(1,2]},"c":)" + t + R"(2,3]},"a":)" + t + "3,4]}}";
  const auto at = json.rfind("\"a\"");
  CHECK_THAT(error_of(image(json, 4)),
             Catch::Contains("bad header at byte " + std::to_string(8 + at) + ": duplicate tensor name \"a\""));
  const std::string meta = R"({"__metadata__":{"y":"1","x":"2","y":"3"}})";
  CHECK_THAT(error_of(image(meta, 0)), Catch::Contains("bad header at byte " + std::to_string(8 + meta.rfind("\"y\"")) +
                                                       ": duplicate metadata key \"y\""));
}
