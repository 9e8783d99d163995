// simd::mx_quantize / mx_dequantize (simd/mx.hpp) on every ISA path against the scalar reference
// path, and that reference against the independent MX reference of tests/unit/block/
// mx_reference.hpp: identical code and scale bytes, identical values, for every MX element
// format, every tile (1x32, 32x1, 32x32), every scale rule, float32 / bf16 / fp16 inputs, ragged
// shapes (short last blocks, odd FP4 rows) and blocks holding NaN, Inf, zeros, float32
// subnormals and values near FLT_MAX.
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
#include "unit/block/mx_reference.hpp"

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

struct mx_buffers {
  std::vector<std::uint8_t> codes, scales;
};

template <class Elem>
mx_buffers mx_alloc(std::size_t rows, std::size_t cols, mx_tile tile, std::uint8_t fill = 0) {
  return {std::vector<std::uint8_t>(*k::mx_code_count<Elem>(rows, cols), fill),
          std::vector<std::uint8_t>(*k::mx_scale_count(rows, cols, tile), fill)};
}

template <class Elem, class In>
mx_buffers mx_run(const std::vector<In>& x, std::size_t rows, std::size_t cols, mx_tile tile, scale_rule rule, k::isa path,
                  std::uint8_t fill = 0) {
  mx_buffers b = mx_alloc<Elem>(rows, cols, tile, fill);
  REQUIRE(k::mx_quantize<Elem>(std::span<const In>(x), rows, cols, tile, rule, b.codes, b.scales, {.path = path}) ==
          k::kernel_status::ok);
  return b;
}

template <class Elem>
std::vector<float> mx_values(const mx_buffers& b, std::size_t rows, std::size_t cols, mx_tile tile, k::isa path) {
  std::vector<float> out(rows * cols, -1.0f);
  REQUIRE(k::mx_dequantize<Elem>(b.codes, b.scales, rows, cols, tile, std::span<float>(out), {.path = path}) ==
          k::kernel_status::ok);
  return out;
}

void check_same_values(const std::vector<float>& want, const std::vector<float>& got) {
  REQUIRE(want.size() == got.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    if (want[i] != want[i] ? got[i] == got[i] : bits(got[i]) != bits(want[i]))
      FAIL("value " << i << ": expected " << want[i] << ", got " << got[i]);
}

template <class Elem, class In>
void check_mx(std::size_t rows, std::size_t cols, mx_tile tile, scale_rule rule, std::uint32_t seed) {
  const auto xf = mx_data(rows * cols, seed);
  const auto x = simd_test::convert_inputs<In>(xf);
  INFO(format_name<Elem> << " " << rows << "x" << cols << " tile " << to_string(tile) << " " << to_string(rule));
  const mx_buffers want = mx_run<Elem>(x, rows, cols, tile, rule, k::isa::scalar);
  if constexpr (std::is_same_v<In, float>) {
    const mx_ref::tensor_result ref =
        tile == mx_tile::square32 ? mx_ref::quantize_tensor_2d<Elem>(xf, rows, cols, rule)
                                  : mx_ref::quantize_tensor<Elem>(xf, rows, cols, tile == mx_tile::row32 ? 1 : 0, rule);
    REQUIRE(same_bytes(std::span<const std::uint8_t>(want.codes), std::span<const std::uint8_t>(ref.codes)));
    REQUIRE(same_bytes(std::span<const std::uint8_t>(want.scales), std::span<const std::uint8_t>(ref.scales)));
  }
  const auto want_values = mx_values<Elem>(want, rows, cols, tile, k::isa::scalar);
  for (const k::isa path : simd_test::paths()) {
    INFO("on " << simd_test::name(path));
    // Dirty the buffers first: the kernel must write every byte.
    const mx_buffers got = mx_run<Elem>(x, rows, cols, tile, rule, path, 0xA5);
    REQUIRE(got.codes == want.codes);
    REQUIRE(got.scales == want.scales);
    check_same_values(want_values, mx_values<Elem>(want, rows, cols, tile, path));
  }
}

constexpr mx_tile kTiles[] = {mx_tile::row32, mx_tile::col32, mx_tile::square32};
constexpr scale_rule kRules[] = {scale_rule::floor, scale_rule::rceil, scale_rule::ceil, scale_rule::even};

const std::pair<std::size_t, std::size_t> kShapes[] = {{0, 0}, {0, 7}, {5, 0}, {1, 1}, {1, 31}, {2, 33},
                                                       {3, 64}, {33, 5}, {31, 65}, {40, 300}, {65, 17}};

}  // namespace

TEMPLATE_LIST_TEST_CASE("simd::mx_quantize equals the reference path on every tile", "[simd][mx]", mx_elements) {
  using Elem = TestType;
  std::uint32_t seed = 1;
  for (const mx_tile tile : kTiles)
    for (const scale_rule rule : kRules)
      for (const auto& [rows, cols] : kShapes) {
        check_mx<Elem, float>(rows, cols, tile, rule, ++seed);
        if (kFull || rows * cols < 200) {
          check_mx<Elem, bfloat16>(rows, cols, tile, rule, ++seed);
          check_mx<Elem, float16>(rows, cols, tile, rule, ++seed);
        }
      }
}

TEMPLATE_LIST_TEST_CASE("simd::mx_dequantize decodes arbitrary code and scale bytes like the reference path",
                        "[simd][mx]", mx_elements) {
  using Elem = TestType;
  std::mt19937 rng(17);
  for (const mx_tile tile : kTiles)
    for (const auto& [rows, cols] : kShapes) {
      mx_buffers t = mx_alloc<Elem>(rows, cols, tile);
      for (auto& b : t.codes) b = static_cast<std::uint8_t>(rng());
      for (auto& b : t.scales) b = static_cast<std::uint8_t>(rng() % 4 == 0 ? 0xFF : rng() % 3 == 0 ? 0 : rng());
      const auto want = mx_values<Elem>(t, rows, cols, tile, k::isa::scalar);
      for (const k::isa path : simd_test::paths()) {
        INFO(format_name<Elem> << " " << rows << "x" << cols << " tile " << to_string(tile) << " on " << simd_test::name(path));
        check_same_values(want, mx_values<Elem>(t, rows, cols, tile, path));
      }
    }
}

TEST_CASE("simd::mx_quantize checks sizes, rules and overflowing shapes", "[simd][mx][errors]") {
  mx_buffers t = mx_alloc<float8_e4m3fn>(2, 40, mx_tile::row32);
  std::vector<float> x(79);
  CHECK(k::mx_quantize<float8_e4m3fn>(std::span<const float>(x), 2, 40, mx_tile::row32, scale_rule::floor, t.codes,
                                      t.scales) == k::kernel_status::size_mismatch);
  x.resize(80);
  CHECK(k::mx_quantize<float8_e4m3fn>(std::span<const float>(x), 2, 40, mx_tile::row32, scale_rule::pow2, t.codes,
                                      t.scales) == k::kernel_status::bad_argument);
  CHECK(k::mx_quantize<float8_e4m3fn>(std::span<const float>(x), 2, 40, mx_tile::square32, scale_rule::floor, t.codes,
                                      t.scales) == k::kernel_status::size_mismatch);  // 1 scale, not 4
  std::vector<float> out(81);
  CHECK(k::mx_dequantize<float8_e4m3fn>(t.codes, t.scales, 2, 40, mx_tile::row32, std::span<float>(out)) ==
        k::kernel_status::size_mismatch);
  const std::size_t huge = (std::size_t{1} << 63) + 2;  // rows * cols wraps to 4
  std::vector<float> four(4);
  std::vector<std::uint8_t> c4(4), s4(4);
  CHECK(k::mx_quantize<float8_e4m3fn>(std::span<const float>(four), huge, 2, mx_tile::row32, scale_rule::floor, c4, s4) ==
        k::kernel_status::size_mismatch);
  CHECK(!k::mx_scale_count(std::size_t{1} << 40, std::size_t{1} << 40, mx_tile::col32));
}

TEMPLATE_LIST_TEST_CASE("simd::mx_quantize scales match the reference at every exponent and rule boundary",
                        "[simd][mx]", mx_elements) {  // One block per amax pattern: every biased exponent 0..255 with the fractions where the rules
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
  for (const scale_rule rule : kRules) {
    const mx_buffers want = mx_run<Elem>(x, rows, cols, mx_tile::row32, rule, k::isa::scalar);
    for (std::size_t b = 0; b < patterns.size(); ++b) {  // the reference path against mx_ref
      const std::vector<float> block(x.begin() + static_cast<std::ptrdiff_t>(32 * b), x.begin() + static_cast<std::ptrdiff_t>(32 * b + 32));
      if (want.scales[b] != mx_ref::quantize_block<Elem>(block, rule).scale)
        FAIL("amax bits 0x" << std::hex << patterns[b] << ": reference path scale 0x" << unsigned{want.scales[b]});
    }
    for (const k::isa path : simd_test::paths()) {
      INFO(format_name<Elem> << " " << to_string(rule) << " on " << simd_test::name(path));
      const mx_buffers got = mx_run<Elem>(x, rows, cols, mx_tile::row32, rule, path);
      for (std::size_t b = 0; b < patterns.size(); ++b)
        if (got.scales[b] != want.scales[b])
          FAIL("amax bits 0x" << std::hex << patterns[b] << ": scale 0x" << unsigned{want.scales[b]} << " expected, got 0x"
                              << unsigned{got.scales[b]});
      REQUIRE(got.codes == want.codes);
    }
  }
}
