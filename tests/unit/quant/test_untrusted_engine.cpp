// Untrusted-input cases of the quantize engine found by the bad-input catalogue (issue 13): a
// scheme or a scale read from a file holds whatever bytes it held.
#include <minifloat/quant/quantized_tensor.hpp>

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

using namespace minifloat;

TEST_CASE("untrusted engine input: validate() refuses enum values outside their range", "[quant][untrusted]") {
  // A scheme read from a file or a wire holds whatever bytes it held.
  quant_scheme s;
  s.format = static_cast<format_id>(200);
  CHECK_THROWS_AS(s.validate(), std::invalid_argument);
  quant_scheme g;
  g.gran = static_cast<granularity>(9);
  CHECK_THROWS_AS(g.validate(), std::invalid_argument);
  quant_scheme r;
  r.round = static_cast<rounding>(77);
  CHECK_THROWS_AS(r.validate(), std::invalid_argument);
}

TEST_CASE("untrusted engine input: pow2 scales never turn finite inputs into Inf", "[quant][untrusted]") {
  // amax 3.3e38 with T = 4: s = 2^123, and the code 32 (HiF8) times 2^123 = 2^128 overflows
  // float32. Correct: a scale rule that keeps decode(code) * s finite, or an error naming amax.
  const std::vector<float> x{3.3e38f, 1.0f};
  const quant_scheme s = quant_scheme::make(format_id::hifloat8, granularity::tensor);
  bool threw = false;
  std::vector<float> y;
  try {
    y = dequantize(quantize(std::span<const float>(x), 1, 2, s));
  } catch (const std::invalid_argument&) {
    threw = true;
  }
  CHECK((threw || (std::isfinite(y[0]) && std::isfinite(y[1]))));
}

TEST_CASE("untrusted engine input: from_parts refuses scales that are not finite and positive",
          "[quant][untrusted]") {
  // quantize_with_scales refuses them; a tensor rebuilt from a scales file should too, instead of
  // dequantizing to NaN, Inf or sign-flipped values.
  const quant_scheme s = quant_scheme::make(format_id::float8_e4m3fn, granularity::tensor);
  for (const float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(), 0.0f,
                          -1.0f}) {
    CHECK_THROWS_AS(quantized_tensor::from_parts(s, 1, 2, {0x38, 0x40}, {bad}, {}), std::invalid_argument);
  }
}
