// The attention kernels' vector P rounding (x86/pieces.hpp round_p, x86/avx2.hpp round_p256)
// on every non-negative finite float32, compared bit for bit with the independent oracle
// (tests/oracle/oracle.hpp): decode(encode_F(x)), F's default rounding, saturating, for the 8-bit
// P formats, whose vector forms are written from the grid (HiF8 on the bits, E4M3/E5M2 with
// scalef/roundscale), and, on [0, 256], the shorter forms the softmax takes when p_scale >= 2^-8
// (HiF8 by two table lookups, E4M3/E5M2 by adding and subtracting a power of two). P is
// exp(S - m) / p_scale: never negative, never NaN. Without x86 the sweep
// checks the scalar round_to_format, which those vector forms stand in for. Hidden
// ([.exhaustive]); run with
//   minifloat_exhaustive "[p_round]"
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <minifloat/attention/block_kernels.hpp>
#include <minifloat/minifloat.hpp>

#include "oracle/oracle.hpp"

using namespace minifloat;
namespace ad = minifloat::attention::detail;

namespace {

template <class T>
void sweep_p_rounding(format_id f) {
  (void)minifloat_oracle::table<T>();  // built before the threads start
  constexpr std::uint32_t kChunk = 1U << 16, kEnd = 0x7F800000U;  // +0 .. the largest finite float
  const conversion sat{rounding::nearest, overflow::saturate};
  const attention::static_format p{f, 1.0f};
#if MINIFLOAT_ATTENTION_X86
  const bool avx512 = ad::use_avx512(simd::isa::automatic);
#endif
  std::atomic<std::uint32_t> next{0};
  std::atomic<std::uint64_t> bad{0}, checked{0}, checked_le{0};
  std::mutex mu;
  std::vector<std::string> first;

  const auto worker = [&] {
    std::vector<float> x(kChunk), y5(kChunk), y2(kChunk), yl(kChunk);
    std::uint64_t local = 0, seen = 0, le_seen = 0;
    for (;;) {
      const std::uint32_t begin = next.fetch_add(kChunk);
      if (begin >= kEnd) break;
      for (std::uint32_t i = 0; i < kChunk; ++i) x[i] = std::bit_cast<float>(begin + i);
#if MINIFLOAT_ATTENTION_X86
      ad::x86::round_p_array_avx2(x.data(), y2.data(), kChunk, p);
      // the softmax's form for x in [0, 256] (p_round_for), where it applies
      const bool le256 = avx512 && begin <= 0x43800000U;
      if (avx512) ad::x86::round_p_array(x.data(), y5.data(), kChunk, p);
      else y5 = y2;
      if (le256) ad::x86::round_p_array(x.data(), yl.data(), kChunk, p, ad::x86::p_round_for(p));
#else
      for (std::uint32_t i = 0; i < kChunk; ++i) y2[i] = y5[i] = attention::round_to_format(x[i], f);
      const bool le256 = false;
#endif
      for (std::uint32_t i = 0; i < kChunk; ++i) {
        const float want = static_cast<float>(minifloat_oracle::oracle_decode<T>(minifloat_oracle::oracle_encode<T>(x[i], sat)));
        const auto w = std::bit_cast<std::uint32_t>(want);
        ++seen;
        const bool le_ok = !le256 || x[i] > 256.0f || std::bit_cast<std::uint32_t>(yl[i]) == w;
        if (le256 && x[i] <= 256.0f) ++le_seen;
        if (std::bit_cast<std::uint32_t>(y2[i]) == w && std::bit_cast<std::uint32_t>(y5[i]) == w && le_ok) continue;
        ++local;
        const std::lock_guard<std::mutex> lock(mu);
        if (first.size() < 8) {
          char buf[160];
          std::snprintf(buf, sizeof buf, "%s x = %a: oracle %a, AVX-512 %a, AVX2 %a, AVX-512 <= 256 form %a", std::string(to_string(f)).c_str(),
                        static_cast<double>(x[i]), static_cast<double>(want), static_cast<double>(y5[i]), static_cast<double>(y2[i]),
                        static_cast<double>(le256 ? yl[i] : want));
          first.emplace_back(buf);
        }
      }
    }
    bad += local, checked += seen, checked_le += le_seen;
  };
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < std::max(1U, std::thread::hardware_concurrency()); ++t) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  std::printf("P rounding exhaustive %-14s %llu values (%llu of them also on the [0, 256] form), %llu mismatches\n",
              std::string(to_string(f)).c_str(), static_cast<unsigned long long>(checked.load()),
              static_cast<unsigned long long>(checked_le.load()), static_cast<unsigned long long>(bad.load()));
  std::fflush(stdout);
  for (const auto& s : first) FAIL_CHECK(s);
  CHECK(checked.load() == kEnd);
#if MINIFLOAT_ATTENTION_X86
  if (avx512) CHECK(checked_le.load() == 0x43800001ULL);  // +0 .. 256
#endif
  CHECK(bad.load() == 0);
}

}  // namespace

TEST_CASE("P rounding exhaustive: hifloat8", "[.exhaustive][p_round]") { sweep_p_rounding<hifloat8>(format_id::hifloat8); }
TEST_CASE("P rounding exhaustive: float8_e4m3fn", "[.exhaustive][p_round]") {
  sweep_p_rounding<float8_e4m3fn>(format_id::float8_e4m3fn);
}
TEST_CASE("P rounding exhaustive: float8_e5m2", "[.exhaustive][p_round]") { sweep_p_rounding<float8_e5m2>(format_id::float8_e5m2); }
