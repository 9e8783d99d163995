// Attention benchmarks (issue 14): a decode step over a quantized KV cache and a causal prefill,
// shapes of a current LLM (Hq = 32, Hkv = 8, d = dv = 128).
//
//   decode/<cache>/T:<T>/threads:<n>   one query token per head over T cached tokens. Every cache
//       runs the same kernel (block_kernels.hpp's choice: counter kernel) with its own
//       best operands: "all-<format>" recipes, q and P in the cache's format family
//       (fp32: q, P fp32; bf16: q, P bf16; hifloat8 / float8_e4m3fn: q per tensor and P in that
//       format; mxfp8_e4m3: q MX along d, P E4M3). items/s = cached tokens x KV heads read per
//       second (counter Mtok/s); GB/s = cache bytes read per second. Counters use wall-clock time
//       (the Time column); CPU time misses the second thread.
//       Caches that the decode layouts take (bf16, hifloat8, float8_e4m3fn: kv_cache's storage
//       automatic, attention/kv_tiles.hpp) run the AVX-512 kernel over key tiles
//       (x86/avx512_tiles.hpp; counter tiles = 1).
//   decode/<cache>/T:<T>/storage:rows/threads:1   the same step on a row-major cache (the
//       row-major AVX-512 kernel, x86/avx512.hpp), for the caches the decode layouts take.
//   decode/<cache>/T:<T>/q:fp32/threads:<n>   the same cache with fp32 q and P (exact products).
//   decode/<cache>/T:<T>/kernel:amx/threads:1   the same step on a row-major cache on the AMX tile kernel (where the CPU
//       has AMX), which decode blocks took before the AVX-512 kernel (x86/avx512.hpp). Counter
//       kernel: 1 AMX, 2 AVX-512, 3 AVX2, 0 scalar twin (block_kernels.hpp's choice for a decode block).
//   decode/<cache>/T:<T>/kernel:avx2/threads:1   the same step on the AVX2 kernel (x86/avx2.hpp),
//       registered where the CPU has AVX-512 (without it, the rows above run the AVX2 kernel).
//   decode/<cache>/T:<T>/kernel:avx512/threads:1 and .../kernel:avx512_bf16/threads:1   the
//       AVX-512 kernel on fp32 FMAs and on bfloat16 pairs (vdpbf16ps; the same bits), for the
//       caches the pairs form reads (bf16, hifloat8, float8_e4m3fn), where the CPU has AVX-512:
//       over key tiles, and with /storage:rows on a row-major cache.
//       Counter kernel 4: the automatic choice is the pairs form (simd/x86/avx512_dot_rate.hpp).
//   prefill/<recipe>/T:2048/threads:<n>   causal, Q K V and P in <recipe> (fp32, bf16, hifloat8,
//       float8_e4m3fn, mxfp8_e4m3); GFLOP/s counts 4 d flops per visible (query, key) pair.
//       Blocks of 64 rows: AMX where the CPU has it, else the AVX-512 panel kernel
//       (x86/avx512_panels.hpp) in the form of counter kernel (2 FMA, 4 bfloat16 pairs).
//   fma_peak/threads:1   the fp32 FMA peak of one core (AVX-512 FMAs, or AVX2 FMAs without
//       AVX-512; 12 chains; fma_peak.hpp, the same loop as the GEMM rows' counter): the roof.
// The targets compare rows of the same run: bench/README.md#attention-attention.
#include <benchmark/benchmark.h>

#include <minifloat/attention/kv_cache.hpp>

#include "fma_peak.hpp"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace minifloat;
using namespace minifloat::attention;

constexpr std::size_t hq = 32, hkv = 8, dim = 128;

struct cache_kind {
  const char* name;
  const char* k;
  const char* v;
  const char* q;
  const char* p;
};
constexpr cache_kind caches[] = {
    {"fp32", "fp32", "fp32", "fp32", "fp32"},
    {"bf16", "bf16", "bf16", "bf16", "bf16"},
    {"hifloat8", "hifloat8/tensor", "hifloat8/tensor", "hifloat8/tensor", "hifloat8"},
    {"float8_e4m3fn", "float8_e4m3fn/tensor", "float8_e4m3fn/tensor", "float8_e4m3fn/tensor", "float8_e4m3fn"},
    {"mxfp8_e4m3", "mxfp8_e4m3", "mxfp8_e4m3/axis=0", "mxfp8_e4m3", "float8_e4m3fn"},
};

std::vector<float> gaussian(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::normal_distribution<float> nd;
  std::vector<float> x(n);
  for (auto& v : x) v = nd(g);
  return x;
}

std::unique_ptr<kv_cache> build_cache(const cache_kind& c, std::size_t t, kv_storage storage) {
  kv_cache_config cfg;
  cfg.kv_heads = hkv, cfg.head_dim = dim, cfg.v_dim = dim, cfg.storage = storage;
  cfg.k = parse_operand_scheme(c.k, "K"), cfg.v = parse_operand_scheme(c.v, "V");
  auto cache = std::make_unique<kv_cache>(cfg);
  constexpr std::size_t step = 2048;
  for (std::size_t t0 = 0; t0 < t; t0 += step) {
    const std::size_t n = std::min(step, t - t0);
    const auto k = gaussian(hkv * n * dim, 2 * t0 + 1), v = gaussian(hkv * n * dim, 2 * t0 + 2);
    cache->append(k, v, n);
  }
  return cache;
}

/// Whether the cache and its own recipe (q and P in its format family) fit the bfloat16-pairs
/// kernel (x86/avx512.hpp, pairs_apply): 8-bit codes without MX scales, or bfloat16.
bool pairs_fit(const cache_kind& c) {
  const std::string n = c.name;
  return n == "bf16" || n == "hifloat8" || n == "float8_e4m3fn";
}

/// The counter `kernel`: 1 AMX, 2 AVX-512 (FMA form), 3 AVX2, 4 AVX-512 (bfloat16-pairs form), 0 scalar twin.
double kernel_counter(block_kernel k) {
  return k == block_kernel::amx           ? 1
         : k == block_kernel::avx512      ? 2
         : k == block_kernel::avx2        ? 3
         : k == block_kernel::avx512_bf16 ? 4
                                          : 0;
}

void decode(benchmark::State& state, const cache_kind& c, std::size_t t, bool fp32_q, block_kernel kernel,
            kv_storage storage = kv_storage::automatic) {
  const auto cache = build_cache(c, t, storage);
  decode_recipe r;
  if (!fp32_q) r.q = parse_operand_scheme(c.q, "q"), r.p.format = parse_static_format(c.p, "P");
  const auto q = gaussian(hq * dim, 7);
  attention_options opt;
  opt.threads = static_cast<unsigned>(state.range(0));
  opt.kernel = kernel;
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) {
    auto res = decode_step(*cache, q, hq, 1, r, opt);
    benchmark::DoNotOptimize(res.out.data());
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const auto iters = static_cast<double>(state.iterations());
  state.counters["GB/s"] = static_cast<double>(cache->bytes()) * iters / wall * 1e-9;
  state.counters["Mtok/s"] = static_cast<double>(t * hkv) * iters / wall * 1e-6;
  state.counters["kernel"] =
      kernel_counter(minifloat::attention::detail::kernel_for(hq / hkv, true, pairs_fit(c) && !fp32_q, simd::isa::automatic, kernel));
  state.counters["tiles"] = cache->tiled() ? 1 : 0;
}

void prefill(benchmark::State& state, const cache_kind& c) {
  constexpr std::size_t t = 2048;
  const attention_shape s{1, hq, hkv, t, t, dim, dim};
  const auto q = gaussian(s.q_size(), 11), k = gaussian(s.k_size(), 12), v = gaussian(s.v_size(), 13);
  attention_recipe r;
  r.q = parse_operand_scheme(c.q, "Q"), r.k = parse_operand_scheme(c.k, "K"), r.v = parse_operand_scheme(c.v, "V");
  r.p.format = parse_static_format(c.p, "P");
  attention_options opt;
  opt.mask = mask_kind::causal;
  opt.threads = static_cast<unsigned>(state.range(0));
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) {
    auto res = attention_forward(q, k, v, s, r, opt);
    benchmark::DoNotOptimize(res.out.data());
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double flops = 4.0 * static_cast<double>(hq * dim) * static_cast<double>(t) * static_cast<double>(t + 1) / 2.0;
  state.counters["GFLOP/s"] = flops * static_cast<double>(state.iterations()) / wall * 1e-9;
  // MX: the grid condition of the panel kernel's pairs form (panel_pairs_apply) holds on these operands
  const bool pairs = pairs_fit(c) || std::string(c.name) == "mxfp8_e4m3";
  state.counters["kernel"] = kernel_counter(minifloat::attention::detail::kernel_for(max_block_rows, true, pairs, simd::isa::automatic,
                                                                                     block_kernel::automatic));
}

const int registered = [] {
  for (const std::size_t t : {std::size_t{4096}, std::size_t{16384}, std::size_t{65536}})
    for (const auto& c : caches)
      for (const bool fq : {false, true}) {
        if (fq && (std::string(c.name) == "fp32")) continue;
        const std::string name =
            std::string("decode/") + c.name + "/T:" + std::to_string(t) + (fq ? "/q:fp32" : "");
        benchmark::RegisterBenchmark(name.c_str(), [&c, t, fq](benchmark::State& st) { decode(st, c, t, fq, block_kernel::automatic); })
            ->Arg(1)->Arg(2)->ArgName("threads")->Unit(benchmark::kMicrosecond);
      }
  if (minifloat::attention::detail::use_amx(simd::isa::automatic))
    for (const std::size_t t : {std::size_t{4096}, std::size_t{16384}, std::size_t{65536}})
      for (const auto& c : caches)
        benchmark::RegisterBenchmark((std::string("decode/") + c.name + "/T:" + std::to_string(t) + "/kernel:amx").c_str(),
                                     [&c, t](benchmark::State& st) { decode(st, c, t, false, block_kernel::amx, kv_storage::rows); })
            ->Arg(1)->ArgName("threads")->Unit(benchmark::kMicrosecond);
  if (minifloat::attention::detail::use_avx512(simd::isa::automatic))
    for (const std::size_t t : {std::size_t{4096}, std::size_t{16384}, std::size_t{65536}})
      for (const auto& c : caches)
        benchmark::RegisterBenchmark((std::string("decode/") + c.name + "/T:" + std::to_string(t) + "/kernel:avx2").c_str(),
                                     [&c, t](benchmark::State& st) { decode(st, c, t, false, block_kernel::avx2, kv_storage::rows); })
            ->Arg(1)->ArgName("threads")->Unit(benchmark::kMicrosecond);
  if (minifloat::attention::detail::use_avx512(simd::isa::automatic))
    for (const std::size_t t : {std::size_t{4096}, std::size_t{16384}, std::size_t{65536}})
      for (const auto& c : caches) {
        if (!pairs_fit(c)) continue;
        benchmark::RegisterBenchmark((std::string("decode/") + c.name + "/T:" + std::to_string(t) + "/storage:rows").c_str(),
                                     [&c, t](benchmark::State& st) { decode(st, c, t, false, block_kernel::automatic, kv_storage::rows); })
            ->Arg(1)->ArgName("threads")->Unit(benchmark::kMicrosecond);
        for (const auto storage : {kv_storage::automatic, kv_storage::rows})
          for (const auto kernel : {block_kernel::avx512, block_kernel::avx512_bf16})
            benchmark::RegisterBenchmark((std::string("decode/") + c.name + "/T:" + std::to_string(t) + "/kernel:" +
                                          std::string(minifloat::to_string(kernel)) + (storage == kv_storage::rows ? "/storage:rows" : "")).c_str(),
                                         [&c, t, kernel, storage](benchmark::State& st) { decode(st, c, t, false, kernel, storage); })
                ->Arg(1)->ArgName("threads")->Unit(benchmark::kMicrosecond);
      }
  for (const auto& c : caches)
    benchmark::RegisterBenchmark((std::string("prefill/") + c.name + "/T:2048").c_str(),
                                 [&c](benchmark::State& st) { prefill(st, c); })
        ->Arg(1)->Arg(2)->ArgName("threads")->Unit(benchmark::kMillisecond);
  if (minifloat_bench::fma_peak_available())
    benchmark::RegisterBenchmark("fma_peak", minifloat_bench::fma_peak_benchmark)->Arg(1)->ArgName("threads")->Unit(benchmark::kMillisecond);
  return 0;
}();

}  // namespace
