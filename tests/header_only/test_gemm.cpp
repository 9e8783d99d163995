// Header-only use of the GEMM entry points (gemm/gemm.hpp): the fast paths (blocked, GEMV, packed
// weights) give the fp32_blocks reference's bits.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include <minifloat/gemm/gemm.hpp>
#include <minifloat/quant/scheme_string.hpp>

TEST_CASE("header-only GEMM: blocked, GEMV and packed weights equal the fp32_blocks reference", "[header_only]") {
  using namespace minifloat;
  const std::size_t m = 19, n = 40, k = 96;
  std::vector<float> a(m * k), b(n * k), bias(n);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = std::cos(static_cast<float>(i) * 0.31f);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = std::sin(static_cast<float>(i) * 0.17f) * 0.5f;
  for (std::size_t i = 0; i < n; ++i) bias[i] = static_cast<float>(i) * 0.01f;
  for (const char* text : {"mxfp8_e4m3", "hifloat8/channel", "mxfp4"}) {
    INFO(text);
    const quant_scheme s = parse_scheme(text).scheme;
    const auto qa = quantize(a, m, k, s), qb = quantize(b, n, k, s);
    std::vector<float> ref(m * n), blocked(m * n), gemv(m * n), packed(m * n);
    gemm_reference(qa.view(), qb.view(), gemm_layout::nk, bias, ref, gemm_accumulation::fp32_blocks);
    gemm(qa.view(), qb.view(), gemm_layout::nk, bias, blocked, {.threads = 2, .path = gemm_path::blocked});
    gemm(qa.view(), qb.view(), gemm_layout::nk, bias, gemv, {.path = gemm_path::gemv});
    gemm(qa.view(), packed_weights(qb.view()), bias, packed);
    CHECK(blocked == ref);
    CHECK(gemv == ref);
    CHECK(packed == ref);
  }
}
