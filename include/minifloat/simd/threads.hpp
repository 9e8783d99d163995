#pragma once
// Splitting one large bulk call over N threads: the calling thread runs the first chunk and
// threads - 1 workers of the process-wide pool (core/threads.hpp) the others; the call
// returns when all are done. Chunks are contiguous, their boundaries multiples of a grain (64 elements for the
// codecs, so FP4 chunks start on a byte; 32-row bands for MX along axis 0), and each chunk is an
// ordinary single-threaded kernel call whose bulk_options::first_index is shifted by the chunk's
// start, so stochastic rounding gives the same codes for every thread count.
//
// The *_parallel wrappers return the kernel_status of the whole call (the first non-ok chunk
// status, which can only come from an unavailable ISA since sizes are checked up front). They
// are not noexcept only because starting a thread may throw std::system_error; if it does, the
// chunk runs on the calling thread instead, so a call always completes.
#include <algorithm>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <system_error>
#include <thread>
#include <vector>

#include "../core/threads.hpp"
#include "bulk.hpp"
#include "mx.hpp"

namespace minifloat::simd {

/// What "0 threads" means, and the chunked split every *_parallel wrapper runs on (core/threads.hpp).
using minifloat::parallel_for;
using minifloat::thread_count;

namespace detail {

inline constexpr std::size_t codec_grain = 64;

/// Runs `call(begin, end, options)` over chunks; returns the first non-ok status.
template <class Call>
kernel_status run_chunks(std::size_t n, unsigned threads, std::size_t grain, const bulk_options& o, Call&& call) {
  std::atomic<int> status{static_cast<int>(kernel_status::ok)};
  parallel_for(n, threads, grain, [&](std::size_t b, std::size_t e) {
    bulk_options oc = o;
    oc.first_index = o.first_index + b;
    const kernel_status s = call(b, e, oc);
    if (s != kernel_status::ok) {
      int expected = static_cast<int>(kernel_status::ok);
      status.compare_exchange_strong(expected, static_cast<int>(s));
    }
  });
  return static_cast<kernel_status>(status.load());
}

}  // namespace detail

/// encode<T> over `threads` threads (0 = all hardware threads).
template <class T, bulk_input In>
kernel_status encode_parallel(std::span<const In> x, std::span<code_t<T>> codes, conversion c, unsigned threads,
                              const bulk_options& o = {}) {
  if (detail::bad_span(x.data(), x.size()) || detail::bad_span(codes.data(), codes.size()))
    return kernel_status::null_pointer;
  if (codes.size() != x.size()) return kernel_status::size_mismatch;
  return detail::run_chunks(x.size(), threads, detail::codec_grain, o, [&](std::size_t b, std::size_t e, const bulk_options& oc) {
    return encode<T>(x.subspan(b, e - b), codes.subspan(b, e - b), c, oc);
  });
}

/// decode<T> over `threads` threads.
template <class T>
kernel_status decode_parallel(std::span<const code_t<T>> codes, std::span<float> out, unsigned threads,
                              const bulk_options& o = {}) {
  if (detail::bad_span(codes.data(), codes.size()) || detail::bad_span(out.data(), out.size()))
    return kernel_status::null_pointer;
  if (codes.size() != out.size()) return kernel_status::size_mismatch;
  return detail::run_chunks(codes.size(), threads, detail::codec_grain, o, [&](std::size_t b, std::size_t e, const bulk_options& oc) {
    return decode<T>(codes.subspan(b, e - b), out.subspan(b, e - b), oc);
  });
}

/// quantize_scaled<T> over `threads` threads; amax is the max over all chunks.
template <class T, bulk_input In>
kernel_status quantize_scaled_parallel(std::span<const In> x, std::span<code_t<T>> codes, float scale, float& amax,
                                       conversion c, unsigned threads, const bulk_options& o = {}) {
  if (detail::bad_span(x.data(), x.size()) || detail::bad_span(codes.data(), codes.size()))
    return kernel_status::null_pointer;
  if (codes.size() != x.size()) return kernel_status::size_mismatch;
  std::atomic<std::uint32_t> m{0};
  const kernel_status s =
      detail::run_chunks(x.size(), threads, detail::codec_grain, o, [&](std::size_t b, std::size_t e, const bulk_options& oc) {
        float a = 0.0f;
        const kernel_status st = quantize_scaled<T>(x.subspan(b, e - b), codes.subspan(b, e - b), scale, a, c, oc);
        // |x| bit patterns of finite values order like the values.
        std::uint32_t cur = m.load();
        const std::uint32_t mine = std::bit_cast<std::uint32_t>(a);
        while (cur < mine && !m.compare_exchange_weak(cur, mine)) {
        }
        return st;
      });
  if (s == kernel_status::ok) amax = std::bit_cast<float>(m.load());
  return s;
}

/// mx_quantize over `threads` threads: bands of whole tile rows (one row for 1 x 32 tiles, 32
/// rows otherwise), each an ordinary single-threaded call on its slice of codes and scales.
template <mx_element Elem, bulk_input In>
kernel_status mx_quantize_parallel(std::span<const In> x, std::size_t rows, std::size_t cols, mx_tile tile,
                                   scale_rule rule, std::span<std::uint8_t> codes, std::span<std::uint8_t> scales,
                                   unsigned threads, const bulk_options& o = {}) {
  if (detail::bad_span(x.data(), x.size()) || detail::bad_span(codes.data(), codes.size()) ||
      detail::bad_span(scales.data(), scales.size()))
    return kernel_status::null_pointer;
  if (!is_mx_rule(rule)) return kernel_status::bad_argument;
  if (const auto s = detail::mx_check<Elem>(rows, cols, tile, x.size(), codes.size(), scales.size()); s != kernel_status::ok)
    return s;
  if (rows == 0 || cols == 0) return mx_quantize<Elem>(x, rows, cols, tile, rule, codes, scales, o);
  const std::size_t tr = mx_tile_rows(tile), row_bytes = packed_bytes(cols, sizeof_bits<Elem>);
  const std::size_t grid_cols = minifloat::detail::ceil_div(cols, mx_tile_cols(tile));
  return detail::run_chunks(rows, threads, tr, o, [&](std::size_t b, std::size_t e, const bulk_options& oc) {
    const std::size_t g0 = b / tr, g1 = minifloat::detail::ceil_div(e, tr);
    bulk_options po = oc;
    po.first_index = o.first_index;  // MX rounding is deterministic; keep the caller's value
    return mx_quantize<Elem>(x.subspan(b * cols, (e - b) * cols), e - b, cols, tile, rule,
                             codes.subspan(b * row_bytes, (e - b) * row_bytes),
                             scales.subspan(g0 * grid_cols, (g1 - g0) * grid_cols), po);
  });
}

}  // namespace minifloat::simd
