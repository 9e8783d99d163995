// simd/threads.hpp: a span split over 1..5 threads gives exactly the single-call result on
// every ISA path (stochastic rounding included, thanks to the counter-based random bits); so
// does splitting a span into two calls with first_index; parallel_for covers [0, n) once.
#include <catch2/catch.hpp>

#include <atomic>
#include <cstdint>
#include <span>
#include <vector>

#include <minifloat/simd/threads.hpp>
#include "support/all_but_attention.hpp"

#include "simd_equivalence/simd_support.hpp"

using namespace minifloat;
namespace k = minifloat::simd;
using simd_test::bits;

TEST_CASE("parallel_for covers every index exactly once, on grain boundaries", "[simd][threads]") {
  for (const std::size_t n : {0U, 1U, 63U, 64U, 65U, 1000U, 4097U})
    for (const unsigned threads : {0U, 1U, 2U, 3U, 7U}) {
      std::vector<std::atomic<int>> hits(n);
      std::atomic<int> bad_start{0};
      k::parallel_for(n, threads, 64, [&](std::size_t b, std::size_t e) {
        if (b % 64 != 0) ++bad_start;
        for (std::size_t i = b; i < e; ++i) ++hits[i];
      });
      CHECK(bad_start == 0);
      for (std::size_t i = 0; i < n; ++i) REQUIRE(hits[i] == 1);
    }
}

TEST_CASE("threaded and split bulk calls give the single-call codes", "[simd][threads]") {
  simd_test::input_source src(31);
  const auto x = src.floats(5000);
  const k::bulk_options base{.seed = 2024, .first_index = 17};
  for (const k::isa path : simd_test::paths())
    for (const conversion c : {conversion{}, conversion{rounding::stochastic, overflow::saturate}}) {
      k::bulk_options o = base;
      o.path = path;
      std::vector<std::uint8_t> one(x.size());
      REQUIRE(k::encode<hifloat8>(std::span<const float>(x), std::span<std::uint8_t>(one), c, o) == k::kernel_status::ok);
      for (const unsigned threads : {1U, 2U, 3U, 5U}) {
        std::vector<std::uint8_t> par(x.size());
        REQUIRE(k::encode_parallel<hifloat8>(std::span<const float>(x), std::span<std::uint8_t>(par), c, threads, o) ==
                k::kernel_status::ok);
        REQUIRE(par == one);
        float amax1 = 0.0f, amaxp = 0.0f;
        std::vector<std::uint8_t> q1(x.size()), qp(x.size());
        REQUIRE(k::quantize_scaled<float8_e4m3fn>(std::span<const float>(x), std::span<std::uint8_t>(q1), 3.0f, amax1, c,
                                                  o) == k::kernel_status::ok);
        REQUIRE(k::quantize_scaled_parallel<float8_e4m3fn>(std::span<const float>(x), std::span<std::uint8_t>(qp), 3.0f,
                                                           amaxp, c, threads, o) == k::kernel_status::ok);
        REQUIRE(qp == q1);
        REQUIRE(bits(amaxp) == bits(amax1));
      }
      // Two calls, the second with first_index moved on, equal one call.
      std::vector<std::uint8_t> split(x.size());
      const std::size_t cut = 1234;
      k::bulk_options o2 = o;
      o2.first_index = o.first_index + cut;
      REQUIRE(k::encode<hifloat8>(std::span<const float>(x.data(), cut), std::span<std::uint8_t>(split.data(), cut), c,
                                  o) == k::kernel_status::ok);
      REQUIRE(k::encode<hifloat8>(std::span<const float>(x.data() + cut, x.size() - cut),
                                  std::span<std::uint8_t>(split.data() + cut, x.size() - cut), c, o2) ==
              k::kernel_status::ok);
      REQUIRE(split == one);
      // Decode too.
      std::vector<float> d1(x.size()), dp(x.size());
      REQUIRE(k::decode<hifloat8>(std::span<const std::uint8_t>(one), std::span<float>(d1), o) == k::kernel_status::ok);
      REQUIRE(k::decode_parallel<hifloat8>(std::span<const std::uint8_t>(one), std::span<float>(dp), 3, o) ==
              k::kernel_status::ok);
      for (std::size_t i = 0; i < d1.size(); ++i) REQUIRE(bits(d1[i]) == bits(dp[i]));
    }
}

TEST_CASE("threaded MX quantize equals the single call on every tile", "[simd][threads][mx]") {
  simd_test::input_source src(7);
  for (const mx_tile tile : {mx_tile::row32, mx_tile::col32, mx_tile::square32})
    for (const auto& [rows, cols] : {std::pair<std::size_t, std::size_t>{100, 70}, {31, 200}, {64, 33}}) {
      const auto x = src.floats(rows * cols);
      const std::size_t nc = *k::mx_code_count<float4_e2m1fn>(rows, cols), ns = *k::mx_scale_count(rows, cols, tile);
      std::vector<std::uint8_t> c1(nc), s1(ns);
      REQUIRE(k::mx_quantize<float4_e2m1fn>(std::span<const float>(x), rows, cols, tile, scale_rule::floor, c1, s1) ==
              k::kernel_status::ok);
      for (const unsigned threads : {2U, 3U}) {
        std::vector<std::uint8_t> cp(nc, 0xA5), sp(ns, 0xA5);
        REQUIRE(k::mx_quantize_parallel<float4_e2m1fn>(std::span<const float>(x), rows, cols, tile, scale_rule::floor, cp,
                                                       sp, threads) == k::kernel_status::ok);
        REQUIRE(cp == c1);
        REQUIRE(sp == s1);
      }
    }
}
