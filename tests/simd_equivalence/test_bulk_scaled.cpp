// Scaled bulk kernels on every ISA path: quantize_scaled (codes of x / s in float32 plus the
// finite amax of x in the same pass), finite_amax, and the scheme-level simd::quantize /
// quantize_with_scales / dequantize against minifloat::quantize / quantize_with_scales /
// dequantize (quant/quantized_tensor.hpp): identical codes and scales, identical values, for
// every format, granularity and scale rule on random data with special values.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include <minifloat/simd/bulk.hpp>
#include <minifloat/simd/quantize_twin.hpp>
#include <minifloat/all.hpp>
#include <minifloat/quant/quantized_tensor.hpp>

#include "simd_equivalence/simd_support.hpp"

using namespace minifloat;
namespace k = minifloat::simd;
using simd_test::bits;
using simd_test::kFull;

namespace {

float reference_amax(std::span<const float> x) { return finite_amax(x); }

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

namespace {

std::vector<float> tensor_data(std::size_t n, std::uint32_t seed) {
  // Mostly normal-ish magnitudes so that scales are meaningful, with outliers and specials.
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) {
    const auto r = static_cast<std::uint32_t>(rng() % 64);
    x = nd(rng) * (r == 0 ? 1e4f : r == 1 ? 1e-6f : 1.0f);
    if (r == 2) x = 0.0f;
    if (r == 3 && rng() % 8 == 0) x = (rng() & 1) ? INFINITY : std::nanf("");
  }
  return v;
}

template <class A, class B>
bool same_bytes(const A& a, const B& b) {
  return a.size() == b.size() && (a.size() == 0 || std::memcmp(a.data(), b.data(), a.size_bytes()) == 0);
}

void check_values(const std::vector<float>& want, const std::vector<float>& got) {
  REQUIRE(want.size() == got.size());
  for (std::size_t i = 0; i < want.size(); ++i)
    if (want[i] != want[i] ? got[i] == got[i] : bits(got[i]) != bits(want[i]))
      FAIL("value " << i << ": expected " << want[i] << ", got " << got[i]);
}

void check_tensor(const quant_scheme& s, std::size_t rows, std::size_t cols, std::uint32_t seed) {
  const auto x = tensor_data(rows * cols, seed);
  const auto want = quantize(std::span<const float>(x), rows, cols, s);
  const auto want_values = dequantize(want);
  for (const k::isa path : simd_test::paths()) {
    INFO(s.describe() << " " << rows << "x" << cols << " on " << simd_test::name(path));
    const auto got = k::quantize(std::span<const float>(x), rows, cols, s, {.path = path});
    REQUIRE(same_bytes(got.codes(), want.codes()));
    REQUIRE(same_bytes(got.scales(), want.scales()));
    REQUIRE(same_bytes(got.mx_scales(), want.mx_scales()));
    check_values(want_values, k::dequantize(want, {.path = path}));
    if (s.gran != granularity::mx) {
      const matrix_view<const float> xv(std::span<const float>(x), rows, cols);
      const auto want2 = quantize_with_scales(xv, s, want.scales());
      const auto got2 = k::quantize_with_scales(xv, s, want.scales(), {.path = path});
      REQUIRE(same_bytes(got2.codes(), want2.codes()));
      REQUIRE(same_bytes(got2.scales(), want2.scales()));
    }
  }
}

const std::pair<std::size_t, std::size_t> kShapes[] = {{0, 5}, {1, 1}, {3, 257}, {37, 70}, {64, 33}};

}  // namespace

TEST_CASE("simd::quantize equals minifloat::quantize for fp32-scaled schemes", "[simd][scaled][scheme]") {
  const format_id formats[] = {format_id::hifloat8,      format_id::float8_e4m3fn, format_id::float8_e5m2,
                               format_id::float6_e3m2fn, format_id::float6_e2m3fn, format_id::float4_e2m1fn,
                               format_id::bfloat16,      format_id::float16};
  std::uint32_t seed = 1;
  for (const format_id f : formats)
    for (const granularity g : {granularity::tensor, granularity::channel, granularity::token, granularity::block})
      for (const scale_rule rule : {scale_rule::max, scale_rule::pow2, scale_rule::none})
        for (const rounding r : {rounding::nearest, rounding::toward_zero}) {
          quant_scheme s = quant_scheme::make(f, g);
          s.rule = rule;
          s.round = r;
          if (rule == scale_rule::pow2) s.target = (seed % 2) ? 4 : -3;
          if (g == granularity::block) {
            s.block_rows = 1 + seed % 4;
            s.block_cols = seed % 3 == 0 ? 128 : 3 + seed % 5;
          }
          for (const auto& [rows, cols] : kShapes) {
            if (!kFull && rows * cols > 300 && seed % 4 != 0) continue;
            check_tensor(s, rows, cols, ++seed);
          }
        }
}

TEST_CASE("simd::quantize equals minifloat::quantize for mx schemes", "[simd][scaled][scheme][mx]") {
  const format_id formats[] = {format_id::float8_e4m3fn, format_id::float8_e5m2, format_id::float6_e3m2fn,
                               format_id::float6_e2m3fn, format_id::float4_e2m1fn};
  std::uint32_t seed = 100;
  for (const format_id f : formats)
    for (const int axis : {0, 1})
      for (const scale_rule rule : {scale_rule::floor, scale_rule::rceil, scale_rule::ceil, scale_rule::even}) {
        quant_scheme s = quant_scheme::make(f, granularity::mx);
        s.axis = axis;
        s.rule = rule;
        for (const auto& [rows, cols] : kShapes) check_tensor(s, rows, cols, ++seed);
      }
}
