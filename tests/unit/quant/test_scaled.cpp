// Scaled quantization (tensor / channel / token / block): every code equals encode(x / s) with
// the documented s, computed here from the rule's definition; containers round-trip; bad
// geometry fails with a message that names the sizes.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "support/all_but_attention.hpp"
#include <minifloat/quant/quantized_tensor.hpp>

using namespace minifloat;

namespace {

std::vector<float> random_matrix(std::size_t n, unsigned seed, float lo_exp = -12, float hi_exp = 6) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> e(lo_exp, hi_exp);
  std::bernoulli_distribution s;
  std::vector<float> v(n);
  for (auto& x : v) x = (s(rng) ? -1.0f : 1.0f) * std::exp2(e(rng));
  return v;
}

// The scale definition, written out plainly from scheme.hpp.
template <class Elem>
float expected_scale(float amax, scale_rule rule, int target) {
  if (rule == scale_rule::none || amax == 0.0f) return 1.0f;
  if (rule == scale_rule::pow2) {
    int e = 0;
    (void)std::frexp(amax, &e);  // amax = f * 2^e, f in [0.5, 1): floor(log2 amax) = e - 1
    return std::ldexp(1.0f, std::max(e - 1 - target, -149));
  }
  const float s = amax / static_cast<float>(std::numeric_limits<Elem>::max());
  return s > 0 ? s : std::numeric_limits<float>::denorm_min();
}

template <class Elem>
void check_against_definition(const std::vector<float>& x, std::size_t rows, std::size_t cols, quant_scheme s,
                              std::size_t tr, std::size_t tc) {
  const auto q = quantize(x, rows, cols, s);
  const auto y = dequantize(q);
  const std::size_t gc = (cols + tc - 1) / tc;
  REQUIRE(q.scales().size() == ((rows + tr - 1) / tr) * gc);
  for (std::size_t bi = 0; bi * tr < rows; ++bi)
    for (std::size_t bj = 0; bj * tc < cols; ++bj) {
      float amax = 0;
      for (std::size_t r = bi * tr; r < std::min(rows, (bi + 1) * tr); ++r)
        for (std::size_t c = bj * tc; c < std::min(cols, (bj + 1) * tc); ++c)
          if (std::isfinite(x[r * cols + c])) amax = std::max(amax, std::fabs(x[r * cols + c]));
      const float sc = expected_scale<Elem>(amax, s.rule, s.target);
      CHECK(q.scales()[bi * gc + bj] == sc);
      for (std::size_t r = bi * tr; r < std::min(rows, (bi + 1) * tr); ++r)
        for (std::size_t c = bj * tc; c < std::min(cols, (bj + 1) * tc); ++c) {
          const float xs = x[r * cols + c] / sc;
          const auto want = narrow<Elem>(xs, conversion{s.round, overflow::saturate});
          REQUIRE(q.code(r, c) == want.bits());
          const float deq = static_cast<float>(want) * sc;
          if (std::isnan(deq)) CHECK(std::isnan(y[r * cols + c]));
          else CHECK(y[r * cols + c] == deq);
        }
    }
}

}  // namespace

TEMPLATE_TEST_CASE("scaled quantization equals encode(x / s) with the documented s", "[quant][scaled]", hifloat8,
                   float8_e4m3fn, float8_e5m2, float6_e3m2fn, float6_e2m3fn, float4_e2m1fn, bfloat16, float16) {
  using Elem = TestType;
  const format_id f = format_id_of<Elem>;
  const std::size_t rows = 37, cols = 70;
  auto x = random_matrix(rows * cols, 11);
  x[5] = 0.0f;
  x[77] = -0.0f;
  x[100] = 1e-42f;  // fp32 subnormal
  for (auto rule : {scale_rule::max, scale_rule::pow2, scale_rule::none}) {
    quant_scheme s = quant_scheme::make(f, granularity::tensor);
    s.rule = rule;
    // pow2 targets must lie within the format's binades (FP4 / FP6 end below the default T = 4)
    if (rule == scale_rule::pow2) s.target = std::min(s.target, format_binades(f).second);
    check_against_definition<Elem>(x, rows, cols, s, rows, cols);
    s.gran = granularity::channel;
    check_against_definition<Elem>(x, rows, cols, s, 1, cols);
    s.gran = granularity::token;
    check_against_definition<Elem>(x, rows, cols, s, 1, cols);
    s.gran = granularity::block;
    for (auto [br, bc] : {std::pair<std::size_t, std::size_t>{1, 32}, {16, 16}, {32, 32}, {5, 7}, {128, 128}}) {
      s.block_rows = br, s.block_cols = bc;
      check_against_definition<Elem>(x, rows, cols, s, br, bc);
    }
  }
}

TEST_CASE("pow2 puts amax in the binade [2^T, 2^(T+1))", "[quant][scaled]") {
  for (int target : {2, 3, 4, 5}) {
    for (float amax : {1e-30f, 0.3f, 1.0f, 1.99f, 7.5f, 1000.0f, 3e30f}) {
      quant_scheme s = quant_scheme::make(format_id::hifloat8, granularity::tensor);
      s.target = target;
      const std::vector<float> x{amax, -amax / 3, amax / 1000};
      const auto q = quantize(x, 1, 3, s);
      const float scaled = amax / q.scales()[0];
      CHECK(scaled >= std::ldexp(1.0f, target));
      CHECK(scaled < std::ldexp(1.0f, target + 1));
    }
  }
  CHECK(pow2_target_from_guard(11) == 4);
  CHECK(quant_scheme::make(format_id::hifloat8, granularity::tensor).target == 4);
}

TEST_CASE("saturation, NaN and Inf in scaled groups", "[quant][scaled]") {
  const std::vector<float> x{1.0f, 2.0f, NAN, INFINITY, -INFINITY, 0.5f};
  for (auto f : {format_id::hifloat8, format_id::float8_e4m3fn, format_id::float8_e5m2}) {
    auto s = quant_scheme::make(f, granularity::tensor);
    const auto y = fake_quantize(x, 1, 6, s);
    const auto q = quantize(x, 1, 6, s);
    const float mx = visit_format(f, [](auto t) { return static_cast<float>(std::numeric_limits<typename decltype(t)::type>::max()); });
    CHECK(std::isnan(y[2]));
    CHECK(y[3] == mx * q.scales()[0]);  // Inf saturates: quantization always saturates
    CHECK(y[4] == -mx * q.scales()[0]);
    CHECK(std::isfinite(q.scales()[0]));  // amax ignores non-finite values
  }
}

TEST_CASE("quantize -> dequantize -> quantize is idempotent", "[quant][scaled]") {
  const auto x = random_matrix(24 * 40, 3, -20, 10);
  for_each_format([&](auto t) {
    using T = typename decltype(t)::type;
    if constexpr (!std::is_same_v<T, float8_e8m0fnu>) {
      for (auto g : {granularity::tensor, granularity::channel, granularity::block}) {
        auto s = quant_scheme::make(format_id_of<T>, g);
        if (g == granularity::block) s.block_rows = 8, s.block_cols = 16;
        for (auto rule : {scale_rule::max, scale_rule::pow2, scale_rule::none}) {
          s.rule = rule;
          s.target = std::min(4, format_binades(format_id_of<T>).second);  // inside the format's binades
          const auto q1 = quantize(x, 24, 40, s);
          const auto y1 = dequantize(q1);
          // With the scales kept (static scaling) the codes come back exactly, for every rule.
          const auto q2 = quantize_with_scales(matrix_view<const float>(std::span<const float>(y1), 24, 40), s, q1.scales());
          CHECK(std::vector<std::uint8_t>(q1.codes().begin(), q1.codes().end()) ==
                std::vector<std::uint8_t>(q2.codes().begin(), q2.codes().end()));
          CHECK(dequantize(q2) == y1);
          // A direct cast needs no scale at all.
          if (rule == scale_rule::none) CHECK(fake_quantize(y1, 24, 40, s) == y1);
        }
      }
    }
  });
  // pow2 recomputed from dequantized data may move one binade: amax 31.9 rounds to 32 = 2^(T+1).
  auto s = quant_scheme::make(format_id::hifloat8, granularity::tensor);
  const std::vector<float> v{31.9f, 1.0f};
  const auto q = quantize(v, 1, 2, s);
  CHECK(q.scales()[0] == 1.0f);
  CHECK(quantize(dequantize(q), 1, 2, s).scales()[0] == 2.0f);
}

TEST_CASE("static scales are checked", "[quant][scaled][errors]") {
  const std::vector<float> x(6, 1.0f);
  auto s = quant_scheme::make(format_id::float8_e4m3fn, granularity::channel);
  const matrix_view<const float> m(std::span<const float>(x), 2, 3);
  CHECK_THROWS_WITH(quantize_with_scales(m, s, std::vector<float>{1.0f}), Catch::Matchers::Contains("needs 2 scales, got 1"));
  CHECK_THROWS_AS(quantize_with_scales(m, s, std::vector<float>{1.0f, 0.0f}), std::invalid_argument);
  CHECK(quantize_with_scales(m, s, std::vector<float>{0.5f, 2.0f}).code(1, 0) == encode<float8_e4m3fn>(0.5f));
}

TEST_CASE("odd, tiny and empty shapes", "[quant][scaled]") {
  for (auto [r, c] : {std::pair<std::size_t, std::size_t>{1, 1}, {1, 7}, {7, 1}, {0, 5}, {5, 0}, {0, 0}, {3, 129}}) {
    const auto x = random_matrix(r * c, 9);
    for (auto f : {format_id::hifloat8, format_id::float4_e2m1fn, format_id::bfloat16}) {
      for (auto g : {granularity::tensor, granularity::channel, granularity::block}) {
        auto s = quant_scheme::make(f, g);
        const auto q = quantize(x, r, c, s);
        const auto y = dequantize(q);
        CHECK(y.size() == r * c);
        const auto q2 = quantized_tensor::from_parts(
            s, r, c, std::vector<std::uint8_t>(q.codes().begin(), q.codes().end()),
            std::vector<float>(q.scales().begin(), q.scales().end()), {});
        CHECK(dequantize(q2) == y);
      }
    }
  }
}

TEST_CASE("FP4 codes are packed two per byte per row, element 2i low", "[quant][scaled][packing]") {
  const std::vector<float> x{0.5f, 1.0f, 6.0f, -0.5f, 2.0f,   // row 0 (odd length)
                             1.5f, 3.0f, 4.0f, -6.0f, -1.0f};  // row 1
  auto s = quant_scheme::make(format_id::float4_e2m1fn, granularity::tensor);
  s.rule = scale_rule::none;
  const auto q = quantize(x, 2, 5, s);
  const std::vector<std::uint8_t> want{0x21, 0x97, 0x04, 0x53, 0xF6, 0x0A};
  CHECK(std::vector<std::uint8_t>(q.codes().begin(), q.codes().end()) == want);
}

TEST_CASE("bad geometry and unsupported schemes fail clearly", "[quant][scaled][errors]") {
  const std::vector<float> x(12, 1.0f);
  auto s = quant_scheme::make(format_id::hifloat8, granularity::tensor);
  CHECK_THROWS_AS(quantize(x, 5, 3, s), shape_error);
  CHECK_THROWS_WITH(quantize(x, 5, 3, s), Catch::Matchers::Contains("needs 15") && Catch::Matchers::Contains("has 12"));
  auto e8 = quant_scheme::make(format_id::float8_e8m0fnu, granularity::tensor);
  CHECK_THROWS_AS(quantize(x, 3, 4, e8), unsupported_error);
  auto mxh = quant_scheme::make(format_id::hifloat8, granularity::mx);
  CHECK_THROWS_WITH(quantize(x, 3, 4, mxh), Catch::Matchers::Contains("MX element format"));
  auto bad_rule = quant_scheme::make(format_id::hifloat8, granularity::tensor);
  bad_rule.rule = scale_rule::rceil;
  CHECK_THROWS_AS(quantize(x, 3, 4, bad_rule), unsupported_error);
  auto blk = quant_scheme::make(format_id::float8_e4m3fn, granularity::block);
  blk.block_rows = 0;
  CHECK_THROWS_AS(quantize(x, 3, 4, blk), shape_error);
  const auto q = quantize(x, 3, 4, s);
  CHECK_THROWS_WITH(quantized_tensor::from_parts(s, 3, 4, std::vector<std::uint8_t>(11), {1.0f}, {}),
                    Catch::Matchers::Contains("needs 12 code bytes, got 11"));
  CHECK_THROWS_WITH(quantized_tensor::from_parts(s, 3, 4, std::vector<std::uint8_t>(12), {1.0f, 2.0f}, {}),
                    Catch::Matchers::Contains("needs 1 fp32 scales"));
  std::vector<float> out(5);
  CHECK_THROWS_AS(dequantize(q.view(), out), shape_error);
  // Strided input views: the row stride may exceed the row length, never fall short.
  CHECK_THROWS_AS(matrix_view<const float>(x.data(), 3, 4, 2), shape_error);
  const matrix_view<const float> strided(x.data(), 2, 4, 6);
  CHECK(quantize(strided, s).rows() == 2);
}

TEST_CASE("stochastic rounding in scaled quantization draws the documented stream", "[quant][scaled][stochastic]") {
  const std::size_t rows = 5, cols = 33;
  const auto x = random_matrix(rows * cols, 21);
  auto s = quant_scheme::make(format_id::float8_e4m3fn, granularity::channel);
  s.round = rounding::stochastic;
  s.seed = 1234;
  const auto q = quantize(x, rows, cols, s);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) {
      const float xs = x[r * cols + c] / q.scales()[r];
      CHECK(q.code(r, c) == encode<float8_e4m3fn>(xs, {rounding::stochastic, overflow::saturate},
                                                   random_bits(1234, r * cols + c)));
    }
  s.seed = 1235;
  const auto q2 = quantize(x, rows, cols, s);
  CHECK(std::vector<std::uint8_t>(q.codes().begin(), q.codes().end()) !=
        std::vector<std::uint8_t>(q2.codes().begin(), q2.codes().end()));
}
