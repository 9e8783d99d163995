#pragma once
// The fp32 FMA roof of one core, measured, for every bench that prints a GEMM-like rate: one
// place, so that attention's `fma_peak` row and the GEMM rows' `fma_peak_gflops` counter are the
// same loop. 12 independent chains of the widest FMA the kernels use (zmm where the CPU has
// AVX-512, ymm with AVX2), enough to cover the FMA latency on every core measured so far.
#include <benchmark/benchmark.h>

#include <time.h>  // clock_gettime, CLOCK_THREAD_CPUTIME_ID

#include <algorithm>
#include <cstdint>

#if defined(__x86_64__)
#include <immintrin.h>
#endif
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"  // the vectors never cross a call boundary
#endif

namespace minifloat_bench {

#if defined(__x86_64__)
namespace detail {

constexpr long fma_peak_steps = 1 << 20;

/// The calling thread's CPU time: the roof is what the core does while it runs this thread, which
/// a busy machine's time slicing does not change (wall time under load measures the scheduler).
inline double thread_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

constexpr int fma_peak_chains = 12;

/// GFLOP/s of `chains` (which runs fma_peak_chains chains of fma_peak_steps FMAs on `lanes`
/// lanes, 2 flops per lane per FMA) over the thread's CPU time. Only the chains are per ISA: a
/// target attribute cannot depend on a template argument, so the two loops below stay two, and
/// everything around them is here once.
template <class Chains>
double timed_fma_gflops(int lanes, Chains chains) {
  const double t0 = thread_seconds();
  chains();
  const double sec = thread_seconds() - t0;
  return 2.0 * lanes * fma_peak_chains * static_cast<double>(fma_peak_steps) / sec * 1e-9;
}

__attribute__((target("avx512f,fma"))) inline void fma_chains512() {
  __m512 acc[fma_peak_chains];
  for (auto& a : acc) a = _mm512_set1_ps(0.0f);
  __m512 x = _mm512_set1_ps(1.0000001f), y = _mm512_set1_ps(0.9999999f);
  for (long i = 0; i < fma_peak_steps; ++i) {
#pragma GCC unroll 12
    for (auto& a : acc) a = _mm512_fmadd_ps(x, y, a);
    __asm__ volatile("" : "+v"(x));  // keeps the chains from being folded
  }
  alignas(64) float t[16] = {};
  for (auto& a : acc) _mm512_store_ps(t, _mm512_add_ps(a, _mm512_load_ps(t)));
  benchmark::DoNotOptimize(t[0]);
}

__attribute__((target("avx2,fma"))) inline void fma_chains256() {
  __m256 acc[fma_peak_chains];
  for (auto& a : acc) a = _mm256_set1_ps(0.0f);
  __m256 x = _mm256_set1_ps(1.0000001f), y = _mm256_set1_ps(0.9999999f);
  for (long i = 0; i < fma_peak_steps; ++i) {
#pragma GCC unroll 12
    for (auto& a : acc) a = _mm256_fmadd_ps(x, y, a);
    __asm__ volatile("" : "+x"(x));
  }
  alignas(32) float t[8] = {};
  for (auto& a : acc) _mm256_store_ps(t, _mm256_add_ps(a, _mm256_load_ps(t)));
  benchmark::DoNotOptimize(t[0]);
}

inline bool has_avx512() { return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma"); }
inline bool has_avx2() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }

}  // namespace detail

/// True where there is an FMA roof to measure (AVX2+FMA or AVX-512).
inline bool fma_peak_available() { return detail::has_avx512() || detail::has_avx2(); }

/// One pass of the widest FMA loop, GFLOP/s; 0 without FMA.
inline double fma_peak_pass() {
  if (detail::has_avx512()) return detail::timed_fma_gflops(16, detail::fma_chains512);
  if (detail::has_avx2()) return detail::timed_fma_gflops(8, detail::fma_chains256);
  return 0.0;
}
#else
inline bool fma_peak_available() { return false; }
inline double fma_peak_pass() { return 0.0; }
#endif

/// The roof of one core for this process: the best of 7 passes (a few ms each), measured on
/// first use. Best, not median: on a shared machine the least disturbed pass is the roof.
inline double fma_peak_gflops() {
  static const double peak = [] {
    double best = 0.0;
    for (int i = 0; i < 7; ++i) best = std::max(best, fma_peak_pass());
    return best;
  }();
  return peak;
}

/// Counters beside a GEMM row whose rate is `flops` per iteration: the roof of one core and the
/// row's fraction of `threads` such roofs (a rate counter: its "/s" is the row's own time, wall
/// time where the row uses real time, so on a loaded machine it is low by the time the row
/// waited). Nothing where there is no roof to measure.
inline void add_fma_peak_counters(benchmark::State& state, double flops, int threads) {
  const double peak = fma_peak_gflops();
  if (peak <= 0.0) return;
  state.counters["fma_peak_gflops"] = peak;
  state.counters["peak_fraction"] = benchmark::Counter(flops * 1e-9 / (peak * threads),
                                                       benchmark::Counter::kIsIterationInvariantRate);
}

/// Google Benchmark body of the `fma_peak` row: repeated passes, the mean of their GFLOP/s (each
/// over the thread's CPU time).
inline void fma_peak_benchmark(benchmark::State& state) {
  double sum = 0.0;
  std::int64_t n = 0;
  for (auto _ : state) {
    sum += fma_peak_pass();
    ++n;
  }
  if (n > 0) state.counters["GFLOP/s"] = sum / static_cast<double>(n);
}

}  // namespace minifloat_bench

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
