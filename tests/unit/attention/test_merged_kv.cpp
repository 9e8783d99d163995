// The merged-KV attention emulation: hand-computed softmax cases, the recipes' operands, and
// the threaded path against the serial one.
#include <minifloat/attention/merged_kv.hpp>
#include <minifloat/quant/scheme_string.hpp>

#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <vector>

using namespace minifloat;
using attention::merged_kv_recipe;
using attention::requantize_source;

namespace {
matrix_view<const float> view(const std::vector<float>& v, std::size_t r, std::size_t c) {
  return matrix_view<const float>(std::span<const float>(v), r, c);
}
}  // namespace

TEST_CASE("attention: hand-computed decode steps", "[analysis][attention]") {
  // C = [[1, 2], [0, 4]], q = [ln 3, 0], scale 1: logits [ln 3, 0] -> p = [3/4, 1/4];
  // out = 3/4 [1, 2] + 1/4 [0, 4] = [0.75, 2.5].
  const std::vector<float> c{1, 2, 0, 4};
  const std::vector<float> q{static_cast<float>(std::log(3.0)), 0};
  std::vector<double> out(2), logits(2);
  attention::merged_kv_attention(view(q, 1, 2), view(c, 2, 2), 1.0, out, logits);
  CHECK(logits[0] == Approx(std::log(3.0)));
  CHECK(logits[1] == 0.0);
  CHECK(out[0] == Approx(0.75).epsilon(1e-7));
  CHECK(out[1] == Approx(2.5).epsilon(1e-7));

  // q = 0: uniform attention, out = mean of the rows; separate K and V.
  const std::vector<float> k{5, -5, 7, 1, 1, 1}, v{1, 2, 3, 4, 5, 6};
  const std::vector<float> zero(2, 0.0f);
  std::vector<double> o2(2);
  attention::decode_attention(view(zero, 1, 2), view(k, 3, 2), view(v, 3, 2), 0.5, o2);
  CHECK(o2[0] == Approx(3.0));
  CHECK(o2[1] == Approx(4.0));

  std::vector<double> wrong(3);
  CHECK_THROWS_AS(attention::decode_attention(view(zero, 1, 2), view(k, 3, 2), view(v, 3, 2), 1.0, wrong), shape_error);
  CHECK_THROWS_AS(attention::decode_attention(view(zero, 1, 2), view(k, 3, 2), view(v, 2, 3), 1.0, o2), shape_error);
}

TEST_CASE("attention: recipes hand the products the right operands", "[analysis][attention]") {
  std::mt19937 gen(3);
  std::normal_distribution<float> n;
  const std::size_t t = 70, d = 40;
  std::vector<float> c(t * d);
  for (auto& x : c) x = n(gen);
  c[7] = 60.0f;  // an outlier

  const merged_kv_recipe fp32{"fp32", std::nullopt, std::nullopt, requantize_source::fp32};
  const auto op0 = attention::prepare_merged_kv(c, t, d, fp32);
  CHECK(op0.k == c);
  CHECK(op0.v == c);

  const auto hif8 = parse_scheme("hifloat8/tensor").scheme;
  const auto op1 = attention::prepare_merged_kv(c, t, d, {"a", hif8, std::nullopt, requantize_source::fp32});
  CHECK(op1.k == fake_quantize(c, t, d, hif8));
  CHECK(op1.v == op1.k);  // one stored copy serves both products

  const auto along_d = parse_scheme("mxfp8_e4m3").scheme, along_t = parse_scheme("mxfp8_e4m3/axis=0").scheme;
  const auto two = attention::prepare_merged_kv(c, t, d, {"b1", along_d, along_t, requantize_source::fp32});
  const auto re = attention::prepare_merged_kv(c, t, d, {"b2", along_d, along_t, requantize_source::stored_codes});
  CHECK(two.k == fake_quantize(c, t, d, along_d));
  CHECK(two.v == fake_quantize(c, t, d, along_t));
  CHECK(re.k == two.k);
  CHECK(re.v == fake_quantize(two.k, t, d, along_t));  // rounded twice
  CHECK(re.v != two.v);

  CHECK_THROWS_AS(attention::prepare_merged_kv(std::span<const float>(c).first(10), t, d, fp32), shape_error);
}

TEST_CASE("attention: a cache on the MX grid survives every recipe exactly", "[analysis][attention]") {
  // Small integers times powers of two: exact in E4M3 under any power-of-two block scale.
  const std::size_t t = 64, d = 64;
  std::vector<float> c(t * d);
  for (std::size_t i = 0; i < c.size(); ++i) c[i] = static_cast<float>(static_cast<int>(i % 15) - 7) * 0.25f;
  const auto along_d = parse_scheme("mxfp8_e4m3").scheme, along_t = parse_scheme("mxfp8_e4m3/axis=0").scheme;
  for (auto from : {requantize_source::fp32, requantize_source::stored_codes}) {
    const auto op = attention::prepare_merged_kv(c, t, d, {"mx", along_d, along_t, from});
    CHECK(op.k == c);
    CHECK(op.v == c);
  }
}

TEST_CASE("attention: the threaded path equals the serial one", "[analysis][attention]") {
  std::mt19937 gen(11);
  std::normal_distribution<float> n;
  const std::size_t t = 300, d = 24, nq = 37;
  std::vector<float> k(t * d), v(t * d), q(nq * d);
  for (auto* a : {&k, &v, &q})
    for (auto& x : *a) x = n(gen);
  std::vector<double> o1(nq * d), o2(nq * d), l1(nq * t), l2(nq * t);
  attention::decode_attention(view(q, nq, d), view(k, t, d), view(v, t, d), 0.2, o1, l1);
  attention::decode_attention_parallel(view(q, nq, d), view(k, t, d), view(v, t, d), 0.2, o2, l2, 2);
  CHECK(o1 == o2);
  CHECK(l1 == l2);
  // Each output is a convex combination of V's rows: within their range per column.
  for (std::size_t j = 0; j < d; ++j) {
    double lo = 1e9, hi = -1e9;
    for (std::size_t i = 0; i < t; ++i) lo = std::min(lo, static_cast<double>(v[i * d + j])), hi = std::max(hi, static_cast<double>(v[i * d + j]));
    for (std::size_t r = 0; r < nq; ++r) {
      CHECK(o1[r * d + j] >= lo - 1e-12);
      CHECK(o1[r * d + j] <= hi + 1e-12);
    }
  }
}
