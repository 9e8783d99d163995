// Static calibration (recipes/calibration.hpp) on constructed distributions whose right answer
// is known: amax and percentile statistics placed by hand, data that is exactly representable at
// one scale (MSE 0 there and nowhere else on the grid), per-tensor and per-channel, and the
// reported metric cross-checked against quantize_with_scales + dequantize.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "support/all_but_attention.hpp"
#include <minifloat/recipes/recipes.hpp>

using namespace minifloat;
using Catch::Matchers::Contains;

namespace {

using view = matrix_view<const float>;

/// MSE of one tensor through the library's own quantize_with_scales + dequantize.
double library_mse(const std::vector<view>& set, const calibration_result& res) {
  double sum = 0.0;
  std::size_t n = 0;
  for (const auto& x : set) {
    const auto y = dequantize(quantize_with_scales(x, res.scheme, res.scales));
    for (std::size_t r = 0; r < x.rows; ++r)
      for (std::size_t c = 0; c < x.cols; ++c) {
        const double d = static_cast<double>(x(r, c)) - static_cast<double>(y[r * x.cols + c]);
        sum += d * d;
        ++n;
      }
  }
  return sum / static_cast<double>(n);
}

/// Every positive finite E4M3 value, and a few chosen ones.
std::vector<float> e4m3_positive_values() {
  std::vector<float> v;
  for (unsigned code = 1; code < 0x7F; ++code) v.push_back(static_cast<float>(float8_e4m3fn::from_bits(static_cast<std::uint8_t>(code))));
  return v;
}

}  // namespace

TEST_CASE("calibration amax: the set's amax lands at 2^T (exact) or in binade T (pow2)", "[recipes][calibration]") {
  std::vector<float> a = {0.5f, -1.0f, 0.25f, 2.0f}, b = {-3.0f, 0.1f, 1.0f, 0.0f}, c = {2.9f, -0.3f, 0.0f, 1.5f};
  const std::vector<view> set = {view(a, 2, 2), view(b, 2, 2), view(c, 2, 2)};
  for (int t = 2; t <= 4; ++t) {
    auto cfg = calibration_config::amax(format_id::hifloat8, granularity::tensor, t);
    auto res = calibrate(set, cfg);
    REQUIRE(res.scales.size() == 1);
    CHECK(res.statistic[0] == 3.0f);
    CHECK(res.scales[0] == std::ldexp(3.0f, -t));
    CHECK(3.0f / res.scales[0] == std::ldexp(1.0f, t));
    CHECK(res.elements == 12);
    CHECK(res.mse[0] == Approx(library_mse(set, res)).epsilon(1e-12).margin(1e-300));
    CHECK(res.total_mse == res.mse[0]);
    cfg.form = calibration_scale::pow2;
    res = calibrate(set, cfg);
    CHECK(res.scales[0] == std::ldexp(1.0f, 1 - t));  // floor(log2 3) = 1
  }
}

TEST_CASE("calibration amax per channel: one scale per row over the whole set", "[recipes][calibration]") {
  // row r of tensor 1 has amax 1.5 * 2^r; tensor 0's rows are smaller, tensor 2's row 2 is larger
  std::vector<float> t0 = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f, 0.8f, 0.9f};
  std::vector<float> t1 = {1.5f, 0.0f, -1.0f, -3.0f, 2.0f, 0.0f, 0.0f, 6.0f, 5.0f};
  std::vector<float> t2 = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, -10.0f, 0.0f, 0.0f};
  const std::vector<view> set = {view(t0, 3, 3), view(t1, 3, 3), view(t2, 3, 3)};
  const auto res = calibrate(set, calibration_config::amax(format_id::float8_e4m3fn, granularity::channel, 4));
  REQUIRE(res.scales.size() == 3);
  CHECK(res.statistic == std::vector<float>{1.5f, 3.0f, 10.0f});
  CHECK(res.scales == std::vector<float>{1.5f / 16, 3.0f / 16, 10.0f / 16});
  CHECK(res.scheme.gran == granularity::channel);
  CHECK(res.total_mse == Approx(library_mse(set, res)).epsilon(1e-12).margin(1e-300));
  double weighted = 0;
  for (double m : res.mse) weighted += m * 9;  // 9 elements per row over the set
  CHECK(res.total_mse == Approx(weighted / 27).epsilon(1e-12).margin(1e-300));

  std::vector<float> t3(8, 1.0f);
  const std::vector<view> bad = {view(t0, 3, 3), view(t3, 2, 4)};
  CHECK_THROWS_AS(calibrate(bad, calibration_config::amax(format_id::hifloat8, granularity::channel)), shape_error);
  CHECK_THROWS_WITH(calibrate(bad, calibration_config::amax(format_id::hifloat8, granularity::channel)),
                    Contains("tensor 0 has 3") && Contains("tensor 1 has 2"));
}

TEST_CASE("calibration percentile: numpy-linear percentile of |x| lands at 2^T", "[recipes][calibration]") {
  // |x| = 0, 1, ..., 99 and one outlier 1e6, shuffled with random signs, in two tensors
  std::vector<float> v;
  for (int i = 0; i < 100; ++i) v.push_back(static_cast<float>(i));
  v.push_back(1e6f);
  v.push_back(std::numeric_limits<float>::quiet_NaN());  // ignored
  std::mt19937 rng(5);
  std::shuffle(v.begin(), v.end(), rng);
  for (auto& x : v)
    if (rng() & 1U) x = -x;
  std::vector<float> a(v.begin(), v.begin() + 51), b(v.begin() + 51, v.end());
  const std::vector<view> set = {view(a, 3, 17), view(b, 1, 51)};
  // 101 finite values: h = p / 100 * 100 = p
  auto res = calibrate(set, calibration_config::percentile_of(format_id::hifloat8, granularity::tensor, 99.0));
  CHECK(res.statistic[0] == 99.0f);  // v[99] = 99, v[100] = 1e6, h = 99 exactly
  CHECK(res.scales[0] == 99.0f / 4.0f);
  CHECK(res.nonfinite == 1);
  CHECK(res.elements == 101);
  res = calibrate(set, calibration_config::percentile_of(format_id::hifloat8, granularity::tensor, 98.5));
  CHECK(res.statistic[0] == 98.5f);  // halfway between 98 and 99
  res = calibrate(set, calibration_config::percentile_of(format_id::hifloat8, granularity::tensor, 97.0, 3));
  CHECK(res.statistic[0] == 97.0f);
  CHECK(res.scales[0] == 97.0f / 8.0f);
  // the outlier saturates at 2^15 * s; everything else is in range
  const double clip = 1e6 - 32768.0 * (97.0 / 8.0);  // HiF8 max 2^15 times s
  CHECK(res.mse[0] >= clip * clip / 101.0);
  CHECK(res.mse[0] < clip * clip / 101.0 * 1.001);  // the in-range values add little
}

TEST_CASE("calibration mse: the exactly-representable scale wins, on both grids", "[recipes][calibration]") {
  // x = 2^-3 * (every E4M3 value, both signs): MSE 0 at s = 2^-3. A larger scale loses the
  // smallest subnormal, a smaller one clips 448.
  std::vector<float> x;
  for (const float v : e4m3_positive_values()) x.push_back(v / 8), x.push_back(-v / 8);
  const std::vector<view> set = {view(x, 2, x.size() / 2)};
  for (const int g : {1, 4}) {
    const auto res = calibrate(set, calibration_config::mse(format_id::float8_e4m3fn, granularity::tensor, g));
    CHECK(res.scales[0] == 0.125f);
    CHECK(res.mse[0] == 0.0);
    CHECK(std::isinf(res.sqnr_db[0]));
    CHECK(res.candidates > 20u * static_cast<unsigned>(g));
  }

  // A fine-grid scale s* = 2^(-11/4): pow2 scales cannot reach MSE 0, the G = 4 grid can.
  const auto s_star = static_cast<float>(std::exp2(-11.0 / 4.0));
  std::vector<float> y;
  for (const float v : {std::ldexp(1.0f, -9), 256.0f, 1.0f, 1.5f, 3.0f, 0.75f, 12.0f, 40.0f, 0.125f, 2.5f, 96.0f}) {
    const float xv = v * s_star;
    if (xv / s_star == v) y.push_back(xv), y.push_back(-xv);  // keep the exact ones
  }
  REQUIRE(y.size() >= 16);
  REQUIRE(y[0] / s_star == std::ldexp(1.0f, -9));  // the extremes survived the filter
  REQUIRE(y[2] / s_star == 256.0f);
  const std::vector<view> yset = {view(y, 1, y.size())};
  const auto fine = calibrate(yset, calibration_config::mse(format_id::float8_e4m3fn, granularity::tensor, 4));
  CHECK(fine.scales[0] == s_star);
  CHECK(fine.mse[0] == 0.0);
  const auto coarse = calibrate(yset, calibration_config::mse(format_id::float8_e4m3fn, granularity::tensor, 1));
  int e = 0;
  CHECK(std::frexp(coarse.scales[0], &e) == 0.5f);
  CHECK(coarse.mse[0] > 0.0);
}

TEST_CASE("calibration mse: ties go to the larger scale", "[recipes][calibration]") {
  // {1, 2, -2} is exact in E4M3 at every scale 2^k from 2^-7 (2 / s = 256) up to 2^9
  // (1 / s = 2^-9, the smallest subnormal); 2^10 loses 1 / s = 2^-10 (a tie, to even: 0)
  std::vector<float> x = {1.0f, 2.0f, -2.0f};
  for (const int g : {1, 4}) {
    const auto r = calibrate(view(x, 1, 3), calibration_config::mse(format_id::float8_e4m3fn, granularity::tensor, g));
    CHECK(r.scales[0] == 512.0f);
    CHECK(r.mse[0] == 0.0);
  }
}

TEST_CASE("calibration mse per channel, and the search beats every fixed rule on HiF8 data", "[recipes][calibration]") {
  // row 0 exact at 2^-3, row 1 exact at 2^5
  std::vector<float> x;
  const auto vals = e4m3_positive_values();
  for (const float v : vals) x.push_back(v / 8);
  for (const float v : vals) x.push_back(v * 32);
  const auto res = calibrate(view(x, 2, vals.size()), calibration_config::mse(format_id::float8_e4m3fn, granularity::channel, 2));
  CHECK(res.scales == std::vector<float>{0.125f, 32.0f});
  CHECK(res.mse == std::vector<double>{0.0, 0.0});

  // Gaussian data in HiF8: the MSE search is at least as good as amax->2^T and the guard rule,
  // and as every power-of-two scale tried by hand
  std::mt19937 rng(17);
  std::normal_distribution<float> n(0.0f, 0.02f);
  std::vector<float> g(2048);
  for (auto& v : g) v = n(rng);
  const std::vector<view> set = {view(g, 16, 128)};
  const auto best = calibrate(set, calibration_config::mse(format_id::hifloat8));
  const auto amax4 = calibrate(set, calibration_config::amax(format_id::hifloat8));
  CHECK(best.mse[0] <= amax4.mse[0]);
  for (int k = -40; k <= 10; ++k) {
    calibration_result r = best;
    r.scales[0] = std::ldexp(1.0f, k);
    CHECK(best.mse[0] <= library_mse(set, r) * (1 + 1e-12));
  }
  CHECK(best.mse[0] == Approx(library_mse(set, best)).epsilon(1e-12));
  CHECK(best.total_sqnr_db > 20.0);  // ~4 significant bits near the bulk
}

TEST_CASE("calibration config errors name expected and actual values", "[recipes][calibration][errors]") {
  CHECK_THROWS_WITH(calibration_config::amax(format_id::hifloat8, granularity::tensor, 5), Contains("[2, 4]") && Contains("got 5"));
  CHECK_THROWS_WITH(calibration_config::percentile_of(format_id::hifloat8, granularity::tensor, 95.0),
                    Contains("[97, 99]") && Contains("got 95"));
  CHECK_THROWS_AS(calibration_config::amax(format_id::hifloat8, granularity::block), unsupported_error);
  CHECK_THROWS_AS(calibration_config::amax(format_id::float8_e8m0fnu), unsupported_error);
  CHECK_THROWS_WITH(calibration_config::mse(format_id::hifloat8, granularity::tensor, 0), Contains("got 0"));
  CHECK_THROWS_WITH(calibrate(std::span<const view>{}, calibration_config::amax(format_id::hifloat8)), Contains("empty"));
  // all-zero data: scale 1, zero error
  std::vector<float> z(6, 0.0f);
  const auto r = calibrate(view(z, 2, 3), calibration_config::mse(format_id::hifloat8));
  CHECK(r.scales[0] == 1.0f);
  CHECK(r.mse[0] == 0.0);
}

TEST_CASE("calibration: a set without a finite value is an error, not an exact match", "[recipes][calibration]") {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const std::vector<float> all_nan{nan, nan, nan, nan}, mixed{nan, inf, -inf, nan}, good{1.0f, nan, 2.0f, inf};
  for (const auto method : {minifloat::calibration_method::amax, minifloat::calibration_method::percentile,
                            minifloat::calibration_method::mse}) {
    auto cfg = minifloat::calibration_config::amax(minifloat::format_id::hifloat8);
    cfg.method = method;
    if (method == minifloat::calibration_method::percentile) cfg.target = 2;
    for (const auto* x : {&all_nan, &mixed}) {
      const minifloat::matrix_view<const float> v(*x, 2, 2);
      CHECK_THROWS_AS(minifloat::calibrate(v, cfg), std::domain_error);
      CHECK_THROWS_WITH(minifloat::calibrate(v, cfg), Catch::Contains("no finite value") && Catch::Contains("all 4"));
    }
    // Per channel: a row without a finite value reports NaN (n/a) when another row calibrates.
    auto ch = cfg;
    ch.gran = minifloat::granularity::channel;
    const std::vector<float> rows{nan, inf, 1.0f, 2.0f};
    const auto res = minifloat::calibrate(minifloat::matrix_view<const float>(rows, 2, 2), ch);
    CHECK(std::isnan(res.sqnr_db[0]));
    CHECK_FALSE(std::isnan(res.sqnr_db[1]));
    CHECK(res.elements == 2);
    CHECK_NOTHROW(minifloat::calibrate(minifloat::matrix_view<const float>(good, 2, 2), cfg));
  }
}
