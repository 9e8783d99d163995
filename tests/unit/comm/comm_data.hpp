#pragma once
// Inputs and comparisons shared by the in-process collective tests (tests/unit/comm/) and the
// mpirun tests (tests/mpi/): every rank can build every rank's contribution, so each one computes
// the in-process reference locally and compares its own result with it.
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <vector>

namespace comm_test {

/// n values N(0, 1) * 2^u, u uniform in [-4, 4), different for every (rank, seed), with a few
/// exact zeros, a negative zero and a subnormal (never Inf/NaN; see with_nonfinite).
inline std::vector<float> contribution(std::size_t rank, std::size_t n, unsigned seed = 0) {
  std::mt19937 rng(static_cast<std::mt19937::result_type>(1000003U * seed + 7919U * rank + 17U));
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::uniform_real_distribution<float> e(-4.0f, 4.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng) * std::exp2(e(rng));
  if (n > 3) v[n / 3] = 0.0f;
  if (n > 5) v[n / 5] = -0.0f;
  if (n > 7) v[n / 7] = std::numeric_limits<float>::denorm_min();
  return v;
}

/// x with a NaN and an Inf planted (n >= 2) or one NaN (n == 1).
inline std::vector<float> with_nonfinite(std::vector<float> x) {
  if (!x.empty()) x[x.size() / 2] = std::numeric_limits<float>::quiet_NaN();
  if (x.size() >= 2) x[0] = -std::numeric_limits<float>::infinity();
  return x;
}

/// Index of the first element whose bits differ (NaN matches any NaN: payloads are not
/// specified), or -1 when the sizes match and every element does.
inline long first_difference(std::span<const float> a, std::span<const float> b) {
  if (a.size() != b.size()) return static_cast<long>(std::min(a.size(), b.size()));
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) && std::isnan(b[i])) continue;
    if (std::bit_cast<std::uint32_t>(a[i]) != std::bit_cast<std::uint32_t>(b[i])) return static_cast<long>(i);
  }
  return -1;
}

inline std::string describe_difference(std::span<const float> a, std::span<const float> b) {
  const long i = first_difference(a, b);
  if (i < 0) return "identical";
  if (a.size() != b.size()) return "sizes " + std::to_string(a.size()) + " vs " + std::to_string(b.size());
  const auto k = static_cast<std::size_t>(i);
  return "element " + std::to_string(k) + ": " + std::to_string(a[k]) + " vs " + std::to_string(b[k]);
}

/// The sizes the tests sweep: empty, odd, below and around one chunk, several chunks.
inline const std::vector<std::size_t>& sizes() {
  static const std::vector<std::size_t> s = {0, 1, 31, 33, 1000, 1024, 1025, 4097, 20011};
  return s;
}

}  // namespace comm_test
