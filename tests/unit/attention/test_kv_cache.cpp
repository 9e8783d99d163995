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

TEST_CASE("kv cache: the bfloat16-pairs kernel gives the AVX-512 FMA kernel's bits", "[attention]") {
  // The two forms of x86/avx512.hpp (docs/attention.md#bfloat16-pairs-kernel): same sums in the
  // same order, so the same bits, for every cache they both read. Where the CPU lacks AVX-512
  // both requests fall back to the same kernel and the comparison still runs.
  std::size_t cases = 0;
  for (const auto& [ks, ps] : {std::pair{"hifloat8/tensor", "hifloat8"}, std::pair{"float8_e4m3fn/tensor", "float8_e4m3fn"},
                               std::pair{"float8_e5m2/tensor", "float8_e5m2"}, std::pair{"bf16", "bf16"}})
    for (const std::size_t d : {std::size_t{128}, std::size_t{72}, std::size_t{40}})
      for (const std::size_t t : {std::size_t{1}, std::size_t{63}, std::size_t{65}, std::size_t{200}})
        for (const std::size_t n : {std::size_t{1}, std::size_t{2}}) {
          if (n > t) continue;
          INFO(ks << " d " << d << " T " << t << " n " << n);
          kv_cache c(config(ks, ks, 2, d, d));
          c.append(gaussian(2 * t * d, 21 + t), gaussian(2 * t * d, 22 + d), t);
          decode_recipe r;
          r.q = parse_operand_scheme(ks, "q"), r.p.format = parse_static_format(ps, "P");
          attention_options o;
          o.mask = mask_kind::causal;
          const auto q = gaussian(8 * n * d, 23);
          o.kernel = block_kernel::avx512;
          const auto fma = decode_step(c, q, 8, n, r, o);
          o.kernel = block_kernel::avx512_bf16;
          const auto pairs = decode_step(c, q, 8, n, r, o);
          REQUIRE(fma.out.size() == pairs.out.size());
          for (std::size_t i = 0; i < fma.out.size(); ++i) REQUIRE(std::bit_cast<std::uint32_t>(fma.out[i]) == std::bit_cast<std::uint32_t>(pairs.out[i]));
          ++cases;
        }
  CHECK(cases == 84);
}

TEST_CASE("kv cache: which decode blocks the bfloat16-pairs kernel takes", "[attention]") {
  using minifloat::attention::detail::kernel_for;
  const bool avx512 = minifloat::attention::detail::use_avx512(simd::isa::automatic);
  const block_kernel fallback = avx512 ? block_kernel::avx512 : kernel_for(4, true, false, simd::isa::automatic, block_kernel::avx512);
  // forced: only where pairs apply
  CHECK(kernel_for(4, true, true, simd::isa::automatic, block_kernel::avx512_bf16) == (avx512 ? block_kernel::avx512_bf16 : fallback));
  CHECK(kernel_for(4, true, false, simd::isa::automatic, block_kernel::avx512_bf16) == fallback);
  // automatic: where the core runs pairs faster than fp32 FMAs (measured once per process)
  const bool fast = simd::avx512::bf16_pairs_beat_fma();
  CHECK(fast == simd::avx512::bf16_pairs_beat_fma());
  if (!avx512) CHECK_FALSE(fast);
  CHECK(kernel_for(4, true, true, simd::isa::automatic, block_kernel::automatic) == (fast ? block_kernel::avx512_bf16 : fallback));
  CHECK(kernel_for(4, true, false, simd::isa::automatic, block_kernel::automatic) == fallback);
  CHECK(kernel_for(4, true, true, simd::isa::avx2, block_kernel::avx512_bf16) != block_kernel::avx512_bf16);
  CHECK(minifloat::to_string(block_kernel::avx512_bf16) == "avx512_bf16");
  CHECK(minifloat::parse_enum<block_kernel>("avx512_bf16") == block_kernel::avx512_bf16);
#if MINIFLOAT_SIMD_X86
  // pairs_apply: q must be bfloat16 and normal, P a bfloat16-exact format, K and V 8-bit codes
  // without MX scales or bfloat16
  std::vector<std::uint8_t> codes(64 * 32, 0x11);
  std::vector<float> q(4 * 32, 0.5f), out(4 * 32), m(4), l(4);
  std::vector<std::size_t> limit(4, 64);
  block_args a;
  a.k = {element_kind::code8, format_id::hifloat8, codes.data(), 32, 64, 32};
  a.v = a.k;
  a.rows = 4, a.q = q.data(), a.q_stride = 32, a.limit = limit.data(), a.out = out.data(), a.out_stride = 32, a.m = m.data(), a.l = l.data();
  a.p.format = format_id::hifloat8;
  CHECK(minifloat::attention::detail::x86::pairs_apply(a) == MINIFLOAT_ATTENTION_X86);
  q[5] = 0.1f;  // not a bfloat16
  CHECK_FALSE(minifloat::attention::detail::x86::pairs_apply(a));
  q[5] = 0x1p-130f;  // a bfloat16, but subnormal
  CHECK_FALSE(minifloat::attention::detail::x86::pairs_apply(a));
  q[5] = 0.5f;
  a.p.format.reset();  // fp32 P
  CHECK_FALSE(minifloat::attention::detail::x86::pairs_apply(a));
  a.p.format = format_id::float16;
  CHECK_FALSE(minifloat::attention::detail::x86::pairs_apply(a));
  a.p.format = format_id::bfloat16;
  CHECK(minifloat::attention::detail::x86::pairs_apply(a) == MINIFLOAT_ATTENTION_X86);
  std::vector<std::uint8_t> scales(64, 127);
  a.v.mx = scales.data(), a.v.mx_stride = 32, a.v.mx_axis = 0;
  CHECK_FALSE(minifloat::attention::detail::x86::pairs_apply(a));
#endif
}

TEST_CASE("kv cache: the decode layouts hold the row-major cache's codes", "[attention]") {
  // kv_tiles.hpp: the same codes at other places. Values, the scalar twin and the kernels that
  // read rows (fed a row-major copy) give the row-major cache's bits; the tile kernel stays
  // within the bound (the decode test above runs it on every recipe).
  std::size_t cases = 0;
  for (const char* ks : {"hifloat8/tensor", "float8_e4m3fn/tensor", "bf16"})
    for (const std::size_t d : {std::size_t{128}, std::size_t{40}, std::size_t{6}})
      for (const std::size_t t : {std::size_t{1}, std::size_t{17}, std::size_t{70}}) {
        INFO(ks << " d " << d << " T " << t);
        auto cfg = config(ks, ks, 2, d, d == 6 ? 3 : d);
        cfg.k_scale = 0.125f, cfg.v_scale = 0.0625f;  // static: one bulk append and single-token ones agree
        cfg.storage = kv_storage::rows;
        kv_cache rows(cfg);
        cfg.storage = kv_storage::tiles;
        kv_cache tiles(cfg);
        CHECK_FALSE(rows.tiled());
        REQUIRE(tiles.tiled());
        const auto k = gaussian(2 * t * d, 31 + t), v = gaussian(2 * t * cfg.v_dim, 32 + d);
        rows.append(k, v, t);
        for (std::size_t i = 0; i < t; ++i)
          tiles.append(token_slice(k, 2, t, d, i, i + 1), token_slice(v, 2, t, cfg.v_dim, i, i + 1), 1);
        for (std::size_t h = 0; h < 2; ++h) {
          CHECK(tiles.dequantized_k(h) == rows.dequantized_k(h));
          CHECK(tiles.dequantized_v(h) == rows.dequantized_v(h));
        }
        decode_recipe r;
        r.q = parse_operand_scheme(ks, "q");
        const auto q = gaussian(8 * d, 33);
        for (const auto& [isa, kernel] : {std::pair{simd::isa::scalar, block_kernel::automatic}, std::pair{simd::isa::automatic, block_kernel::avx2}}) {
          attention_options o;
          o.isa = isa, o.kernel = kernel;
          const auto a = decode_step(rows, q, 8, 1, r, o), b = decode_step(tiles, q, 8, 1, r, o);
          REQUIRE(a.out.size() == b.out.size());
          for (std::size_t i = 0; i < a.out.size(); ++i) REQUIRE(std::bit_cast<std::uint32_t>(a.out[i]) == std::bit_cast<std::uint32_t>(b.out[i]));
        }
        ++cases;
      }
  CHECK(cases == 27);
  // the layouts put every element at its own byte
  for (const std::size_t eb : {std::size_t{1}, std::size_t{2}}) {
    // 100 keys: one whole group of 64 and a partial one (the stored keys carry the padding)
    const std::size_t d = 40, keys = 100, rk = tiles::key_tile_row_bytes(d, eb), rv = tiles::key_pair_row_bytes(d, eb);
    REQUIRE(tiles::stored_keys(kv_order::key_tiles, keys) == 128);
    REQUIRE(tiles::stored_keys(kv_order::key_pairs, keys) == 128);
    std::vector<int> kseen(tiles::stored_keys(kv_order::key_tiles, keys) * rk, 0), vseen(tiles::stored_keys(kv_order::key_pairs, keys) * rv, 0);
    for (std::size_t j = 0; j < keys; ++j)
      for (std::size_t c = 0; c < d; ++c) {
        ++kseen.at(tiles::key_tile_offset(j, c, rk, eb) / eb);
        ++vseen.at(tiles::key_pair_offset(j, c, rv, eb) / eb);
      }
    for (const int n : kseen) CHECK(n <= 1);
    for (const int n : vseen) CHECK(n <= 1);
    // each step of the tile kernel reads its group front to back: unit u of the 4 tiles side by
    // side, then u + 1 (K); a pair's 64 columns, then the next pair's, block by block (V)
    const std::size_t rv128 = tiles::key_pair_row_bytes(128, eb);
    for (std::size_t j = 0; j < 64; ++j) {
      CHECK(tiles::key_tile_offset(j, 0, rk, eb) / tiles::group_unit_bytes == 0);
      CHECK(tiles::key_tile_offset(j, 0, rk, eb) / tiles::unit_bytes == j / 16);
      CHECK(tiles::key_tile_offset(j, eb == 1 ? 4 : 2, rk, eb) == tiles::key_tile_offset(j, 0, rk, eb) + tiles::group_unit_bytes);
      CHECK(tiles::key_pair_offset(j, 0, rv128, eb) / tiles::pair_block_bytes(eb) == j / 2);
      CHECK(tiles::key_pair_offset(j, 64, rv128, eb) / tiles::pair_block_bytes(eb) == 32 + j / 2);
    }
    CHECK(tiles::key_tile_offset(64, 0, rk, eb) == 64 * rk + tiles::key_tile_offset(0, 0, rk, eb));
    CHECK(tiles::key_pair_offset(64, 0, rv, eb) == 64 * rv + tiles::key_pair_offset(0, 0, rv, eb));
  }
}

#if MINIFLOAT_ATTENTION_X86
TEST_CASE("the tile kernel times both ways of fetching a long block and keeps the faster", "[attention][kv_cache]") {
  using minifloat::attention::detail::x86::fetch_choice;
  fetch_choice f;
  // short blocks: software prefetch, untimed
  for (std::size_t ci = 0; ci < 23; ++ci) {
    CHECK(f.for_chunk(ci, 23) == fetch_choice::software);
    f.timed(ci, 23, 0, 1000);
  }
  // one block: chunks 0-5 the way not chosen (hardware), 6-11 the chosen one (software), each
  // timed on its last 4, then the faster
  const auto block = [&f](std::size_t chunks, std::uint64_t hw, std::uint64_t sw) {
    std::vector<fetch_choice::mode> ways;
    for (std::size_t ci = 0; ci < chunks; ++ci) {
      const auto m = f.for_chunk(ci, chunks);
      ways.push_back(m);
      f.timed(ci, chunks, 100, 100 + (m == fetch_choice::hardware ? hw : sw));
    }
    return ways;
  };
  auto w = block(40, 10, 20);
  // hardware was faster: the rest of the block runs it, and so does the next block after its tries
  for (std::size_t ci = 0; ci < 40; ++ci) CHECK(w[ci] == (ci < 6 || ci >= 12 ? fetch_choice::hardware : fetch_choice::software));
  // the next block tries software first; it is faster now, but its running mean (20, then 5) is not yet
  w = block(40, 10, 5);
  for (std::size_t ci = 0; ci < 40; ++ci) CHECK(w[ci] == (ci < 6 ? fetch_choice::software : fetch_choice::hardware));
  CHECK(f.for_chunk(12, 40) == fetch_choice::hardware);  // means: hardware 40, software 50 ticks
  w = block(40, 10, 5);
  CHECK(f.for_chunk(12, 40) == fetch_choice::software);  // software 35 < hardware 40
  CHECK(f.for_chunk(0, 40) == fetch_choice::hardware);   // and the next block tries hardware first
}
#endif
