// Quantized GEMM: the exact reference rounds once; the fast path (blocked, GEMV, grouped; AVX2
// and scalar; 1 and 2 threads) equals the fp32_blocks reference bit for bit; both stay within
// the stated error bound of the exact value; bad operands fail with messages that say what
// was expected.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

// npy.hpp first: its npy_dtype::float16 would otherwise trip -Wshadow against minifloat::float16.
#include <minifloat/io/npy.hpp>
#include <minifloat/gemm/gemm.hpp>
#include <minifloat/gemm/kernels.hpp>
#include <minifloat/gemm/reference.hpp>

#include "support/test_data.hpp"

using namespace minifloat;

namespace {

std::vector<float> random_values(std::size_t n, unsigned seed, float spread = 1.0f) {
  return test_support::spread_normal(n, seed, spread);
}

quant_scheme scheme(format_id f, granularity g, int axis = 1) {
  quant_scheme s = quant_scheme::make(f, g);
  s.axis = axis;
  return s;
}
quant_scheme block_scheme(format_id f, std::size_t r, std::size_t c) {
  quant_scheme s = quant_scheme::make(f, granularity::block);
  s.block_rows = r, s.block_cols = c;
  return s;
}

quant_scheme square32(format_id f) {  // MX with one E8M0 scale per 32x32 tile, read in both layouts
  quant_scheme s = quant_scheme::make(f, granularity::mx);
  s.block_rows = s.block_cols = 32;
  return s;
}

/// One operand recipe: how A and B are quantized. B's scheme is given for the (N, K) layout;
/// for (K, N) it is transposed (block R x C -> C x R, mx axis 1 -> 0, channel -> block K x 1).
struct recipe {
  std::string name;
  quant_scheme a, b;
};

quant_scheme for_kn(quant_scheme s, std::size_t k) {
  if (s.gran == granularity::mx) s.axis = 0;
  else if (s.gran == granularity::block) std::swap(s.block_rows, s.block_cols);
  else if (s.gran == granularity::channel || s.gran == granularity::token) s = block_scheme(s.format, std::max<std::size_t>(k, 1), 1), s.rule = quant_scheme::make(s.format, granularity::channel).rule;
  return s;
}

std::vector<recipe> recipes() {
  using F = format_id;
  using G = granularity;
  return {
      {"HiF8 per-token x per-channel", scheme(F::hifloat8, G::token), scheme(F::hifloat8, G::channel)},
      {"HiF8 per-tensor x per-channel", scheme(F::hifloat8, G::tensor), scheme(F::hifloat8, G::channel)},
      {"E4M3 x E4M3 per-tensor", scheme(F::float8_e4m3fn, G::tensor), scheme(F::float8_e4m3fn, G::tensor)},
      {"E4M3 x E5M2 per-tensor", scheme(F::float8_e4m3fn, G::tensor), scheme(F::float8_e5m2, G::tensor)},
      {"E4M3 DeepSeek 1x128 x 128x128", block_scheme(F::float8_e4m3fn, 1, 128), block_scheme(F::float8_e4m3fn, 128, 128)},
      {"MXFP8 x MXFP8", scheme(F::float8_e4m3fn, G::mx), scheme(F::float8_e4m3fn, G::mx)},
      {"MXFP8 32x32 x MXFP8 32x32", square32(F::float8_e4m3fn), square32(F::float8_e4m3fn)},
      {"MXFP8 1x32 x MXFP8 32x32", scheme(F::float8_e4m3fn, G::mx), square32(F::float8_e5m2)},
      {"MXFP8 E5M2 x MXFP6 E3M2", scheme(F::float8_e5m2, G::mx), scheme(F::float6_e3m2fn, G::mx)},
      {"MXFP8 x MXFP4 (W4A8)", scheme(F::float8_e4m3fn, G::mx), scheme(F::float4_e2m1fn, G::mx)},
      {"MXFP4 x MXFP4 (W4A4)", scheme(F::float4_e2m1fn, G::mx), scheme(F::float4_e2m1fn, G::mx)},
      {"MXFP6 E2M3 x HiF8 per-channel", scheme(F::float6_e2m3fn, G::mx), scheme(F::hifloat8, G::channel)},
  };
}

bool same_bits(float x, float y) { return std::bit_cast<std::uint32_t>(x) == std::bit_cast<std::uint32_t>(y); }

struct operands {
  quantized_tensor a, b;
  std::vector<float> bias;
};

operands make_operands(const recipe& r, std::size_t m, std::size_t n, std::size_t k, gemm_layout layout,
                       bool with_bias, unsigned seed) {
  operands o;
  o.a = quantize(random_values(m * k, seed), m, k, r.a);
  if (layout == gemm_layout::nk) o.b = quantize(random_values(n * k, seed + 1), n, k, r.b);
  else o.b = quantize(random_values(k * n, seed + 1), k, n, for_kn(r.b, k));
  if (with_bias) o.bias = random_values(n, seed + 2);
  return o;
}

constexpr double u32 = 0x1p-24;

/// The stated bound (reference.hpp / bench/README.md): with L the K-block length and J the
/// number of K-blocks, |fp32_blocks - exact| <= gamma(L + J) * (sum_k |a sA b sB| + |bias|)
/// + 2^-150 * (sum_k |a b| + J), gamma(n) = n u / (1 - n u), u = 2^-24.
double error_bound(const detail::gemm::problem& p, std::size_t m, std::size_t n, float bias) {
  double t = std::fabs(static_cast<double>(bias)), raw = 0.0;
  for (std::size_t k = 0; k < p.k; ++k) {
    const double ab = std::fabs(static_cast<double>(p.a.value(m, k)) * p.b.value(n, k));
    t += ab * p.a.scale(m, k) * p.b.scale(n, k);
    raw += ab;
  }
  const std::size_t l = std::min(p.l, std::max<std::size_t>(p.k, 1));
  const std::size_t j = p.k == 0 ? 0 : (p.k + l - 1) / l;
  const double nn = static_cast<double>(l + j);
  return nn * u32 / (1 - nn * u32) * t + 0x1p-150 * (raw + static_cast<double>(j));
}

}  // namespace

TEST_CASE("gemm exact_sum adds without rounding and rounds once", "[gemm]") {
  using detail::gemm::exact_sum;
  exact_sum s;
  s.add(1.0f), s.add(0x1p-60f), s.add(-1.0f);
  CHECK(s.round(24) == 0x1p-60);
  s.clear();
  s.add(1.0f), s.add(0x1p-24f);  // exactly halfway between 1 and 1 + 2^-23: ties to even
  CHECK(s.round(24) == 1.0);
  s.add(0x1p-70f);  // now just above halfway
  CHECK(s.round(24) == 1.0 + 0x1p-23);
  s.clear();
  s.add(1.0f), s.add(0x1p-8f);  // bfloat16: halfway between 1 and 1 + 2^-7 -> 1
  CHECK(s.round(8) == 1.0);
  s.add(0x1p-8f);
  CHECK(s.round(8) == 1.0 + 0x1p-7);
  s.clear();
  s.add_product(3.0f, 5.0f, 0x1p-149f, 0x1p-127f);  // 15 * 2^-276: far below fp32, exact in double
  CHECK(s.round(53, -1022, 1024) == 15.0 * std::ldexp(1.0, -276));
  CHECK(s.round(24) == 0.0);
  s.clear();
  s.add_product(448.0f, 57344.0f, 0x1p127f, 0x1p127f);  // overflow -> Inf
  CHECK(std::isinf(s.round(24)));
  s.add_product(-448.0f, 57344.0f, 0x1p127f, 0x1p127f);  // cancels exactly
  CHECK(s.round(24) == 0.0);
  s.clear();
  s.add_product(1.0f, std::numeric_limits<float>::infinity(), 1.0f, 1.0f);
  s.add_product(-1.0f, std::numeric_limits<float>::infinity(), 1.0f, 1.0f);
  CHECK(std::isnan(s.round(24)));
  // Subnormal result: 2^-149 * 3 / 2 = 1.5 * 2^-149 rounds to even (2^-148).
  s.clear();
  s.add_product(3.0f, 0.5f, 0x1p-149f, 1.0f);
  CHECK(s.round(24) == 0x1p-148);
  // Random sums of a few floats whose double sum is exact (38 bits) round like that double.
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> ex(-8, 8);
  std::uniform_int_distribution<std::uint32_t> mant(0, (1U << 20) - 1);
  for (int t = 0; t < 2000; ++t) {
    s.clear();
    double d = 0.0;
    for (int i = 0; i < 4; ++i) {
      const float x = std::ldexp(static_cast<float>(mant(rng)) * (i % 2 ? -1.0f : 1.0f), ex(rng) - 20);
      s.add(x);
      d += static_cast<double>(x);
    }
    REQUIRE(s.round(53, -1022, 1024) == d);
    REQUIRE(s.round(24) == static_cast<double>(static_cast<float>(d)));
  }
}

TEST_CASE("gemm AVX2 decoders equal the scalar decoder for every code", "[gemm]") {
  for (const format_id f : {format_id::hifloat8, format_id::float8_e4m3fn, format_id::float8_e5m2,
                            format_id::float6_e3m2fn, format_id::float6_e2m3fn, format_id::float4_e2m1fn}) {
    CAPTURE(to_string(f));
    detail::gemm::operand o;
    o.format = f;
    o.bits = detail::format_bits(f);
    o.table = &detail::gemm::decode_table_of(f);
    std::vector<std::uint8_t> codes(256 + 8);
    for (unsigned c = 0; c < 256; ++c) codes[c] = static_cast<std::uint8_t>(c);
    o.codes = codes.data();
    o.row_bytes = codes.size();
    const std::size_t n = o.bits == 4 ? 512 : 256;  // FP4: every byte = two nibbles
    for (const std::size_t start : {std::size_t{0}, std::size_t{2}, std::size_t{3}}) {
      std::vector<float> s(n), v(n);
      detail::gemm::decode_run_scalar(o, 0, start, n - start, s.data());
      const auto k = detail::gemm::select_kernels(f, f, simd::detected_isa());
      k.decode_a(o, 0, start, n - start, v.data());
      for (std::size_t i = 0; i + start < n; ++i) {
        CAPTURE(i, start);
        REQUIRE((same_bits(s[i], v[i]) || (std::isnan(s[i]) && std::isnan(v[i]))));
      }
      // and the scalar decoder is the format's own decode
      for (std::size_t i = 0; i + start < n; ++i) {
        const std::size_t c = start + i;
        const unsigned code = o.bits == 4 ? (static_cast<unsigned>(codes[c / 2]) >> (4 * (c & 1))) & 0xFU : codes[c];
        float want = 0;
        visit_format(f, [&](auto t) {
          using E = typename decltype(t)::type;
          if constexpr (sizeof_bits<E> <= 8) want = static_cast<float>(E::from_bits(static_cast<typename E::storage_type>(code)));
        });
        REQUIRE((same_bits(s[i], want) || (std::isnan(s[i]) && std::isnan(want))));
      }
    }
  }
}

TEST_CASE("gemm fast path equals the fp32_blocks reference bit for bit", "[gemm]") {
  struct shape {
    std::size_t m, n, k;
  };
  const shape shapes[] = {{1, 1, 1}, {1, 17, 70}, {7, 33, 64}, {13, 16, 129}, {20, 35, 300}, {3, 5, 0}};
  unsigned seed = 11;
  for (const auto& r : recipes())
    for (const auto& sh : shapes)
      for (const gemm_layout layout : {gemm_layout::nk, gemm_layout::kn}) {
        const bool with_bias = (seed % 2) == 0;
        const auto o = make_operands(r, sh.m, sh.n, sh.k, layout, with_bias, seed++);
        std::vector<float> ref(sh.m * sh.n);
        gemm_reference(o.a.view(), o.b.view(), layout, o.bias, std::span<float>(ref), gemm_accumulation::fp32_blocks);
        for (const gemm_path path : {gemm_path::blocked, gemm_path::gemv})
          for (const unsigned threads : {1U, 2U})
            for (const simd::isa isa : {simd::isa::automatic, simd::isa::scalar}) {
              if (isa == simd::isa::scalar && threads == 2) continue;
              gemm_config cfg;
              cfg.path = path, cfg.threads = threads, cfg.isa = isa;
              cfg.kc = 96, cfg.mc = 12, cfg.nc = 32;  // small blocks: many edges and kc chunks
              std::vector<float> out(sh.m * sh.n, -1.0f);
              gemm(o.a.view(), o.b.view(), layout, o.bias, std::span<float>(out), cfg);
              std::size_t bad = 0;
              for (std::size_t i = 0; i < out.size(); ++i) bad += same_bits(out[i], ref[i]) ? 0U : 1U;
              INFO(r.name << " " << sh.m << "x" << sh.n << "x" << sh.k << " " << to_string(layout)
                          << (path == gemm_path::gemv ? " gemv" : " blocked") << " threads " << threads
                          << (isa == simd::isa::scalar ? " scalar" : " auto"));
              CHECK(bad == 0);
            }
        // bfloat16 output: RNE of the fp32 result
        std::vector<bfloat16> ob(sh.m * sh.n), rb(sh.m * sh.n);
        gemm(o.a.view(), o.b.view(), layout, o.bias, std::span<bfloat16>(ob));
        gemm_reference(o.a.view(), o.b.view(), layout, o.bias, std::span<bfloat16>(rb), gemm_accumulation::fp32_blocks);
        for (std::size_t i = 0; i < ob.size(); ++i) {
          REQUIRE(ob[i].bits() == rb[i].bits());
          REQUIRE(rb[i].bits() == narrow<bfloat16>(ref[i]).bits());
        }
      }
}

TEST_CASE("gemm fp32_blocks stays within gamma(L + J) of the exact result", "[gemm]") {
  unsigned seed = 101;
  for (const auto& r : recipes())
    for (const gemm_layout layout : {gemm_layout::nk, gemm_layout::kn}) {
      const std::size_t m = 5, n = 9, k = 333;
      const auto o = make_operands(r, m, n, k, layout, true, seed++);
      std::vector<float> fast(m * n), ex(m * n);
      std::vector<bfloat16> exb(m * n);
      gemm(o.a.view(), o.b.view(), layout, o.bias, std::span<float>(fast));
      gemm_reference(o.a.view(), o.b.view(), layout, o.bias, std::span<float>(ex), gemm_accumulation::exact);
      gemm_reference(o.a.view(), o.b.view(), layout, o.bias, std::span<bfloat16>(exb), gemm_accumulation::exact);
      const auto exact = gemm_reference_exact_double(o.a.view(), o.b.view(), layout, o.bias);
      const auto p = detail::gemm::make_problem(o.a.view(), o.b.view(), layout, o.bias.size(), m * n);
      for (std::size_t i = 0; i < m; ++i)
        for (std::size_t j = 0; j < n; ++j) {
          const double e = exact[i * n + j];
          INFO(r.name << " " << to_string(layout) << " (" << i << ", " << j << ")");
          // exact mode = the exact value rounded once (to float / to bfloat16)
          REQUIRE(ex[i * n + j] == static_cast<float>(e));  // e has <= 53 bits; double -> float is one RNE
          REQUIRE(static_cast<float>(exb[i * n + j]) == static_cast<float>(narrow<bfloat16>(e)));
          const double bound = error_bound(p, i, j, o.bias[j]);
          REQUIRE(std::fabs(static_cast<double>(fast[i * n + j]) - e) <= bound + std::fabs(e) * 0x1p-52);
        }
    }
}

TEST_CASE("gemm on real weights and activations (PP-OCRv4 SVTR)", "[gemm]") {
  const std::filesystem::path dir = std::filesystem::path(MINIFLOAT_TEST_DATA_DIR) / ".." / ".." / "data" / "ppocrv4";
  const auto x = read_npy(dir / "activations" / "line0.svtr0.fc2_in.npy");  // 86 x 240
  const auto w = read_npy(dir / "weights" / "rec.linear_80.w_0.npy");       // 240 x 120, (in, out) = (K, N)
  REQUIRE(x.shape.size() == 2);
  REQUIRE(w.shape.size() == 2);
  const std::size_t m = std::min<std::size_t>(x.shape[0], 8), k = x.shape[1], n = w.shape[1];  // 8 tokens: fast under ASan
  REQUIRE(w.shape[0] == k);
  const auto xs = x.as<float>(), ws = w.as<float>();
  // W (K, N) transposed to (N, K) for the nk layout.
  std::vector<float> wt(n * k);
  for (std::size_t i = 0; i < k; ++i)
    for (std::size_t j = 0; j < n; ++j) wt[j * k + i] = ws[i * n + j];
  for (const auto& r : recipes()) {
    for (const gemm_layout layout : {gemm_layout::nk, gemm_layout::kn}) {
      const auto qa = quantize(xs.first(m * k), m, k, r.a);
      const auto qb = layout == gemm_layout::nk ? quantize(wt, n, k, r.b) : quantize(ws, k, n, for_kn(r.b, k));
      std::vector<float> fast(m * n), ref(m * n);
      gemm_config cfg;
      cfg.threads = 2;
      gemm(qa.view(), qb.view(), layout, {}, std::span<float>(fast), cfg);
      gemm_reference(qa.view(), qb.view(), layout, {}, std::span<float>(ref), gemm_accumulation::fp32_blocks);
      std::vector<float> packed_out(m * n);  // the packed-weights GEMV (gemv_packed.hpp) on the same data
      gemm(qa.view(), packed_weights(qb.view(), layout), {}, std::span<float>(packed_out), cfg);
      std::size_t bad_packed = 0;
      for (std::size_t i = 0; i < m * n; ++i) bad_packed += same_bits(packed_out[i], ref[i]) ? 0U : 1U;
      const auto exact = gemm_reference_exact_double(qa.view(), qb.view(), layout);
      const auto p = detail::gemm::make_problem(qa.view(), qb.view(), layout, 0, m * n);
      std::size_t bad = 0, over = 0;
      for (std::size_t i = 0; i < m; ++i)
        for (std::size_t j = 0; j < n; ++j) {
          bad += same_bits(fast[i * n + j], ref[i * n + j]) ? 0U : 1U;
          const double e = exact[i * n + j];
          over += std::fabs(static_cast<double>(fast[i * n + j]) - e) <= error_bound(p, i, j, 0.0f) + std::fabs(e) * 0x1p-52 ? 0U : 1U;
        }
      INFO(r.name << " " << to_string(layout));
      CHECK(bad == 0);
      CHECK(bad_packed == 0);
      CHECK(over == 0);
    }
  }
}

TEST_CASE("gemm grouped (MoE) equals per-group GEMMs", "[gemm]") {
  const std::size_t k = 100, n = 24;
  const std::vector<std::size_t> groups = {3, 0, 10, 1, 7};  // 21 tokens, one empty expert
  std::size_t total = 0;
  for (auto g : groups) total += g;
  for (const auto& r : recipes()) {
    const auto qa = quantize(random_values(total * k, 5), total, k, r.a);
    std::vector<quantized_tensor> experts;
    std::vector<quantized_tensor_view> views;
    std::vector<std::vector<float>> biases;
    std::vector<std::span<const float>> bias_spans;
    for (std::size_t g = 0; g < groups.size(); ++g) {
      experts.push_back(quantize(random_values(n * k, 40 + static_cast<unsigned>(g)), n, k, r.b));
      biases.push_back(random_values(n, 90 + static_cast<unsigned>(g)));
    }
    for (std::size_t g = 0; g < groups.size(); ++g) views.push_back(experts[g].view()), bias_spans.push_back(biases[g]);
    std::vector<float> fast(total * n), ref(total * n), exact(total * n);
    gemm_config cfg;
    cfg.threads = 2;
    grouped_gemm(qa.view(), groups, views, gemm_layout::nk, bias_spans, std::span<float>(fast), cfg);
    grouped_gemm_reference(qa.view(), groups, views, gemm_layout::nk, bias_spans, std::span<float>(ref),
                           gemm_accumulation::fp32_blocks);
    grouped_gemm_reference(qa.view(), groups, views, gemm_layout::nk, bias_spans, std::span<float>(exact));
    INFO(r.name);
    std::size_t bad = 0;
    for (std::size_t i = 0; i < fast.size(); ++i) bad += same_bits(fast[i], ref[i]) ? 0U : 1U;
    CHECK(bad == 0);
    // Group g's rows equal an ordinary GEMM of those rows of A (codes and scales sliced; a
    // 32x32-tiled A has no per-row scales to slice, the grouped GEMM above covers it).
    if (r.a.gran == granularity::mx && r.a.tile() == mx_tile::square32) continue;
    std::size_t r0 = 0;
    const auto av = qa.view();
    const std::size_t rb = detail::code_row_bytes(av.scheme.format, k), gc = av.scale_grid_cols();
    for (std::size_t g = 0; g < groups.size(); r0 += groups[g], ++g) {
      if (groups[g] == 0) continue;
      const auto rows = [&](auto sp, std::size_t per_row) {
        return std::vector<typename decltype(sp)::value_type>(sp.begin() + static_cast<std::ptrdiff_t>(r0 * per_row),
                                                              sp.begin() + static_cast<std::ptrdiff_t>((r0 + groups[g]) * per_row));
      };
      const bool whole = av.scheme.gran == granularity::tensor;
      const auto sub = quantized_tensor::from_parts(
          av.scheme, groups[g], k, rows(av.codes, rb),
          whole || av.scales.empty() ? std::vector<float>(av.scales.begin(), av.scales.end()) : rows(av.scales, gc),
          av.mx_scales.empty() ? std::vector<std::uint8_t>{} : rows(av.mx_scales, gc));
      std::vector<float> one(groups[g] * n);
      gemm_reference(sub.view(), views[g], gemm_layout::nk, biases[g], std::span<float>(one));
      for (std::size_t i = 0; i < one.size(); ++i) REQUIRE(same_bits(one[i], exact[r0 * n + i]));
    }
  }
  // bfloat16 output and errors
  const auto qa = quantize(random_values(total * k, 6), total, k, recipes()[0].a);
  const auto qb = quantize(random_values(n * k, 7), n, k, recipes()[0].b);
  std::vector<quantized_tensor_view> views(groups.size(), qb.view());
  std::vector<bfloat16> ob(total * n), rb(total * n);
  grouped_gemm(qa.view(), groups, views, gemm_layout::nk, {}, std::span<bfloat16>(ob));
  grouped_gemm_reference(qa.view(), groups, views, gemm_layout::nk, {}, std::span<bfloat16>(rb),
                         gemm_accumulation::fp32_blocks);
  for (std::size_t i = 0; i < ob.size(); ++i) REQUIRE(ob[i].bits() == rb[i].bits());
  const std::vector<std::size_t> wrong = {3, 3};
  std::vector<float> of(total * n);
  CHECK_THROWS_WITH(grouped_gemm(qa.view(), wrong, std::span(views).first(2), gemm_layout::nk, {}, std::span<float>(of)),
                    Catch::Contains("add up to 6 tokens but A has 21 rows"));
  CHECK_THROWS_WITH(grouped_gemm(qa.view(), groups, std::span(views).first(2), gemm_layout::nk, {}, std::span<float>(of)),
                    Catch::Contains("5 group sizes but 2 B operands"));
}

TEST_CASE("gemm propagates NaN and Inf like IEEE", "[gemm]") {
  const std::size_t m = 2, n = 3, k = 40;
  auto xa = random_values(m * k, 1), xb = random_values(n * k, 2);
  xa[5] = std::numeric_limits<float>::quiet_NaN();  // row 0: NaN code (HiF8) / NaN scale (MX)
  for (const auto& r : {recipes()[0], recipes()[5]}) {
    const auto qa = quantize(xa, m, k, r.a);
    const auto qb = quantize(xb, n, k, r.b);
    std::vector<float> f(m * n), e(m * n);
    gemm(qa.view(), qb.view(), gemm_layout::nk, {}, std::span<float>(f));
    gemm_reference(qa.view(), qb.view(), gemm_layout::nk, {}, std::span<float>(e));
    for (std::size_t j = 0; j < n; ++j) {
      CHECK(std::isnan(f[j]));
      CHECK(std::isnan(e[j]));
      CHECK(std::isfinite(f[n + j]));
      CHECK(std::isfinite(e[n + j]));
    }
  }
  // A NaN weight (E4M3 code 0x7F) poisons its output column, on both GEMV and blocked paths.
  xa[5] = 1.0f;
  xb[1 * k + 33] = std::numeric_limits<float>::quiet_NaN();  // B row n = 1
  const recipe r = recipes()[2];
  const auto qa = quantize(xa, m, k, r.a);
  const auto qb = quantize(xb, n, k, r.b);
  for (const gemm_path path : {gemm_path::gemv, gemm_path::blocked}) {
    gemm_config cfg;
    cfg.path = path;
    std::vector<float> f(m * n);
    gemm(qa.view(), qb.view(), gemm_layout::nk, {}, std::span<float>(f), cfg);
    for (std::size_t i = 0; i < m; ++i)
      for (std::size_t j = 0; j < n; ++j) CHECK(std::isnan(f[i * n + j]) == (j == 1));
  }
}

TEST_CASE("gemm rejects operands that do not fit, saying what was expected", "[gemm]") {
  const auto x = random_values(64 * 64, 3);
  const std::span<const float> xs(x);
  std::vector<float> out(64 * 64);
  const auto a = quantize(xs, 64, 64, scheme(format_id::hifloat8, granularity::token));
  SECTION("K mismatch") {
    const auto b = quantize(xs.first(32 * 64), 32, 64, scheme(format_id::hifloat8, granularity::channel));
    const auto a2 = quantize(xs.first(64 * 32), 64, 32, scheme(format_id::hifloat8, granularity::token));
    CHECK_THROWS_AS(gemm(a2.view(), b.view(), gemm_layout::nk, {}, std::span<float>(out).first(64 * 32)), shape_error);
    CHECK_THROWS_WITH(gemm(a2.view(), b.view(), gemm_layout::nk, {}, std::span<float>(out).first(64 * 32)),
                      Catch::Contains("K must agree (32 vs 64)"));
  }
  SECTION("per-channel B stored (K, N)") {
    const auto b = quantize(xs, 64, 64, scheme(format_id::hifloat8, granularity::channel));
    CHECK_THROWS_AS(gemm(a.view(), b.view(), gemm_layout::kn, {}, std::span<float>(out)), unsupported_error);
    CHECK_THROWS_WITH(gemm(a.view(), b.view(), gemm_layout::kn, {}, std::span<float>(out)),
                      Catch::Contains("block 64x1"));
  }
  SECTION("MX blocks along N") {
    const auto b = quantize(xs, 64, 64, scheme(format_id::float8_e4m3fn, granularity::mx, 1));
    CHECK_THROWS_WITH(gemm_reference(a.view(), b.view(), gemm_layout::kn, {}, std::span<float>(out)),
                      Catch::Contains("needs the 32-element blocks along K: axis 0"));
    const auto a0 = quantize(xs, 64, 64, scheme(format_id::float8_e4m3fn, granularity::mx, 0));
    CHECK_THROWS_WITH(gemm(a0.view(), b.view(), gemm_layout::nk, {}, std::span<float>(out)),
                      Catch::Contains("gemm: A is MX-blocked along axis 0"));
  }
  SECTION("16-bit elements, bias and output sizes, non-nesting K blocks") {
    const auto b16 = quantize(xs, 64, 64, scheme(format_id::bfloat16, granularity::tensor));
    CHECK_THROWS_WITH(gemm(a.view(), b16.view(), gemm_layout::nk, {}, std::span<float>(out)),
                      Catch::Contains("element format bfloat16; expected hifloat8"));
    const auto b = quantize(xs, 64, 64, scheme(format_id::hifloat8, granularity::channel));
    const std::vector<float> bias(10);
    CHECK_THROWS_WITH(gemm(a.view(), b.view(), gemm_layout::nk, bias, std::span<float>(out)),
                      Catch::Contains("bias needs N = 64"));
    CHECK_THROWS_WITH(gemm(a.view(), b.view(), gemm_layout::nk, {}, std::span<float>(out).first(10)),
                      Catch::Contains("output needs M x N = 64x64"));
    const auto a24 = quantize(xs, 64, 64, block_scheme(format_id::float8_e4m3fn, 1, 24));
    const auto b32 = quantize(xs, 64, 64, scheme(format_id::float8_e4m3fn, granularity::mx));
    CHECK_THROWS_WITH(gemm(a24.view(), b32.view(), gemm_layout::nk, {}, std::span<float>(out)),
                      Catch::Contains("do not nest"));
  }
}

TEST_CASE("gemm larger shapes: fast == fp32_blocks reference", "[.slow]") {
  for (const auto& r : recipes()) {
    const std::size_t m = 67, n = 200, k = 1000;
    const auto o = make_operands(r, m, n, k, gemm_layout::nk, true, 3);
    std::vector<float> fast(m * n), ref(m * n);
    gemm_config cfg;
    cfg.threads = 2;
    gemm(o.a.view(), o.b.view(), gemm_layout::nk, o.bias, std::span<float>(fast), cfg);
    gemm_reference(o.a.view(), o.b.view(), gemm_layout::nk, o.bias, std::span<float>(ref), gemm_accumulation::fp32_blocks);
    std::size_t bad = 0;
    for (std::size_t i = 0; i < fast.size(); ++i) bad += same_bits(fast[i], ref[i]) ? 0U : 1U;
    INFO(r.name);
    CHECK(bad == 0);
  }
}

TEST_CASE("gemm reads a 32x32-tiled MX tensor in both orientations from the same codes", "[gemm]") {
  // X (R, C) is quantized once with 32x32 tiles. As B stored (K, N) = (R, C) it must give what its
  // byte transpose (codes and scale grid), read as B stored (N, K), gives; the transpose is also a
  // valid 32x32-tiled tensor (the tiles are the same tiles), and both equal the plain-value product
  // of dequantize(X) within the fp32_blocks bound. Shapes include partial tiles on both axes.
  struct shape {
    std::size_t m, r, c;
  };
  for (const scale_rule rule : {scale_rule::floor, scale_rule::rceil, scale_rule::ceil, scale_rule::even})
    for (const shape sh : {shape{5, 64, 96}, shape{9, 45, 70}, shape{1, 32, 33}})
      for (const format_id f : {format_id::float8_e4m3fn, format_id::float8_e5m2}) {
        INFO(to_string(rule) << " " << to_string(f) << " X " << sh.r << "x" << sh.c);
        quant_scheme s = square32(f);
        s.rule = rule;
        const auto x = quantize(random_values(sh.r * sh.c, 7, 4.0f), sh.r, sh.c, s);
        REQUIRE(x.mx_scales().size() == ((sh.r + 31) / 32) * ((sh.c + 31) / 32));
        // the transpose: (C, R) codes, (ceil(C/32), ceil(R/32)) grid
        const std::size_t gr = (sh.r + 31) / 32, gc = (sh.c + 31) / 32;
        std::vector<std::uint8_t> tc(x.codes().size()), tg(x.mx_scales().size());
        for (std::size_t i = 0; i < sh.r; ++i)
          for (std::size_t j = 0; j < sh.c; ++j) tc[j * sh.r + i] = x.codes()[i * sh.c + j];
        for (std::size_t i = 0; i < gr; ++i)
          for (std::size_t j = 0; j < gc; ++j) tg[j * gr + i] = x.mx_scales()[i * gc + j];
        const auto xt = quantized_tensor::from_parts(s, sh.c, sh.r, std::move(tc), {}, std::move(tg));
        const auto xv = dequantize(x), xtv = dequantize(xt);
        for (std::size_t i = 0; i < sh.r; ++i)
          for (std::size_t j = 0; j < sh.c; ++j) REQUIRE(same_bits(xv[i * sh.c + j], xtv[j * sh.r + i]));
        // B kn = X (K = R, N = C) and B nk = X^T: one product, the same bits
        quant_scheme sa = scheme(format_id::float8_e4m3fn, granularity::mx);
        const auto a = quantize(random_values(sh.m * sh.r, 8), sh.m, sh.r, sa);
        std::vector<float> kn(sh.m * sh.c), nk(sh.m * sh.c), ref(sh.m * sh.c);
        gemm(a.view(), x.view(), gemm_layout::kn, {}, std::span<float>(kn));
        gemm(a.view(), xt.view(), gemm_layout::nk, {}, std::span<float>(nk));
        gemm_reference(a.view(), x.view(), gemm_layout::kn, {}, std::span<float>(ref), gemm_accumulation::fp32_blocks);
        std::size_t bad = 0;
        for (std::size_t i = 0; i < kn.size(); ++i) bad += same_bits(kn[i], nk[i]) && same_bits(kn[i], ref[i]) ? 0U : 1U;
        CHECK(bad == 0);
        // X as A (M = R, K = C) and X^T as A (M = C, K = R), each against the reference
        const auto b1 = quantize(random_values(3 * sh.c, 9), 3, sh.c, square32(format_id::float8_e4m3fn));
        const auto b2 = quantize(random_values(3 * sh.r, 10), 3, sh.r, square32(format_id::float8_e4m3fn));
        for (const auto& [aa, bb] : {std::pair{&x, &b1}, std::pair{&xt, &b2}}) {
          std::vector<float> fast(aa->rows() * 3), slow(aa->rows() * 3);
          gemm_config cfg;
          cfg.threads = 2;
          gemm(aa->view(), bb->view(), gemm_layout::nk, {}, std::span<float>(fast), cfg);
          gemm_reference(aa->view(), bb->view(), gemm_layout::nk, {}, std::span<float>(slow), gemm_accumulation::fp32_blocks);
          const auto p = detail::gemm::make_problem(aa->view(), bb->view(), gemm_layout::nk, {}, fast.size());
          const auto exact = gemm_reference_exact_double(aa->view(), bb->view(), gemm_layout::nk);
          std::size_t diff = 0, over = 0;
          for (std::size_t i = 0; i < fast.size(); ++i) {
            diff += same_bits(fast[i], slow[i]) ? 0U : 1U;
            over += std::fabs(static_cast<double>(fast[i]) - exact[i]) <= error_bound(p, i / 3, i % 3, 0.0f) + std::fabs(exact[i]) * 0x1p-52 ? 0U : 1U;
          }
          CHECK(diff == 0);
          CHECK(over == 0);
        }
      }
}
