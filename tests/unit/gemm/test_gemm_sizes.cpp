// Sizes from callers and files in the GEMM: counts that do not fit in a size_t are a
// shape_error (checked arithmetic, core/checked.hpp), never a wrapped number; legitimately
// empty shapes return at once without allocating. One test per reproducer of issue 13, plus the
// validate_* functions (one per entry point) that a fuzzer calls with arbitrary sizes.
#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <vector>

#include <minifloat/gemm/gemm.hpp>

using namespace minifloat;

namespace {

constexpr std::size_t size_max = std::numeric_limits<std::size_t>::max();

quant_scheme tensor_scheme(format_id f = format_id::float8_e4m3fn) { return quant_scheme::make(f, granularity::tensor); }

/// rows x cols with no codes and no scales: valid only when rows or cols is 0.
quantized_tensor empty_tensor(std::size_t rows, std::size_t cols, format_id f = format_id::float8_e4m3fn) {
  return quantized_tensor::from_parts(tensor_scheme(f), rows, cols, {}, {}, {});
}

/// A small valid tensor (codes 0x38 = 1.0 in E4M3, scale 1).
quantized_tensor ones(std::size_t rows, std::size_t cols) {
  return quantized_tensor::from_parts(tensor_scheme(), rows, cols, std::vector<std::uint8_t>(rows * cols, 0x38),
                                      {1.0f}, {});
}

}  // namespace

TEST_CASE("grouped_gemm_reference: group sizes that wrap around to A's rows are a shape_error", "[gemm][sizes]") {
  const auto a = ones(4, 8), b = ones(3, 8);
  const std::vector<quantized_tensor_view> experts(2, b.view());
  std::vector<float> out(4 * 3);
  const std::vector<std::size_t> sizes = {size_max, 5};  // sums to 4 in wrapping arithmetic
  CHECK_THROWS_AS(grouped_gemm_reference(a.view(), sizes, experts, gemm_layout::nk, {}, std::span<float>(out)),
                  shape_error);
  CHECK_THROWS_WITH(grouped_gemm_reference(a.view(), sizes, experts, gemm_layout::nk, {}, std::span<float>(out)),
                    Catch::Contains("add up to more than 2^64 - 1 tokens"));
}

TEST_CASE("grouped_gemm: group sizes {SIZE_MAX, 5} and {2^63, 2^63 + 4} are a shape_error", "[gemm][sizes]") {
  const auto a = ones(4, 8), b = ones(3, 8);
  const std::vector<quantized_tensor_view> experts(2, b.view());
  const std::vector<packed_weights> packed(2, packed_weights(b.view()));
  std::vector<float> out(4 * 3);
  const std::size_t half = std::size_t{1} << 63;
  for (const auto& sizes : {std::vector<std::size_t>{size_max, 5}, std::vector<std::size_t>{half, half + 4}}) {
    CHECK_THROWS_AS(grouped_gemm(a.view(), sizes, experts, gemm_layout::nk, {}, std::span<float>(out)), shape_error);
    CHECK_THROWS_AS(grouped_gemm(a.view(), sizes, std::span<const packed_weights>(packed), {}, std::span<float>(out)),
                    shape_error);
    CHECK_THROWS_AS(validate_grouped_gemm(a.view(), sizes, experts, gemm_layout::nk, {}, out.size()), shape_error);
  }
  // The right sizes still work, and the validation reports the shape.
  const std::vector<std::size_t> good = {1, 3};
  grouped_gemm(a.view(), good, experts, gemm_layout::nk, {}, std::span<float>(out));
  for (const float v : out) CHECK(v == 8.0f);
  const gemm_shape s = validate_grouped_gemm(a.view(), good, experts, gemm_layout::nk, {}, out.size());
  CHECK(s.m == 4);
  CHECK(s.n == 3);
  CHECK(s.k == 8);
}

TEST_CASE("gemm: M x N that does not fit in 64 bits is a shape_error, not an empty output", "[gemm][sizes]") {
  const std::size_t big = std::size_t{1} << 32;
  const auto a = empty_tensor(big, 0), b = empty_tensor(big, 0);  // M = N = 2^32, K = 0
  std::vector<float> none;
  CHECK_THROWS_AS(gemm(a.view(), b.view(), gemm_layout::nk, {}, std::span<float>(none)), shape_error);
  CHECK_THROWS_WITH(gemm(a.view(), b.view(), gemm_layout::nk, {}, std::span<float>(none)),
                    Catch::Contains("gemm: output M x N: 4294967296 x 4294967296 does not fit"));
  CHECK_THROWS_AS(gemm_reference(a.view(), b.view(), gemm_layout::nk, {}, std::span<float>(none)), shape_error);
  std::vector<bfloat16> none16;
  CHECK_THROWS_AS(gemm(a.view(), b.view(), gemm_layout::nk, {}, std::span<bfloat16>(none16)), shape_error);
  CHECK_THROWS_AS(gemm_reference_exact_double(a.view(), b.view(), gemm_layout::nk), shape_error);
  CHECK_THROWS_AS(validate_gemm(a.view(), b.view(), gemm_layout::nk, 0, 0), shape_error);
  // With the packed B as well.
  const packed_weights w(b.view());
  CHECK_THROWS_AS(gemm(a.view(), w, {}, std::span<float>(none)), shape_error);
  CHECK_THROWS_AS(validate_gemm(a.view(), w, 0, 0), shape_error);
}

TEST_CASE("gemm: legitimately empty shapes return at once", "[gemm][sizes]") {
  const std::size_t big = std::size_t{1} << 32;
  std::vector<float> none;
  // M = 0 against N = 2^32 (K = 0): an empty output, nothing to do.
  const auto a0 = empty_tensor(0, 0), b = empty_tensor(big, 0);
  gemm(a0.view(), b.view(), gemm_layout::nk, {}, std::span<float>(none));
  gemm_reference(a0.view(), b.view(), gemm_layout::nk, {}, std::span<float>(none));
  const gemm_shape s = validate_gemm(a0.view(), b.view(), gemm_layout::nk, 0, 0);
  CHECK(s.m == 0);
  CHECK(s.n == big);
  CHECK(s.k == 0);
  // K = 0 with outputs: every output is the bias (or 0).
  const auto a2 = empty_tensor(2, 0), b3 = empty_tensor(3, 0);
  std::vector<float> out(6, -1.0f);
  const std::vector<float> bias = {1.0f, 2.0f, 3.0f};
  gemm(a2.view(), b3.view(), gemm_layout::nk, bias, std::span<float>(out));
  CHECK(out == std::vector<float>{1, 2, 3, 1, 2, 3});
  // Grouped, no groups at all, and groups of no tokens.
  gemm_config cfg;
  grouped_gemm(a0.view(), std::vector<std::size_t>{}, std::vector<quantized_tensor_view>{}, gemm_layout::nk, {},
               std::span<float>(none), cfg);
  grouped_gemm(a0.view(), std::vector<std::size_t>{0, 0}, std::vector<quantized_tensor_view>(2, b3.view()),
               gemm_layout::nk, {}, std::span<float>(none), cfg);
}

TEST_CASE("packed_weights of an N = 2^32, K = 0 tensor allocates nothing", "[gemm][sizes]") {
  const std::size_t big = std::size_t{1} << 32;
  const auto b = empty_tensor(big, 0);
  const packed_weights_shape want = validate_packed_weights(b.view());
  CHECK(want.n == big);
  CHECK(want.k == 0);
  CHECK(want.storage_bytes == 0);
  const packed_weights w(b.view());
  CHECK(w.n() == big);
  CHECK(w.k() == 0);
  CHECK(w.storage_bytes() == 0);
  CHECK(w.codes().empty());
  CHECK(w.row_scales().empty());
  std::vector<float> none;
  gemm(empty_tensor(0, 0).view(), w, {}, std::span<float>(none));  // M = 0: returns at once
  // K = 0, N = 2^32 as (K, N) storage too.
  const auto bkn = empty_tensor(0, big);
  CHECK(packed_weights(bkn.view(), gemm_layout::kn).storage_bytes() == 0);
}

TEST_CASE("gemm: views whose code count wraps around are a shape_error", "[gemm][sizes]") {
  // 2^33 x 2^31 codes = 2^64: wraps to 0 and would "match" an empty span.
  const quantized_tensor_view lie{tensor_scheme(), std::size_t{1} << 33, std::size_t{1} << 31, {}, {}, {}};
  const auto b = ones(3, 8);
  std::vector<float> out(3);
  CHECK_THROWS_AS(gemm(lie, b.view(), gemm_layout::nk, {}, std::span<float>(out)), shape_error);
  CHECK_THROWS_WITH(validate_gemm(lie, b.view(), gemm_layout::nk, 0, 3),
                    Catch::Contains("gemm: A: code bytes (rows x bytes per row): 8589934592 x 2147483648 does not fit"));
  CHECK_THROWS_AS(validate_gemm(b.view(), lie, gemm_layout::nk, 0, 3), shape_error);
  CHECK_THROWS_AS(packed_weights(lie), shape_error);
  CHECK_THROWS_AS(validate_packed_weights(lie), shape_error);
  // FP4, cols = SIZE_MAX: ceil(cols / 2) bytes per row, computed without the wrapping (cols + 1) / 2.
  const quantized_tensor_view fp4{tensor_scheme(format_id::float4_e2m1fn), 1, size_max, {}, {}, {}};
  CHECK_THROWS_WITH(validate_gemm(fp4, b.view(), gemm_layout::nk, 0, 3), Catch::Contains("needs 9223372036854775808 code bytes, got 0"));
  // Block 1 x 1 scales of a 2^32 x 0 tensor: an empty grid, nothing to pack.
  quant_scheme blk = quant_scheme::make(format_id::float8_e4m3fn, granularity::block);
  blk.block_rows = blk.block_cols = 1;
  const quantized_tensor_view grid{blk, std::size_t{1} << 32, 0, {}, {}, {}};
  CHECK(validate_packed_weights(grid).storage_bytes == 0);
}

TEST_CASE("gemm validation functions match the entry points on ordinary shapes", "[gemm][sizes]") {
  const auto a = ones(5, 40), b = ones(7, 40);
  const gemm_shape s = validate_gemm(a.view(), b.view(), gemm_layout::nk, 7, 35);
  CHECK(s.m == 5);
  CHECK(s.n == 7);
  CHECK(s.k == 40);
  CHECK(s.k_block == 40);
  CHECK_THROWS_WITH(validate_gemm(a.view(), b.view(), gemm_layout::nk, 3, 35), Catch::Contains("bias needs N = 7"));
  CHECK_THROWS_WITH(validate_gemm(a.view(), b.view(), gemm_layout::nk, 0, 34), Catch::Contains("output needs M x N = 5x7"));
  const packed_weights_shape ps = validate_packed_weights(b.view());
  const packed_weights w(b.view());
  CHECK(ps.storage_bytes == w.storage_bytes());
  CHECK(validate_gemm(a.view(), w, 0, 35).n == 7);
  const std::vector<packed_weights> experts(2, w);
  CHECK(validate_grouped_gemm(a.view(), std::vector<std::size_t>{2, 3}, std::span<const packed_weights>(experts), {}, 35).n == 7);
  CHECK_THROWS_WITH(validate_grouped_gemm(a.view(), std::vector<std::size_t>{2, 2}, std::span<const packed_weights>(experts), {}, 35),
                    Catch::Contains("add up to 4 tokens but A has 5 rows"));
}
