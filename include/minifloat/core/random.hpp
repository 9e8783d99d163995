#pragma once
// Counter-based random bits for stochastic rounding: element i of a tensor quantized with seed s
// always gets the same 32 bits, whatever the ISA path, thread split or chunking. SplitMix64's
// finaliser (Steele, Lea, Flood 2014) over seed and index: not cryptographic, statistically good
// enough for rounding noise, and a pure function of (seed, index).
#include <cstdint>

namespace minifloat {

[[nodiscard]] constexpr std::uint32_t random_bits(std::uint64_t seed, std::uint64_t index) noexcept {
  std::uint64_t z = seed + (index + 1) * 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  return static_cast<std::uint32_t>(z >> 32);
}

}  // namespace minifloat
