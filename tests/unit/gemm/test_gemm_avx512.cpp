// The AVX-512 blocked GEMM (gemm/x86/avx512.hpp): both micro-kernels (12 x 32 fp32 FMA and
// 12 x 32 vdpbf16ps on bfloat16 pairs) equal the fp32_blocks reference bit for bit (NaN payloads
// aside), as do the AVX2 and scalar kernels, on random, adversarial (every code, NaN/Inf, E8M0
// extremes, subnormal fp32 scales) and real (PP-OCRv4) operands, for M = 1..9 and across the
// 12-row / 32-column tile, panel and kc edges, K = 0, both B layouts, 1 and 2 threads. And
// vdpbf16ps itself, on this CPU, is the two-fma lane model the proof in docs/gemm.md rests on.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <minifloat/io/npy.hpp>
#include <minifloat/gemm/gemm.hpp>

#include "support/test_data.hpp"

using namespace minifloat;

namespace {

quant_scheme make(format_id f, granularity g) { return quant_scheme::make(f, g); }
quant_scheme block(format_id f, std::size_t r, std::size_t c) {
  quant_scheme s = quant_scheme::make(f, granularity::block);
  s.block_rows = r, s.block_cols = c;
  return s;
}

struct recipe {
  const char* name;
  quant_scheme a, b;  // b for the (N, K) layout
};

quant_scheme square32(format_id f) {  // one E8M0 scale per 32x32 tile, read in both layouts
  quant_scheme s = make(f, granularity::mx);
  s.block_rows = s.block_cols = 32;
  return s;
}

std::vector<recipe> recipes() {
  using F = format_id;
  using G = granularity;
  return {
      {"HiF8 token x channel", make(F::hifloat8, G::token), make(F::hifloat8, G::channel)},
      {"E4M3 tensor", make(F::float8_e4m3fn, G::tensor), make(F::float8_e4m3fn, G::tensor)},
      {"E4M3 x E5M2 tensor", make(F::float8_e4m3fn, G::tensor), make(F::float8_e5m2, G::tensor)},
      {"E4M3 DeepSeek 1x128 x 128x128", block(F::float8_e4m3fn, 1, 128), block(F::float8_e4m3fn, 128, 128)},
      {"E4M3 1x32 A x per-channel B", block(F::float8_e4m3fn, 1, 32), make(F::float8_e4m3fn, G::channel)},
      {"E4M3 odd K-block 1x7 x per-channel", block(F::float8_e4m3fn, 1, 7), make(F::float8_e4m3fn, G::channel)},
      {"MXFP8", make(F::float8_e4m3fn, G::mx), make(F::float8_e4m3fn, G::mx)},
      {"MXFP8 32x32 x 32x32", square32(F::float8_e4m3fn), square32(F::float8_e4m3fn)},
      {"MXFP8 1x32 x E5M2 32x32", make(F::float8_e4m3fn, G::mx), square32(F::float8_e5m2)},
      {"MXFP8 E5M2 x MXFP6 E3M2", make(F::float8_e5m2, G::mx), make(F::float6_e3m2fn, G::mx)},
      {"MXFP6 E2M3 x HiF8 channel", make(F::float6_e2m3fn, G::mx), make(F::hifloat8, G::channel)},
      {"W4A8", make(F::float8_e4m3fn, G::mx), make(F::float4_e2m1fn, G::mx)},
      {"W4A4", make(F::float4_e2m1fn, G::mx), make(F::float4_e2m1fn, G::mx)},
  };
}

/// B's scheme for the (K, N) layout (transposed tiles; per channel becomes block K x 1).
quant_scheme for_kn(quant_scheme s, std::size_t k) {
  if (s.gran == granularity::mx) s.axis = 0;
  else if (s.gran == granularity::block) std::swap(s.block_rows, s.block_cols);
  else if (s.gran == granularity::channel) s = block(s.format, std::max<std::size_t>(k, 1), 1);
  return s;
}

/// One fast-path variant: ISA cap, AVX-512 micro-kernel, threads.
struct variant {
  simd::isa isa;
  gemm_microkernel kernel;
  unsigned threads;
  std::string name() const {
    return std::string(simd::to_string(isa)) + "/" + std::string(to_string(kernel)) + "/t" + std::to_string(threads);
  }
};

std::vector<variant> variants() {
  std::vector<variant> v;
  if (simd::isa_available(simd::isa::avx512)) {
    v.push_back({simd::isa::avx512, gemm_microkernel::fp32_fma, 1});
    v.push_back({simd::isa::avx512, gemm_microkernel::bf16_dot, 1});
    v.push_back({simd::isa::avx512, gemm_microkernel::bf16_dot, 2});
    v.push_back({simd::isa::avx512, gemm_microkernel::fp32_fma, 2});
  }
  if (simd::isa_available(simd::isa::avx2)) v.push_back({simd::isa::avx2, gemm_microkernel::automatic, 1});
  v.push_back({simd::isa::scalar, gemm_microkernel::automatic, 1});
  v.push_back({simd::isa::automatic, gemm_microkernel::automatic, 2});
  return v;
}

/// Mismatching outputs (NaN payloads and NaN signs are not part of the contract).
std::size_t mismatches(const std::vector<float>& x, const std::vector<float>& y) {
  std::size_t bad = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const bool same = std::bit_cast<std::uint32_t>(x[i]) == std::bit_cast<std::uint32_t>(y[i]) ||
                      (std::isnan(x[i]) && std::isnan(y[i]));
    bad += same ? 0U : 1U;
  }
  return bad;
}

/// Runs the blocked path of every variant with small blocks (many tile, panel and kc edges)
/// and the default blocks, against the fp32_blocks reference; returns the mismatches of all.
std::size_t check_all_variants(const quantized_tensor& a, const quantized_tensor& b, gemm_layout layout,
                               const std::vector<float>& bias, const std::string& what) {
  const std::size_t m = a.rows(), n = layout == gemm_layout::nk ? b.rows() : b.cols();
  std::vector<float> ref(m * n);
  gemm_reference(a.view(), b.view(), layout, bias, std::span<float>(ref), gemm_accumulation::fp32_blocks);
  std::size_t total = 0;
  for (const variant& v : variants())
    for (const bool small : {true, false}) {
      gemm_config cfg;
      cfg.path = gemm_path::blocked;
      cfg.isa = v.isa, cfg.microkernel = v.kernel, cfg.threads = v.threads;
      if (small) cfg.mc = 24, cfg.kc = 64, cfg.nc = 64;
      std::vector<float> out(m * n, -1.0f);
      gemm(a.view(), b.view(), layout, bias, std::span<float>(out), cfg);
      const std::size_t bad = mismatches(out, ref);
      INFO(what << " " << to_string(layout) << " " << v.name() << (small ? " small blocks" : ""));
      CHECK(bad == 0);
      total += bad;
    }
  return total;
}

#if MINIFLOAT_SIMD_X86
MINIFLOAT_TARGET_AVX512 float dpbf16_lane(float acc, std::uint32_t a, std::uint32_t b) {
  const __m128bh av = reinterpret_cast<__m128bh>(_mm_set1_epi32(static_cast<int>(a)));
  const __m128bh bv = reinterpret_cast<__m128bh>(_mm_set1_epi32(static_cast<int>(b)));
  return _mm_cvtss_f32(_mm_dpbf16_ps(_mm_set1_ps(acc), av, bv));
}
#endif

std::uint32_t bf16_word(float hi, float lo) {
  return (std::bit_cast<std::uint32_t>(hi) & 0xFFFF0000U) | (std::bit_cast<std::uint32_t>(lo) >> 16);
}

}  // namespace

#if MINIFLOAT_SIMD_X86
TEST_CASE("vdpbf16ps on this CPU is two fp32 fmas, high halves first, DAZ in and FTZ out", "[gemm][avx512]") {
  using detail::gemm::dpbf16_lane_model;
  const auto same = [](float x, float y) {
    return std::bit_cast<std::uint32_t>(x) == std::bit_cast<std::uint32_t>(y) || (std::isnan(x) && std::isnan(y));
  };
  // Without the instruction (no AVX-512 BF16 here) the cases below hold the model itself, which
  // the scalar paths compute with, to the documented order; with it, the instruction and the model.
  const bool hw = simd::isa_available(simd::isa::avx512);
  const auto lane = [hw](float acc, std::uint32_t a, std::uint32_t b) {
    return hw ? ::dpbf16_lane(acc, a, b) : dpbf16_lane_model(acc, a, b);
  };
  // The cases that tell the orders and roundings apart.
  const float big = 0x1p24f;
  CHECK(lane(big, bf16_word(1, 1), bf16_word(1, -1)) == big - 1);  // hi first: 2^24 + 1 ties to 2^24
  CHECK(lane(big, bf16_word(1, 1), bf16_word(1, 1)) == big);       // two roundings, not one
  CHECK(lane(big, bf16_word(2, 1), bf16_word(1, 1)) == big + 4);   // 2^24 + 2, then + 1 ties to even
  // FTZ after the first fma: 2^-126 - 2^-127 flushes to 0, then + 2^-126.
  CHECK(lane(0x1p-126f, bf16_word(0x1p-63f, 0x1p-63f), bf16_word(-0x1p-64f, 0x1p-63f)) == 0x1p-126f);
  CHECK(lane(0.0f, bf16_word(0x1p-65f, 0), bf16_word(0x1p-65f, 0)) == 0.0f);  // 2^-130 flushed
  CHECK(lane(0.0f, bf16_word(0x1p-130f, 0), bf16_word(0x1p100f, 0)) == 0.0f);  // subnormal input: 0
  // A subnormal product into a normal sum is exact (an fma, not a flushed product).
  CHECK(lane(0x1p-103f, bf16_word((1 + 0x1p-7f) * 0x1p-64f, 0), bf16_word(0x1p-63f, 0)) ==
        0x1p-103f + 0x1p-126f);
  if (!hw) return;
  // The model on random words (every bf16 pattern class: subnormals, NaN, Inf) and accumulators.
  std::mt19937 rng(42);
  std::uniform_int_distribution<std::uint32_t> word;
  std::uniform_int_distribution<int> expo(-140, 40);
  std::size_t bad = 0;
  for (int t = 0; t < 200000; ++t) {
    std::uint32_t a = word(rng), b = word(rng);
    if (t % 4 == 0) a &= 0x80FF80FFU, a |= 0x3F003F00U;  // near 1: products that round
    const float acc = t % 3 == 0 ? std::bit_cast<float>(word(rng))
                                 : std::ldexp(static_cast<float>(word(rng) % 1000000) - 500000.0f, expo(rng));
    bad += same(dpbf16_lane(acc, a, b), dpbf16_lane_model(acc, a, b)) ? 0U : 1U;
  }
  CHECK(bad == 0);
}
#endif

TEST_CASE("every product of two GEMM element values is exact in fp32 and 0 or at least 2^-44", "[gemm][avx512]") {
  // The premise of the bf16 kernel's proof (docs/gemm.md): bfloat16-exact operands that are never
  // subnormal, and products whose partial sums can never be subnormal either.
  const format_id fs[] = {format_id::hifloat8, format_id::float8_e4m3fn, format_id::float8_e5m2,
                          format_id::float6_e3m2fn, format_id::float6_e2m3fn, format_id::float4_e2m1fn};
  for (const format_id f : fs) {
    const auto& t = detail::gemm::decode_table_of(f);
    for (const float x : t) {
      if (!std::isfinite(x)) continue;
      CHECK((std::bit_cast<std::uint32_t>(x) & 0xFFFFU) == 0);  // exact in bfloat16
      CHECK((x == 0.0f || std::fabs(x) >= 0x1p-22f));
      CHECK(std::fabs(x) < 0x1p16f);
    }
    for (const format_id g : fs)
      for (const float x : t)
        for (const float y : detail::gemm::decode_table_of(g)) {
          if (!std::isfinite(x) || !std::isfinite(y)) continue;
          const double p = static_cast<double>(x) * static_cast<double>(y);
          REQUIRE(static_cast<double>(x * y) == p);
          REQUIRE((p == 0.0 || std::fabs(p) >= 0x1p-44));
        }
  }
}

TEST_CASE("AVX-512 GEMM equals the fp32_blocks reference on random operands, every shape class", "[gemm][avx512]") {
  struct shape {
    std::size_t m, n, k;
  };
  // M = 1..9 (blocked path forced), across the 12-row tile (11, 12, 13, 25), N across the
  // 32-column tile and 64-column nc (31, 32, 33, 65, 97), K across kc = 64 and the K-blocks
  // (0, 1, 2, 31, 63, 64, 65, 129, 200).
  std::vector<shape> shapes;
  for (std::size_t m = 1; m <= 9; ++m) shapes.push_back({m, m * 7 + 3, 33 + 4 * m});
  for (const shape s : {shape{11, 31, 64}, shape{12, 32, 65}, shape{13, 33, 129}, shape{25, 65, 63},
                        shape{12, 97, 200}, shape{3, 32, 0}, shape{2, 5, 1}, shape{13, 40, 2}, shape{7, 64, 31}})
    shapes.push_back(s);
  unsigned seed = 1;
  for (const auto& r : recipes())
    for (const auto& sh : shapes)
      for (const gemm_layout layout : {gemm_layout::nk, gemm_layout::kn}) {
        const auto xa = test_support::spread_normal(sh.m * sh.k, seed, 4.0f);
        const auto xb = test_support::spread_normal(sh.n * sh.k, seed + 1, 4.0f);
        const auto a = quantize(xa, sh.m, sh.k, r.a);
        const auto b = layout == gemm_layout::nk ? quantize(xb, sh.n, sh.k, r.b) : quantize(xb, sh.k, sh.n, for_kn(r.b, sh.k));
        const std::vector<float> bias = seed % 2 == 0 ? test_support::spread_normal(sh.n, seed + 2, 2.0f) : std::vector<float>{};
        ++seed;
        check_all_variants(a, b, layout, bias,
                           std::string(r.name) + " " + std::to_string(sh.m) + "x" + std::to_string(sh.n) + "x" +
                               std::to_string(sh.k));
      }
}

TEST_CASE("AVX-512 GEMM equals the reference on adversarial operands: every code, NaN/Inf, extreme scales",
          "[gemm][avx512]") {
  const std::size_t m = 13, n = 37, k = 96;
  std::mt19937 rng(5);
  const format_id fs[] = {format_id::hifloat8, format_id::float8_e4m3fn, format_id::float8_e5m2,
                          format_id::float6_e3m2fn, format_id::float6_e2m3fn, format_id::float4_e2m1fn};
  for (const format_id fa : fs)
    for (const format_id fb : {format_id::hifloat8, format_id::float8_e4m3fn, format_id::float4_e2m1fn}) {
      const int ba = detail::format_bits(fa), bb = detail::format_bits(fb);
      // Codes: every code in turn (NaN and Inf included), a few rows that avoid specials.
      const auto codes = [&](std::size_t rows, std::size_t cols, int bits, format_id f, unsigned offset) {
        const std::size_t rb = detail::code_row_bytes(f, cols), ncodes = bits == 4 ? 16 : bits == 6 ? 64 : 256;
        std::vector<std::uint8_t> c(rows * rb, 0);
        for (std::size_t i = 0; i < rows; ++i)
          for (std::size_t j = 0; j < cols; ++j) {
            unsigned code = static_cast<unsigned>((i * cols + j + offset) % ncodes);
            if (i % 4 == 3 && !std::isfinite(detail::gemm::decode_table_of(f)[code])) code = 0;
            if (bits == 4) c[i * rb + j / 2] |= static_cast<std::uint8_t>(code << (4 * (j % 2)));
            else c[i * rb + j] = static_cast<std::uint8_t>(code);
          }
        return c;
      };
      const std::string what = std::string(to_string(fa)) + " x " + std::string(to_string(fb));
      // fp32 scales: per token / per channel, with subnormal, tiny and huge values.
      {
        const std::vector<float> pool = {1.0f, 0x1p-140f, 1e-40f, 3e38f, 0x1p-126f, 0.75f, 0x1p100f, 0x1p-100f};
        std::vector<float> sa(m), sb(n);
        for (auto& s : sa) s = pool[rng() % pool.size()];
        for (auto& s : sb) s = pool[rng() % pool.size()];
        const auto a = quantized_tensor::from_parts(make(fa, granularity::token), m, k, codes(m, k, ba, fa, 0), sa, {});
        const auto b = quantized_tensor::from_parts(make(fb, granularity::channel), n, k, codes(n, k, bb, fb, 7), sb, {});
        check_all_variants(a, b, gemm_layout::nk, {}, what + " fp32 scales");
      }
      // E8M0 scales (MX formats only): 0x00 = 2^-127, 0x01, 0x7F = 1, 0xFE = 2^127, 0xFF = NaN.
      const auto is_mx = [](format_id f) { return f != format_id::hifloat8; };
      if (is_mx(fa) && is_mx(fb)) {
        const std::uint8_t pool[] = {0x00, 0x01, 0x7F, 0x7F, 0x80, 0xFE, 0xFF, 0x40};
        std::vector<std::uint8_t> ea(m * (k / 32)), eb(n * (k / 32));
        for (auto& e : ea) e = pool[rng() % std::size(pool)];
        for (auto& e : eb) e = pool[rng() % std::size(pool)];
        const auto a = quantized_tensor::from_parts(make(fa, granularity::mx), m, k, codes(m, k, ba, fa, 3), {}, ea);
        const auto b = quantized_tensor::from_parts(make(fb, granularity::mx), n, k, codes(n, k, bb, fb, 11), {}, eb);
        check_all_variants(a, b, gemm_layout::nk, test_support::spread_normal(n, 9, 3.0f), what + " E8M0 scales");
      }
    }
}

TEST_CASE("AVX-512 GEMM equals the reference on real weights and activations (PP-OCRv4 SVTR)", "[gemm][avx512]") {
  const std::filesystem::path dir = std::filesystem::path(MINIFLOAT_TEST_DATA_DIR) / ".." / ".." / "data" / "ppocrv4";
  const struct {
    const char* x;
    const char* w;
  } layers[] = {{"line0.svtr0.fc1_in.npy", "rec.linear_79.w_0.npy"}, {"line0.svtr0.fc2_in.npy", "rec.linear_80.w_0.npy"}};
  for (const auto& layer : layers) {
    const auto x = read_npy(dir / "activations" / layer.x);  // tokens x K
    const auto w = read_npy(dir / "weights" / layer.w);      // (K, N)
    const std::size_t m = std::min<std::size_t>(x.shape[0], 40), k = x.shape[1], n = w.shape[1];
    REQUIRE(w.shape[0] == k);
    const auto xs = x.as<float>(), ws = w.as<float>();
    std::vector<float> wt(n * k);  // (N, K) for the nk layout
    for (std::size_t i = 0; i < k; ++i)
      for (std::size_t j = 0; j < n; ++j) wt[j * k + i] = ws[i * n + j];
    for (const auto& r : recipes()) {
      const auto a = quantize(xs.first(m * k), m, k, r.a);
      check_all_variants(a, quantize(wt, n, k, r.b), gemm_layout::nk, {}, std::string(layer.w) + " " + r.name);
      check_all_variants(a, quantize(ws, k, n, for_kn(r.b, k)), gemm_layout::kn, {}, std::string(layer.w) + " " + r.name);
    }
  }
}

TEST_CASE("gemm_microkernel: every choice is accepted on every ISA and gives the same bits", "[gemm][avx512]") {
  const auto a = quantize(test_support::spread_normal(30 * 70, 3, 2.0f), 30, 70, make(format_id::float8_e4m3fn, granularity::mx));
  const auto b = quantize(test_support::spread_normal(50 * 70, 4, 2.0f), 50, 70, make(format_id::float4_e2m1fn, granularity::mx));
  std::vector<float> ref(30 * 50);
  gemm_reference(a.view(), b.view(), gemm_layout::nk, {}, std::span<float>(ref), gemm_accumulation::fp32_blocks);
  for (const simd::isa isa : {simd::isa::automatic, simd::isa::scalar, simd::isa::avx2, simd::isa::avx512}) {
    if (!simd::isa_available(isa)) continue;
    for (const gemm_microkernel mk : {gemm_microkernel::automatic, gemm_microkernel::fp32_fma, gemm_microkernel::bf16_dot}) {
      gemm_config cfg;
      cfg.isa = isa, cfg.microkernel = mk;
      std::vector<float> out(30 * 50);
      gemm(a.view(), b.view(), gemm_layout::nk, {}, std::span<float>(out), cfg);
      INFO(to_string(isa) << " " << to_string(mk));
      CHECK(mismatches(out, ref) == 0);
    }
  }
  CHECK(!to_string(detail::gemm::preferred_microkernel()).empty());
}

TEST_CASE("AVX-512 VBMI decoders equal the format's decode for every code, every start and length", "[gemm][avx512]") {
#if MINIFLOAT_SIMD_X86
  // The tables, on any x86 CPU: the lookup the decoder does (magnitude -> bfloat16 bytes, sign
  // bit 7, HiF8's NaN at 0x80), done in scalar code, gives the format's decode for every code.
  for (const format_id f : {format_id::hifloat8, format_id::float8_e4m3fn, format_id::float8_e5m2,
                            format_id::float6_e3m2fn, format_id::float6_e2m3fn}) {
    INFO(to_string(f));
    const auto* l = simd::detail::bf16_bytes_of(f);  // simd/decode_tables.hpp
    REQUIRE(l != nullptr);
    CHECK(l->ok);
    const auto& t = detail::gemm::decode_table_of(f);
    std::size_t bad = 0;
    for (unsigned c = 0; c < 256; ++c) {
      std::uint32_t hi = l->hi[c & 0x7FU], lo = l->lo[c & 0x7FU];
      if (l->sign7) hi |= c & 0x80U;
      if (l->nan80 && c == 0x80U) hi = 0x7F, lo = 0xC0;
      const float got = std::bit_cast<float>(((hi << 8) | lo) << 16), want = t[c];
      bad += (std::bit_cast<std::uint32_t>(got) == std::bit_cast<std::uint32_t>(want) || (std::isnan(got) && std::isnan(want))) ? 0U : 1U;
    }
    CHECK(bad == 0);
  }
  if (!simd::isa_available(simd::isa::avx512)) return;  // the instructions themselves need AVX-512 VBMI
  for (const format_id f : {format_id::hifloat8, format_id::float8_e4m3fn, format_id::float8_e5m2,
                            format_id::float6_e3m2fn, format_id::float6_e2m3fn}) {
    INFO(to_string(f));
    REQUIRE(simd::detail::bf16_bytes_of(f) != nullptr);
    detail::gemm::operand o;
    o.format = f;
    o.bits = detail::format_bits(f);
    o.table = &detail::gemm::decode_table_of(f);
    std::vector<std::uint8_t> codes(600);
    for (std::size_t c = 0; c < codes.size(); ++c) codes[c] = static_cast<std::uint8_t>((c * 7 + c / 256) & 0xFF);
    o.codes = codes.data();
    o.row_bytes = codes.size();
    const auto& t = *o.table;
    for (const std::size_t start : {std::size_t{0}, std::size_t{1}, std::size_t{63}})
      for (const std::size_t n : {std::size_t{1}, std::size_t{2}, std::size_t{31}, std::size_t{64}, std::size_t{65},
                                  std::size_t{127}, std::size_t{511}}) {
        std::vector<float> v(n + 16, -7.0f);
        std::vector<std::uint32_t> w((n + 1) / 2 + 16, 0xDEADBEEFU);
        detail::gemm::decode_run_vbmi(o, 0, start, n, v.data());
        detail::gemm::decode_words_vbmi(o, 0, start, n, w.data());
        std::size_t bad = 0;
        for (std::size_t i = 0; i < n; ++i) {
          const float want = t[codes[start + i]];
          bad += (std::bit_cast<std::uint32_t>(v[i]) == std::bit_cast<std::uint32_t>(want) ||
                  (std::isnan(v[i]) && std::isnan(want)))
                     ? 0U
                     : 1U;
        }
        for (std::size_t i = n; i < v.size(); ++i) bad += v[i] == -7.0f ? 0U : 1U;  // nothing past n written
        for (std::size_t j = 0; j < (n + 1) / 2; ++j) {
          const float x = t[codes[start + 2 * j]], y = 2 * j + 1 < n ? t[codes[start + 2 * j + 1]] : 0.0f;
          const std::uint32_t want = detail::gemm::bf16_pair(x, y), got = w[j];
          const auto nan16 = [](std::uint32_t h) { return (h & 0x7F80U) == 0x7F80U && (h & 0x7FU) != 0; };
          const bool hi_ok = (got >> 16) == (want >> 16) || (nan16(got >> 16) && nan16(want >> 16));
          const bool lo_ok = (got & 0xFFFFU) == (want & 0xFFFFU) || (nan16(got & 0xFFFFU) && nan16(want & 0xFFFFU));
          bad += hi_ok && lo_ok ? 0U : 1U;
        }
        for (std::size_t j = (n + 1) / 2; j < w.size(); ++j) bad += w[j] == 0xDEADBEEFU ? 0U : 1U;
        CAPTURE(start, n);
        CHECK(bad == 0);
      }
  }
  CHECK(simd::detail::bf16_bytes_of(format_id::float4_e2m1fn) == nullptr);
#endif
}
