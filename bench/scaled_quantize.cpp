// Scaled quantization through the container API (quant/quantized_tensor.hpp, the scalar
// reference path): per-tensor, per-channel and 128x128-block, next to a plain memory stream
// f32 -> u8 measured in the same binary. A 1024-wide matrix of 64 Ki and 4 Mi elements.
// Run: build/bench/bench/scaled_quantize --benchmark_min_time=0.2
#include <benchmark/benchmark.h>

#include <bit>
#include <cstdint>
#include <random>
#include <vector>

#include <minifloat/quant/quantized_tensor.hpp>

#include "common.hpp"

namespace {

constexpr std::size_t kCols = 1024;

std::vector<float> make_inputs(std::size_t n) {
  std::mt19937 rng(42);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = g(rng);
  return v;
}

void stream_f32_to_u8(benchmark::State& state) {
  minifloat_bench::stream_f32_to_u8(state, make_inputs(static_cast<std::size_t>(state.range(0))));
}

void scaled_quantize(benchmark::State& state, minifloat::format_id f, minifloat::granularity g) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto in = make_inputs(n);
  const auto scheme = minifloat::quant_scheme::make(f, g);
  for (auto _ : state) {
    auto q = minifloat::quantize(in, n / kCols, kCols, scheme);
    benchmark::DoNotOptimize(q.codes().data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(n) * 5);
}

void scaled_dequantize(benchmark::State& state, minifloat::format_id f, minifloat::granularity g) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto q = minifloat::quantize(make_inputs(n), n / kCols, kCols, minifloat::quant_scheme::make(f, g));
  std::vector<float> out(n);
  for (auto _ : state) {
    minifloat::dequantize(q.view(), out);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(n) * 5);
}

using minifloat::format_id;
using minifloat::granularity;

}  // namespace

BENCHMARK(stream_f32_to_u8)->Arg(1 << 16)->Arg(1 << 22);
BENCHMARK_CAPTURE(scaled_quantize, hifloat8_tensor, format_id::hifloat8, granularity::tensor)->Arg(1 << 16)->Arg(1 << 22);
BENCHMARK_CAPTURE(scaled_quantize, e4m3_tensor, format_id::float8_e4m3fn, granularity::tensor)->Arg(1 << 16)->Arg(1 << 22);
BENCHMARK_CAPTURE(scaled_quantize, e4m3_channel, format_id::float8_e4m3fn, granularity::channel)->Arg(1 << 16);
BENCHMARK_CAPTURE(scaled_quantize, e4m3_block128, format_id::float8_e4m3fn, granularity::block)->Arg(1 << 16);
BENCHMARK_CAPTURE(scaled_quantize, e2m1_tensor, format_id::float4_e2m1fn, granularity::tensor)->Arg(1 << 16);
BENCHMARK_CAPTURE(scaled_dequantize, hifloat8_tensor, format_id::hifloat8, granularity::tensor)->Arg(1 << 16);
BENCHMARK_CAPTURE(scaled_dequantize, e4m3_block128, format_id::float8_e4m3fn, granularity::block)->Arg(1 << 16);
