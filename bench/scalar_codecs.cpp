// Scalar reference codecs (convert.hpp) for every format, next to plain memory streams measured
// in the same binary: f32 -> u8 (read 4 B, write 1 B, a truncating cast) and u8 -> f32. The
// ratio codec / stream is the number to read; absolute items/s depend on the machine.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <vector>

#include <minifloat/minifloat.hpp>

namespace {

std::vector<float> make_inputs(std::size_t n) {
  // Log-uniform magnitudes over +-2^-24 .. 2^16 with random signs: every binade of every format.
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> e(-24.0f, 16.0f);
  std::bernoulli_distribution s;
  std::vector<float> v(n);
  for (auto& x : v) x = (s(rng) ? -1.0f : 1.0f) * std::exp2(e(rng));
  return v;
}

void stream_f32_to_u8(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto in = make_inputs(n);
  std::vector<std::uint8_t> out(n);
  for (auto _ : state) {
    for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<std::uint8_t>(static_cast<int>(in[i]));
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(n) * 5);
}

void stream_u8_to_f32(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  std::vector<std::uint8_t> in(n);
  for (std::size_t i = 0; i < n; ++i) in[i] = static_cast<std::uint8_t>(i * 131);
  std::vector<float> out(n);
  for (auto _ : state) {
    for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(in[i]);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(n) * 5);
}

template <class T>
void scalar_encode(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto in = make_inputs(n);
  std::vector<typename T::storage_type> out(n);
  for (auto _ : state) {
    for (std::size_t i = 0; i < n; ++i) out[i] = minifloat::encode<T>(in[i]);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(n * (4 + sizeof(typename T::storage_type))));
}

template <class T>
void scalar_decode(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  std::vector<typename T::storage_type> in(n);
  std::mt19937 rng(7);
  for (auto& c : in) c = static_cast<typename T::storage_type>(rng() & ((1U << T::spec::bits) - 1U));
  std::vector<float> out(n);
  for (auto _ : state) {
    for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(T::from_bits(in[i]));
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(n * (4 + sizeof(typename T::storage_type))));
}

constexpr std::int64_t k64k = 1 << 16;

}  // namespace

BENCHMARK(stream_f32_to_u8)->Arg(k64k);
BENCHMARK(stream_u8_to_f32)->Arg(k64k);
#define MINIFLOAT_BENCH_FORMAT(T)                                               \
  BENCHMARK_TEMPLATE(scalar_encode, minifloat::T)->Arg(k64k)->Name("encode/" #T); \
  BENCHMARK_TEMPLATE(scalar_decode, minifloat::T)->Arg(k64k)->Name("decode/" #T);
MINIFLOAT_BENCH_FORMAT(hifloat8)
MINIFLOAT_BENCH_FORMAT(float8_e4m3fn)
MINIFLOAT_BENCH_FORMAT(float8_e5m2)
MINIFLOAT_BENCH_FORMAT(float6_e3m2fn)
MINIFLOAT_BENCH_FORMAT(float6_e2m3fn)
MINIFLOAT_BENCH_FORMAT(float4_e2m1fn)
MINIFLOAT_BENCH_FORMAT(float8_e8m0fnu)
MINIFLOAT_BENCH_FORMAT(bfloat16)
MINIFLOAT_BENCH_FORMAT(float16)
