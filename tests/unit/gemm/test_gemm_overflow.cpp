// Issue 35 item 5b: finite operands never give a silent Inf. A = +-FLT_MAX in MXFP8 1x32 blocks
// whose block sums cancel: the fp32 order overflows in its first block (-Inf) while the exact
// sum is 0; the overflow rule (reference.hpp) gives such outputs the exact value on the fast
// path and in the fp32_blocks reference alike, so both stay bit-identical.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <minifloat/gemm/gemm.hpp>

using namespace minifloat;

namespace {

quant_scheme mx_e4m3() {
  quant_scheme s = quant_scheme::make(format_id::float8_e4m3fn, granularity::mx);
  s.axis = 1;  // blocks of 32 along K (A is (M, K), B stored (N, K))
  return s;
}

}  // namespace

TEST_CASE("gemm fast order: A = +-FLT_MAX in MXFP8 1x32 blocks gives the exact value, not -Inf", "[gemm][overflow]") {
  const float big = std::numeric_limits<float>::max();
  for (const std::size_t m : {std::size_t{1}, std::size_t{9}}) {  // GEMV and blocked paths
    const std::size_t k = 64, n = 17;
    std::vector<float> a(m * k), b(n * k, 1.0f);
    for (std::size_t i = 0; i < m; ++i)
      for (std::size_t j = 0; j < k; ++j) a[i * k + j] = (j < 32) == (i % 2 == 0) ? -big : big;
    for (std::size_t j = 0; j < n; ++j) b[j * k + 40] = 0.5f;  // not every column alike
    const auto qa = quantize(a, m, k, mx_e4m3()), qb = quantize(b, n, k, mx_e4m3());
    std::vector<float> exact(m * n), blocks(m * n), fast(m * n);
    gemm_reference(qa.view(), qb.view(), gemm_layout::nk, {}, exact, gemm_accumulation::exact);
    gemm_reference(qa.view(), qb.view(), gemm_layout::nk, {}, blocks, gemm_accumulation::fp32_blocks);
    for (const unsigned threads : {1U, 2U})
      for (const auto isa : {simd::isa::automatic, simd::isa::scalar}) {
        gemm_config cfg;
        cfg.threads = threads, cfg.isa = isa;
        gemm(qa.view(), qb.view(), gemm_layout::nk, {}, fast, cfg);
        for (std::size_t i = 0; i < m * n; ++i) {
          INFO("m " << m << " output " << i << " threads " << threads);
          REQUIRE(std::isfinite(exact[i]));
          CHECK(std::isfinite(fast[i]));
          CHECK(std::bit_cast<std::uint32_t>(fast[i]) == std::bit_cast<std::uint32_t>(blocks[i]));
          CHECK(fast[i] == exact[i]);
        }
      }
    // bfloat16 output: the same values, rounded once more
    std::vector<bfloat16> fb(m * n);
    gemm(qa.view(), qb.view(), gemm_layout::nk, {}, fb);
    for (std::size_t i = 0; i < m * n; ++i) CHECK(static_cast<float>(fb[i]) == exact[i]);
  }
}

TEST_CASE("gemm overflow rule: a true overflow stays Inf, non-finite operands keep IEEE results", "[gemm][overflow]") {
  const float big = std::numeric_limits<float>::max();
  const std::size_t m = 2, k = 64, n = 3;
  std::vector<float> a(m * k, big), b(n * k, 1.0f);  // the exact sum is 64 x 1.75 x 2^127: beyond float32
  const auto qa = quantize(a, m, k, mx_e4m3()), qb = quantize(b, n, k, mx_e4m3());
  std::vector<float> exact(m * n), fast(m * n);
  gemm_reference(qa.view(), qb.view(), gemm_layout::nk, {}, exact, gemm_accumulation::exact);
  gemm(qa.view(), qb.view(), gemm_layout::nk, {}, fast);
  for (std::size_t i = 0; i < m * n; ++i) {
    CHECK(exact[i] == std::numeric_limits<float>::infinity());
    CHECK(fast[i] == exact[i]);
  }
  // a NaN in A: that row's outputs are NaN on both paths (not recomputed)
  a.assign(m * k, 1.0f);
  a[5] = std::numeric_limits<float>::quiet_NaN();
  const auto qn = quantize(a, m, k, mx_e4m3());
  std::vector<float> blocks(m * n);
  gemm_reference(qn.view(), qb.view(), gemm_layout::nk, {}, blocks, gemm_accumulation::fp32_blocks);
  gemm(qn.view(), qb.view(), gemm_layout::nk, {}, fast);
  for (std::size_t j = 0; j < n; ++j) {
    CHECK(std::isnan(fast[j]));
    CHECK(std::isnan(blocks[j]));
    CHECK(fast[n + j] == blocks[n + j]);
  }
}
