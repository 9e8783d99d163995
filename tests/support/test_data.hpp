#pragma once
// Test inputs shared by the GEMM, CPU-backend and Ascend-shim tests.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include <minifloat/formats/convert.hpp>
#include <minifloat/formats/float16.hpp>

namespace test_support {

/// n values N(0, 1) * 2^u, u uniform in [-spread, spread): a wide dynamic range, so that small
/// values land on subnormal codes and large ones saturate. Deterministic in seed.
inline std::vector<float> spread_normal(std::size_t n, unsigned seed, float spread) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::uniform_real_distribution<float> e(-spread, spread);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng) * std::exp2(e(rng));
  return v;
}

/// float -> bfloat16 bit patterns (round to nearest even) and back.
inline std::vector<std::uint16_t> to_bf16_bits(const std::vector<float>& v) {
  std::vector<std::uint16_t> b(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) b[i] = minifloat::narrow<minifloat::bfloat16>(v[i]).bits();
  return b;
}
inline std::vector<float> from_bf16_bits(const std::vector<std::uint16_t>& b) {
  std::vector<float> v(b.size());
  for (std::size_t i = 0; i < b.size(); ++i) v[i] = static_cast<float>(minifloat::bfloat16::from_bits(b[i]));
  return v;
}

}  // namespace test_support
