#pragma once
// Shared helpers of the SIMD-equivalence tests: the ISA paths to run, test inputs that reach
// every binade, tie, overflow boundary and special value of every format, and bitwise compares.
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <minifloat/simd/bulk.hpp>
#include "support/all_but_attention.hpp"

namespace simd_test {

namespace k = minifloat::simd;

/// Debug (and sanitizer) builds run reduced sweeps; Release runs them all.
#ifdef NDEBUG
inline constexpr bool kFull = true;
#else
inline constexpr bool kFull = false;
#endif

/// Every path this process can run (the SIMD ones first, widest first); scalar is always last.
/// isa::avx2 runs the AVX2 kernels on an AVX-512 machine too (levels cap, simd/isa.hpp).
inline std::vector<k::isa> paths() {
  std::vector<k::isa> p;
  if (k::isa_available(k::isa::avx512)) p.push_back(k::isa::avx512);
  if (k::isa_available(k::isa::avx2)) p.push_back(k::isa::avx2);
  if (k::isa_available(k::isa::neon)) p.push_back(k::isa::neon);
  p.push_back(k::isa::scalar);
  return p;
}

inline std::string name(k::isa i) { return std::string(k::to_string(i)); }

inline constexpr minifloat::rounding kRoundings[] = {
    minifloat::rounding::nearest,    minifloat::rounding::nearest_even, minifloat::rounding::nearest_away,
    minifloat::rounding::toward_zero, minifloat::rounding::upward,      minifloat::rounding::downward,
    minifloat::rounding::stochastic};
inline constexpr minifloat::overflow kOverflows[] = {minifloat::overflow::non_saturating, minifloat::overflow::saturate,
                                                     minifloat::overflow::saturate_nan_to_zero};

inline std::vector<minifloat::conversion> all_conversions() {
  std::vector<minifloat::conversion> v;
  for (auto r : kRoundings)
    for (auto o : kOverflows) v.push_back({r, o});
  return v;
}

inline std::string describe(minifloat::conversion c) {
  return std::string(minifloat::to_string(c.round)) + "/" + std::string(minifloat::to_string(c.on_overflow));
}

/// A float that stresses encoders: mostly log-uniform magnitudes over 2^-150 .. 2^128 (every
/// binade of every format, float32 subnormals, overflow), plus exact ties and neighbours of
/// representable values, plus zeros, Inf, NaN (various payloads) and raw random bit patterns.
class input_source {
 public:
  explicit input_source(std::uint32_t seed) : rng_(seed) {}

  float next() {
    const std::uint32_t kind = rng_() % 16;
    const std::uint32_t bits = static_cast<std::uint32_t>(rng_());
    if (kind == 0) return std::bit_cast<float>(bits);  // raw pattern, NaNs included
    if (kind == 1) {
      static constexpr std::uint32_t specials[] = {0x00000000U, 0x80000000U, 0x7F800000U, 0xFF800000U, 0x7FC00000U,
                                                   0xFFC00001U, 0x7F800001U, 0x00000001U, 0x807FFFFFU, 0x7F7FFFFFU};
      return std::bit_cast<float>(specials[bits % 10]);
    }
    if (kind <= 5) {
      // Ties and near-ties: a short significand (<= 5 bits) with 0-2 extra low bits nudged.
      const std::uint32_t exp = 100 + (bits >> 8) % 60;  // 2^-27 .. 2^32
      std::uint32_t frac = (bits & 0x1FU) << 18;
      if ((bits >> 5) % 3 == 1) frac += 1;
      if ((bits >> 5) % 3 == 2) frac -= 1;
      return std::bit_cast<float>(((bits & 0x80000000U) | (exp << 23)) + frac);
    }
    const float e = std::uniform_real_distribution<float>(-150.0f, 129.0f)(rng_);
    const float m = std::exp2(e);
    return (bits & 1U) ? -m : m;
  }

  std::vector<float> floats(std::size_t n) {
    std::vector<float> v(n);
    for (auto& x : v) x = next();
    return v;
  }

  std::mt19937& rng() { return rng_; }

 private:
  std::mt19937 rng_;
};

/// Values of `In` from floats (bf16/fp16 by their own default rounding: any pattern works).
template <class In>
std::vector<In> convert_inputs(const std::vector<float>& f) {
  std::vector<In> v;
  v.reserve(f.size());
  for (const float x : f) {
    if constexpr (std::is_same_v<In, float>) v.push_back(x);
    else v.push_back(In::from_bits(static_cast<typename In::storage_type>(std::bit_cast<std::uint32_t>(x) >> 16)));
  }
  return v;
}

inline std::uint32_t bits(float x) { return std::bit_cast<std::uint32_t>(x); }

/// Lengths every kernel is run with: all of 0..257 (Release) or a set around the vector widths.
inline std::vector<std::size_t> lengths() {
  std::vector<std::size_t> v;
  if (kFull) {
    for (std::size_t n = 0; n <= 257; ++n) v.push_back(n);
  } else {
    v = {0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 47, 63, 64, 65, 95, 96, 97, 127, 128, 129, 200, 255, 256, 257};
  }
  return v;
}

}  // namespace simd_test
