// Issue 35 (Reliability v2), the quant layer: sizes from callers never wrap (item 7), one pow2
// target check for every entry point (item 8), and caller scales that would turn finite values
// into Inf are refused (item 5c). Each case is the exact call the issue reports.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "support/all_but_attention.hpp"
#include <minifloat/quant/quantized_tensor.hpp>
#include <minifloat/quant/scheme_string.hpp>
#include <minifloat/recipes/scaling_rule.hpp>

using namespace minifloat;
using Catch::Matchers::Contains;

TEST_CASE("from_parts: FP4 with SIZE_MAX columns is a shape_error, not a wrapped size", "[quant][reliability]") {
  const quant_scheme fp4 = quant_scheme::make(format_id::float4_e2m1fn, granularity::tensor);
  const std::size_t huge = std::numeric_limits<std::size_t>::max();
  // (cols + 1) / 2 used to wrap to 0, so empty codes passed and code() read out of bounds.
  CHECK_THROWS_AS(quantized_tensor::from_parts(fp4, 1, huge, {}, {1.0f}, {}), shape_error);
  CHECK_THROWS_WITH(quantized_tensor::from_parts(fp4, 1, huge, {}, {1.0f}, {}), Contains("code bytes"));
  CHECK(packed_bytes(huge, 4) == huge / 2 + 1);
}

TEST_CASE("from_parts: bfloat16 with 2^63 columns is a shape_error", "[quant][reliability]") {
  const quant_scheme bf16 = quant_scheme::make(format_id::bfloat16, granularity::tensor);
  const std::size_t cols = std::size_t{1} << 63;
  CHECK_THROWS_AS(quantized_tensor::from_parts(bf16, 1, cols, {}, {1.0f}, {}), shape_error);
  CHECK_THROWS_WITH(quantized_tensor::from_parts(bf16, 1, cols, {}, {1.0f}, {}), Contains("64-bit size"));
  CHECK_THROWS_AS(detail::code_row_bytes(format_id::bfloat16, cols), shape_error);
  CHECK(detail::code_row_bytes(format_id::bfloat16, cols - 1) == 2 * (cols - 1));
}

TEST_CASE("quant containers: wrapping sizes are refused everywhere", "[quant][reliability]") {
  const std::size_t huge = std::numeric_limits<std::size_t>::max();
  std::vector<float> none;
  // rows x cols wraps to 0 = the empty buffer's size
  CHECK_THROWS_AS(matrix_view<const float>(std::span<const float>(none), 2, std::size_t{1} << 63), shape_error);
  std::vector<std::uint8_t> codes, scales;
  CHECK_THROWS_AS((mx_tensor_view<float4_e2m1fn>(1, huge, 1, scale_rule::floor, codes, scales)), shape_error);
  CHECK_THROWS_AS(mx_scales_from_cann(codes, huge, 1, 1), shape_error);
  // a valid tensor still answers code(), and an index outside it is an error, not a read
  const std::vector<float> x{1.0f, -2.0f, 3.0f};
  const auto q = quantize(x, 1, 3, quant_scheme::make(format_id::float4_e2m1fn, granularity::tensor));
  CHECK_NOTHROW(q.code(0, 2));
  CHECK_THROWS_AS(q.code(0, 3), std::out_of_range);
  CHECK_THROWS_AS(q.code(1, 0), std::out_of_range);
}

TEST_CASE("pow2 target outside the format's binades: one check, the CLI's text", "[quant][reliability][scheme]") {
  const std::string hif8 =
      "pow2 target T = -23 (N_guard 38) puts the amax at 2^-23, outside the binades of hifloat8 (2^-22 .. 2^15): "
      "every value would flush to zero; expected T from -22 to 15 (N_guard from 0 to 37)";
  CHECK_THROWS_AS(parse_scheme("hifloat8/tensor/n-guard=38"), std::invalid_argument);
  // parse_scheme names the scheme string first, then the same text
  CHECK_THROWS_WITH(parse_scheme("hifloat8/tensor/n-guard=38"), Catch::Matchers::EndsWith(": " + hif8));
  quant_scheme s = quant_scheme::make(format_id::hifloat8, granularity::tensor);
  s.target = 15 - 38;
  CHECK_THROWS_WITH(s.validate(), hif8);
  const std::vector<float> x{1.0f, 2.0f, 3.0f, 4.0f};
  CHECK_THROWS_WITH(quantize(x, 2, 2, s), hif8);
  const std::vector<float> one{1.0f};
  CHECK_THROWS_WITH(quantize_with_scales(x, 2, 2, s, one), hif8);
  CHECK_THROWS_WITH(fake_quantize(x, 2, 2, s), hif8);
  // the range's ends are accepted
  CHECK_NOTHROW(parse_scheme("hifloat8/tensor/n-guard=37"));
  CHECK_NOTHROW(parse_scheme("hifloat8/channel/n-guard=0"));
  CHECK_THROWS_WITH(parse_scheme("hifloat8/tensor/n-guard=-1"),
                    Contains("T = 16 (N_guard -1)") && Contains("clipped to its max") && Contains("N_guard from 0 to 37"));
  // other formats, from their own binades
  CHECK_THROWS_WITH(parse_scheme("float8_e4m3fn/tensor/scale-rule=pow2/target=9"),
                    Catch::Matchers::EndsWith(": pow2 target T = 9 puts the amax at 2^9, outside the binades of float8_e4m3fn (2^-9 .. 2^8): values "
                    "near the amax would be clipped to its max; expected T from -9 to 8"));
  CHECK_NOTHROW(parse_scheme("float8_e4m3fn/tensor/scale-rule=pow2/target=8"));
  CHECK_THROWS_WITH(parse_scheme("float4_e2m1fn/token/scale-rule=pow2/target=-2"), Contains("(2^-1 .. 2^2)"));
  CHECK(format_binades(format_id::float8_e5m2) == std::pair<int, int>{-16, 15});
  CHECK(format_binades(format_id::bfloat16) == std::pair<int, int>{-133, 127});
  // the max rule ignores target
  quant_scheme m = quant_scheme::make(format_id::float8_e4m3fn, granularity::tensor);
  m.target = 99;
  CHECK_NOTHROW(m.validate());
}

TEST_CASE("quantize_with_scales / fake_quantize_step: a scale of 2^127 that makes Inf is refused", "[quant][reliability]") {
  const float big = std::ldexp(1.0f, 127);
  const std::vector<float> x{1.0f, -3.0f, 0.5f, 2.0f};
  const std::vector<float> scale{big};
  const quant_scheme s = quant_scheme::make(format_id::hifloat8, granularity::tensor);
  // FLT_MAX / 2^127 rounds to the code 2, and 2 x 2^127 is Inf in float32
  const float fmax = std::numeric_limits<float>::max();
  const std::vector<float> y{1.0f, 0.0f, fmax, -fmax};
  CHECK_THROWS_AS(quantize_with_scales(y, 2, 2, s, scale), std::invalid_argument);
  CHECK_THROWS_WITH(quantize_with_scales(y, 2, 2, s, scale),
                    Contains("overflows float32") && Contains("scale 1.70141183e+38") && Contains("2^112") &&
                        Contains("hifloat8"));
  step_result r;
  r.scale = big;
  CHECK_THROWS_AS(fake_quantize_step(matrix_view<const float>(y, 2, 2), s, r), std::invalid_argument);
  // the same scale on values it keeps finite is fine (no Inf can come out of these)
  const auto ok = fake_quantize_step(matrix_view<const float>(x, 2, 2), s, r);
  for (const float v : ok) CHECK(std::isfinite(v));
  // per channel: only the offending group is named
  quant_scheme ch = quant_scheme::make(format_id::float8_e4m3fn, granularity::channel);
  const std::vector<float> two{1.0f, big};
  CHECK_THROWS_WITH(quantize_with_scales(y, 2, 2, ch, two), Contains("group 1 (rows 1..1"));
  // every result that is accepted dequantizes to finite values
  const std::vector<float> fine{1.0f, 1.0f};
  const auto q = quantize_with_scales(y, 2, 2, ch, fine);
  for (const float v : dequantize(q)) CHECK(std::isfinite(v));
}
