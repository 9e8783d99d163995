// Bulk kernels (include/minifloat/simd/) next to the baselines they are judged against, all in
// one binary so that ratios come from one run (bench/README.md has the table, bench/bulk_ratios.py
// computes it from --benchmark_format=json output):
//   baseline/stream_f32_to_u8      read 4 B, write 1 B (truncating cast), AVX2-vectorised
//   baseline/stream_u8_to_f32      read 1 B, write 4 B, AVX2-vectorised
//   baseline/plain_*               the same loops built for the TU's default target (SSE2)
//   baseline/f16c_f32_to_f16       vcvtps2ph, 8 per instruction
//   encode/<fmt>/{simd,scalar}     float32 -> codes, the format's default conversion; simd is the
//                                  best path of the machine (isa::automatic)
//   encode/<fmt>/{avx2,avx512}     the same on one ISA path (skipped where the CPU lacks it), so
//                                  old and new paths are compared in one run
//   decode/<fmt>/{simd,scalar,avx2,avx512}   codes -> float32
//   quantize_scaled/<fmt>          codes of x / s plus the finite amax, one pass
//   mx_quantize/<fmt>, mx_dequantize/<fmt>   OCP MX, blocks of 32 along rows (axis 1); with
//                                  /{avx2,avx512} on one ISA path, /{col32,square32}/ other tiles
// Sizes: 64 Ki elements (in cache: L2) and 64 Mi elements (memory). "threads:2" rows split the
// call with simd/threads.hpp. Single-threaded unless named so. Build with the bench preset
// (-O3) and run e.g.
//   build/bench/bench/bulk_codecs --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define MINIFLOAT_BENCH_X86 1
#define MINIFLOAT_BENCH_TARGET __attribute__((target("avx2,fma,f16c"), noinline))
#else
#define MINIFLOAT_BENCH_X86 0
#define MINIFLOAT_BENCH_TARGET __attribute__((noinline))
#endif

#include <cmath>
#include <cstdint>
#include <random>
#include <span>
#include <thread>
#include <vector>

#include <minifloat/simd/bulk.hpp>
#include <minifloat/simd/mx.hpp>
#include <minifloat/simd/threads.hpp>
#include <minifloat/all.hpp>

namespace k = minifloat::simd;
using namespace minifloat;

namespace {

constexpr std::int64_t k64K = std::int64_t{1} << 16;
constexpr std::int64_t k64M = std::int64_t{1} << 26;

/// Log-uniform magnitudes over +-2^-24 .. 2^16 with random signs (every binade of every format,
/// as bench/scalar_codecs.cpp), made once and shared; the 64 Ki runs use its first elements.
const std::vector<float>& inputs() {
  static const std::vector<float> v = [] {
    std::vector<float> x(static_cast<std::size_t>(k64M));
    std::mt19937 rng(42);
    std::uniform_real_distribution<float> e(-24.0f, 16.0f);
    for (auto& f : x) {
      const std::uint32_t r = static_cast<std::uint32_t>(rng());
      f = std::exp2(e(rng)) * ((r & 1U) ? -1.0f : 1.0f);
    }
    return x;
  }();
  return v;
}

/// Gaussian data for MX (blocks of similar magnitude, as activations).
const std::vector<float>& gaussian() {
  static const std::vector<float> v = [] {
    std::vector<float> x(static_cast<std::size_t>(k64M));
    std::mt19937 rng(7);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    for (auto& f : x) f = nd(rng);
    return x;
  }();
  return v;
}

std::size_t size_of(const benchmark::State& state) { return static_cast<std::size_t>(state.range(0)); }

void finish(benchmark::State& state, std::size_t n, std::size_t bytes_per_item) {
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(n * bytes_per_item));
}

// --- baselines -----------------------------------------------------------------------------------

MINIFLOAT_BENCH_TARGET void stream_f32_u8(const float* in, std::size_t n, std::uint8_t* out) {
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<std::uint8_t>(static_cast<int>(in[i]));
}
MINIFLOAT_BENCH_TARGET void stream_u8_f32(const std::uint8_t* in, std::size_t n, float* out) {
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(in[i]);
}
MINIFLOAT_BENCH_TARGET void f16c_f32_f16(const float* in, std::size_t n, std::uint16_t* out) {
  std::size_t i = 0;
#if MINIFLOAT_BENCH_X86
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#endif
  for (; i < n; ++i) out[i] = minifloat::encode<float16>(in[i]);
}

// The same two loops compiled for the TU's own target (x86-64 baseline: SSE2), as the plain
// loops of bench/scalar_codecs.cpp are: what the trivial stream costs without -mavx2.
__attribute__((noinline)) void plain_f32_u8(const float* in, std::size_t n, std::uint8_t* out) {
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<std::uint8_t>(static_cast<int>(in[i]));
}
__attribute__((noinline)) void plain_u8_f32(const std::uint8_t* in, std::size_t n, float* out) {
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(in[i]);
}

void baseline_plain_f32_to_u8(benchmark::State& state) {
  const std::size_t n = size_of(state);
  const auto& in = inputs();
  std::vector<std::uint8_t> out(n);
  for (auto _ : state) {
    plain_f32_u8(in.data(), n, out.data());
    benchmark::ClobberMemory();
  }
  finish(state, n, 5);
}

void baseline_plain_u8_to_f32(benchmark::State& state) {
  const std::size_t n = size_of(state);
  std::vector<std::uint8_t> in(n);
  for (std::size_t i = 0; i < n; ++i) in[i] = static_cast<std::uint8_t>(i * 131);
  std::vector<float> out(n);
  for (auto _ : state) {
    plain_u8_f32(in.data(), n, out.data());
    benchmark::ClobberMemory();
  }
  finish(state, n, 5);
}

void baseline_stream_f32_to_u8(benchmark::State& state) {
  const std::size_t n = size_of(state);
  const auto& in = inputs();
  std::vector<std::uint8_t> out(n);
  for (auto _ : state) {
    stream_f32_u8(in.data(), n, out.data());
    benchmark::ClobberMemory();
  }
  finish(state, n, 5);
}

void baseline_stream_f32_to_u8_threads(benchmark::State& state) {
  const std::size_t n = size_of(state);
  const auto& in = inputs();
  std::vector<std::uint8_t> out(n);
  const auto threads = static_cast<unsigned>(state.range(1));
  for (auto _ : state) {
    k::parallel_for(n, threads, 64, [&](std::size_t b, std::size_t e) { stream_f32_u8(in.data() + b, e - b, out.data() + b); });
    benchmark::ClobberMemory();
  }
  finish(state, n, 5);
}

void baseline_stream_u8_to_f32(benchmark::State& state) {
  const std::size_t n = size_of(state);
  std::vector<std::uint8_t> in(n);
  for (std::size_t i = 0; i < n; ++i) in[i] = static_cast<std::uint8_t>(i * 131);
  std::vector<float> out(n);
  for (auto _ : state) {
    stream_u8_f32(in.data(), n, out.data());
    benchmark::ClobberMemory();
  }
  finish(state, n, 5);
}

void baseline_f16c_f32_to_f16(benchmark::State& state) {
  const std::size_t n = size_of(state);
  const auto& in = inputs();
  std::vector<std::uint16_t> out(n);
  for (auto _ : state) {
    f16c_f32_f16(in.data(), n, out.data());
    benchmark::ClobberMemory();
  }
  finish(state, n, 6);
}

// --- codecs --------------------------------------------------------------------------------------

template <class T>
void encode_bench(benchmark::State& state, k::isa path, conversion c) {
  if (!k::isa_available(path)) {
    state.SkipWithError("ISA path not available on this CPU");
    return;
  }
  const std::size_t n = size_of(state);
  const std::span<const float> in(inputs().data(), n);
  std::vector<k::code_t<T>> out(n);
  for (auto _ : state) {
    if (k::encode<T>(in, std::span<k::code_t<T>>(out), c, {.path = path, .seed = 1}) != k::kernel_status::ok)
      state.SkipWithError("kernel failed");
    benchmark::ClobberMemory();
  }
  finish(state, n, 4 + sizeof(k::code_t<T>));
}

template <class T>
void encode_simd(benchmark::State& state) {
  encode_bench<T>(state, k::isa::automatic, {});
}
template <class T>
void encode_scalar(benchmark::State& state) {
  encode_bench<T>(state, k::isa::scalar, {});
}
template <class T>
void encode_avx2(benchmark::State& state) {
  encode_bench<T>(state, k::isa::avx2, {});
}
template <class T>
void encode_avx512(benchmark::State& state) {
  encode_bench<T>(state, k::isa::avx512, {});
}
template <class T>
void encode_stochastic(benchmark::State& state) {
  encode_bench<T>(state, k::isa::automatic, {rounding::stochastic, overflow::non_saturating});
}
template <class T>
void encode_stochastic_avx2(benchmark::State& state) {
  encode_bench<T>(state, k::isa::avx2, {rounding::stochastic, overflow::non_saturating});
}
template <class T>
void encode_stochastic_avx512(benchmark::State& state) {
  encode_bench<T>(state, k::isa::avx512, {rounding::stochastic, overflow::non_saturating});
}
template <class T>
void encode_stochastic_scalar(benchmark::State& state) {
  encode_bench<T>(state, k::isa::scalar, {rounding::stochastic, overflow::non_saturating});
}

template <class T>
void encode_threads(benchmark::State& state) {
  const std::size_t n = size_of(state);
  const std::span<const float> in(inputs().data(), n);
  std::vector<k::code_t<T>> out(n);
  const auto threads = static_cast<unsigned>(state.range(1));
  for (auto _ : state) {
    if (k::encode_parallel<T>(in, std::span<k::code_t<T>>(out), {}, threads) != k::kernel_status::ok)
      state.SkipWithError("kernel failed");
    benchmark::ClobberMemory();
  }
  finish(state, n, 4 + sizeof(k::code_t<T>));
}

template <class T, class In>
void encode_from(benchmark::State& state) {
  const std::size_t n = size_of(state);
  std::vector<In> in(n);
  for (std::size_t i = 0; i < n; ++i) in[i] = In(inputs()[i]);
  std::vector<k::code_t<T>> out(n);
  for (auto _ : state) {
    if (k::encode<T>(std::span<const In>(in), std::span<k::code_t<T>>(out)) != k::kernel_status::ok)
      state.SkipWithError("kernel failed");
    benchmark::ClobberMemory();
  }
  finish(state, n, sizeof(In) + sizeof(k::code_t<T>));
}

template <class T>
std::vector<k::code_t<T>> codes_for(std::size_t n) {
  std::vector<k::code_t<T>> c(n);
  (void)k::encode<T>(std::span<const float>(inputs().data(), n), std::span<k::code_t<T>>(c));
  return c;
}

template <class T>
void decode_bench(benchmark::State& state, k::isa path) {
  if (!k::isa_available(path)) {
    state.SkipWithError("ISA path not available on this CPU");
    return;
  }
  const std::size_t n = size_of(state);
  const auto codes = codes_for<T>(n);
  std::vector<float> out(n);
  for (auto _ : state) {
    if (k::decode<T>(std::span<const k::code_t<T>>(codes), std::span<float>(out), {.path = path}) != k::kernel_status::ok)
      state.SkipWithError("kernel failed");
    benchmark::ClobberMemory();
  }
  finish(state, n, 4 + sizeof(k::code_t<T>));
}
template <class T>
void decode_simd(benchmark::State& state) {
  decode_bench<T>(state, k::isa::automatic);
}
template <class T>
void decode_scalar(benchmark::State& state) {
  decode_bench<T>(state, k::isa::scalar);
}
template <class T>
void decode_avx2(benchmark::State& state) {
  decode_bench<T>(state, k::isa::avx2);
}
template <class T>
void decode_avx512(benchmark::State& state) {
  decode_bench<T>(state, k::isa::avx512);
}

template <class T>
void quantize_scaled_path(benchmark::State& state, k::isa path) {
  if (!k::isa_available(path)) {
    state.SkipWithError("ISA path not available on this CPU");
    return;
  }
  const std::size_t n = size_of(state);
  const std::span<const float> in(inputs().data(), n);
  std::vector<k::code_t<T>> out(n);
  const float scale = state.range(1) == 0 ? 0.25f : 3.0f;  // power of two (multiply) or not (divide)
  float amax = 0.0f;
  for (auto _ : state) {
    if (k::quantize_scaled<T>(in, std::span<k::code_t<T>>(out), scale, amax, saturating, {.path = path}) !=
        k::kernel_status::ok)
      state.SkipWithError("kernel failed");
    benchmark::DoNotOptimize(amax);
    benchmark::ClobberMemory();
  }
  finish(state, n, 4 + sizeof(k::code_t<T>));
}
template <class T>
void quantize_scaled_bench(benchmark::State& state) {
  quantize_scaled_path<T>(state, k::isa::automatic);
}
template <class T>
void quantize_scaled_avx2(benchmark::State& state) {
  quantize_scaled_path<T>(state, k::isa::avx2);
}
template <class T>
void quantize_scaled_avx512(benchmark::State& state) {
  quantize_scaled_path<T>(state, k::isa::avx512);
}

/// MX quantize of a (n / 4096) x 4096 tensor, floor rule, on `path` with `tile`.
template <class Elem>
void mx_quantize_path(benchmark::State& state, mx_tile tile, k::isa path) {
  if (!k::isa_available(path)) {
    state.SkipWithError("ISA path not available on this CPU");
    return;
  }
  const std::size_t n = size_of(state), cols = 4096, rows = n / cols;
  const std::span<const float> in(gaussian().data(), n);
  std::vector<std::uint8_t> codes(*k::mx_code_count<Elem>(rows, cols)), scales(*k::mx_scale_count(rows, cols, tile));
  for (auto _ : state) {
    if (k::mx_quantize<Elem>(in, rows, cols, tile, scale_rule::floor, codes, scales, {.path = path}) !=
        k::kernel_status::ok)
      state.SkipWithError("kernel failed");
    benchmark::ClobberMemory();
  }
  finish(state, n, 4);
}
template <class Elem>
void mx_quantize_bench(benchmark::State& state) {
  mx_quantize_path<Elem>(state, mx_tile::row32, k::isa::automatic);
}
template <class Elem>
void mx_quantize_avx2(benchmark::State& state) {
  mx_quantize_path<Elem>(state, mx_tile::row32, k::isa::avx2);
}
template <class Elem>
void mx_quantize_avx512(benchmark::State& state) {
  mx_quantize_path<Elem>(state, mx_tile::row32, k::isa::avx512);
}
template <class Elem, mx_tile Tile>
void mx_quantize_tile_avx2(benchmark::State& state) {
  mx_quantize_path<Elem>(state, Tile, k::isa::avx2);
}
template <class Elem, mx_tile Tile>
void mx_quantize_tile_avx512(benchmark::State& state) {
  mx_quantize_path<Elem>(state, Tile, k::isa::avx512);
}

template <class Elem>
void mx_quantize_scalar(benchmark::State& state) {
  const std::size_t n = size_of(state), cols = 4096, rows = n / cols;
  const std::span<const float> in(gaussian().data(), n);
  mx_tensor<Elem> t(rows, cols, 1);
  auto v = t.mutable_view();
  for (auto _ : state) {
    // the scalar reference path
    (void)k::mx_quantize<Elem>(in, rows, cols, mx_tile::row32, scale_rule::floor, v.codes(), v.scales(),
                               {.path = k::isa::scalar});
    benchmark::ClobberMemory();
  }
  finish(state, n, 4);
}

template <class Elem>
void mx_dequantize_path(benchmark::State& state, k::isa path) {
  if (!k::isa_available(path)) {
    state.SkipWithError("ISA path not available on this CPU");
    return;
  }
  const std::size_t n = size_of(state), cols = 4096, rows = n / cols;
  mx_tensor<Elem> t(rows, cols, 1);
  mx_quantize_into(std::span<const float>(gaussian().data(), n), t.mutable_view());
  std::vector<float> out(n);
  for (auto _ : state) {
    if (k::mx_dequantize<Elem>(t.codes(), t.scales(), rows, cols, mx_tile::row32, std::span<float>(out), {.path = path}) !=
        k::kernel_status::ok)
      state.SkipWithError("kernel failed");
    benchmark::ClobberMemory();
  }
  finish(state, n, 4);
}
template <class Elem>
void mx_dequantize_bench(benchmark::State& state) {
  mx_dequantize_path<Elem>(state, k::isa::automatic);
}
template <class Elem>
void mx_dequantize_avx2(benchmark::State& state) {
  mx_dequantize_path<Elem>(state, k::isa::avx2);
}
template <class Elem>
void mx_dequantize_avx512(benchmark::State& state) {
  mx_dequantize_path<Elem>(state, k::isa::avx512);
}

}  // namespace

// Baselines first, so that a filtered run keeps them (use --benchmark_filter='baseline|encode/hif').
BENCHMARK(baseline_stream_f32_to_u8)->Name("baseline/stream_f32_to_u8")->Arg(k64K)->Arg(k64M)->UseRealTime();
BENCHMARK(baseline_stream_f32_to_u8_threads)->Name("baseline/stream_f32_to_u8/threads:2")->Args({k64M, 2})->UseRealTime();
BENCHMARK(baseline_stream_u8_to_f32)->Name("baseline/stream_u8_to_f32")->Arg(k64K)->Arg(k64M)->UseRealTime();
BENCHMARK(baseline_plain_f32_to_u8)->Name("baseline/plain_f32_to_u8")->Arg(k64K)->Arg(k64M)->UseRealTime();
BENCHMARK(baseline_plain_u8_to_f32)->Name("baseline/plain_u8_to_f32")->Arg(k64K)->Arg(k64M)->UseRealTime();
BENCHMARK(baseline_f16c_f32_to_f16)->Name("baseline/f16c_f32_to_f16")->Arg(k64K)->Arg(k64M)->UseRealTime();

#define MINIFLOAT_BENCH_CODEC(T)                                                                         \
  BENCHMARK_TEMPLATE(encode_simd, T)->Name("encode/" #T "/simd")->Arg(k64K)->Arg(k64M)->UseRealTime();  \
  BENCHMARK_TEMPLATE(encode_scalar, T)->Name("encode/" #T "/scalar")->Arg(k64K)->UseRealTime();         \
  BENCHMARK_TEMPLATE(decode_simd, T)->Name("decode/" #T "/simd")->Arg(k64K)->Arg(k64M)->UseRealTime();  \
  BENCHMARK_TEMPLATE(decode_scalar, T)->Name("decode/" #T "/scalar")->Arg(k64K)->UseRealTime();         \
  BENCHMARK_TEMPLATE(encode_avx2, T)->Name("encode/" #T "/avx2")->Arg(k64K)->Arg(k64M)->UseRealTime();  \
  BENCHMARK_TEMPLATE(encode_avx512, T)->Name("encode/" #T "/avx512")->Arg(k64K)->Arg(k64M)->UseRealTime(); \
  BENCHMARK_TEMPLATE(decode_avx2, T)->Name("decode/" #T "/avx2")->Arg(k64K)->Arg(k64M)->UseRealTime();  \
  BENCHMARK_TEMPLATE(decode_avx512, T)->Name("decode/" #T "/avx512")->Arg(k64K)->Arg(k64M)->UseRealTime();
MINIFLOAT_BENCH_CODEC(hifloat8)
MINIFLOAT_BENCH_CODEC(float8_e4m3fn)
MINIFLOAT_BENCH_CODEC(float8_e5m2)
MINIFLOAT_BENCH_CODEC(float6_e3m2fn)
MINIFLOAT_BENCH_CODEC(float6_e2m3fn)
MINIFLOAT_BENCH_CODEC(float4_e2m1fn)
MINIFLOAT_BENCH_CODEC(float8_e8m0fnu)
MINIFLOAT_BENCH_CODEC(bfloat16)
MINIFLOAT_BENCH_CODEC(float16)

BENCHMARK_TEMPLATE(encode_threads, hifloat8)->Name("encode/hifloat8/simd/threads:2")->Args({k64M, 2})->UseRealTime();
BENCHMARK_TEMPLATE(encode_threads, float8_e4m3fn)->Name("encode/float8_e4m3fn/simd/threads:2")->Args({k64M, 2})->UseRealTime();
BENCHMARK_TEMPLATE(encode_threads, float8_e5m2)->Name("encode/float8_e5m2/simd/threads:2")->Args({k64M, 2})->UseRealTime();

BENCHMARK_TEMPLATE(encode_stochastic, hifloat8)->Name("encode_stochastic/hifloat8/simd")->Arg(k64K)->UseRealTime();
BENCHMARK_TEMPLATE(encode_stochastic_scalar, hifloat8)->Name("encode_stochastic/hifloat8/scalar")->Arg(k64K)->UseRealTime();
BENCHMARK_TEMPLATE(encode_stochastic, float8_e4m3fn)->Name("encode_stochastic/float8_e4m3fn/simd")->Arg(k64K)->UseRealTime();
BENCHMARK_TEMPLATE(encode_stochastic_scalar, float8_e4m3fn)->Name("encode_stochastic/float8_e4m3fn/scalar")->Arg(k64K)->UseRealTime();
BENCHMARK_TEMPLATE(encode_stochastic_avx2, hifloat8)->Name("encode_stochastic/hifloat8/avx2")->Arg(k64K)->UseRealTime();
BENCHMARK_TEMPLATE(encode_stochastic_avx512, hifloat8)->Name("encode_stochastic/hifloat8/avx512")->Arg(k64K)->UseRealTime();
BENCHMARK_TEMPLATE(encode_stochastic_avx2, float8_e4m3fn)->Name("encode_stochastic/float8_e4m3fn/avx2")->Arg(k64K)->UseRealTime();
BENCHMARK_TEMPLATE(encode_stochastic_avx512, float8_e4m3fn)->Name("encode_stochastic/float8_e4m3fn/avx512")->Arg(k64K)->UseRealTime();

BENCHMARK_TEMPLATE(encode_from, float8_e4m3fn, bfloat16)->Name("encode_from_bf16/float8_e4m3fn/simd")->Arg(k64K)->UseRealTime();
BENCHMARK_TEMPLATE(encode_from, float8_e4m3fn, float16)->Name("encode_from_f16/float8_e4m3fn/simd")->Arg(k64K)->UseRealTime();
BENCHMARK_TEMPLATE(encode_from, hifloat8, bfloat16)->Name("encode_from_bf16/hifloat8/simd")->Arg(k64K)->UseRealTime();

BENCHMARK_TEMPLATE(quantize_scaled_bench, float8_e4m3fn)->Name("quantize_scaled/float8_e4m3fn/pow2")->Args({k64K, 0})->Args({k64M, 0})->UseRealTime();
BENCHMARK_TEMPLATE(quantize_scaled_bench, float8_e4m3fn)->Name("quantize_scaled/float8_e4m3fn/div")->Args({k64K, 1})->Args({k64M, 1})->UseRealTime();
BENCHMARK_TEMPLATE(quantize_scaled_bench, hifloat8)->Name("quantize_scaled/hifloat8/pow2")->Args({k64K, 0})->Args({k64M, 0})->UseRealTime();
BENCHMARK_TEMPLATE(quantize_scaled_avx2, float8_e4m3fn)->Name("quantize_scaled/float8_e4m3fn/pow2/avx2")->Args({k64K, 0})->UseRealTime();
BENCHMARK_TEMPLATE(quantize_scaled_avx512, float8_e4m3fn)->Name("quantize_scaled/float8_e4m3fn/pow2/avx512")->Args({k64K, 0})->UseRealTime();
BENCHMARK_TEMPLATE(quantize_scaled_avx2, hifloat8)->Name("quantize_scaled/hifloat8/pow2/avx2")->Args({k64K, 0})->UseRealTime();
BENCHMARK_TEMPLATE(quantize_scaled_avx512, hifloat8)->Name("quantize_scaled/hifloat8/pow2/avx512")->Args({k64K, 0})->UseRealTime();

BENCHMARK_TEMPLATE(mx_quantize_bench, float8_e4m3fn)->Name("mx_quantize/float8_e4m3fn/simd")->Arg(k64K)->Arg(k64M)->UseRealTime();
BENCHMARK_TEMPLATE(mx_quantize_bench, float4_e2m1fn)->Name("mx_quantize/float4_e2m1fn/simd")->Arg(k64K)->Arg(k64M)->UseRealTime();
BENCHMARK_TEMPLATE(mx_quantize_scalar, float8_e4m3fn)->Name("mx_quantize/float8_e4m3fn/scalar")->Arg(k64K)->UseRealTime();
BENCHMARK_TEMPLATE(mx_quantize_scalar, float4_e2m1fn)->Name("mx_quantize/float4_e2m1fn/scalar")->Arg(k64K)->UseRealTime();
BENCHMARK_TEMPLATE(mx_dequantize_bench, float8_e4m3fn)->Name("mx_dequantize/float8_e4m3fn/simd")->Arg(k64K)->Arg(k64M)->UseRealTime();
BENCHMARK_TEMPLATE(mx_dequantize_bench, float4_e2m1fn)->Name("mx_dequantize/float4_e2m1fn/simd")->Arg(k64K)->Arg(k64M)->UseRealTime();

// The MX paths side by side (`.../simd` above is the machine's best: AVX-512 where present).
#define MINIFLOAT_BENCH_MX(T)                                                                                    \
  BENCHMARK_TEMPLATE(mx_quantize_avx2, T)->Name("mx_quantize/" #T "/avx2")->Arg(k64K)->Arg(k64M)->UseRealTime();     \
  BENCHMARK_TEMPLATE(mx_quantize_avx512, T)->Name("mx_quantize/" #T "/avx512")->Arg(k64K)->Arg(k64M)->UseRealTime(); \
  BENCHMARK_TEMPLATE(mx_dequantize_avx2, T)->Name("mx_dequantize/" #T "/avx2")->Arg(k64K)->Arg(k64M)->UseRealTime(); \
  BENCHMARK_TEMPLATE(mx_dequantize_avx512, T)->Name("mx_dequantize/" #T "/avx512")->Arg(k64K)->Arg(k64M)->UseRealTime();
MINIFLOAT_BENCH_MX(float8_e4m3fn)
MINIFLOAT_BENCH_MX(float4_e2m1fn)
BENCHMARK_TEMPLATE(mx_quantize_tile_avx2, float8_e4m3fn, mx_tile::col32)->Name("mx_quantize/float8_e4m3fn/col32/avx2")->Arg(k64K)->UseRealTime();
BENCHMARK_TEMPLATE(mx_quantize_tile_avx512, float8_e4m3fn, mx_tile::col32)->Name("mx_quantize/float8_e4m3fn/col32/avx512")->Arg(k64K)->UseRealTime();
BENCHMARK_TEMPLATE(mx_quantize_tile_avx2, float8_e4m3fn, mx_tile::square32)->Name("mx_quantize/float8_e4m3fn/square32/avx2")->Arg(k64K)->UseRealTime();
BENCHMARK_TEMPLATE(mx_quantize_tile_avx512, float8_e4m3fn, mx_tile::square32)->Name("mx_quantize/float8_e4m3fn/square32/avx512")->Arg(k64K)->UseRealTime();
