// All 2^32 float32 bit patterns through the bulk encoder, compared code for code with the scalar
// reference minifloat::encode<T>: every format in its default conversion and saturating, and
// every deterministic rounding mode for the 8-bit formats. Each ISA path gets its own test cases:
// "SIMD exhaustive: <format>" runs the AVX2 kernels (isa::avx2, which caps an AVX-512 machine at
// AVX2; the best path elsewhere), "SIMD exhaustive avx512: <format>" the AVX-512 kernels (on a
// machine without AVX-512 it says so and sweeps the best path again). Hidden ([.exhaustive]);
// run with
//   minifloat_exhaustive "[simd]"        (or "[avx512]" for the AVX-512 cases alone)
//
// A "fast scalar": calling encode<T> 2^32 times costs 10-40 s per sweep here, so the reference
// is evaluated through its structure instead. For a fixed sign, encode<T> is a step function of
// the bit pattern: patterns order like the values they encode (0 .. +Inf, then the NaNs), and
// the scalar codec is monotone in the value and constant on the NaNs (proved against an
// independent oracle by test_float32_exhaustive.cpp and the property tests). So the code is
// constant on [lo, hi] whenever encode<T>(lo) == encode<T>(hi), and a bisection with encode<T>
// finds every pattern where the code changes (a few thousand scalar calls per format; ~2 million
// for float16 / bfloat16 outputs). The sweep then checks the SIMD codes of each 64 Ki-pattern
// chunk against those runs. As a guard against that argument, every 251st pattern is also
// compared with encode<T> directly.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include <minifloat/simd/bulk.hpp>
#include "support/all_but_attention.hpp"

using namespace minifloat;
namespace k = minifloat::simd;

namespace {

/// The scalar reference on one sign half as runs: pattern start[i] .. start[i + 1] - 1 (low 31
/// bits) all encode to code[i].
template <class T>
struct step_model {
  using code_type = k::code_t<T>;
  std::vector<std::uint32_t> start;
  std::vector<code_type> code;

  static code_type at(std::uint32_t pattern, conversion c) { return encode<T>(std::bit_cast<float>(pattern), c); }

  step_model(std::uint32_t sign, conversion c) {
    std::vector<std::uint32_t> changes;  // patterns p (low 31 bits) with g(p) != g(p - 1)
    struct interval {
      std::uint32_t lo, hi;
      code_type glo, ghi;
    };
    // Finite values and Inf (monotone), then the NaNs (constant, but not in order with the rest:
    // with saturate_nan_to_zero they encode like +0), with a forced change between them.
    // Zero (E8M0 has none: 0 -> NaN), the non-zero finite values and Inf (monotone), then the
    // NaNs (constant, but out of order with the rest: with saturate_nan_to_zero they encode like
    // +0), with forced changes between the three.
    std::vector<interval> todo = {{1U, 0x7F800000U, at(sign | 1U, c), at(sign | 0x7F800000U, c)},
                                  {0x7F800001U, 0x7FFFFFFFU, at(sign | 0x7F800001U, c), at(sign | 0x7FFFFFFFU, c)}};
    changes.push_back(1U);
    changes.push_back(0x7F800001U);
    while (!todo.empty()) {
      const interval v = todo.back();
      todo.pop_back();
      if (v.glo == v.ghi) continue;
      if (v.hi == v.lo + 1) {
        changes.push_back(v.hi);
        continue;
      }
      const std::uint32_t mid = v.lo + (v.hi - v.lo) / 2;
      const code_type gm = at(sign | mid, c);
      todo.push_back({v.lo, mid, v.glo, gm});
      todo.push_back({mid, v.hi, gm, v.ghi});
    }
    std::sort(changes.begin(), changes.end());
    start.push_back(0);
    code.push_back(at(sign, c));
    for (const std::uint32_t p : changes) {
      if ((p == 1U || p == 0x7F800001U) && at(sign | p, c) == code.back()) continue;  // forced, same code
      start.push_back(p);
      code.push_back(at(sign | p, c));
    }
    start.push_back(0x80000000U);  // sentinel
  }
};

/// The path a sweep runs: `level` if this machine has it, else the best one it has.
k::isa sweep_path(k::isa level) {
  if (k::isa_available(level)) return level;
  std::printf("SIMD exhaustive: this machine has no %s path; sweeping %s instead\n", std::string(k::to_string(level)).c_str(),
              std::string(k::to_string(k::detected_isa())).c_str());
  return k::detected_isa();
}

template <class T>
void sweep(conversion c, k::isa level) {
  using code_type = k::code_t<T>;
  const auto t_model = std::chrono::steady_clock::now();
  const step_model<T> half[2] = {step_model<T>(0U, c), step_model<T>(0x80000000U, c)};
  const std::chrono::duration<double> model_time = std::chrono::steady_clock::now() - t_model;

  const k::isa path = sweep_path(level);
  constexpr std::uint64_t kChunk = std::uint64_t{1} << 16;  // 256 KiB of input: stays in L2
  constexpr std::uint64_t kChunks = (std::uint64_t{1} << 32) / kChunk;
  constexpr std::uint64_t kStride = 251;
  const unsigned n_threads = std::max(1U, std::thread::hardware_concurrency());
  std::atomic<std::uint64_t> next{0}, mismatches{0}, spot_mismatches{0};
  std::atomic<bool> kernel_failed{false};
  std::mutex mu;
  std::vector<std::string> first;

  const auto report = [&](std::uint32_t p, unsigned want, unsigned got, const char* what) {
    const std::lock_guard<std::mutex> lock(mu);
    if (first.size() >= 8) return;
    char buf[200];
    std::snprintf(buf, sizeof buf, "%s %s on %s: input 0x%08x (%.9g): %s 0x%x, SIMD 0x%x", std::string(format_name<T>).c_str(),
                  (std::string(to_string(c.round)) + "/" + std::string(to_string(c.on_overflow))).c_str(),
                  std::string(k::to_string(path)).c_str(), static_cast<unsigned>(p),
                  static_cast<double>(std::bit_cast<float>(p)), what, want, got);
    first.emplace_back(buf);
  };

  const auto worker = [&] {
    std::vector<float> in(kChunk);
    std::vector<code_type> out(kChunk);
    std::uint64_t bad = 0, spot_bad = 0;
    for (;;) {
      const std::uint64_t chunk = next.fetch_add(1);
      if (chunk >= kChunks) break;
      const auto p0 = static_cast<std::uint32_t>(chunk * kChunk);
      for (std::uint32_t i = 0; i < kChunk; ++i) in[i] = std::bit_cast<float>(p0 + i);
      if (k::encode<T>(std::span<const float>(in), std::span<code_type>(out), c, {.path = path}) != k::kernel_status::ok) {
        kernel_failed = true;
        break;
      }
      // Runs of the model overlapping [p0, p0 + kChunk) (a chunk never straddles the sign bit).
      const auto& m = half[p0 >> 31];
      const std::uint32_t lo = p0 & 0x7FFFFFFFU, hi = lo + static_cast<std::uint32_t>(kChunk);
      std::size_t run = static_cast<std::size_t>(std::upper_bound(m.start.begin(), m.start.end(), lo) - m.start.begin()) - 1;
      for (std::uint32_t at = lo; at < hi; ++run) {
        const std::uint32_t end = std::min(hi, m.start[run + 1]);
        const code_type want = m.code[run];
        // OR of differences first (vectorises); count and report only when something differs.
        const code_type* o = out.data() + (at - lo);
        const std::size_t len = end - at;
        code_type diff = 0;
        for (std::size_t j = 0; j < len; ++j) diff = static_cast<code_type>(diff | (o[j] ^ want));
        if (diff != 0) {
          bool reported = false;
          for (std::size_t j = 0; j < len; ++j)
            if (o[j] != want) {
              ++bad;
              if (!reported) report((p0 & 0x80000000U) | (at + static_cast<std::uint32_t>(j)), want, o[j], "scalar (run model)");
              reported = true;
            }
        }
        at = end;
      }
      // Direct spot check against the scalar codec.
      for (std::uint64_t q = (kStride - p0 % kStride) % kStride; q < kChunk; q += kStride) {
        const auto p = static_cast<std::uint32_t>(p0 + q);
        const code_type want = encode<T>(std::bit_cast<float>(p), c);
        if (out[q] != want) {
          ++spot_bad;
          report(p, want, out[q], "scalar (direct)");
        }
      }
    }
    mismatches += bad;
    spot_mismatches += spot_bad;
  };

  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < n_threads; ++t) threads.emplace_back(worker);
  for (auto& th : threads) th.join();
  const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0;

  std::printf("SIMD exhaustive %-15s %-13s %-21s %s, %u threads: %zu+%zu runs (%.2f s), sweep %.1f s, %llu mismatches\n",
              std::string(format_name<T>).c_str(), std::string(to_string(c.round)).c_str(),
              std::string(to_string(c.on_overflow)).c_str(), std::string(k::to_string(path)).c_str(), n_threads,
              half[0].code.size(), half[1].code.size(), model_time.count(), dt.count(),
              static_cast<unsigned long long>(mismatches.load() + spot_mismatches.load()));
  std::fflush(stdout);
  REQUIRE_FALSE(kernel_failed.load());
  for (const auto& s : first) FAIL_CHECK(s);
  CHECK(mismatches.load() == 0);
  CHECK(spot_mismatches.load() == 0);
}

constexpr conversion kDefault{};
constexpr conversion kSaturating{rounding::nearest, overflow::saturate};

/// rounding::nearest is the format's own nearest rule; sweeping it again under its name adds nothing.
template <class T>
constexpr bool kind_is_default(rounding r) {
  return r == T::spec::nearest_rule;
}

/// Default and saturating, plus every other deterministic rounding (non-saturating) and the
/// NaN-to-zero policy.
template <class T>
void sweep_8bit_all_modes(k::isa level) {
  sweep<T>(kDefault, level);
  sweep<T>(kSaturating, level);
  for (const rounding r : {rounding::nearest_even, rounding::nearest_away, rounding::toward_zero, rounding::upward,
                           rounding::downward}) {
    if (kind_is_default<T>(r)) continue;
    sweep<T>({r, overflow::non_saturating}, level);
  }
  sweep<T>({rounding::nearest, overflow::saturate_nan_to_zero}, level);
}

/// The sweeps of one ISA level, format by format.
template <class T>
void sweep_format(k::isa level) {
  if constexpr (T::spec::bits == 16 || std::is_same_v<T, float8_e8m0fnu>) {
    sweep<T>(kDefault, level);
    sweep<T>(kSaturating, level);
  } else if constexpr (T::spec::bits == 8) {
    sweep_8bit_all_modes<T>(level);
  } else if constexpr (std::is_same_v<T, float4_e2m1fn>) {
    sweep<T>(kDefault, level);
    sweep<T>({rounding::upward, overflow::non_saturating}, level);
  } else {
    sweep<T>(kDefault, level);
    sweep<T>({rounding::toward_zero, overflow::non_saturating}, level);
  }
}

}  // namespace

// float8_e8m0fnu has 8 bits but is swept like the wide formats (two conversions).
TEST_CASE("SIMD exhaustive: hifloat8", "[.exhaustive][simd]") { sweep_format<hifloat8>(k::isa::avx2); }
TEST_CASE("SIMD exhaustive: float8_e4m3fn", "[.exhaustive][simd]") { sweep_format<float8_e4m3fn>(k::isa::avx2); }
TEST_CASE("SIMD exhaustive: float8_e5m2", "[.exhaustive][simd]") { sweep_format<float8_e5m2>(k::isa::avx2); }
TEST_CASE("SIMD exhaustive: float6_e3m2fn", "[.exhaustive][simd]") { sweep_format<float6_e3m2fn>(k::isa::avx2); }
TEST_CASE("SIMD exhaustive: float6_e2m3fn", "[.exhaustive][simd]") { sweep_format<float6_e2m3fn>(k::isa::avx2); }
TEST_CASE("SIMD exhaustive: float4_e2m1fn", "[.exhaustive][simd]") { sweep_format<float4_e2m1fn>(k::isa::avx2); }
TEST_CASE("SIMD exhaustive: float8_e8m0fnu", "[.exhaustive][simd]") { sweep_format<float8_e8m0fnu>(k::isa::avx2); }
TEST_CASE("SIMD exhaustive: bfloat16", "[.exhaustive][simd]") { sweep_format<bfloat16>(k::isa::avx2); }
TEST_CASE("SIMD exhaustive: float16", "[.exhaustive][simd]") { sweep_format<float16>(k::isa::avx2); }

TEST_CASE("SIMD exhaustive avx512: hifloat8", "[.exhaustive][simd][avx512]") { sweep_format<hifloat8>(k::isa::avx512); }
TEST_CASE("SIMD exhaustive avx512: float8_e4m3fn", "[.exhaustive][simd][avx512]") {
  sweep_format<float8_e4m3fn>(k::isa::avx512);
}
TEST_CASE("SIMD exhaustive avx512: float8_e5m2", "[.exhaustive][simd][avx512]") { sweep_format<float8_e5m2>(k::isa::avx512); }
TEST_CASE("SIMD exhaustive avx512: float6_e3m2fn", "[.exhaustive][simd][avx512]") {
  sweep_format<float6_e3m2fn>(k::isa::avx512);
}
TEST_CASE("SIMD exhaustive avx512: float6_e2m3fn", "[.exhaustive][simd][avx512]") {
  sweep_format<float6_e2m3fn>(k::isa::avx512);
}
TEST_CASE("SIMD exhaustive avx512: float4_e2m1fn", "[.exhaustive][simd][avx512]") {
  sweep_format<float4_e2m1fn>(k::isa::avx512);
}
TEST_CASE("SIMD exhaustive avx512: float8_e8m0fnu", "[.exhaustive][simd][avx512]") {
  sweep_format<float8_e8m0fnu>(k::isa::avx512);
}
TEST_CASE("SIMD exhaustive avx512: bfloat16", "[.exhaustive][simd][avx512]") { sweep_format<bfloat16>(k::isa::avx512); }
TEST_CASE("SIMD exhaustive avx512: float16", "[.exhaustive][simd][avx512]") { sweep_format<float16>(k::isa::avx512); }

TEST_CASE("SIMD exhaustive: float8_e4m3fnuz", "[.exhaustive][simd]") { sweep_format<float8_e4m3fnuz>(k::isa::avx2); }
TEST_CASE("SIMD exhaustive avx512: float8_e4m3fnuz", "[.exhaustive][simd][avx512]") {
  sweep_format<float8_e4m3fnuz>(k::isa::avx512);
}
TEST_CASE("SIMD exhaustive: float8_e5m2fnuz", "[.exhaustive][simd]") { sweep_format<float8_e5m2fnuz>(k::isa::avx2); }
TEST_CASE("SIMD exhaustive avx512: float8_e5m2fnuz", "[.exhaustive][simd][avx512]") {
  sweep_format<float8_e5m2fnuz>(k::isa::avx512);
}
TEST_CASE("SIMD exhaustive: float8_e4m3b11fnuz", "[.exhaustive][simd]") { sweep_format<float8_e4m3b11fnuz>(k::isa::avx2); }
TEST_CASE("SIMD exhaustive avx512: float8_e4m3b11fnuz", "[.exhaustive][simd][avx512]") {
  sweep_format<float8_e4m3b11fnuz>(k::isa::avx512);
}
TEST_CASE("SIMD exhaustive: float8_e3m4", "[.exhaustive][simd]") { sweep_format<float8_e3m4>(k::isa::avx2); }
TEST_CASE("SIMD exhaustive avx512: float8_e3m4", "[.exhaustive][simd][avx512]") {
  sweep_format<float8_e3m4>(k::isa::avx512);
}
TEST_CASE("SIMD exhaustive: float8_e4m3", "[.exhaustive][simd]") { sweep_format<float8_e4m3>(k::isa::avx2); }
TEST_CASE("SIMD exhaustive avx512: float8_e4m3", "[.exhaustive][simd][avx512]") {
  sweep_format<float8_e4m3>(k::isa::avx512);
}
