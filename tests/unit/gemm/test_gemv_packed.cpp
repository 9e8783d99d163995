// packed_weights + gemm(a, packed_weights, ...): packing keeps every code and scale, and the
// packed GEMV equals the fp32_blocks reference (so gemm() on the unpacked tensor) bit for bit,
// for every recipe, M from 1 to 9, N across panel edges, K across block edges, both stored
// layouts, AVX2 and scalar, 1 and 2 threads, NaN codes and scales, and the caller's FTZ/DAZ.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#endif

#include <minifloat/gemm/gemm.hpp>

#include "support/test_data.hpp"

using namespace minifloat;

namespace {

// Wide spread: subnormal codes and saturation.
std::vector<float> values(std::size_t n, unsigned seed) { return test_support::spread_normal(n, seed, 6.0f); }

quant_scheme make(format_id f, granularity g) { return quant_scheme::make(f, g); }
quant_scheme block(format_id f, std::size_t r, std::size_t c) {
  quant_scheme s = quant_scheme::make(f, granularity::block);
  s.block_rows = r, s.block_cols = c;
  return s;
}

struct recipe {
  const char* name;
  quant_scheme a, b;
};

std::vector<recipe> recipes() {
  using F = format_id;
  using G = granularity;
  return {
      {"HiF8 token x channel", make(F::hifloat8, G::token), make(F::hifloat8, G::channel)},
      {"HiF8 tensor x tensor", make(F::hifloat8, G::tensor), make(F::hifloat8, G::tensor)},
      {"E4M3 tensor", make(F::float8_e4m3fn, G::tensor), make(F::float8_e4m3fn, G::tensor)},
      {"E4M3 x E5M2 tensor", make(F::float8_e4m3fn, G::tensor), make(F::float8_e5m2, G::tensor)},
      {"HiF8 A x E4M3 B", make(F::hifloat8, G::token), make(F::float8_e4m3fn, G::channel)},
      {"E4M3 DeepSeek 1x128 x 128x128", block(F::float8_e4m3fn, 1, 128), block(F::float8_e4m3fn, 128, 128)},
      {"E4M3 1x32 A x per-channel B", block(F::float8_e4m3fn, 1, 32), make(F::float8_e4m3fn, G::channel)},
      {"MXFP8", make(F::float8_e4m3fn, G::mx), make(F::float8_e4m3fn, G::mx)},
      {"MXFP8 E5M2 x MXFP6 E3M2", make(F::float8_e5m2, G::mx), make(F::float6_e3m2fn, G::mx)},
      {"MXFP6 E2M3 x HiF8 channel", make(F::float6_e2m3fn, G::mx), make(F::hifloat8, G::channel)},
      {"W4A8", make(F::float8_e4m3fn, G::mx), make(F::float4_e2m1fn, G::mx)},
      {"W4A4", make(F::float4_e2m1fn, G::mx), make(F::float4_e2m1fn, G::mx)},
  };
}

std::size_t mismatches(const std::vector<float>& x, const std::vector<float>& y) {
  std::size_t bad = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {  // NaN payloads are not part of the contract
    const bool same = std::bit_cast<std::uint32_t>(x[i]) == std::bit_cast<std::uint32_t>(y[i]) ||
                      (std::isnan(x[i]) && std::isnan(y[i]));
    bad += same ? 0U : 1U;
  }
  return bad;
}

}  // namespace

TEST_CASE("packed_weights keeps every code and scale of the tensor", "[gemm][packed]") {
  for (const auto& r : recipes())
    for (const gemm_layout layout : {gemm_layout::nk, gemm_layout::kn}) {
      const std::size_t n = 70, k = 100;
      quant_scheme sb = r.b;
      if (layout == gemm_layout::kn) {
        if (sb.gran == granularity::mx) sb.axis = 0;
        else if (sb.gran == granularity::block) std::swap(sb.block_rows, sb.block_cols);
        else if (sb.gran == granularity::channel) sb = block(sb.format, k, 1);
      }
      const auto b = layout == gemm_layout::nk ? quantize(values(n * k, 3), n, k, sb) : quantize(values(k * n, 3), k, n, sb);
      const packed_weights w(b.view(), layout);
      const auto o = detail::gemm::make_operand(b.view(), 'B', layout);
      INFO(r.name << " " << to_string(layout));
      REQUIRE(w.n() == n);
      REQUIRE(w.k() == k);
      std::size_t bad_codes = 0, bad_scales = 0;
      for (std::size_t i = 0; i < n; ++i)
        for (std::size_t kk = 0; kk < k; ++kk) {
          bad_codes += w.code(i, kk) == o.code(i, kk) ? 0U : 1U;
          const float x = w.scale(i, kk), y = o.scale(i, kk);
          bad_scales += std::bit_cast<std::uint32_t>(x) == std::bit_cast<std::uint32_t>(y) ? 0U : 1U;
        }
      CHECK(bad_codes == 0);
      CHECK(bad_scales == 0);
      // Padding rows of the last panel hold code 0.
      for (std::size_t i = n; i < w.panels() * packed_weights::panel_rows; ++i) CHECK(w.code(i, k - 1) == 0);
      const std::size_t code_bytes = w.panels() * k * w.slice_bytes();
      CHECK(w.codes().size() == code_bytes);
      CHECK(w.storage_bytes() >= code_bytes);
    }
}

TEST_CASE("packed GEMV equals the fp32_blocks reference bit for bit", "[gemm][packed]") {
  struct shape {
    std::size_t m, n, k;
  };
  const shape shapes[] = {{1, 1, 1}, {1, 64, 32}, {1, 65, 33}, {2, 130, 256}, {3, 63, 300},
                          {8, 129, 96}, {9, 40, 160}, {1, 200, 4}, {5, 3, 0}};
  unsigned seed = 7;
  for (const auto& r : recipes())
    for (const auto& sh : shapes)
      for (const gemm_layout layout : {gemm_layout::nk, gemm_layout::kn}) {
        quant_scheme sb = r.b;
        if (layout == gemm_layout::kn) {
          if (sb.gran == granularity::mx) sb.axis = 0;
          else if (sb.gran == granularity::block) std::swap(sb.block_rows, sb.block_cols);
          else if (sb.gran == granularity::channel) sb = block(sb.format, std::max<std::size_t>(sh.k, 1), 1);
        }
        const auto a = quantize(values(sh.m * sh.k, seed), sh.m, sh.k, r.a);
        const auto b = layout == gemm_layout::nk ? quantize(values(sh.n * sh.k, seed + 1), sh.n, sh.k, sb)
                                                 : quantize(values(sh.k * sh.n, seed + 1), sh.k, sh.n, sb);
        const std::vector<float> bias = (seed % 2) == 0 ? values(sh.n, seed + 2) : std::vector<float>{};
        ++seed;
        std::vector<float> ref(sh.m * sh.n);
        gemm_reference(a.view(), b.view(), layout, bias, std::span<float>(ref), gemm_accumulation::fp32_blocks);
        const packed_weights w(b.view(), layout);
        for (const unsigned threads : {1U, 2U})
          for (const simd::isa isa : {simd::isa::automatic, simd::isa::avx2, simd::isa::scalar}) {
            gemm_config cfg;
            cfg.threads = threads, cfg.isa = isa;
            std::vector<float> out(sh.m * sh.n, -1.0f);
            gemm(a.view(), w, bias, std::span<float>(out), cfg);
            INFO(r.name << " " << sh.m << "x" << sh.n << "x" << sh.k << " " << to_string(layout) << " threads "
                        << threads << (isa == simd::isa::scalar ? " scalar" : " auto"));
            CHECK(mismatches(out, ref) == 0);
          }
        std::vector<bfloat16> ob(sh.m * sh.n), rb(sh.m * sh.n);
        gemm(a.view(), w, bias, std::span<bfloat16>(ob));
        gemm_reference(a.view(), b.view(), layout, bias, std::span<bfloat16>(rb), gemm_accumulation::fp32_blocks);
        for (std::size_t i = 0; i < ob.size(); ++i) REQUIRE(ob[i].bits() == rb[i].bits());
      }
}

TEST_CASE("packed GEMV: every code of every format through the SIMD decoders", "[gemm][packed]") {
  // B holds every code (one per output row, k = 0 .. 3 repeat it), A is all ones: each output
  // is 4 * value(code) exactly and equals the reference. NaN / Inf codes are replaced by 0 here
  // (a panel holding one runs the scalar twin; the NaN test covers them), so every panel runs SIMD.
  for (const format_id f : {format_id::hifloat8, format_id::float8_e4m3fn, format_id::float8_e5m2,
                            format_id::float6_e3m2fn, format_id::float6_e2m3fn, format_id::float4_e2m1fn}) {
    const int bits = detail::format_bits(f);
    const std::size_t codes = bits == 4 ? 16 : bits == 6 ? 64 : 256, k = 4;
    const quant_scheme s = make(f, granularity::tensor);
    const std::size_t rb = detail::code_row_bytes(f, k);
    std::vector<std::uint8_t> bytes(codes * rb, 0);
    for (std::size_t c = 0; c < codes; ++c)
      for (std::size_t kk = 0; kk < k; ++kk) {
        const std::size_t code = detail::gemm::packed_special(f, static_cast<unsigned>(c)) ? 0 : c;
        if (bits == 4) bytes[c * rb + kk / 2] |= static_cast<std::uint8_t>(code << (4 * (kk % 2)));
        else bytes[c * rb + kk] = static_cast<std::uint8_t>(code);
      }
    const auto b = quantized_tensor::from_parts(s, codes, k, bytes, {1.0f}, {});
    const auto a = quantized_tensor::from_parts(make(format_id::float8_e4m3fn, granularity::tensor), 1, k,
                                                std::vector<std::uint8_t>(k, 0x38), {1.0f}, {});  // 1.0
    std::vector<float> ref(codes), out(codes);
    gemm_reference(a.view(), b.view(), gemm_layout::nk, {}, std::span<float>(ref), gemm_accumulation::fp32_blocks);
    const packed_weights w(b.view());
    for (std::size_t q = 0; q < w.panels(); ++q) REQUIRE(!w.special_panel(q));
    INFO(to_string(f));
    for (const simd::isa isa : {simd::isa::automatic, simd::isa::avx2}) {
      gemm_config cfg;
      cfg.isa = isa;
      gemm(a.view(), w, {}, std::span<float>(out), cfg);
      CHECK(mismatches(out, ref) == 0);
    }
    const auto& table = detail::gemm::decode_table_of(f);
    for (std::size_t c = 0; c < codes; ++c) {
      const float want = detail::gemm::packed_special(f, static_cast<unsigned>(c)) ? 0.0f : 4.0f * table[c];
      if (std::isnan(want)) CHECK(std::isnan(out[c]));
      else CHECK(out[c] == want);
    }
  }
}

TEST_CASE("packed GEMV propagates NaN codes and NaN scales", "[gemm][packed]") {
  const std::size_t m = 2, n = 70, k = 96;
  auto xb = values(n * k, 5);
  xb[3 * k + 40] = std::numeric_limits<float>::quiet_NaN();  // row 3: E4M3 NaN code / MX NaN scale
  const auto xa = values(m * k, 6);
  for (const auto& r : {recipes()[2], recipes()[7], recipes()[10], recipes()[0]}) {
    const auto a = quantize(xa, m, k, r.a);
    const auto b = quantize(xb, n, k, r.b);
    const packed_weights w(b.view());
    std::vector<float> out(m * n), ref(m * n);
    gemm(a.view(), w, {}, std::span<float>(out));
    gemm_reference(a.view(), b.view(), gemm_layout::nk, {}, std::span<float>(ref), gemm_accumulation::fp32_blocks);
    INFO(r.name);
    CHECK(mismatches(out, ref) == 0);
    for (std::size_t i = 0; i < m; ++i) CHECK(std::isnan(out[i * n + 3]));
    if (r.b.format == format_id::float8_e4m3fn && r.b.gran == granularity::tensor) {
      CHECK(w.special_panel(0));  // the NaN code's panel runs the scalar twin
      CHECK(!w.special_panel(1));
    }
  }
}

#if defined(__x86_64__) || defined(_M_X64)
TEST_CASE("packed GEMV does not depend on the caller's FTZ/DAZ", "[gemm][packed]") {
  // E4M3 codes are decoded as 2^-120 x, so subnormal codes give subnormal fp32 operands: the
  // kernel clears DAZ for its duration and gives the caller's MXCSR back.
  const std::size_t m = 1, n = 64, k = 64;
  const auto a = quantize(values(m * k, 8), m, k, make(format_id::float8_e4m3fn, granularity::tensor));
  const auto b = quantize(values(n * k, 9), n, k, make(format_id::float8_e4m3fn, granularity::tensor));
  std::size_t subnormal_codes = 0;
  for (const std::uint8_t c : b.view().codes) subnormal_codes += (c & 0x78U) == 0 && (c & 7U) != 0 ? 1U : 0U;
  REQUIRE(subnormal_codes > 0);
  const packed_weights w(b.view());
  std::vector<float> plain(m * n), flushed(m * n);
  gemm(a.view(), w, {}, std::span<float>(plain));
  const unsigned csr = _mm_getcsr();
  _mm_setcsr(csr | 0x8040U);  // FTZ | DAZ
  gemm(a.view(), w, {}, std::span<float>(flushed));
  const unsigned after = _mm_getcsr();
  _mm_setcsr(csr);
  CHECK((after & 0x8040U) == 0x8040U);
  CHECK(mismatches(plain, flushed) == 0);
}
#endif

TEST_CASE("packed GEMV rejects operands that do not fit", "[gemm][packed]") {
  const auto x = values(64 * 64, 3);
  const auto b = quantize(x, 64, 64, make(format_id::hifloat8, granularity::channel));
  const packed_weights w(b.view());
  std::vector<float> out(64 * 64);
  const auto a32 = quantize(std::vector<float>(x.begin(), x.begin() + 64 * 32), 64, 32, make(format_id::hifloat8, granularity::token));
  CHECK_THROWS_AS(gemm(a32.view(), w, {}, std::span<float>(out).first(64 * 64)), shape_error);
  CHECK_THROWS_WITH(gemm(a32.view(), w, {}, std::span<float>(out)), Catch::Contains("K must agree (32 vs 64)"));
  const auto a = quantize(x, 64, 64, make(format_id::hifloat8, granularity::token));
  CHECK_THROWS_WITH(gemm(a.view(), w, std::vector<float>(3), std::span<float>(out)), Catch::Contains("bias needs N = 64"));
  CHECK_THROWS_WITH(gemm(a.view(), w, {}, std::span<float>(out).first(10)), Catch::Contains("output needs M x N = 64x64"));
  const auto b16 = quantize(x, 64, 64, make(format_id::bfloat16, granularity::tensor));
  CHECK_THROWS_AS(packed_weights(b16.view()), unsupported_error);
  const auto bmx = quantize(x, 64, 64, make(format_id::float8_e4m3fn, granularity::mx));
  const packed_weights wmx(bmx.view());
  const auto a24 = quantize(x, 64, 64, block(format_id::float8_e4m3fn, 1, 24));
  CHECK_THROWS_WITH(gemm(a24.view(), wmx, {}, std::span<float>(out)), Catch::Contains("do not nest"));
}

TEST_CASE("packed GEMV: E8M0 scales 0x00 (2^-127) and 0xFF (NaN) run the scalar twin", "[gemm][packed]") {
  const std::size_t m = 1, n = 130, k = 64;
  const auto a = quantize(values(m * k, 21), m, k, make(format_id::float8_e4m3fn, granularity::mx));
  for (const format_id f : {format_id::float8_e4m3fn, format_id::float4_e2m1fn}) {
    auto b = quantize(values(n * k, 22), n, k, make(f, granularity::mx));
    std::vector<std::uint8_t> scales(b.view().mx_scales.begin(), b.view().mx_scales.end());
    scales[2 * 3] = 0x00;    // row 3, block 0: 2^-127
    scales[2 * 70 + 1] = 0xFF;  // row 70, block 1: NaN
    const std::vector<std::uint8_t> codes(b.view().codes.begin(), b.view().codes.end());
    b = quantized_tensor::from_parts(b.view().scheme, n, k, codes, {}, scales);
    const packed_weights w(b.view());
    CHECK(w.special_panel(0));
    CHECK(w.special_panel(1));
    CHECK(!w.special_panel(2));
    std::vector<float> out(m * n), ref(m * n);
    gemm(a.view(), w, {}, std::span<float>(out));
    gemm_reference(a.view(), b.view(), gemm_layout::nk, {}, std::span<float>(ref), gemm_accumulation::fp32_blocks);
    INFO(to_string(f));
    CHECK(mismatches(out, ref) == 0);
    CHECK(std::isnan(out[70]));
  }
}

TEST_CASE("grouped GEMM on packed experts equals the grouped fp32_blocks reference", "[gemm][packed]") {
  const std::size_t k = 96, n = 70;
  const std::vector<std::size_t> sizes = {3, 0, 1, 9, 2};  // an empty group, groups of 1 to 9 tokens
  const std::size_t tokens = 15;
  for (const auto& r : {recipes()[0], recipes()[7], recipes()[10], recipes()[6]}) {
    const auto a = quantize(values(tokens * k, 31), tokens, k, r.a);
    std::vector<quantized_tensor> experts;
    std::vector<quantized_tensor_view> views;
    std::vector<packed_weights> packed;
    std::vector<std::vector<float>> biases;
    std::vector<std::span<const float>> bias_spans;
    for (std::size_t g = 0; g < sizes.size(); ++g) {
      experts.push_back(quantize(values(n * k, 40 + static_cast<unsigned>(g)), n, k, r.b));
      biases.push_back(values(n, 60 + static_cast<unsigned>(g)));
    }
    for (std::size_t g = 0; g < sizes.size(); ++g) {
      views.push_back(experts[g].view());
      packed.emplace_back(experts[g].view());
      bias_spans.emplace_back(biases[g]);
    }
    std::vector<float> out(tokens * n, -1.0f), ref(tokens * n);
    grouped_gemm_reference(a.view(), sizes, views, gemm_layout::nk, bias_spans, std::span<float>(ref),
                           gemm_accumulation::fp32_blocks);
    for (const unsigned threads : {1U, 2U}) {
      gemm_config cfg;
      cfg.threads = threads;
      grouped_gemm(a.view(), sizes, std::span<const packed_weights>(packed), bias_spans, std::span<float>(out), cfg);
      INFO(r.name << " threads " << threads);
      CHECK(mismatches(out, ref) == 0);
    }
    const std::vector<std::size_t> wrong = {3, 0, 1, 9, 1};
    CHECK_THROWS_WITH(grouped_gemm(a.view(), wrong, std::span<const packed_weights>(packed), bias_spans,
                                   std::span<float>(out)),
                      Catch::Contains("group sizes add up to 14 tokens but A has 15 rows"));
  }
}
