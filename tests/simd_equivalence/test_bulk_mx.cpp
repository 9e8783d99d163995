// simd::mx_quantize_into / mx_dequantize (simd/mx.hpp) on every ISA path against the block
// layer (block/mx_tensor.hpp mx_quantize_into / mx_dequantize): identical code and scale bytes,
// identical values, for every MX element format, both axes, every scale rule, float32 / bf16 /
// fp16 inputs, ragged shapes (short last blocks, odd FP4 rows) and blocks holding NaN, Inf,
// zeros, float32 subnormals and values near FLT_MAX.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include <minifloat/quant/mx_tensor.hpp>
#include <minifloat/simd/mx.hpp>
#include <minifloat/all.hpp>

#include "simd_equivalence/simd_support.hpp"

using namespace minifloat;
namespace k = minifloat::simd;
using simd_test::bits;
using simd_test::kFull;

namespace {

using mx_elements = std::tuple<float8_e4m3fn, float8_e5m2, float6_e3m2fn, float6_e2m3fn, float4_e2m1fn>;

/// Blocks of very different scales: each 8-element run shares a random binade, with specials
/// sprinkled in (so some blocks get NaN scales, some are all zero, some subnormal).
std::vector<float> mx_data(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<float> v(n);
  float base = 1.0f;
  for (std::size_t i = 0; i < n; ++i) {
    if (i % 8 == 0) base = std::ldexp(1.0f, static_cast<int>(rng() % 290) - 160);  // 2^-160 (0) .. 2^129 (Inf)
    const auto r = static_cast<std::uint32_t>(rng() % 200);
    float x = base * std::uniform_real_distribution<float>(-2.0f, 2.0f)(rng);
    if (r == 0) x = std::nanf("");
    if (r == 1) x = (rng() & 1) ? INFINITY : -INFINITY;
    if (r == 2) x = 0.0f;
    if (r == 3) x = std::numeric_limits<float>::max() * ((rng() & 1) ? 1.0f : -1.0f);
    if (r == 4) x = std::bit_cast<float>(static_cast<std::uint32_t>(rng()) & 0x807FFFFFU);  // subnormal
    v[i] = x;
  }
  return v;
}

template <class A, class B>
bool same_bytes(const A& a, const B& b) {
  return a.size() == b.size() && (a.size() == 0 || std::memcmp(a.data(), b.data(), a.size_bytes()) == 0);
}

template <class Elem, class In>
void check_mx(std::size_t rows, std::size_t cols, int axis, mx_scale_rule rule, std::uint32_t seed) {
  const auto xf = mx_data(rows * cols, seed);
  const auto x = simd_test::convert_inputs<In>(xf);
  mx_tensor<Elem> want(rows, cols, axis, rule);
  mx_quantize_into(std::span<const In>(x), want.mutable_view());
  std::vector<float> want_values(rows * cols);
  mx_dequantize(want.view(), std::span<float>(want_values));
  for (const k::isa path : simd_test::paths()) {
    INFO(format_name<Elem> << " " << rows << "x" << cols << " axis " << axis << " " << to_string(rule) << " on "
                           << simd_test::name(path));
    mx_tensor<Elem> got(rows, cols, axis, rule);
    // Dirty the buffers first: the kernel must write every byte.
    auto mv = got.mutable_view();
    for (auto& b : mv.codes()) b = 0xA5;
    for (auto& b : mv.scales()) b = 0x5A;
    REQUIRE(k::mx_quantize_into<Elem>(std::span<const In>(x), mv, {.path = path}) == k::kernel_status::ok);
    REQUIRE(same_bytes(got.codes(), want.codes()));
    REQUIRE(same_bytes(got.scales(), want.scales()));
    std::vector<float> values(rows * cols, -1.0f);
    REQUIRE(k::mx_dequantize<Elem>(want.view(), std::span<float>(values), {.path = path}) == k::kernel_status::ok);
    for (std::size_t i = 0; i < values.size(); ++i)
      if (want_values[i] != want_values[i] ? values[i] == values[i] : bits(values[i]) != bits(want_values[i]))
        FAIL("value " << i << ": expected " << want_values[i] << ", got " << values[i]);
  }
}

const std::pair<std::size_t, std::size_t> kShapes[] = {{0, 0}, {0, 7}, {5, 0}, {1, 1}, {1, 31}, {2, 33},
                                                       {3, 64}, {33, 5}, {31, 65}, {40, 300}, {65, 17}};

}  // namespace

TEMPLATE_LIST_TEST_CASE("simd::mx_quantize_into equals the block layer", "[simd][mx]", mx_elements) {
  using Elem = TestType;
  std::uint32_t seed = 1;
  for (const int axis : {1, 0})
    for (const mx_scale_rule rule : {mx_scale_rule::floor, mx_scale_rule::rceil, mx_scale_rule::ceil, mx_scale_rule::even})
      for (const auto& [rows, cols] : kShapes) {
        check_mx<Elem, float>(rows, cols, axis, rule, ++seed);
        if (kFull || rows * cols < 200) {
          check_mx<Elem, bfloat16>(rows, cols, axis, rule, ++seed);
          check_mx<Elem, float16>(rows, cols, axis, rule, ++seed);
        }
      }
}

TEMPLATE_LIST_TEST_CASE("simd::mx_dequantize decodes arbitrary code and scale bytes like the block layer",
                        "[simd][mx]", mx_elements) {
  using Elem = TestType;
  std::mt19937 rng(17);
  for (const int axis : {1, 0})
    for (const auto& [rows, cols] : kShapes) {
      mx_tensor<Elem> t(rows, cols, axis);
      auto mv = t.mutable_view();
      for (auto& b : mv.codes()) b = static_cast<std::uint8_t>(rng());
      for (auto& b : mv.scales()) b = static_cast<std::uint8_t>(rng() % 4 == 0 ? 0xFF : rng() % 3 == 0 ? 0 : rng());
      std::vector<float> want(rows * cols), got(rows * cols);
      mx_dequantize(t.view(), std::span<float>(want));
      for (const k::isa path : simd_test::paths()) {
        REQUIRE(k::mx_dequantize<Elem>(t.view(), std::span<float>(got), {.path = path}) == k::kernel_status::ok);
        for (std::size_t i = 0; i < got.size(); ++i)
          if (want[i] != want[i] ? got[i] == got[i] : bits(got[i]) != bits(want[i]))
            FAIL(format_name<Elem> << " " << rows << "x" << cols << " axis " << axis << " value " << i << " on "
                                   << simd_test::name(path));
      }
    }
}

TEST_CASE("simd::mx_quantize_into checks sizes", "[simd][mx][errors]") {
  mx_tensor<float8_e4m3fn> t(2, 40);
  std::vector<float> x(79);
  CHECK(k::mx_quantize_into<float8_e4m3fn>(std::span<const float>(x), t.mutable_view()) ==
        k::kernel_status::size_mismatch);
  std::vector<float> out(81);
  CHECK(k::mx_dequantize<float8_e4m3fn>(t.view(), std::span<float>(out)) == k::kernel_status::size_mismatch);
}

TEMPLATE_LIST_TEST_CASE("simd::mx_quantize_into scales match the block layer at every exponent and rule boundary",
                        "[simd][mx]", mx_elements) {
  // One block per amax pattern: every biased exponent 0..255 with the fractions where the rules
  // switch (ceil: 0 / 1; even: the half-ulp carry; rceil: the element max's significand), in
  // rows of 8 blocks so that the 8-block vector path handles them.
  using Elem = TestType;
  constexpr std::uint32_t mbits = Elem::spec::mantissa_bits;
  const std::uint32_t fmax = minifloat::detail::mx_max_significand<Elem> - 0x800000U;
  const std::uint32_t half = 0x800000U - (1U << (22 - mbits));
  const std::vector<std::uint32_t> fracs = {0U, 1U, 0x400000U, 0x7FFFFFU, fmax - 1, fmax, fmax + 1, half - 1, half, half + 1};
  std::vector<std::uint32_t> patterns;
  for (std::uint32_t eb = 0; eb < 256; ++eb)
    for (const std::uint32_t f : fracs) patterns.push_back((eb << 23) | (f & 0x7FFFFFU));
  while (patterns.size() % 8 != 0) patterns.push_back(0);
  const std::size_t rows = patterns.size() / 8, cols = 256;
  std::vector<float> x(rows * cols);
  std::mt19937 rng(9);
  for (std::size_t b = 0; b < patterns.size(); ++b) {
    const float amax = std::bit_cast<float>(patterns[b]);
    for (std::size_t i = 0; i < 32; ++i) {
      // The amax element at a varying position, the others below it (or copies of it).
      const float small = std::isfinite(amax) ? amax * std::uniform_real_distribution<float>(0.0f, 1.0f)(rng) : 1.0f;
      x[b * 32 + i] = (i == b % 32) ? ((rng() & 1) ? -amax : amax) : small;
    }
  }
  for (const mx_scale_rule rule : {mx_scale_rule::floor, mx_scale_rule::rceil, mx_scale_rule::ceil, mx_scale_rule::even}) {
    mx_tensor<Elem> want(rows, cols, 1, rule), got(rows, cols, 1, rule);
    mx_quantize_into(std::span<const float>(x), want.mutable_view());
    for (const k::isa path : simd_test::paths()) {
      INFO(format_name<Elem> << " " << to_string(rule) << " on " << simd_test::name(path));
      REQUIRE(k::mx_quantize_into<Elem>(std::span<const float>(x), got.mutable_view(), {.path = path}) ==
              k::kernel_status::ok);
      for (std::size_t b = 0; b < patterns.size(); ++b)
        if (got.scales()[b] != want.scales()[b])
          FAIL("amax bits 0x" << std::hex << patterns[b] << ": scale 0x" << unsigned{want.scales()[b]} << " expected, got 0x"
                              << unsigned{got.scales()[b]});
      REQUIRE(got == want);
    }
  }
}
