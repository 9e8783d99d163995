#pragma once
// Small building blocks of the LM example: a row-major matrix, a deterministic random number
// generator, and a deterministic parallel loop.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include <minifloat/simd/threads.hpp>

#include "../common/rng.hpp"

namespace lm {

namespace mf = minifloat;

using rng = minifloat_examples::rng;  // deterministic on every platform

/// A stream of its own for (seed, a, b): batches of step a, attempt b, ... never overlap.
inline rng stream(std::uint64_t seed, std::uint64_t a, std::uint64_t b = 0) {
  rng r(seed ^ (a * 0xD1B54A32D192ED03ULL) ^ (b * 0x8CB92BA72F3D8DD7ULL));
  r.next();
  return r;
}

/// Row-major rows x cols matrix of T (float for training, double for the gradient check).
template <class T>
struct tensor {
  std::size_t rows = 0, cols = 0;
  std::vector<T> v;

  tensor() = default;
  tensor(std::size_t r, std::size_t c) : rows(r), cols(c), v(r * c, T(0)) {}
  void resize(std::size_t r, std::size_t c) {
    rows = r, cols = c;
    v.assign(r * c, T(0));
  }
  [[nodiscard]] std::size_t size() const noexcept { return v.size(); }
  T* data() noexcept { return v.data(); }
  [[nodiscard]] const T* data() const noexcept { return v.data(); }
  T* row(std::size_t r) noexcept { return v.data() + r * cols; }
  [[nodiscard]] const T* row(std::size_t r) const noexcept { return v.data() + r * cols; }
  std::span<T> span() noexcept { return v; }
  [[nodiscard]] std::span<const T> span() const noexcept { return v; }
};

/// f(begin, end) over contiguous chunks of [0, n) on `threads` threads. The chunks depend only
/// on n, threads and grain, so every reduction done per chunk is the same from run to run.
template <class F>
void parallel_rows(std::size_t n, unsigned threads, F&& f) {
  mf::simd::parallel_for(n, threads, 1, f);
}

}  // namespace lm
