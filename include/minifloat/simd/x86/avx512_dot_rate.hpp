#pragma once
// Whether this core multiplies bfloat16 pairs (vdpbf16ps) faster than fp32 FMAs (vfmadd231ps)
// per product: a speed fact, not an ISA level. On the Sapphire Rapids VMs measured here one zmm
// vdpbf16ps issues at about a quarter of the zmm FMA rate, so it does half the products per
// cycle; AMD Zen 4 runs it at the FMA rate, twice the products. Kernels whose bfloat16-pair and
// fp32 forms give the same bits (attention/x86/avx512.hpp, gemm/blocked.hpp) take the pair form
// only where this says so. Measured once per process, about 0.1 ms: twelve independent
// accumulator chains of each instruction in registers, interleaved trials, best of 9. The
// measured number is the cost of one vdpbf16ps in vfmadd231ps; each caller applies its own
// threshold to it (two FMAs do a pair instruction's work, so below 2 pairs do more per cycle).
#include <algorithm>
#include <chrono>
#include <limits>

#include "../isa.hpp"
#include "intrinsic_warnings.hpp"

#if MINIFLOAT_SIMD_X86
#include <immintrin.h>
#endif

namespace minifloat::simd::avx512 {

#if MINIFLOAT_SIMD_X86

MINIFLOAT_AVX512_WARNINGS_PUSH

namespace detail {

/// n rounds of 12 independent vdpbf16ps (pairs) or vfmadd231ps chains; returns a sum so the
/// work is not dropped.
template <bool Pairs>
MINIFLOAT_TARGET_AVX512 inline float dot_chains(long n) {
  __m512 a[12];
  for (int i = 0; i < 12; ++i) a[i] = _mm512_set1_ps(static_cast<float>(i));
  __m512i x = _mm512_set1_epi32(0x3F803F80), y = _mm512_set1_epi32(0x3A803A80);  // bf16 pairs (1, 1), (2^-10, 2^-10)
  __m512 xf = _mm512_set1_ps(1.0f), yf = _mm512_set1_ps(0x1p-10f);
  for (long r = 0; r < n; ++r) {
    if constexpr (Pairs) {
#pragma GCC unroll 12
      for (int i = 0; i < 12; ++i) a[i] = _mm512_dpbf16_ps(a[i], reinterpret_cast<__m512bh>(x), reinterpret_cast<__m512bh>(y));
      __asm__ volatile("" : "+v"(x), "+v"(y));
    } else {
#pragma GCC unroll 12
      for (int i = 0; i < 12; ++i) a[i] = _mm512_fmadd_ps(xf, yf, a[i]);
      __asm__ volatile("" : "+v"(xf), "+v"(yf));
    }
  }
  __m512 s = a[0];
  for (int i = 1; i < 12; ++i) s = _mm512_add_ps(s, a[i]);
  return _mm512_reduce_add_ps(s);
}

}  // namespace detail

/// The time of one zmm vdpbf16ps over that of one zmm vfmadd231ps, throughput-bound, measured
/// once per process; +infinity where the avx512 level is not available.
inline double bf16_pair_cost_in_fmas() noexcept {
  static const double cost = [] {
    if (!isa_available(isa::avx512)) return std::numeric_limits<double>::infinity();
    using clock = std::chrono::steady_clock;
    constexpr long rounds = 2000;
    auto best_fma = clock::duration::max(), best_dot = clock::duration::max();
    volatile float sink = 0.0f;
    for (int trial = 0; trial < 9; ++trial) {
      const auto t0 = clock::now();
      sink = sink + detail::dot_chains<false>(rounds);
      const auto t1 = clock::now();
      sink = sink + detail::dot_chains<true>(rounds);
      const auto t2 = clock::now();
      best_fma = std::min(best_fma, t1 - t0), best_dot = std::min(best_dot, t2 - t1);
    }
    if (best_fma.count() <= 0) return std::numeric_limits<double>::infinity();
    return static_cast<double>(best_dot.count()) / static_cast<double>(best_fma.count());
  }();
  return cost;
}

/// True where the avx512 level is available and a vdpbf16ps costs less than 1.7 vfmadd231ps:
/// the attention kernels' threshold (two FMAs do a pair instruction's work, so the pair form
/// must be more than 15 % faster per product).
inline bool bf16_pairs_beat_fma() noexcept { return bf16_pair_cost_in_fmas() < 1.7; }

MINIFLOAT_AVX512_WARNINGS_POP

#else

inline double bf16_pair_cost_in_fmas() noexcept { return std::numeric_limits<double>::infinity(); }
inline bool bf16_pairs_beat_fma() noexcept { return false; }

#endif

}  // namespace minifloat::simd::avx512
