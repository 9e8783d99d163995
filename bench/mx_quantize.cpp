// MX quantize / dequantize throughput (include/minifloat/quant/mx_tensor.hpp on the machine's
// best path; the rows named /avx2 and /avx512 pin one ISA path) next to a plain memory stream measured in the same binary: f32 -> u8 (read 4 B,
// write 1 B, the top byte of each float). Sizes: 64 Ki elements (in cache) and 4 Mi elements
// (16 MiB of input, past the last-level cache here); the /avx2 and /avx512 rows also 64 Mi. Items
// are elements; bytes count the fp32 input plus the codes and scales written (read, for
// dequantize).
// Run: build/bench/bench/mx_quantize --benchmark_min_time=0.2
#include <benchmark/benchmark.h>

#include <bit>
#include <cstdint>
#include <random>
#include <vector>

#include <minifloat/quant/mx_tensor.hpp>

#include "common.hpp"

namespace {

constexpr std::size_t kCols = 1024;  // blocks run along rows of 1024 (32 blocks per row)

std::vector<float> make_inputs(std::size_t n) {
  // Gaussian values with a per-row magnitude between 2^-8 and 2^8: typical activations.
  std::mt19937 rng(42);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::uniform_int_distribution<int> e(-8, 8);
  std::vector<float> v(n);
  for (std::size_t r = 0; r < n / kCols; ++r) {
    const float s = std::ldexp(1.0f, e(rng));
    for (std::size_t c = 0; c < kCols; ++c) v[r * kCols + c] = s * g(rng);
  }
  return v;
}

void stream_f32_to_u8(benchmark::State& state) {
  minifloat_bench::stream_f32_to_u8(state, make_inputs(static_cast<std::size_t>(state.range(0))));
}

template <class Elem>
void mx_quantize_bench(benchmark::State& state, int axis, minifloat::scale_rule rule,
                       minifloat::simd::isa path = minifloat::simd::isa::automatic) {
  if (!minifloat::simd::isa_available(path)) {
    state.SkipWithError("ISA path not available on this CPU");
    return;
  }
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto in = make_inputs(n);
  minifloat::mx_tensor<Elem> t(n / kCols, kCols, axis, rule);
  const auto out = t.mutable_view();
  for (auto _ : state) {
    minifloat::mx_quantize_into(std::span<const float>(in), out, {.path = path});
    benchmark::DoNotOptimize(out.codes().data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
  state.SetBytesProcessed(state.iterations() *
                          static_cast<std::int64_t>(n * 4 + t.codes().size() + t.scales().size()));
}

template <class Elem>
void mx_dequantize_bench(benchmark::State& state, minifloat::simd::isa path = minifloat::simd::isa::automatic) {
  if (!minifloat::simd::isa_available(path)) {
    state.SkipWithError("ISA path not available on this CPU");
    return;
  }
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto t = minifloat::mx_quantize<Elem>(make_inputs(n), n / kCols, kCols);
  std::vector<float> out(n);
  for (auto _ : state) {
    minifloat::mx_dequantize(t.view(), std::span<float>(out), {.path = path});
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
  state.SetBytesProcessed(state.iterations() *
                          static_cast<std::int64_t>(n * 4 + t.codes().size() + t.scales().size()));
}

void mx_quantize_e4m3_axis1(benchmark::State& s) { mx_quantize_bench<minifloat::float8_e4m3fn>(s, 1, minifloat::scale_rule::floor); }
void mx_quantize_e2m1_axis1(benchmark::State& s) { mx_quantize_bench<minifloat::float4_e2m1fn>(s, 1, minifloat::scale_rule::floor); }
void mx_quantize_e4m3_axis0(benchmark::State& s) { mx_quantize_bench<minifloat::float8_e4m3fn>(s, 0, minifloat::scale_rule::floor); }
void mx_quantize_e4m3_axis1_rceil(benchmark::State& s) { mx_quantize_bench<minifloat::float8_e4m3fn>(s, 1, minifloat::scale_rule::rceil); }
void mx_dequantize_e4m3(benchmark::State& s) { mx_dequantize_bench<minifloat::float8_e4m3fn>(s); }
void mx_dequantize_e2m1(benchmark::State& s) { mx_dequantize_bench<minifloat::float4_e2m1fn>(s); }

// The same rows on one ISA path each (name suffix /avx2, /avx512), so that old and new paths are
// compared in one run; 64 Mi (256 MiB of input) for the memory-bound end.
using minifloat::simd::isa;
template <class Elem, int Axis, minifloat::scale_rule Rule, isa Path>
void mx_quantize_on(benchmark::State& s) {
  mx_quantize_bench<Elem>(s, Axis, Rule, Path);
}
template <class Elem, isa Path>
void mx_dequantize_on(benchmark::State& s) {
  mx_dequantize_bench<Elem>(s, Path);
}

constexpr std::int64_t k64k = 1 << 16;
constexpr std::int64_t k4m = 1 << 22;
constexpr std::int64_t k64m = std::int64_t{1} << 26;

}  // namespace

BENCHMARK(stream_f32_to_u8)->Arg(k64k)->Arg(k4m);
BENCHMARK(mx_quantize_e4m3_axis1)->Arg(k64k)->Arg(k4m);
BENCHMARK(mx_quantize_e2m1_axis1)->Arg(k64k)->Arg(k4m);
BENCHMARK(mx_quantize_e4m3_axis0)->Arg(k64k)->Arg(k4m);
BENCHMARK(mx_quantize_e4m3_axis1_rceil)->Arg(k64k);
BENCHMARK(mx_dequantize_e4m3)->Arg(k64k)->Arg(k4m);
BENCHMARK(mx_dequantize_e2m1)->Arg(k64k)->Arg(k4m);

BENCHMARK(stream_f32_to_u8)->Arg(k64m);  // row stream_f32_to_u8/67108864
#define MINIFLOAT_BENCH_MX_PATH(P)                                                                                        \
  BENCHMARK_TEMPLATE(mx_quantize_on, minifloat::float8_e4m3fn, 1, minifloat::scale_rule::floor, isa::P)              \
      ->Name("mx_quantize_e4m3_axis1/" #P)->Arg(k64k)->Arg(k4m)->Arg(k64m);                                              \
  BENCHMARK_TEMPLATE(mx_quantize_on, minifloat::float4_e2m1fn, 1, minifloat::scale_rule::floor, isa::P)              \
      ->Name("mx_quantize_e2m1_axis1/" #P)->Arg(k64k)->Arg(k4m)->Arg(k64m);                                              \
  BENCHMARK_TEMPLATE(mx_quantize_on, minifloat::float8_e4m3fn, 0, minifloat::scale_rule::floor, isa::P)              \
      ->Name("mx_quantize_e4m3_axis0/" #P)->Arg(k64k)->Arg(k4m);                                                         \
  BENCHMARK_TEMPLATE(mx_quantize_on, minifloat::float8_e4m3fn, 1, minifloat::scale_rule::rceil, isa::P)              \
      ->Name("mx_quantize_e4m3_axis1_rceil/" #P)->Arg(k64k);                                                              \
  BENCHMARK_TEMPLATE(mx_dequantize_on, minifloat::float8_e4m3fn, isa::P)->Name("mx_dequantize_e4m3/" #P)->Arg(k64k)->Arg(k4m); \
  BENCHMARK_TEMPLATE(mx_dequantize_on, minifloat::float4_e2m1fn, isa::P)->Name("mx_dequantize_e2m1/" #P)->Arg(k64k)->Arg(k4m);
MINIFLOAT_BENCH_MX_PATH(avx2)
MINIFLOAT_BENCH_MX_PATH(avx512)
