// Scaled bulk kernels on every ISA path: quantize_scaled (codes of x / s in float32 plus the
// finite amax of x in the same pass) and finite_amax, against the scalar twins. The scheme-level
// engine built on them: test_quantize_paths.cpp.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include <minifloat/simd/bulk.hpp>
#include "support/all_but_attention.hpp"
#include <minifloat/quant/quantized_tensor.hpp>

#include "simd_equivalence/simd_support.hpp"

using namespace minifloat;
namespace k = minifloat::simd;
using simd_test::bits;
using simd_test::kFull;

namespace {

float reference_amax(std::span<const float> x) {
  float m = 0.0f;
  for (const float v : x)
    if (std::isfinite(v)) m = std::max(m, std::fabs(v));
  return m;
}

template <class T, class In>
void check_scaled(const std::vector<In>& x, float scale, conversion c, k::isa path) {
  const std::uint64_t seed = 77;
  std::vector<float> xf(x.size());
  std::vector<k::code_t<T>> want(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    xf[i] = static_cast<float>(x[i]);
    want[i] = encode<T>(xf[i] / scale, c, c.round == rounding::stochastic ? random_bits(seed, i) : 0U);
  }
  for (const std::size_t n : simd_test::lengths()) {
    const std::size_t off = n % 8;
    if (off + n > x.size()) continue;
    std::vector<k::code_t<T>> out(n + 2, static_cast<k::code_t<T>>(0xA5A5));
    float amax = -1.0f;
    REQUIRE(k::quantize_scaled<T>(std::span<const In>(x.data() + off, n), std::span<k::code_t<T>>(out.data() + 1, n),
                                  scale, amax, c, {.path = path, .seed = seed, .first_index = off}) ==
            k::kernel_status::ok);
    REQUIRE(out[0] == static_cast<k::code_t<T>>(0xA5A5));
    REQUIRE(out[n + 1] == static_cast<k::code_t<T>>(0xA5A5));
    REQUIRE(bits(amax) == bits(reference_amax(std::span<const float>(xf.data() + off, n))));
    for (std::size_t i = 0; i < n; ++i)
      if (out[i + 1] != want[off + i])
        FAIL(format_name<T> << " n = " << n << " i = " << i << " x = " << xf[off + i] << " scale " << scale << " "
                            << simd_test::describe(c) << " " << simd_test::name(path) << ": expected "
                            << static_cast<unsigned>(want[off + i]) << ", got " << static_cast<unsigned>(out[i + 1]));
  }
}

}  // namespace

TEMPLATE_LIST_TEST_CASE("quantize_scaled equals encode(x / s) and returns the finite amax", "[simd][scaled]",
                        all_formats) {
  using T = TestType;
  simd_test::input_source src(21);
  const auto xf = src.floats(300);
  const auto xb = simd_test::convert_inputs<bfloat16>(xf);
  // Powers of two take the exact-reciprocal multiply; the rest divide. 2^127 and 2^-127 have no
  // normal reciprocal; 1e-40 is a subnormal scale.
  const float scales[] = {1.0f, 0.0625f, 3.0f, 448.0f / 7.0f, std::ldexp(1.0f, 127), std::ldexp(1.0f, -127), 1e-40f, 7e30f};
  const std::vector<conversion> convs = {saturating, conversion{}, {rounding::toward_zero, overflow::saturate},
                                         {rounding::stochastic, overflow::saturate}};
  for (const k::isa path : simd_test::paths())
    for (const float s : scales)
      for (const conversion c : convs) {
        check_scaled<T>(xf, s, c, path);
        if (kFull) check_scaled<T>(xb, s, c, path);
      }
}

TEST_CASE("quantize_scaled FP4 packed equals the packed scalar codes", "[simd][scaled][fp4]") {
  simd_test::input_source src(8);
  const auto x = src.floats(300);
  for (const k::isa path : simd_test::paths())
    for (const float s : {1.0f, 0.5f, 0.3f})
      for (const std::size_t n : simd_test::lengths()) {
        const std::size_t bytes = (n + 1) / 2;
        std::vector<std::uint8_t> out(bytes);
        float amax = 0.0f;
        REQUIRE(k::quantize_scaled_fp4_packed(std::span<const float>(x.data(), n), out, s, amax, saturating,
                                              {.path = path}) == k::kernel_status::ok);
        REQUIRE(bits(amax) == bits(reference_amax(std::span<const float>(x.data(), n))));
        for (std::size_t i = 0; i < n; ++i)
          if (nibble_at(out, i) != encode<float4_e2m1fn>(x[i] / s, saturating)) FAIL("n = " << n << " i = " << i);
        if (n % 2 == 1) REQUIRE((out.back() >> 4) == 0);
      }
}

TEST_CASE("finite_amax skips NaN and Inf", "[simd][scaled]") {
  simd_test::input_source src(4);
  const auto x = src.floats(1000);
  for (const k::isa path : simd_test::paths())
    for (const std::size_t n : simd_test::lengths()) {
      float a = -1.0f;
      REQUIRE(k::finite_amax(std::span<const float>(x.data() + n % 8, n), a, {.path = path}) == k::kernel_status::ok);
      REQUIRE(bits(a) == bits(reference_amax(std::span<const float>(x.data() + n % 8, n))));
    }
  const std::vector<float> specials = {std::nanf(""), -INFINITY, INFINITY, -3.0f, 2.0f};
  for (const k::isa path : simd_test::paths()) {
    float a = 0.0f;
    REQUIRE(k::finite_amax(std::span<const float>(specials), a, {.path = path}) == k::kernel_status::ok);
    CHECK(a == 3.0f);
  }
}
