// All 2^32 float32 bit patterns through narrow<T>, compared bit for bit with the independent
// oracle (tests/oracle/oracle.hpp): the default conversion for every format, and the saturating
// one for hifloat8, E4M3 and E5M2. Hidden ([.exhaustive]); run with
//   minifloat_exhaustive "[.exhaustive]"
// The work is split into 2^24-pattern chunks handed out to hardware_concurrency() threads.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <minifloat/minifloat.hpp>

#include "oracle/oracle.hpp"

using namespace minifloat;

namespace {

template <class T>
void sweep_all_float32(conversion c) {
  (void)minifloat_oracle::table<T>();  // build the table before the threads start
  constexpr std::uint64_t kChunk = std::uint64_t{1} << 24;
  constexpr std::uint64_t kChunks = (std::uint64_t{1} << 32) / kChunk;
  constexpr std::size_t kPrinted = 8;
  const unsigned n_threads = std::max(1U, std::thread::hardware_concurrency());

  std::atomic<std::uint64_t> next_chunk{0};
  std::atomic<std::uint64_t> mismatches{0};
  std::mutex mu;
  std::vector<std::string> first;

  const auto worker = [&] {
    std::uint64_t local = 0;
    for (;;) {
      const std::uint64_t chunk = next_chunk.fetch_add(1);
      if (chunk >= kChunks) break;
      const std::uint64_t begin = chunk * kChunk;
      for (std::uint64_t i = begin; i < begin + kChunk; ++i) {
        const float f = std::bit_cast<float>(static_cast<std::uint32_t>(i));
        const auto got = encode<T>(f, c);
        const auto expected = minifloat_oracle::oracle_encode<T>(f, c);
        if (got != expected) {
          ++local;
          const std::lock_guard<std::mutex> lock(mu);
          if (first.size() < kPrinted) {
            char buf[160];
            std::snprintf(buf, sizeof buf, "%s %s/%s input float 0x%08x (%.9g): library 0x%x, oracle 0x%x",
                          std::string(format_name<T>).c_str(), std::string(to_string(c.round)).c_str(),
                          std::string(to_string(c.on_overflow)).c_str(), static_cast<unsigned>(i),
                          static_cast<double>(f), static_cast<unsigned>(got), static_cast<unsigned>(expected));
            first.emplace_back(buf);
          }
        }
      }
    }
    mismatches += local;
  };

  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < n_threads; ++t) threads.emplace_back(worker);
  for (auto& th : threads) th.join();
  const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0;

  std::printf("float32 exhaustive %-15s %-14s %-14s %u threads: %.1f s, %llu mismatches\n",
              std::string(format_name<T>).c_str(), std::string(to_string(c.round)).c_str(),
              std::string(to_string(c.on_overflow)).c_str(), n_threads, dt.count(),
              static_cast<unsigned long long>(mismatches.load()));
  std::fflush(stdout);
  for (const auto& s : first) FAIL_CHECK(s);
  CHECK(mismatches.load() == 0);
}

constexpr conversion kSaturating{rounding::nearest, overflow::saturate};

}  // namespace

TEST_CASE("float32 exhaustive: hifloat8", "[.exhaustive]") { sweep_all_float32<hifloat8>({}); }
TEST_CASE("float32 exhaustive: hifloat8 saturating", "[.exhaustive]") {
  sweep_all_float32<hifloat8>(kSaturating);
}
TEST_CASE("float32 exhaustive: float8_e4m3fn", "[.exhaustive]") {
  sweep_all_float32<float8_e4m3fn>({});
}
TEST_CASE("float32 exhaustive: float8_e4m3fn saturating", "[.exhaustive]") {
  sweep_all_float32<float8_e4m3fn>(kSaturating);
}
TEST_CASE("float32 exhaustive: float8_e5m2", "[.exhaustive]") {
  sweep_all_float32<float8_e5m2>({});
}
TEST_CASE("float32 exhaustive: float8_e5m2 saturating", "[.exhaustive]") {
  sweep_all_float32<float8_e5m2>(kSaturating);
}
TEST_CASE("float32 exhaustive: float6_e3m2fn", "[.exhaustive]") {
  sweep_all_float32<float6_e3m2fn>({});
}
TEST_CASE("float32 exhaustive: float6_e2m3fn", "[.exhaustive]") {
  sweep_all_float32<float6_e2m3fn>({});
}
TEST_CASE("float32 exhaustive: float4_e2m1fn", "[.exhaustive]") {
  sweep_all_float32<float4_e2m1fn>({});
}
TEST_CASE("float32 exhaustive: float8_e8m0fnu", "[.exhaustive]") {
  sweep_all_float32<float8_e8m0fnu>({});
}
TEST_CASE("float32 exhaustive: bfloat16", "[.exhaustive]") { sweep_all_float32<bfloat16>({}); }
TEST_CASE("float32 exhaustive: float16", "[.exhaustive]") { sweep_all_float32<float16>({}); }
// The ml_dtypes float8 variants: default (non-saturating: NaN for fnuz, Inf for e3m4/e4m3) and saturating.
TEST_CASE("float32 exhaustive: float8_e4m3fnuz", "[.exhaustive]") { sweep_all_float32<float8_e4m3fnuz>({}); }
TEST_CASE("float32 exhaustive: float8_e4m3fnuz saturating", "[.exhaustive]") {
  sweep_all_float32<float8_e4m3fnuz>(kSaturating);
}
TEST_CASE("float32 exhaustive: float8_e5m2fnuz", "[.exhaustive]") { sweep_all_float32<float8_e5m2fnuz>({}); }
TEST_CASE("float32 exhaustive: float8_e5m2fnuz saturating", "[.exhaustive]") {
  sweep_all_float32<float8_e5m2fnuz>(kSaturating);
}
TEST_CASE("float32 exhaustive: float8_e4m3b11fnuz", "[.exhaustive]") { sweep_all_float32<float8_e4m3b11fnuz>({}); }
TEST_CASE("float32 exhaustive: float8_e4m3b11fnuz saturating", "[.exhaustive]") {
  sweep_all_float32<float8_e4m3b11fnuz>(kSaturating);
}
TEST_CASE("float32 exhaustive: float8_e3m4", "[.exhaustive]") { sweep_all_float32<float8_e3m4>({}); }
TEST_CASE("float32 exhaustive: float8_e3m4 saturating", "[.exhaustive]") {
  sweep_all_float32<float8_e3m4>(kSaturating);
}
TEST_CASE("float32 exhaustive: float8_e4m3", "[.exhaustive]") { sweep_all_float32<float8_e4m3>({}); }
TEST_CASE("float32 exhaustive: float8_e4m3 saturating", "[.exhaustive]") {
  sweep_all_float32<float8_e4m3>(kSaturating);
}
