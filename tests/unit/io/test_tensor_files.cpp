// Tensor file handling of io/tensor_files.hpp: directory expansion, matrix views of N-D shapes,
// dispatch by extension, and the errors of malformed or unfit inputs.
#include <minifloat/io/npy.hpp>
#include <minifloat/io/safetensors.hpp>
#include <minifloat/io/tensor_files.hpp>
// (io first: npy.hpp's npy_dtype::float16 would shadow minifloat::float16 under -Wshadow)
#include <minifloat/formats/float8.hpp>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "support/files.hpp"

#ifndef MINIFLOAT_TEST_DATA_DIR
#define MINIFLOAT_TEST_DATA_DIR "tests/data"
#endif

namespace fs = std::filesystem;

TEST_CASE("tensor files: matrix views of shapes", "[analysis][files]") {
  using minifloat::matrix_shape;
  using v = std::vector<std::size_t>;
  CHECK(matrix_shape(v{}) == std::pair<std::size_t, std::size_t>{1, 1});
  CHECK(matrix_shape(v{7}) == std::pair<std::size_t, std::size_t>{1, 7});
  CHECK(matrix_shape(v{3, 5}) == std::pair<std::size_t, std::size_t>{3, 5});
  CHECK(matrix_shape(v{8, 86, 15}) == std::pair<std::size_t, std::size_t>{688, 15});
  CHECK(matrix_shape(v{60, 240, 1, 1}) == std::pair<std::size_t, std::size_t>{60, 240});  // conv: O x I*kh*kw
  CHECK(matrix_shape(v{60, 960, 1, 3}) == std::pair<std::size_t, std::size_t>{60, 2880});
  CHECK(matrix_shape(v{2, 3, 4, 5, 6}) == std::pair<std::size_t, std::size_t>{120, 6});
}

TEST_CASE("tensor files: directories, extensions and loading", "[analysis][files]") {
  const test_support::temp_directory scratch;
  const fs::path& dir = scratch.path();
  const std::vector<std::size_t> shape{2, 3};
  const std::vector<float> values{1, 2, 3, 4, 5, 6};
  minifloat::write_npy(dir / "b.npy", std::span<const std::size_t>(shape), values);
  minifloat::write_npy(dir / "a.npy", std::span<const std::size_t>(shape), values);
  std::vector<std::byte> f32(6 * 4), ids(2 * 8);
  std::memcpy(f32.data(), values.data(), f32.size());
  minifloat::write_safetensors(dir / "c.safetensors", {{"w2", minifloat::safetensors_dtype::F32, {3, 2}, f32},
                                                       {"w1", minifloat::safetensors_dtype::F32, {6}, f32},
                                                       {"ids", minifloat::safetensors_dtype::I64, {2}, ids}});
  std::ofstream(dir / "notes.txt") << "ignored";
  fs::create_directories(dir / "sub");
  minifloat::write_npy(dir / "sub" / "a.npy", std::span<const std::size_t>(shape), values);

  const auto files = minifloat::expand_tensor_paths({dir.string(), (dir / "sub" / "a.npy").string()});
  REQUIRE(files.size() == 4);  // a.npy, b.npy, c.safetensors (sorted; not recursive), then sub/a.npy
  CHECK(files[0].filename() == "a.npy");
  CHECK(files[1].filename() == "b.npy");
  CHECK(files[2].filename() == "c.safetensors");

  std::vector<std::string> skipped;
  const auto sources = minifloat::list_tensor_sources(files, &skipped);
  REQUIRE(sources.size() == 5);
  REQUIRE(skipped.size() == 1);
  CHECK_THAT(skipped[0], Catch::Contains("ids (I64)"));
  CHECK(sources[0].name == (fs::path(dir.filename()) / "a").string());  // two a.npy: prefixed by folder
  CHECK(sources[1].name == "b");
  CHECK(sources[2].name == "w1");  // tensors of a .safetensors in name order
  CHECK(sources[3].name == "w2");
  CHECK(sources[4].name == "sub/a");

  const auto t = minifloat::load_tensor(sources[3]);
  CHECK(t.values == values);
  CHECK(t.rows == 3);
  CHECK(t.cols == 2);
  CHECK(t.dtype == "F32");
  const auto n = minifloat::load_tensor(sources[1]);
  CHECK(n.shape == shape);
  CHECK(n.dtype == "float32");

  CHECK_THROWS_AS(minifloat::expand_tensor_paths({(dir / "missing.npy").string()}), minifloat::io_error);
  CHECK_THROWS_AS(minifloat::expand_tensor_paths({(dir / "notes.txt").string()}), minifloat::io_error);
  fs::create_directories(dir / "empty");
  CHECK_THROWS_AS(minifloat::expand_tensor_paths({(dir / "empty").string()}), minifloat::io_error);
}

TEST_CASE("tensor files: malformed inputs are io_errors", "[analysis][files]") {
  const fs::path data = MINIFLOAT_TEST_DATA_DIR;
  CHECK_THROWS_AS(minifloat::list_tensor_sources({data / "safetensors" / "bad_overlap.safetensors"}), minifloat::io_error);
  const auto s = minifloat::list_tensor_sources({data / "npy" / "bad_truncated_f4.npy", data / "npy" / "good_v1_i1_4.npy"});
  REQUIRE(s.size() == 2);
  CHECK_THROWS_AS(minifloat::load_tensor(s[0]), minifloat::io_error);
  CHECK_THROWS_WITH(minifloat::load_tensor(s[1]), Catch::Contains("not floating point"));
}

TEST_CASE("tensor files: matrix views that do not fit are shape errors", "[analysis][files]") {
  using v = std::vector<std::size_t>;
  const std::size_t big = std::size_t{1} << 40;
  // (2^40, 0): an empty tensor with a huge extent is a valid 2^40 x 0 matrix
  CHECK(minifloat::matrix_shape(v{big, 0}) == std::pair<std::size_t, std::size_t>{big, 0});
  // (2^40, 2^40, 0): its rows would be 2^80
  CHECK_THROWS_AS(minifloat::matrix_shape(v{big, big, 0}), minifloat::shape_error);
  CHECK_THROWS_WITH(minifloat::matrix_shape(v{0, big, big}, minifloat::flatten_mode::first_axis),
                    Catch::Contains("does not fit in a 64-bit size"));
}

TEST_CASE("tensor files: FP8 safetensors tensors are decoded by the library's types", "[analysis][files]") {
  const test_support::temp_directory scratch;
  const fs::path& dir = scratch.path();
  std::vector<std::byte> e4(256), e5(256);
  for (std::size_t i = 0; i < 256; ++i) e4[i] = e5[i] = static_cast<std::byte>(i);
  minifloat::write_safetensors(dir / "f8.safetensors", {{"e4", minifloat::safetensors_dtype::F8_E4M3, {16, 16}, e4},
                                                        {"e5", minifloat::safetensors_dtype::F8_E5M2, {256}, e5}});
  const auto sources = minifloat::list_tensor_sources({dir / "f8.safetensors"});
  REQUIRE(sources.size() == 2);  // both count as floating point now
  const auto t4 = minifloat::load_tensor(sources[0]);
  const auto t5 = minifloat::load_tensor(sources[1]);
  REQUIRE(t4.values.size() == 256);
  REQUIRE(t5.values.size() == 256);
  CHECK(t4.dtype == "F8_E4M3");
  for (std::size_t i = 0; i < 256; ++i) {
    const float a = static_cast<float>(minifloat::float8_e4m3fn::from_bits(static_cast<std::uint8_t>(i)));
    const float b = static_cast<float>(minifloat::float8_e5m2::from_bits(static_cast<std::uint8_t>(i)));
    if (std::isnan(a)) CHECK(std::isnan(t4.values[i]));
    else CHECK(t4.values[i] == a);
    if (std::isnan(b)) CHECK(std::isnan(t5.values[i]));
    else CHECK(t5.values[i] == b);
  }
  CHECK(t4.values[0x7E] == 448.0f);
  CHECK(t5.values[0x7B] == 57344.0f);
}
