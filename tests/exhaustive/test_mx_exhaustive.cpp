// All 2^32 float32 bit patterns through the MX quantize kernels (simd/mx.hpp), compared byte for
// byte (codes and E8M0 scales) with the scalar reference path (simd/scalar/mx.hpp, itself checked
// against tests/unit/quant/mx_reference.hpp by the simd_equivalence tests), for every MX element
// format on the AVX-512 and AVX2 paths. Hidden ([.exhaustive]); run with
//   minifloat_exhaustive "[mx]"
//
// Each 1 x 32 block holds 31 consecutive patterns and one companion that sets the scale: the
// block's finite amax times 2^k, k = 0 .. 23 rotating with the block, so that every pattern is
// encoded at some position below the element maximum (the top binade, the element subnormals,
// or underflow to zero) and amaxes of every exponent and fraction reach the scale rules; the rule
// rotates with the 64 Ki-pattern chunk. Blocks with NaN or Inf patterns take the NaN scale.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include <minifloat/simd/mx.hpp>
#include "support/all_but_attention.hpp"

using namespace minifloat;
namespace k = minifloat::simd;

namespace {

template <mx_element Elem>
void sweep_mx(k::isa path) {
  if (!k::isa_available(path)) {
    WARN("isa " << k::to_string(path) << " not available: not swept");
    return;
  }
  constexpr std::size_t chunk = 1U << 16, per_block = 31;
  constexpr std::size_t blocks = (chunk + per_block - 1) / per_block, n = blocks * 32;
  constexpr scale_rule rules[] = {scale_rule::floor, scale_rule::rceil, scale_rule::ceil, scale_rule::even};
  std::vector<float> x(n);
  std::vector<std::uint8_t> want_codes(*k::mx_code_count<Elem>(blocks, 32)), got_codes(want_codes.size());
  std::vector<std::uint8_t> want_scales(blocks), got_scales(blocks);
  std::uint64_t checked = 0;
  for (std::uint32_t hi = 0; hi < (1U << 16); ++hi) {
    for (std::size_t b = 0; b < blocks; ++b) {
      std::uint32_t amax = 0;
      for (std::size_t i = 0; i < per_block; ++i) {
        const std::size_t lo = b * per_block + i;
        const std::uint32_t bits = lo < chunk ? (hi << 16) | static_cast<std::uint32_t>(lo) : 0U;
        x[b * 32 + i] = std::bit_cast<float>(bits);
        const std::uint32_t a = bits & 0x7FFFFFFFU;
        if (a < 0x7F800000U && a > amax) amax = a;
      }
      const float up = std::ldexp(std::bit_cast<float>(amax), static_cast<int>((b + hi) % 24));
      const float companion = std::isfinite(up) ? up : std::numeric_limits<float>::max();
      x[b * 32 + per_block] = (b % 2 != 0) ? -companion : companion;
    }
    const scale_rule rule = rules[hi % 4];
    REQUIRE(k::mx_quantize<Elem>(std::span<const float>(x), blocks, 32, mx_tile::row32, rule, want_codes, want_scales,
                                 {.path = k::isa::scalar}) == k::kernel_status::ok);
    REQUIRE(k::mx_quantize<Elem>(std::span<const float>(x), blocks, 32, mx_tile::row32, rule, got_codes, got_scales,
                                 {.path = path}) == k::kernel_status::ok);
    if (got_codes != want_codes || got_scales != want_scales) {
      for (std::size_t b = 0; b < blocks; ++b)
        if (got_scales[b] != want_scales[b])
          FAIL("patterns 0x" << std::hex << ((hi << 16) | (b * per_block)) << ": scale 0x" << unsigned{want_scales[b]}
                             << " expected, got 0x" << unsigned{got_scales[b]} << " (" << to_string(rule) << ")");
      for (std::size_t j = 0; j < want_codes.size(); ++j)
        if (got_codes[j] != want_codes[j])
          FAIL("chunk 0x" << std::hex << hi << ", code byte " << std::dec << j << ": 0x" << std::hex
                          << unsigned{want_codes[j]} << " expected, got 0x" << unsigned{got_codes[j]} << " ("
                          << to_string(rule) << ")");
    }
    checked += chunk;
  }
  CHECK(checked == (std::uint64_t{1} << 32));
}

}  // namespace

TEST_CASE("MX exhaustive avx512: float8_e4m3fn", "[.exhaustive][mx][avx512]") { sweep_mx<float8_e4m3fn>(k::isa::avx512); }
TEST_CASE("MX exhaustive avx512: float8_e5m2", "[.exhaustive][mx][avx512]") { sweep_mx<float8_e5m2>(k::isa::avx512); }
TEST_CASE("MX exhaustive avx512: float6_e3m2fn", "[.exhaustive][mx][avx512]") { sweep_mx<float6_e3m2fn>(k::isa::avx512); }
TEST_CASE("MX exhaustive avx512: float6_e2m3fn", "[.exhaustive][mx][avx512]") { sweep_mx<float6_e2m3fn>(k::isa::avx512); }
TEST_CASE("MX exhaustive avx512: float4_e2m1fn", "[.exhaustive][mx][avx512]") { sweep_mx<float4_e2m1fn>(k::isa::avx512); }
TEST_CASE("MX exhaustive avx2: float8_e4m3fn", "[.exhaustive][mx]") { sweep_mx<float8_e4m3fn>(k::isa::avx2); }
TEST_CASE("MX exhaustive avx2: float4_e2m1fn", "[.exhaustive][mx]") { sweep_mx<float4_e2m1fn>(k::isa::avx2); }
