#pragma once
// Non-temporal copies: results that are written once and not read again soon (the output of a
// large collective) go around the caches. An ordinary store first reads the line it writes
// into the cache (a read for ownership), so a streamed store moves half the bytes; it also keeps
// the output from evicting what the caller works on. Only worth it far beyond the caches: for
// a small destination the caller reads the result from cache right away.
//
//   stream_copy(src, dst)    dst = src (equal sizes), stores non-temporal where the CPU has them
//   stream_fence()           orders the streamed stores before later stores (call before another
//                            thread or process may read dst)
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "isa.hpp"

#if MINIFLOAT_SIMD_X86
#include <immintrin.h>
#endif

namespace minifloat::simd {

/// dst = src; dst.size() must equal src.size() (the caller checks). x86-64: SSE2 non-temporal
/// stores (baseline, no probe) for the 16-byte-aligned body, ordinary stores for the ends.
inline void stream_copy(std::span<const float> src, std::span<float> dst) noexcept {
  const std::size_t n = std::min(src.size(), dst.size());
#if MINIFLOAT_SIMD_X86
  const float* s = src.data();
  float* d = dst.data();
  std::size_t head = (16 - (reinterpret_cast<std::uintptr_t>(d) & 15U)) % 16 / 4;  // NOLINT: alignment only
  if (reinterpret_cast<std::uintptr_t>(d) % 4 != 0) head = n;                        // NOLINT: never for a float*
  head = std::min(head, n);
  if (head != 0) std::memcpy(d, s, 4 * head);
  std::size_t i = head;
  for (; i + 4 <= n; i += 4) _mm_stream_ps(d + i, _mm_loadu_ps(s + i));
  if (i < n) std::memcpy(d + i, s + i, 4 * (n - i));
#else
  if (n != 0) std::memcpy(dst.data(), src.data(), 4 * n);
#endif
}

inline void stream_fence() noexcept {
#if MINIFLOAT_SIMD_X86
  _mm_sfence();
#endif
}

}  // namespace minifloat::simd
