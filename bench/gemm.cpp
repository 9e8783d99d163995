// Quantized GEMM / GEMV (include/minifloat/gemm) next to OpenBLAS cblas_sgemm / cblas_sgemv on
// fp32 copies of the same matrices (the dequantized values), in one binary, 1 and 2 threads.
// Built only when OpenBLAS is found (bench/CMakeLists.txt). Read the ratios, not the absolute
// numbers: bench/README.md "## GEMM" records them.
//
//   gemm/<recipe>/<size>/threads:<t>    M = N = K = size, B stored (N, K) ("weights (out, in)"),
//                                       the default path (simd::isa::automatic, microkernel automatic)
//   gemm_avx2/<recipe>/...              the same capped at simd::isa::avx2 (the 6 x 16 fp32 kernel)
//   gemm_avx512_fp32/<recipe>/...       AVX-512, gemm_microkernel::fp32_fma (12 x 32 zmm FMAs)
//   gemm_bf16/<recipe>/...              AVX-512, gemm_microkernel::bf16_dot (12 x 32 vdpbf16ps)
//   sgemm/<size>/threads:<t>            cblas_sgemm(RowMajor, NoTrans, Trans) on the same values; label:
//                                       the OpenBLAS core that ran it (openblas_get_corename())
//   sgemm_tuned/<size>/threads:<t>      only where that core is a generic fallback (Prescott, ...) on a
//                                       CPU with AVX-512 or AVX2: the same call on a second copy of
//                                       OpenBLAS loaded with OPENBLAS_CORETYPE=SKYLAKEX / HASWELL,
//                                       its result checked against the default's first
//                                       (openblas_baseline.hpp; counter check = worst |diff| / bound)
//   gemv/<recipe>/<N>/threads:<t>       1 x 4096 x N, B (N, K)
//   sgemv/<N>/threads:<t>               cblas_sgemv(RowMajor, NoTrans) on W (N, K)
//   sgemv_tuned/<N>/threads:<t>         as sgemm_tuned
//   gemv_packed/<recipe>/<N>/threads:<t>  1 x 4096 x N, B packed once (packed_weights, outside the
//                                       timing loop, as inference packs weights at load time)
//   gemv_packed_avx2/<recipe>/...       the same with simd::isa::avx2 (HiF8 also has an AVX-512 path)
// Counter GFLOP/s = 2 M N K per second. Every GEMM row (gemm*, sgemm*) also carries
// fma_peak_gflops, the measured fp32 FMA roof of one core (fma_peak.hpp), and peak_fraction, its
// GFLOP/s over threads x that roof. The benchmark context names the OpenBLAS core (openblas_core)
// and, where it is a fallback, what the tuned rows run (openblas_baseline). Each benchmark
// repeats (--benchmark_repetitions, default 3 here) and reports a "best" aggregate (fastest
// repetition): the machine this was written on is shared, and the best of a few runs is the
// least disturbed one, for OpenBLAS and us alike.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <minifloat/gemm/gemm.hpp>

#include "fma_peak.hpp"
#include "openblas_baseline.hpp"

namespace {

using namespace minifloat;
namespace blas = minifloat_bench::openblas;

std::vector<float> random_values(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

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

const recipe recipes[] = {
    {"hif8_token_x_channel", make(format_id::hifloat8, granularity::token), make(format_id::hifloat8, granularity::channel)},
    {"e4m3_tensor", make(format_id::float8_e4m3fn, granularity::tensor), make(format_id::float8_e4m3fn, granularity::tensor)},
    {"e4m3_deepseek_1x128_128x128", block(format_id::float8_e4m3fn, 1, 128), block(format_id::float8_e4m3fn, 128, 128)},
    {"mxfp8", make(format_id::float8_e4m3fn, granularity::mx), make(format_id::float8_e4m3fn, granularity::mx)},
    {"mxfp4_w4a8", make(format_id::float8_e4m3fn, granularity::mx), make(format_id::float4_e2m1fn, granularity::mx)},
    {"mxfp4_w4a4", make(format_id::float4_e2m1fn, granularity::mx), make(format_id::float4_e2m1fn, granularity::mx)},
};

struct operands {
  quantized_tensor a, b;
  std::vector<float> a32, b32;  // dequantized copies for OpenBLAS
};

/// Quantized once per (recipe, shape) and kept: quantizing 2048^2 takes longer than a GEMM.
const operands& get(std::size_t r, std::size_t m, std::size_t n, std::size_t k) {
  static std::map<std::tuple<std::size_t, std::size_t, std::size_t, std::size_t>, std::unique_ptr<operands>> cache;
  auto& slot = cache[{r, m, n, k}];
  if (!slot) {
    slot = std::make_unique<operands>();
    slot->a = quantize(random_values(m * k, 1), m, k, recipes[r].a);
    slot->b = quantize(random_values(n * k, 2), n, k, recipes[r].b);
    slot->a32 = dequantize(slot->a);
    slot->b32 = dequantize(slot->b);
  }
  return *slot;
}

void set_flops(benchmark::State& state, double m, double n, double k) {
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * m * n * k * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

/// One blocked-path variant: the ISA cap and the AVX-512 micro-kernel.
struct variant {
  const char* prefix;
  simd::isa isa;
  gemm_microkernel kernel;
};
const variant variants[] = {
    {"gemm", simd::isa::automatic, gemm_microkernel::automatic},
    {"gemm_avx2", simd::isa::avx2, gemm_microkernel::automatic},
    {"gemm_avx512_fp32", simd::isa::avx512, gemm_microkernel::fp32_fma},
    {"gemm_bf16", simd::isa::avx512, gemm_microkernel::bf16_dot},
};

void bm_gemm(benchmark::State& state, std::size_t r, const variant& v) {
  const auto s = static_cast<std::size_t>(state.range(0));
  const auto& o = get(r, s, s, s);
  std::vector<float> c(s * s);
  gemm_config cfg;
  cfg.threads = static_cast<unsigned>(state.range(1));
  cfg.path = gemm_path::blocked;
  cfg.isa = v.isa;
  cfg.microkernel = v.kernel;
  for (auto _ : state) {
    gemm(o.a.view(), o.b.view(), gemm_layout::nk, {}, std::span<float>(c), cfg);
    benchmark::DoNotOptimize(c.data());
  }
  set_flops(state, static_cast<double>(s), static_cast<double>(s), static_cast<double>(s));
  minifloat_bench::add_fma_peak_counters(state, 2.0 * static_cast<double>(s) * static_cast<double>(s) * static_cast<double>(s),
                                         static_cast<int>(state.range(1)));
}

/// The tuned copy's result against the default library's on the row's own operands, once per
/// shape (the first row of a shape pays for it, outside the timing loop). False: the row is skipped.
bool tuned_agrees(benchmark::State& state, const char* what, std::size_t key, const blas::library& lib,
                  blas::check_result (*run)(const blas::library&, const blas::library&, std::size_t)) {
  static std::map<std::pair<std::string, std::size_t>, blas::check_result> done;
  auto it = done.find({what, key});
  if (it == done.end()) {
    const blas::library& ref = blas::probe().default_lib;
    ref.set_num_threads(2), lib.set_num_threads(2);
    it = done.emplace(std::pair<std::string, std::size_t>{what, key}, run(ref, lib, key)).first;
  }
  state.counters["check"] = it->second.worst;
  if (!it->second.ok) {
    state.SkipWithError((std::string(what) + ": the tuned OpenBLAS copy's result differs from the default's by " +
                         std::to_string(it->second.worst) + " x the rounding bound (expected <= 1)")
                            .c_str());
    return false;
  }
  return true;
}

void bm_sgemm(benchmark::State& state, const blas::library& lib, bool tuned_copy) {
  const auto s = static_cast<std::size_t>(state.range(0));
  const auto& o = get(0, s, s, s);
  const int n = static_cast<int>(s);
  if (tuned_copy && !tuned_agrees(state, "sgemm", s, lib, [](const blas::library& r, const blas::library& t, std::size_t sz) {
        const auto& op = get(0, sz, sz, sz);
        const int d = static_cast<int>(sz);
        return blas::check_sgemm(r, t, d, d, d, op.a32.data(), op.b32.data());
      }))
    return;
  std::vector<float> c(s * s);
  lib.set_num_threads(static_cast<int>(state.range(1)));
  for (auto _ : state) {
    lib.sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, n, 1.0f, o.a32.data(), n, o.b32.data(), n, 0.0f, c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  state.SetLabel(blas::label(lib, tuned_copy));
  set_flops(state, static_cast<double>(s), static_cast<double>(s), static_cast<double>(s));
  minifloat_bench::add_fma_peak_counters(state, 2.0 * static_cast<double>(s) * static_cast<double>(s) * static_cast<double>(s),
                                         static_cast<int>(state.range(1)));
}

constexpr std::size_t gemv_k = 4096;

void bm_gemv(benchmark::State& state, std::size_t r) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto& o = get(r, 1, n, gemv_k);
  std::vector<float> c(n);
  gemm_config cfg;
  cfg.threads = static_cast<unsigned>(state.range(1));
  cfg.path = gemm_path::gemv;
  for (auto _ : state) {
    gemm(o.a.view(), o.b.view(), gemm_layout::nk, {}, std::span<float>(c), cfg);
    benchmark::DoNotOptimize(c.data());
  }
  set_flops(state, 1.0, static_cast<double>(n), static_cast<double>(gemv_k));
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(o.b.codes().size()));
}

void bm_gemv_packed(benchmark::State& state, std::size_t r, simd::isa isa) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto& o = get(r, 1, n, gemv_k);
  const packed_weights w(o.b.view());
  std::vector<float> c(n);
  gemm_config cfg;
  cfg.threads = static_cast<unsigned>(state.range(1));
  cfg.isa = isa;
  for (auto _ : state) {
    gemm(o.a.view(), w, {}, std::span<float>(c), cfg);
    benchmark::DoNotOptimize(c.data());
  }
  set_flops(state, 1.0, static_cast<double>(n), static_cast<double>(gemv_k));
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(w.storage_bytes()));
}

void bm_sgemv(benchmark::State& state, const blas::library& lib, bool tuned_copy) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto& o = get(0, 1, n, gemv_k);
  if (tuned_copy && !tuned_agrees(state, "sgemv", n, lib, [](const blas::library& r, const blas::library& t, std::size_t rows) {
        const auto& op = get(0, 1, rows, gemv_k);
        return blas::check_sgemv(r, t, static_cast<int>(rows), static_cast<int>(gemv_k), op.b32.data(), op.a32.data());
      }))
    return;
  std::vector<float> c(n);
  lib.set_num_threads(static_cast<int>(state.range(1)));
  for (auto _ : state) {
    lib.sgemv(CblasRowMajor, CblasNoTrans, static_cast<int>(n), static_cast<int>(gemv_k), 1.0f, o.b32.data(),
              static_cast<int>(gemv_k), o.a32.data(), 1, 0.0f, c.data(), 1);
    benchmark::DoNotOptimize(c.data());
  }
  state.SetLabel(blas::label(lib, tuned_copy));
  set_flops(state, 1.0, static_cast<double>(n), static_cast<double>(gemv_k));
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(n * gemv_k * 4));
}

/// "best": the fastest repetition's time (read the time column; the statistic is a min of every
/// column, so its GFLOP/s is the slowest one's -- compare times, the flop counts are equal).
void best_of(benchmark::internal::Benchmark* b) {
  b->Repetitions(3)->ReportAggregatesOnly(true)->ComputeStatistics(
      "best", [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); });
}
void gemm_args(benchmark::internal::Benchmark* b) {
  for (const int s : {512, 1024, 2048})
    for (const int t : {1, 2}) b->Args({s, t});
  b->ArgNames({"size", "threads"})->Unit(benchmark::kMillisecond)->UseRealTime();
  best_of(b);
}
void gemm_args_large(benchmark::internal::Benchmark* b) {  // the sizes of the issue-18 targets
  for (const int s : {1024, 2048})
    for (const int t : {1, 2}) b->Args({s, t});
  b->ArgNames({"size", "threads"})->Unit(benchmark::kMillisecond)->UseRealTime();
  best_of(b);
}
void gemv_args(benchmark::internal::Benchmark* b) {
  for (const int n : {4096, 11008})
    for (const int t : {1, 2}) b->Args({n, t});
  b->ArgNames({"N", "threads"})->Unit(benchmark::kMicrosecond)->UseRealTime();
  best_of(b);
}

const bool registered = [] {
  const blas::baseline& ob = blas::probe();
  benchmark::AddCustomContext("openblas_core", ob.default_core);
  benchmark::AddCustomContext("openblas_baseline", ob.note);
  if (ob.fallback) std::fprintf(stderr, "bench gemm: %s\n", ob.note.c_str());
  benchmark::RegisterBenchmark("sgemm", [&ob](benchmark::State& st) { bm_sgemm(st, ob.default_lib, false); })->Apply(gemm_args);
  if (ob.tuned)
    benchmark::RegisterBenchmark("sgemm_tuned", [&ob](benchmark::State& st) { bm_sgemm(st, *ob.tuned, true); })->Apply(gemm_args);
  for (const variant& v : variants) {
    // The AVX-512 rows need the CPU to run that level; elsewhere they would only repeat the others.
    if (v.isa != simd::isa::automatic && !simd::isa_available(v.isa)) continue;
    for (std::size_t r = 0; r < std::size(recipes); ++r)
      benchmark::RegisterBenchmark((std::string(v.prefix) + "/" + recipes[r].name).c_str(),
                                   [r, &v](benchmark::State& st) { bm_gemm(st, r, v); })
          ->Apply(v.isa == simd::isa::automatic ? gemm_args : gemm_args_large);
  }
  benchmark::RegisterBenchmark("sgemv", [&ob](benchmark::State& st) { bm_sgemv(st, ob.default_lib, false); })->Apply(gemv_args);
  if (ob.tuned)
    benchmark::RegisterBenchmark("sgemv_tuned", [&ob](benchmark::State& st) { bm_sgemv(st, *ob.tuned, true); })->Apply(gemv_args);
  for (const std::size_t r : {std::size_t{0}, std::size_t{1}, std::size_t{3}, std::size_t{4}})
    benchmark::RegisterBenchmark((std::string("gemv/") + recipes[r].name).c_str(),
                                 [r](benchmark::State& st) { bm_gemv(st, r); })
        ->Apply(gemv_args);
  for (const std::size_t r : {std::size_t{0}, std::size_t{1}, std::size_t{3}, std::size_t{4}, std::size_t{5}})
    benchmark::RegisterBenchmark((std::string("gemv_packed/") + recipes[r].name).c_str(),
                                 [r](benchmark::State& st) { bm_gemv_packed(st, r, simd::isa::automatic); })
        ->Apply(gemv_args);
  // HiF8 has an AVX-512 VBMI decoder; this row is the AVX2 one on the same machine.
  benchmark::RegisterBenchmark((std::string("gemv_packed_avx2/") + recipes[0].name).c_str(),
                               [](benchmark::State& st) { bm_gemv_packed(st, 0, simd::isa::avx2); })
      ->Apply(gemv_args);
  return true;
}();

}  // namespace
