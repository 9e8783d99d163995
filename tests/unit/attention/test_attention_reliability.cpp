// Issue 35 (Reliability v2), attention: a softmax scale that is not a finite float32 and a P
// scale that is not a finite positive float32 are refused with std::invalid_argument (item 3);
// finite operands never give a silent Inf on the fast path or in a decode step (item 5a: V =
// +-FLT_MAX), and a cache's static scale that would make Inf is refused (item 5c).
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "attention_support.hpp"

using namespace attention_test;
using Catch::Matchers::Contains;

namespace {

attention_shape small_shape() { return {1, 2, 1, 3, 5, 8, 8}; }

/// V = +-FLT_MAX: the sign alternates with the column, every key alike.
std::vector<float> huge_v(std::size_t n, std::size_t dv) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = (i % dv) % 2 == 0 ? std::numeric_limits<float>::max() : -std::numeric_limits<float>::max();
  return v;
}

bool all_finite(const std::vector<float>& x) {
  for (const float v : x)
    if (!std::isfinite(v)) return false;
  return true;
}

}  // namespace

TEST_CASE("attention: a non-finite softmax scale is refused on both paths", "[attention][reliability]") {
  const attention_shape s = small_shape();
  const auto q = gaussian(s.q_size(), 1), k = gaussian(s.k_size(), 2), v = gaussian(s.v_size(), 3);
  const attention_recipe r;
  for (const double bad : {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
                           -std::numeric_limits<double>::infinity(), 1e300}) {
    attention_options opt;
    opt.softmax_scale = bad;
    INFO("softmax scale " << bad);
    CHECK_THROWS_AS(attention_forward(q, k, v, s, r, opt), std::invalid_argument);
    CHECK_THROWS_AS(attention_reference(q, k, v, s, r, opt), std::invalid_argument);
    CHECK_THROWS_AS(minifloat::attention::attention(q, k, v, s, r, opt, attention_path::fast), std::invalid_argument);
    CHECK_THROWS_AS(minifloat::attention::attention(q, k, v, s, r, opt, attention_path::reference), std::invalid_argument);
    CHECK_THROWS_WITH(attention_forward(q, k, v, s, r, opt), Contains("softmax scale") && Contains("expected a finite scale"));
  }
  attention_options nan_opt;
  nan_opt.softmax_scale = std::numeric_limits<double>::quiet_NaN();
  CHECK_THROWS_WITH(attention_forward(q, k, v, s, r, nan_opt), Contains("softmax scale nan"));
  attention_options neg;
  neg.softmax_scale = -0.5;  // finite: a valid (if unusual) scale
  CHECK_NOTHROW(attention_forward(q, k, v, s, r, neg));
  // decode steps run the same check
  kv_cache_config cfg;
  cfg.kv_heads = 1, cfg.head_dim = 8, cfg.v_dim = 8;
  kv_cache c(cfg);
  c.append(gaussian(8 * 4, 4), gaussian(8 * 4, 5), 4);
  CHECK_THROWS_AS(decode_step(c, gaussian(8 * 2, 6), 2, 1, {}, nan_opt), std::invalid_argument);
}

TEST_CASE("attention: a P scale that is not a finite positive float32 is refused", "[attention][reliability]") {
  const attention_shape s = small_shape();
  const auto q = gaussian(s.q_size(), 1), k = gaussian(s.k_size(), 2), v = gaussian(s.v_size(), 3);
  attention_recipe r;
  r.p.format = format_id::float8_e4m3fn;
  for (const float bad : {static_cast<float>(1e-50), 0.0f, -1.0f, std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN()}) {
    r.p.scale = bad;
    INFO("p scale " << bad);
    CHECK_THROWS_AS(attention_forward(q, k, v, s, r), std::invalid_argument);
    CHECK_THROWS_AS(attention_reference(q, k, v, s, r), std::invalid_argument);
  }
  r.p.scale = static_cast<float>(1e-50);
  CHECK_THROWS_WITH(attention_forward(q, k, v, s, r), Contains("static P scale is 0") && Contains("expected a finite float32 scale > 0"));
  r.p.scale = 1e-40f;  // subnormal but positive: valid
  CHECK_NOTHROW(attention_forward(q, k, v, s, r));
}

TEST_CASE("attention fast path: V = +-FLT_MAX gives the reference's finite result, not Inf", "[attention][reliability]") {
  const attention_shape s = small_shape();
  const auto q = gaussian(s.q_size(), 11), k = gaussian(s.k_size(), 12);
  const auto v = huge_v(s.v_size(), s.v_dim);
  for (const char* vs : {"fp32", "bf16"}) {
    recipe_case rc{"fp32", "fp32", vs, "fp32"};
    const attention_recipe r = make_recipe(rc);
    for (const auto mask : {mask_kind::none, mask_kind::causal}) {
      attention_options opt;
      opt.mask = mask;
      const auto ref = attention_reference(q, k, v, s, r, opt);
      REQUIRE(all_finite(ref.out));
      for (const auto& [isa, kernel] : kernels()) {
        opt.isa = isa, opt.kernel = kernel;
        INFO("V " << vs << " kernel " << to_string(kernel));
        const auto fast = attention_forward(q, k, v, s, r, opt);
        CHECK(all_finite(fast.out));
        CHECK(fast.out == ref.out);
        CHECK(minifloat::attention::attention(q, k, v, s, r, opt, attention_path::fast).out == ref.out);
      }
    }
  }
}

TEST_CASE("kv cache decode: V = +-FLT_MAX in an fp32 cache stays finite", "[attention][reliability]") {
  kv_cache_config cfg;
  cfg.kv_heads = 1, cfg.head_dim = 8, cfg.v_dim = 8;
  kv_cache c(cfg);
  c.append(gaussian(8 * 6, 21), huge_v(8 * 6, 8), 6);
  const auto q = gaussian(2 * 8, 22);
  const auto ref = decode_reference(c, q, 2, 1, {});
  REQUIRE(all_finite(ref.out));
  const auto fast = decode_step(c, q, 2, 1, {});
  CHECK(all_finite(fast.out));
  CHECK(fast.out == ref.out);
}

TEST_CASE("kv cache: a static scale of 2^127 that would make Inf is refused", "[attention][reliability]") {
  kv_cache_config cfg;
  cfg.kv_heads = 1, cfg.head_dim = 8, cfg.v_dim = 8;
  cfg.k = parse_operand_scheme("hifloat8/tensor", "K"), cfg.v = parse_operand_scheme("float8_e4m3fn/tensor", "V");
  cfg.k_scale = std::ldexp(1.0f, 127);
  CHECK_THROWS_AS(kv_cache(cfg), std::invalid_argument);
  CHECK_THROWS_WITH(kv_cache(cfg), Contains("k_scale 1.70141183e+38") && Contains("2^112"));
  cfg.k_scale = std::ldexp(1.0f, 112);  // 2^15 x 2^112 = 2^127: every code stays finite
  CHECK_NOTHROW(kv_cache(cfg));
  cfg.v_scale = std::ldexp(1.0f, 127);
  CHECK_THROWS_WITH(kv_cache(cfg), Contains("v_scale"));
  cfg.v_scale = 0.0f;
  CHECK_THROWS_AS(kv_cache(cfg), std::invalid_argument);
  cfg.v_scale = std::nullopt;
  // a scale from the first append (2^116 for hifloat8's guard rule at amax 2^120: finite for it)
  // that a later token near FLT_MAX would overflow: that append is refused, the cache unchanged
  cfg.v = parse_operand_scheme("hifloat8/tensor", "V");
  kv_cache c(cfg);
  std::vector<float> k1(8, 1.0f), v1(8, std::ldexp(1.0f, 120)), v2(8, std::numeric_limits<float>::max());
  c.append(k1, v1, 1);
  CHECK(c.v_scale() == std::ldexp(1.0f, 116));
  CHECK_THROWS_AS(c.append(k1, v2, 1), std::invalid_argument);
  CHECK(c.size() == 1);
  CHECK_FALSE(c.has_nonfinite());
  c.append(k1, v1, 1);
  CHECK(c.size() == 2);
  for (const float x : c.dequantized_v(0)) CHECK(std::isfinite(x));
}
