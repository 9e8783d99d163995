// The static path: this TU is compiled with -mavx2 -mfma -mf16c (cmake/DevTargets.cmake gives
// *avx2*.cpp files those flags), so isa::automatic must resolve to AVX2 at compile time, with no
// CPU query, and agree with the scalar reference. Only meaningful on an x86-64 machine that has
// AVX2 (the test binary then runs this TU's AVX2-compiled code unconditionally).
#include <catch2/catch.hpp>

#include <cstdint>
#include <span>
#include <vector>

#include <minifloat/simd/bulk.hpp>
#include <minifloat/simd/mx.hpp>
#include "support/all_but_attention.hpp"

#include "simd_equivalence/simd_support.hpp"

using namespace minifloat;
namespace k = minifloat::simd;

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

static_assert(MINIFLOAT_SIMD_STATIC_AVX2 == 1, "a -mavx2 -mfma -mf16c TU takes the static path");

TEST_CASE("static AVX2 path: automatic is at least AVX2 and equals the scalar reference", "[simd][static]") {
  CHECK((k::detected_isa() == k::isa::avx2 || k::detected_isa() == k::isa::avx512));
  simd_test::input_source src(55);
  const auto x = src.floats(3000);
  for (const conversion c : simd_test::all_conversions()) {
    std::vector<std::uint8_t> a(x.size()), b(x.size()), e(x.size()), f(x.size());
    REQUIRE(k::encode<hifloat8>(std::span<const float>(x), std::span<std::uint8_t>(a), c, {.seed = 9}) ==
            k::kernel_status::ok);
    REQUIRE(k::encode<hifloat8>(std::span<const float>(x), std::span<std::uint8_t>(b), c,
                                {.path = k::isa::scalar, .seed = 9}) == k::kernel_status::ok);
    REQUIRE(a == b);
    REQUIRE(k::encode<float8_e4m3fn>(std::span<const float>(x), std::span<std::uint8_t>(e), c, {.seed = 9}) ==
            k::kernel_status::ok);
    REQUIRE(k::encode<float8_e4m3fn>(std::span<const float>(x), std::span<std::uint8_t>(f), c,
                                     {.path = k::isa::scalar, .seed = 9}) == k::kernel_status::ok);
    REQUIRE(e == f);
  }
  std::vector<std::uint8_t> codes(256);
  for (unsigned i = 0; i < 256; ++i) codes[i] = static_cast<std::uint8_t>(i);
  std::vector<float> d(256);
  REQUIRE(k::decode<hifloat8>(std::span<const std::uint8_t>(codes), std::span<float>(d)) == k::kernel_status::ok);
  for (unsigned i = 0; i < 256; ++i)
    REQUIRE(simd_test::bits(d[i]) == simd_test::bits(static_cast<float>(hifloat8::from_bits(codes[i]))));
  const auto xm = src.floats(64 * 40);
  std::vector<std::uint8_t> wc(64 * 40), ws(64 * 2), gc(64 * 40), gs(64 * 2);
  REQUIRE(k::mx_quantize<float8_e4m3fn>(std::span<const float>(xm), 64, 40, mx_tile::row32, scale_rule::floor, wc, ws,
                                        {.path = k::isa::scalar}) == k::kernel_status::ok);
  REQUIRE(k::mx_quantize<float8_e4m3fn>(std::span<const float>(xm), 64, 40, mx_tile::row32, scale_rule::floor, gc, gs) ==
          k::kernel_status::ok);
  REQUIRE(gc == wc);
  REQUIRE(gs == ws);
}

#else

TEST_CASE("static AVX2 path: not an AVX2 build", "[simd][static]") {
  CHECK(MINIFLOAT_SIMD_STATIC_AVX2 == 0);
  CHECK(k::isa_available(k::isa::scalar));
}

#endif
