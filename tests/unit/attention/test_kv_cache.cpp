// KV cache: quantize-on-append (static per-tensor scales, MX along d for K and along T for V),
// merged caches, and the decode step against its reference within the documented bound.
#include <catch2/catch.hpp>

#include "attention_support.hpp"

using namespace attention_test;

namespace {

kv_cache_config config(const char* k, const char* v, std::size_t hkv, std::size_t d, std::size_t dv) {
  kv_cache_config c;
  c.kv_heads = hkv, c.head_dim = d, c.v_dim = dv;
  c.k = parse_operand_scheme(k, "K"), c.v = parse_operand_scheme(v, "V");
  return c;
}

/// (Hkv, T, C) rows of head h.
std::vector<float> head_rows(const std::vector<float>& x, std::size_t h, std::size_t t, std::size_t c) {
  return {x.begin() + static_cast<std::ptrdiff_t>(h * t * c), x.begin() + static_cast<std::ptrdiff_t>((h + 1) * t * c)};
}

/// tokens [t0, t1) of a (Hkv, T, C) array, as (Hkv, t1 - t0, C).
std::vector<float> token_slice(const std::vector<float>& x, std::size_t hkv, std::size_t t, std::size_t c, std::size_t t0, std::size_t t1) {
  std::vector<float> out;
  for (std::size_t h = 0; h < hkv; ++h)
    out.insert(out.end(), x.begin() + static_cast<std::ptrdiff_t>((h * t + t0) * c), x.begin() + static_cast<std::ptrdiff_t>((h * t + t1) * c));
  return out;
}

void check_decode(const kv_cache& cache, std::size_t hq, std::size_t n, const decode_recipe& r, mask_kind mask, double& worst) {
  const auto& cfg = cache.config();
  const auto q = gaussian(hq * n * cfg.head_dim, 77 + n);
  attention_options opt;
  opt.mask = mask;
  for (const auto& [isa, kernel] : kernels()) {
    INFO("isa " << simd::to_string(isa) << " kernel " << static_cast<int>(kernel));
    opt.isa = isa, opt.kernel = kernel;
    const auto fast = decode_step(cache, q, hq, n, r, opt);
    const auto ref = decode_reference(cache, q, hq, n, r, opt);
    dequantized_operands op;
    op.q = ad::fake_quantize_rows(q, hq * n, cfg.head_dim, r.q);
    for (std::size_t h = 0; h < cfg.kv_heads; ++h) {
      const auto kh = cache.dequantized_k(h), vh = cache.dequantized_v(h);
      op.k.insert(op.k.end(), kh.begin(), kh.end()), op.v.insert(op.v.end(), vh.begin(), vh.end());
    }
    const attention_shape s{1, hq, cfg.kv_heads, n, cache.size(), cfg.head_dim, cfg.v_dim};
    const auto bound = fast_bound(op, s, r.p, 1.0 / std::sqrt(static_cast<double>(cfg.head_dim)), mask == mask_kind::causal, ref.out);
    const double ratio = bound_ratio(fast.out, ref.out, bound);
    CHECK(ratio < 1.0);
    worst = std::max(worst, ratio);
  }
}

}  // namespace

TEST_CASE("kv cache: appending one token at a time equals appending the block", "[attention]") {
  const std::size_t hkv = 2, d = 64, dv = 40, t = 75;
  const auto k = gaussian(hkv * t * d, 1), v = gaussian(hkv * t * dv, 2);
  for (auto [ks, vs] : {std::pair{"fp32", "fp32"}, std::pair{"bf16", "bf16"}, std::pair{"hifloat8/tensor", "float8_e4m3fn/tensor"},
                        std::pair{"mxfp8_e4m3", "mxfp8_e4m3/axis=0"}, std::pair{"mxfp8_e5m2", "mxfp8_e4m3/axis=0/scale-rule=rceil"}}) {
    INFO(ks << " / " << vs);
    auto cfg = config(ks, vs, hkv, d, dv);
    cfg.k_scale = 0.125f, cfg.v_scale = 0.0625f;  // static scales (ignored by fp32, bf16 none, MX)
    kv_cache bulk(cfg), step(cfg);
    bulk.append(k, v, t);
    for (std::size_t i = 0; i < t; ++i) step.append(token_slice(k, hkv, t, d, i, i + 1), token_slice(v, hkv, t, dv, i, i + 1), 1);
    REQUIRE(step.size() == t);
    for (std::size_t h = 0; h < hkv; ++h) {
      CHECK(step.dequantized_k(h) == bulk.dequantized_k(h));
      CHECK(step.dequantized_v(h) == bulk.dequantized_v(h));
      // the cache holds what quantize() gives for the whole history: K rows with the static
      // scale (or MX blocks along d), V as one (T, dv) matrix (MX blocks along T)
      const auto kh = head_rows(k, h, t, d), vh = head_rows(v, h, t, dv);
      if (cfg.v && cfg.v->gran == granularity::mx) CHECK(bulk.dequantized_v(h) == fake_quantize(vh, t, dv, *cfg.v));
      if (cfg.k && cfg.k->gran == granularity::mx) CHECK(bulk.dequantized_k(h) == fake_quantize(kh, t, d, *cfg.k));
      if (cfg.k && cfg.k->gran == granularity::tensor && cfg.k->format == format_id::hifloat8) {
        const float sc = 0.125f;
        const auto q = quantize_with_scales(matrix_view<const float>(kh, t, d), *cfg.k, std::span<const float>(&sc, 1));
        CHECK(bulk.dequantized_k(h) == dequantize(q));
      }
    }
  }
}

TEST_CASE("kv cache: the static scale comes from the first append when not given", "[attention]") {
  const std::size_t hkv = 2, d = 32, t = 40;
  const auto k = gaussian(hkv * t * d, 3), v = gaussian(hkv * t * d, 4);
  kv_cache c(config("float8_e4m3fn/tensor", "hifloat8/tensor", hkv, d, d));
  c.append(token_slice(k, hkv, t, d, 0, 20), token_slice(v, hkv, t, d, 0, 20), 20);
  const float ks = c.k_scale(), vs = c.v_scale();
  const auto first = token_slice(k, hkv, t, d, 0, 20);
  CHECK(ks == quantize(first, hkv * 20, d, *parse_operand_scheme("float8_e4m3fn/tensor", "K")).scales()[0]);
  auto big = token_slice(k, hkv, t, d, 20, 40);
  for (auto& x : big) x *= 100.0f;  // later tokens past the calibrated range saturate
  c.append(big, token_slice(v, hkv, t, d, 20, 40), 20);
  CHECK(c.k_scale() == ks);
  CHECK(c.v_scale() == vs);
  const auto kd = c.dequantized_k(0);
  for (std::size_t i = 20 * d; i < 40 * d; ++i) CHECK(std::fabs(kd[i]) <= 448.0f * ks);
}

TEST_CASE("kv cache: decode steps within the documented bound, GQA, causal multi-token", "[attention]") {
  double worst = 0;
  const std::size_t hkv = 2, hq = 8, d = 128, dv = 128, t = 333;
  auto k = gaussian(hkv * t * d, 5, 1.5f);
  add_outlier_channels(k, d, {7, 100}, 25.0f);
  const auto v = gaussian(hkv * t * dv, 6);
  for (const auto& rc : fast_recipes()) {
    INFO(rc.k << " / " << rc.v << " q " << rc.q << " P " << rc.p);
    kv_cache cache(config(rc.k.c_str(), rc.v.c_str(), hkv, d, dv));
    decode_recipe r;
    r.q = parse_operand_scheme(rc.q, "q"), r.p.format = parse_static_format(rc.p, "P");
    if (r.p.format) r.p.scale = rc.p_scale;
    cache.append(token_slice(k, hkv, t, d, 0, 1), token_slice(v, hkv, t, dv, 0, 1), 1);
    check_decode(cache, hq, 1, r, mask_kind::none, worst);  // single-token cache
    cache.append(token_slice(k, hkv, t, d, 1, t), token_slice(v, hkv, t, dv, 1, t), t - 1);
    check_decode(cache, hq, 1, r, mask_kind::none, worst);
    check_decode(cache, hq, 3, r, mask_kind::causal, worst);
  }
  WARN("largest |decode - reference| / bound: " << worst);
}

TEST_CASE("kv cache: merged caches store C once and read V = C[..., :dv]", "[attention]") {
  const std::size_t hkv = 2, d = 96, dv = 64, t = 70;
  const auto c = gaussian(hkv * t * d, 8);
  double worst = 0;
  for (const char* scheme : {"fp32", "hifloat8/tensor", "float8_e4m3fn/tensor", "mxfp8_e4m3"})
    for (const pv_source pv : {pv_source::second_copy, pv_source::requantize}) {
      INFO(scheme << (pv == pv_source::second_copy ? " second copy" : " requantize"));
      kv_cache_config cfg = config(scheme, "fp32", hkv, d, dv);
      cfg.layout = kv_layout::merged, cfg.pv = pv;
      kv_cache cache(cfg);
      cache.append(c, {}, t);
      const bool mx = cfg.k && cfg.k->gran == granularity::mx;
      for (std::size_t h = 0; h < hkv; ++h) {
        const auto kd = cache.dequantized_k(h), vd = cache.dequantized_v(h);
        std::vector<float> first(t * dv), cf(t * dv);
        const auto ch = head_rows(c, h, t, d);
        for (std::size_t i = 0; i < t; ++i)
          for (std::size_t j = 0; j < dv; ++j) first[i * dv + j] = kd[i * d + j], cf[i * dv + j] = ch[i * d + j];
        if (!mx) {
          CHECK(vd == first);  // the same codes serve both products
        } else {
          auto along_t = *cfg.k;
          along_t.axis = 0;
          CHECK(vd == fake_quantize(pv == pv_source::second_copy ? cf : first, t, dv, along_t));
        }
      }
      const double elems = static_cast<double>(hkv * t * d);
      const double per = static_cast<double>(cache.bytes()) / elems;
      if (!cfg.k) CHECK(per == 4.0);
      else if (!mx) CHECK(per == 1.0);
      else if (pv == pv_source::second_copy) CHECK(per == Approx(1.0 + 3.0 / 96 + static_cast<double>(dv) / d * (1 + 1.0 / 32)).epsilon(0.02));
      else CHECK(per == Approx(1.0 + 3.0 / 96));
      decode_recipe r;
      check_decode(cache, 4, 1, r, mask_kind::none, worst);
    }
  WARN("largest |merged decode - reference| / bound: " << worst);
}

TEST_CASE("kv cache: empty cache, bad calls", "[attention]") {
  kv_cache c(config("hifloat8/tensor", "hifloat8/tensor", 2, 32, 16));
  const auto q = gaussian(4 * 32, 9);
  const auto r = decode_step(c, q, 4, 1, {});
  for (const float x : r.out) CHECK(x == 0.0f);
  CHECK_THROWS_AS(c.append(std::vector<float>(10), std::vector<float>(2 * 16), 1), shape_error);
  CHECK_THROWS_AS(c.append(std::vector<float>(2 * 32), std::vector<float>(3), 1), shape_error);
  CHECK_THROWS_AS(decode_step(c, q, 3, 1, {}), shape_error);
  CHECK_THROWS_AS(decode_step(c, std::vector<float>(5), 4, 1, {}), shape_error);
  attention_options causal;
  causal.mask = mask_kind::causal;
  CHECK_THROWS_AS(decode_step(c, q, 4, 1, {}, causal), shape_error);  // 1 causal query, 0 cached tokens
  CHECK_THROWS_AS(kv_cache(config("mxfp8_e4m3", "mxfp8_e4m3", 2, 32, 32)), unsupported_error);  // V blocks along dv
  kv_cache_config m = config("fp32", "fp32", 1, 16, 32);
  m.layout = kv_layout::merged;
  CHECK_THROWS_AS(kv_cache(m), shape_error);  // dv > d
  // a NaN token: the step returns the reference (NaN rows where the reference has them)
  c.append(gaussian(2 * 32, 10), gaussian(2 * 16, 11), 1);
  auto bad = gaussian(2 * 32, 12);
  bad[3] = std::numeric_limits<float>::quiet_NaN();
  c.append(bad, gaussian(2 * 16, 13), 1);
  CHECK(c.has_nonfinite());
  const auto f = decode_step(c, q, 4, 1, {}), ref = decode_reference(c, q, 4, 1, {});
  for (std::size_t i = 0; i < f.out.size(); ++i) CHECK((std::isnan(f.out[i]) ? std::isnan(ref.out[i]) : f.out[i] == ref.out[i]));
  CHECK(std::isnan(f.out[0]));
}
