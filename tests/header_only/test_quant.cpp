// Header-only use of the quantize engine (quant/quantized_tensor.hpp): the SIMD paths and threads
// give the scalar reference path's codes, scales and values.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include <minifloat/quant/quantized_tensor.hpp>
#include <minifloat/quant/scheme_string.hpp>

TEST_CASE("header-only quantize: every path and thread count gives the reference bits", "[header_only]") {
  using namespace minifloat;
  const std::size_t rows = 37, cols = 70;
  std::vector<float> x(rows * cols);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(static_cast<float>(i) * 0.7f) * (1.0f + static_cast<float>(i % 13));
  for (const char* text : {"hifloat8/tensor", "float8_e4m3fn/block1x32", "mxfp8_e4m3", "mxfp4", "float8_e5m2/channel"}) {
    INFO(text);
    const quant_scheme s = parse_scheme(text).scheme;
    const auto ref = quantize(x, rows, cols, s, {.path = simd::isa::scalar});
    const auto fast = quantize(x, rows, cols, s, {.path = simd::isa::automatic, .threads = 2});
    CHECK(std::vector<std::uint8_t>(fast.codes().begin(), fast.codes().end()) ==
          std::vector<std::uint8_t>(ref.codes().begin(), ref.codes().end()));
    CHECK(std::vector<float>(fast.scales().begin(), fast.scales().end()) ==
          std::vector<float>(ref.scales().begin(), ref.scales().end()));
    CHECK(dequantize(fast) == dequantize(ref, {.path = simd::isa::scalar}));
  }
}
