#pragma once
// Baselines shared by the bench/*.cpp binaries, so that every file times the same loop.
#include <benchmark/benchmark.h>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace minifloat_bench {

/// The plain memory stream a quantizer is judged against: read 4 B, write 1 B per element (the
/// float's top byte, a truncating cast), over `in`, built with the TU's own flags. Reports
/// items/s and bytes/s (5 B per item).
inline void stream_f32_to_u8(benchmark::State& state, const std::vector<float>& in) {
  const std::size_t n = in.size();
  std::vector<std::uint8_t> out(n);
  for (auto _ : state) {
    for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<std::uint8_t>(std::bit_cast<std::uint32_t>(in[i]) >> 24);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(n) * 5);
}

}  // namespace minifloat_bench
