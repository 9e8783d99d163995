// rounding::stochastic, against the rule in policy.hpp:
//   f in [0, 1) = the part of |x| below the kept LSB, in units of that LSB; F = floor(f * 2^32);
//   the magnitude rounds away from zero iff F + r >= 2^32, else it truncates; overflow as for
//   rounding::nearest.
// Checked here: exactness on representable inputs for any r, determinism, agreement with the
// oracle (tests/oracle/oracle.hpp) on every bf16/fp16 input with pseudo-random r, unbiasedness
// (statistical, fixed seed), monotonicity in r with the switch exactly at r = 2^32 - F, and
// hand-computed cases.
#include <catch2/catch.hpp>

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <minifloat/minifloat.hpp>

#include "oracle/oracle.hpp"

using namespace minifloat;
using minifloat_oracle::oracle_decode;
using minifloat_oracle::oracle_encode;

namespace {

constexpr std::array<overflow, 3> kOverflows = {overflow::non_saturating, overflow::saturate,
                                                overflow::saturate_nan_to_zero};

constexpr conversion sr(overflow o = overflow::non_saturating) { return {rounding::stochastic, o}; }

#ifdef NDEBUG
constexpr bool kFull = true;
#else
constexpr bool kFull = false;
#endif

constexpr std::uint64_t kTwo32 = std::uint64_t{1} << 32;

/// A few fixed r values and some pseudo-random ones.
std::vector<std::uint32_t> some_r() {
  std::vector<std::uint32_t> r = {0U, 1U, 0x80000000U, 0xFFFFFFFFU, 0x7FFFFFFFU, 0x80000001U};
  std::mt19937 rng(2024);
  for (int i = 0; i < 16; ++i) r.push_back(static_cast<std::uint32_t>(rng()));
  return r;
}

/// Non-representable test inputs of T: lo + frac * gap for a few neighbour pairs (lo, hi) below
/// max (so no overflow), frac in (0, 1).
struct sample {
  double x, lo, hi;
};
template <class T>
std::vector<sample> samples() {
  const auto& t = minifloat_oracle::table<T>();
  std::vector<std::size_t> at = {0, 1, t.max_index - 1};
  for (std::size_t i = 0; i + 1 < t.max_index; ++i)
    if (t.mag[i] <= 1.0 && t.mag[i + 1] > 1.0) at.push_back(i);  // the pair around 1.0
  for (std::size_t i = 0; i + 1 < t.max_index; ++i)
    if (t.mag[i] <= 0.3 && t.mag[i + 1] > 0.3) at.push_back(i);  // the pair around 0.3
  std::vector<sample> s;
  for (std::size_t i : at)
    for (double frac : {0.1, 0.25, 0.5, 0.7, 0.999}) {
      const double lo = t.mag[i], hi = t.mag[i + 1];
      s.push_back({lo + frac * (hi - lo), lo, hi});
    }
  return s;
}

}  // namespace

TEMPLATE_LIST_TEST_CASE("stochastic: representable inputs are exact for any r", "[stochastic]",
                        all_formats) {
  using T = TestType;
  // A Debug (-O0) build uses only the first 6 r values (the fixed ones) for the 16-bit formats.
  auto rs = some_r();
  if (!kFull && T::spec::bits > 8) rs.resize(6);
  std::size_t bad = 0;
  for (std::uint32_t c = 0; c < (1U << T::spec::bits); ++c) {
    const T v = T::from_bits(static_cast<typename T::storage_type>(c));
    if (isnan(v) || isinf(v)) continue;
    for (overflow o : kOverflows)
      for (std::uint32_t r : rs) {
        const auto got_f = encode<T>(static_cast<float>(v), sr(o), r);
        const auto got_d = encode<T>(static_cast<double>(v), sr(o), r);
        if ((got_f != c || got_d != c) && bad++ < 10)
          FAIL_CHECK(format_name<T> << " code " << c << " r " << r << ": got " << unsigned{got_f}
                                    << "/" << unsigned{got_d});
      }
  }
  CHECK(bad == 0);
}

TEMPLATE_LIST_TEST_CASE("stochastic: agrees with the oracle on all bf16/fp16 inputs, random r",
                        "[stochastic][oracle]", all_formats) {
  using T = TestType;
  // r cycles through values that sit exactly on the switch point 2^32 - F of dyadic fractions
  // f = 1/2, 1/4, 3/4, 1/16, ... (and one off it), interleaved with pseudo-random values.
  constexpr std::array<std::uint32_t, 11> kEdges = {
      0U, 1U, 0x40000000U, 0x7FFFFFFFU, 0x80000000U, 0x80000001U, 0xBFFFFFFFU, 0xC0000000U,
      0xF0000000U, 0xFFFFFFFEU, 0xFFFFFFFFU};
  std::mt19937 rng(7);
  std::size_t k = 0;
  std::size_t bad = 0;
  for (overflow o : kOverflows)
    for (std::uint32_t b = 0; b < 65536U; ++b) {
      const auto b16 = static_cast<std::uint16_t>(b);
      for (const float f : {static_cast<float>(bfloat16::from_bits(b16)),
                            static_cast<float>(float16::from_bits(b16))}) {
        const std::size_t j = k++ % 16;
        const auto r = j < kEdges.size() ? kEdges[j] : static_cast<std::uint32_t>(rng());
        const auto got = encode<T>(f, sr(o), r);
        const auto again = encode<T>(f, sr(o), r);
        const auto expected = oracle_encode<T>(f, sr(o), r);
        if ((got != expected || again != got) && bad++ < 10)
          FAIL_CHECK(format_name<T> << " " << to_string(o) << " input float 0x" << std::hex
                                    << std::bit_cast<std::uint32_t>(f) << " r 0x" << r
                                    << ": library 0x" << unsigned{got} << ", oracle 0x"
                                    << unsigned{expected} << std::dec);
      }
    }
  CHECK(bad == 0);
}

TEMPLATE_LIST_TEST_CASE("stochastic: deterministic, monotone in r, switches at 2^32 - F",
                        "[stochastic]", all_formats) {
  using T = TestType;
  std::vector<std::uint32_t> rs;
  for (std::uint64_t k = 0; k < 256; ++k) rs.push_back(static_cast<std::uint32_t>(k << 24));
  rs.push_back(0xFFFFFFFFU);
  std::size_t bad = 0;
  for (const sample& s : samples<T>())
    for (double sign : {1.0, -1.0}) {
      if (sign < 0 && !minifloat_oracle::info_of<T>().is_signed) continue;  // E8M0
      const double x = sign * s.x;
      // F computed exactly (lo <= |x| < hi <= 2 lo or lo = 0, gap a power of two).
      const auto big_f = static_cast<std::uint64_t>(
          std::floor(std::ldexp((s.x - s.lo) / (s.hi - s.lo), 32)));
      const std::uint64_t threshold = kTwo32 - big_f;  // smallest r that rounds up
      std::vector<std::uint32_t> r_list = rs;
      for (std::uint64_t d : {std::uint64_t{0}, std::uint64_t{1}})
        if (threshold >= d && threshold - d < kTwo32)
          r_list.push_back(static_cast<std::uint32_t>(threshold - d));
      if (threshold + 1 < kTwo32) r_list.push_back(static_cast<std::uint32_t>(threshold + 1));
      std::sort(r_list.begin(), r_list.end());
      double prev = 0;
      for (std::uint32_t r : r_list) {
        const T y = narrow<T>(x, sr(), r);
        const double m = std::fabs(static_cast<double>(y));
        const bool det = narrow<T>(x, sr(), r).bits() == y.bits();
        const bool mono = m >= prev;
        const bool rule = m == (r >= threshold ? s.hi : s.lo);
        if (!(det && mono && rule) && bad++ < 10)
          FAIL_CHECK(format_name<T> << " x " << x << " r " << r << " -> " << m << " (lo " << s.lo
                                    << ", hi " << s.hi << ", F " << big_f << ")");
        prev = m;
      }
    }
  CHECK(bad == 0);
}

TEMPLATE_LIST_TEST_CASE("stochastic: unbiased (mean of 200000 draws)", "[stochastic]",
                        all_formats) {
  using T = TestType;
  // The result is lo + gap * B with B ~ Bernoulli(p), p = F / 2^32 = f - O(2^-32). The mean of N
  // draws has standard deviation gap * sqrt(p (1 - p) / N). Tolerance: 4 standard deviations
  // plus the rule's own bias bound (2^-32 of the gap). The seed is fixed, so the test is
  // deterministic; with a fresh seed it would fail with probability < 1e-4 per sample.
  constexpr int kN = 200000;
  std::mt19937 rng(12345);
  for (const sample& s : samples<T>())
    for (double sign : {1.0, -1.0}) {
      if (sign < 0 && !minifloat_oracle::info_of<T>().is_signed) continue;  // E8M0
      const double x = sign * s.x;
      const double gap = s.hi - s.lo;
      const double p = (s.x - s.lo) / gap;
      double sum = 0;
      for (int i = 0; i < kN; ++i)
        sum += static_cast<double>(narrow<T>(x, sr(), static_cast<std::uint32_t>(rng())));
      const double mean = sum / kN;
      const double tol = gap * (4 * std::sqrt(p * (1 - p) / kN) + std::ldexp(1.0, -32));
      INFO(format_name<T> << " x " << x << " lo " << s.lo << " hi " << s.hi << " mean " << mean
                          << " tol " << tol);
      CHECK(std::fabs(mean - x) <= tol);
    }
}

TEST_CASE("stochastic: hand-computed cases of the policy.hpp rule", "[stochastic]") {
  // E4M3 1.03125 = 1 + 0.25 * 2^-3: F = 2^30, up iff r >= 3 * 2^30.
  CHECK(encode<float8_e4m3fn>(1.03125f, sr(), 0xBFFFFFFFU) == 0x38);
  CHECK(encode<float8_e4m3fn>(1.03125f, sr(), 0xC0000000U) == 0x39);
  CHECK(encode<float8_e4m3fn>(-1.03125f, sr(), 0xBFFFFFFFU) == 0xB8);
  CHECK(encode<float8_e4m3fn>(-1.03125f, sr(), 0xC0000000U) == 0xB9);
  // The tie 1 + 2^-4: F = 2^31.
  CHECK(encode<float8_e4m3fn>(1.0625f, sr(), 0x7FFFFFFFU) == 0x38);
  CHECK(encode<float8_e4m3fn>(1.0625f, sr(), 0x80000000U) == 0x39);
  // f = 2^-32: F = 1, only r = 2^32 - 1 rounds up; f = 2^-33: F = 0, never.
  CHECK(encode<float8_e4m3fn>(1 + std::ldexp(1.0, -35), sr(), 0xFFFFFFFEU) == 0x38);
  CHECK(encode<float8_e4m3fn>(1 + std::ldexp(1.0, -35), sr(), 0xFFFFFFFFU) == 0x39);
  CHECK(encode<float8_e4m3fn>(1 + std::ldexp(1.0, -36), sr(), 0xFFFFFFFFU) == 0x38);
  // f = 1 - 2^-40: F = 2^32 - 1, every r except 0 rounds up.
  CHECK(encode<float8_e4m3fn>(1.125 - std::ldexp(1.0, -43), sr(), 0U) == 0x38);
  CHECK(encode<float8_e4m3fn>(1.125 - std::ldexp(1.0, -43), sr(), 1U) == 0x39);
  // Subnormal target: half the min subnormal 2^-9.
  CHECK(encode<float8_e4m3fn>(std::ldexp(1.0f, -10), sr(), 0x7FFFFFFFU) == 0x00);
  CHECK(encode<float8_e4m3fn>(std::ldexp(1.0f, -10), sr(), 0x80000000U) == 0x01);
  CHECK(encode<float8_e4m3fn>(-std::ldexp(1.0f, -10), sr(), 0x7FFFFFFFU) == 0x80);
  CHECK(encode<float8_e4m3fn>(-std::ldexp(1.0f, -10), sr(), 0x80000000U) == 0x81);
  // Overflow as for nearest: 464 is halfway from 448 to the would-be 480.
  CHECK(encode<float8_e4m3fn>(464.0f, sr(), 0x7FFFFFFFU) == 0x7E);
  CHECK(encode<float8_e4m3fn>(464.0f, sr(), 0x80000000U) == 0x7F);
  CHECK(encode<float8_e4m3fn>(-464.0f, sr(), 0x80000000U) == 0xFF);
  CHECK(encode<float8_e4m3fn>(464.0f, sr(overflow::saturate), 0x80000000U) == 0x7E);
  CHECK(encode<float8_e4m3fn>(480.0f, sr(), 0U) == 0x7F);
  CHECK(encode<float8_e4m3fn>(480.0f, sr(overflow::saturate), 0U) == 0x7E);
  // E5M2: 1.09375 = 1 + 0.375 * 2^-2: F = 0.375 * 2^32 = 0x60000000, up iff r >= 0xA0000000.
  CHECK(encode<float8_e5m2>(1.09375f, sr(), 0x9FFFFFFFU) == 0x3C);
  CHECK(encode<float8_e5m2>(1.09375f, sr(), 0xA0000000U) == 0x3D);
  CHECK(encode<float8_e5m2>(61440.0f, sr(), 0x80000000U) == 0x7C);
  // hifloat8: 1.09375 = 1 + 0.75 * 2^-3: F = 3 * 2^30, up iff r >= 2^30.
  CHECK(encode<hifloat8>(1.09375f, sr(), 0x3FFFFFFFU) == 0x08);
  CHECK(encode<hifloat8>(1.09375f, sr(), 0x40000000U) == 0x09);
  CHECK(encode<hifloat8>(-1.09375f, sr(), 0x40000000U) == 0x89);
  // hifloat8 binade E = 4 has 2 mantissa bits: LSB 4. 17 = 16 + 0.25 * 4.
  CHECK(encode<hifloat8>(17.0f, sr(), 0xBFFFFFFFU) == encode<hifloat8>(16.0f));
  CHECK(encode<hifloat8>(17.0f, sr(), 0xC0000000U) == encode<hifloat8>(20.0f));
  // hifloat8 DML binade: 1.5 * 2^-20 between 2^-20 (0x03) and 2^-19 (0x04), F = 2^31.
  CHECK(encode<hifloat8>(1.5f * std::ldexp(1.0f, -20), sr(), 0x7FFFFFFFU) == 0x03);
  CHECK(encode<hifloat8>(1.5f * std::ldexp(1.0f, -20), sr(), 0x80000000U) == 0x04);
  // Below the smallest denormal: grid 0, 2^-22. 2^-24 = 0.25 * 2^-22, up iff r >= 3 * 2^30;
  // a negative value that truncates gives the single zero 0x00.
  CHECK(encode<hifloat8>(std::ldexp(1.0f, -24), sr(), 0xBFFFFFFFU) == 0x00);
  CHECK(encode<hifloat8>(std::ldexp(1.0f, -24), sr(), 0xC0000000U) == 0x01);
  CHECK(encode<hifloat8>(-std::ldexp(1.0f, -24), sr(), 0xBFFFFFFFU) == 0x00);
  CHECK(encode<hifloat8>(-std::ldexp(1.0f, -24), sr(), 0xC0000000U) == 0x81);
  // hifloat8 overflow: 40960 is halfway from 2^15 to the would-be 1.5 * 2^15.
  CHECK(encode<hifloat8>(40960.0f, sr(), 0x7FFFFFFFU) == 0x6E);
  CHECK(encode<hifloat8>(40960.0f, sr(), 0x80000000U) == 0x6F);
  CHECK(encode<hifloat8>(40960.0f, sr(overflow::saturate), 0x80000000U) == 0x6E);
  // E8M0: LSB of binade k is 2^k. 3 = 2 + 0.5 * 2.
  CHECK(encode<float8_e8m0fnu>(3.0f, sr(), 0x7FFFFFFFU) == 0x80);
  CHECK(encode<float8_e8m0fnu>(3.0f, sr(), 0x80000000U) == 0x81);
  CHECK(encode<float8_e8m0fnu>(1.25f, sr(), 0xBFFFFFFFU) == 0x7F);
  CHECK(encode<float8_e8m0fnu>(1.25f, sr(), 0xC0000000U) == 0x80);
  // E2M1: 5 = 4 + 0.5 * 2; 6.5 = 6 + 0.25 * 2 -> overflow saturates (no Inf/NaN).
  CHECK(encode<float4_e2m1fn>(5.0f, sr(), 0x7FFFFFFFU) == 0x6);
  CHECK(encode<float4_e2m1fn>(5.0f, sr(), 0x80000000U) == 0x7);
  CHECK(encode<float4_e2m1fn>(6.5f, sr(), 0xFFFFFFFFU) == 0x7);
  CHECK(encode<float4_e2m1fn>(-6.5f, sr(), 0xFFFFFFFFU) == 0xF);
  // bfloat16: 1 + 2^-9 = 1 + 0.25 * 2^-7.
  CHECK(encode<bfloat16>(1.0f + std::ldexp(1.0f, -9), sr(), 0xBFFFFFFFU) == 0x3F80);
  CHECK(encode<bfloat16>(1.0f + std::ldexp(1.0f, -9), sr(), 0xC0000000U) == 0x3F81);
  // Specials do not depend on r.
  for (std::uint32_t r : some_r()) {
    CHECK(encode<float16>(INFINITY, sr(), r) == 0x7C00);
    CHECK(encode<float16>(NAN, sr(), r) == 0x7E00);
    CHECK(encode<float16>(-0.0f, sr(), r) == 0x8000);
    CHECK(encode<hifloat8>(-0.0f, sr(), r) == 0x00);
  }
}
