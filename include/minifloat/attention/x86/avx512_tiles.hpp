#pragma once
// The AVX-512 decode kernel over a cache stored in the decode layouts (kv_tiles.hpp: K as key
// tiles, V as key pairs; 8-bit codes without MX scales, or bfloat16). kernel.hpp has the order of
// operations; pieces.hpp the decoder, exp, P rounding and the softmax step.
//
// What the layouts buy (docs/attention.md#key-tiles): with a tile's 16 keys in the lanes, one
// decoded 64-byte unit feeds every query row of the block with no shuffle after the decoder: S
// needs no sums across lanes (the row-major kernel's 30 shuffles per 4 keys and 4 rows), and it
// arrives one key per lane, as the softmax wants it; V pairs are decoded straight into the
// (key j, key j + 1) words P V multiplies. Per cached token and KV head a decode block of 4 rows
// issues 32 vdpbf16ps (or 64 FMAs), 4 table decodes of 64 codes and its share of the softmax.
//
// Two forms with the same bits, as in avx512.hpp: bfloat16 pairs (vdpbf16ps; q and P^ bfloat16
// values, pairs_apply) and fp32 FMAs on the decoded words split into their high and low halves
// (any q and P). Both sum S over d in natural order (channel 0 first) and P V key by key, one
// rounding per product: the scalar twin's order for both products.
#include "avx512.hpp"

#if MINIFLOAT_ATTENTION_X86
#include <x86intrin.h>  // __rdtsc
#endif

namespace minifloat::attention::detail::x86 {

/// Whether a block's K and V are in the decode layouts (kv_cache stores both or neither).
inline bool tiles_apply(const block_args& a) noexcept { return a.k.order == kv_order::key_tiles && a.v.order == kv_order::key_pairs; }

#if MINIFLOAT_ATTENTION_X86

MINIFLOAT_ATTENTION_X86_DIAGNOSTICS_PUSH

/// One 64-byte unit of a decode layout as two vectors of bfloat16 pair words: code8 decodes 64
/// codes, bfloat16 loads 64 words (unit = the first of two 64-byte stretches, the second at
/// unit + second).
template <element_kind K>
MINIFLOAT_INLINE_AVX512 void unit_words(const std::uint8_t* unit, std::size_t second, const code_tables& t, __m512i& w0, __m512i& w1) {
  if constexpr (K == element_kind::code8) {
    decode64(_mm512_loadu_si512(unit), t.hi0, t.hi1, t.lo0, t.lo1, w0, w1);
  } else {
    w0 = _mm512_loadu_si512(unit);
    w1 = _mm512_loadu_si512(unit + second);
  }
}

/// A pair word's high bfloat16 (the first of the pair) and low one, as fp32.
MINIFLOAT_INLINE_AVX512 __m512 high_half(__m512i w) { return _mm512_castsi512_ps(_mm512_and_si512(w, _mm512_set1_epi32(static_cast<int>(0xFFFF0000U)))); }
MINIFLOAT_INLINE_AVX512 __m512 low_half(__m512i w) { return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16)); }

/// Raw dot products of R query rows with the NT (1, 2 or 4) key tiles at `tile` (the first unit
/// of a group's tile): s[row * chunk_keys + 16 t + L] = q_row . k of the tile t's key L ^ 1. q: R
/// rows of d4 fp32 values (zero past d); qw: their pair words (d4 / 2 per row; Pairs only);
/// pf steps once per two channel units. The group's tiles sit side by side in each unit row
/// (kv_tiles.hpp), so the loop reads the group front to back.
template <int R, int NT, element_kind K, bool Pairs>
MINIFLOAT_TARGET_AVX512 inline void tile_dots(const kv_view& k, const std::uint8_t* tile, const float* q, const std::uint32_t* qw,
                                            std::size_t d4, float* s, line_prefetcher& pf) {
  const code_tables t = K == element_kind::code8 ? load_tables(k) : code_tables{};
  constexpr std::size_t unit_row = tiles::group_unit_bytes, unit = K == element_kind::code8 ? unit_row : 2 * unit_row;
  __m512 acc[R][NT];
  MINIFLOAT_ATTENTION_UNROLL
  for (auto& row : acc)
    MINIFLOAT_ATTENTION_UNROLL
    for (auto& x : row) x = _mm512_setzero_ps();
  for (std::size_t u = 0; u < d4 / 4; ++u) {  // channels 4u .. 4u + 3
    if (u % 2 == 0) pf.step();
    __m512i w[NT][2];
    MINIFLOAT_ATTENTION_UNROLL
    for (int tt = 0; tt < NT; ++tt) unit_words<K>(tile + static_cast<std::size_t>(tt) * tiles::unit_bytes + u * unit, unit_row, t, w[tt][0], w[tt][1]);
    MINIFLOAT_ATTENTION_UNROLL
    for (int h = 0; h < 2; ++h)
      MINIFLOAT_ATTENTION_UNROLL
      for (int rr = 0; rr < R; ++rr) {
        if constexpr (Pairs) {
          const __m512bh b = reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(qw[static_cast<std::size_t>(rr) * (d4 / 2) + 2 * u + static_cast<std::size_t>(h)])));
          MINIFLOAT_ATTENTION_UNROLL
          for (int tt = 0; tt < NT; ++tt) acc[rr][tt] = _mm512_dpbf16_ps(acc[rr][tt], reinterpret_cast<__m512bh>(w[tt][h]), b);
        } else {
          const float* qr = q + static_cast<std::size_t>(rr) * d4 + 4 * u + 2 * static_cast<std::size_t>(h);
          const __m512 qe = _mm512_set1_ps(qr[0]), qo = _mm512_set1_ps(qr[1]);
          MINIFLOAT_ATTENTION_UNROLL
          for (int tt = 0; tt < NT; ++tt) {
            acc[rr][tt] = _mm512_fmadd_ps(high_half(w[tt][h]), qe, acc[rr][tt]);
            acc[rr][tt] = _mm512_fmadd_ps(low_half(w[tt][h]), qo, acc[rr][tt]);
          }
        }
      }
  }
  MINIFLOAT_ATTENTION_UNROLL
  for (int rr = 0; rr < R; ++rr)
    MINIFLOAT_ATTENTION_UNROLL
    for (int tt = 0; tt < NT; ++tt) _mm512_storeu_ps(s + static_cast<std::size_t>(rr) * chunk_keys + 16 * static_cast<std::size_t>(tt), acc[rr][tt]);
}

/// P V for R rows over the columns g .. g + 63 of a key-paired V: the `npairs` pairs of the
/// group at `pairs` (keys 2i and 2i + 1 of the chunk), key by key, reading the group's block of
/// those columns front to back. Pairs: pw[row * 32 + i] = (P^_2i, P^_2i+1) as a pair word;
/// FMAs: p[row * chunk_keys + j ^ 1] = P^_j (the key tiles' lane order).
template <int R, element_kind K, bool Pairs>
MINIFLOAT_TARGET_AVX512 inline void pair_pv(const kv_view& v, const std::uint8_t* pairs, std::size_t npairs, std::size_t g,
                                          const std::uint32_t* pw, const float* p, float* acc, std::size_t acc_stride,
                                          const float* alpha, float v_factor, line_prefetcher& pf) {
  const code_tables t = K == element_kind::code8 ? load_tables(v) : code_tables{};
  constexpr std::size_t pair_bytes = tiles::pair_block_bytes(K == element_kind::code8 ? 1 : 2);
  const std::size_t at = g / 64 * (chunk_keys / 2) * pair_bytes;
  __m512 part[R][4];
  zero_part<R, 4>(part);
  for (std::size_t i = 0; i < npairs; ++i) {
    if (i % 2 == 0) pf.step();
    const std::uint8_t* u = pairs + i * pair_bytes + at;
    __m512i vv[4];
    unit_words<K>(u, tiles::unit_bytes, t, vv[0], vv[1]);
    unit_words<K>(u + pair_bytes / 2, tiles::unit_bytes, t, vv[2], vv[3]);
    MINIFLOAT_ATTENTION_UNROLL
    for (int rr = 0; rr < R; ++rr) {
      if constexpr (Pairs) {
        const __m512bh b = reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(pw[static_cast<std::size_t>(rr) * (chunk_keys / 2) + i])));
        MINIFLOAT_ATTENTION_UNROLL
        for (int c = 0; c < 4; ++c) part[rr][c] = _mm512_dpbf16_ps(part[rr][c], reinterpret_cast<__m512bh>(vv[c]), b);
      } else {
        const float* pr = p + static_cast<std::size_t>(rr) * chunk_keys + 2 * i;
        const __m512 pj = _mm512_set1_ps(pr[1]), pj1 = _mm512_set1_ps(pr[0]);  // keys 2i, 2i + 1 (lanes swapped)
        MINIFLOAT_ATTENTION_UNROLL
        for (int c = 0; c < 4; ++c) {
          part[rr][c] = _mm512_fmadd_ps(high_half(vv[c]), pj, part[rr][c]);
          part[rr][c] = _mm512_fmadd_ps(low_half(vv[c]), pj1, part[rr][c]);
        }
      }
    }
  }
  fold_part<R, 4>(part, acc + g, acc_stride, alpha, v_factor);
}

/// The softmax step of R rows over one chunk (pieces.hpp, softmax_rows) in the key tiles' lane
/// order (lane L holds key L ^ 1): P^ to p, and with Pairs its pair words to pw (packing two
/// tiles' lanes (1, 0, 3, 2, ...) gives the pairs (P^_2m, P^_2m+1) in key order).
template <int R, bool Pairs>
MINIFLOAT_TARGET_AVX512 inline void softmax_tiles(const softmax_step& k, const float* dots, std::size_t nkt, const std::size_t* vis, float* m,
                                                float* l, float* alpha, float* p, std::uint32_t* pw) {
  __m512 e[R][4];
  with_p_round(k.pr, [&]<p_round PR>() { softmax_rows<R, PR, true>(k, dots, nkt, vis, m, l, alpha, e); });
  MINIFLOAT_ATTENTION_UNROLL
  for (int rr = 0; rr < R; ++rr) {
    float* pr = p + static_cast<std::size_t>(rr) * chunk_keys;
    MINIFLOAT_ATTENTION_UNROLL
    for (int j4 = 0; j4 < 4; ++j4) _mm512_storeu_ps(pr + 16 * j4, e[rr][j4]);
    if constexpr (Pairs)
      MINIFLOAT_ATTENTION_UNROLL
      for (int j4 = 0; j4 < 4; j4 += 2)
        _mm512_storeu_si512(pw + static_cast<std::size_t>(rr) * (chunk_keys / 2) + 8 * static_cast<std::size_t>(j4),
                            reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(e[rr][j4 + 1], e[rr][j4])));
  }
}

/// How the tile kernel brings the next chunk in. The layouts are read front to back, so the
/// core's hardware prefetchers can stream them alone, and on a quiet memory system that is the
/// faster way (20 % at T = 16K on Zen 4: the 256 software prefetches per chunk wait on the
/// core's miss buffers); when other cores load the memory system the hardware prefetchers fall
/// behind and the step with software prefetches is up to twice as fast (docs/attention.md#key-tiles).
/// Neither wins on every machine or every minute, so each thread times both on a few chunks of
/// each long block and runs the rest of the block the faster way. Only the speed depends on it.
class fetch_choice {
 public:
  enum mode : unsigned { hardware = 0, software = 1 };
  static fetch_choice& local() {
    thread_local fetch_choice f;
    return f;
  }
  /// Chunks of a block below which it runs with software prefetches, untimed.
  static constexpr std::size_t min_chunks = 24;
  /// Chunks each way is tried for, the first `settle` of them untimed (the way before still
  /// fetched them, or the hardware prefetchers are still ramping up).
  static constexpr std::size_t try_chunks = 6, settle = 2;
  /// The way chunk ci of a block of `chunks` chunks runs: the first try_chunks the way not chosen
  /// last, the next try_chunks the chosen one, then the faster.
  [[nodiscard]] mode for_chunk(std::size_t ci, std::size_t chunks) const noexcept {
    if (chunks < min_chunks) return software;
    return ci < try_chunks ? other() : best_;
  }
  /// Whether chunk ci is timed (only then is the time stamp counter read).
  [[nodiscard]] static bool times(std::size_t ci, std::size_t chunks) noexcept {
    return chunks >= min_chunks && ci < 2 * try_chunks && ci % try_chunks >= settle;
  }
  /// Called after chunk ci with the time stamp counter at its end (t0 at its start).
  void timed(std::size_t ci, std::size_t chunks, std::uint64_t t0, std::uint64_t t1) noexcept {
    if (!times(ci, chunks)) return;
    window_ += t1 - t0;
    if (ci % try_chunks != try_chunks - 1) return;
    const mode m = ci < try_chunks ? other() : best_;
    ticks_[m] = ticks_[m] == 0 ? static_cast<double>(window_) : 0.5 * ticks_[m] + 0.5 * static_cast<double>(window_);
    window_ = 0;
    if (ci == 2 * try_chunks - 1) best_ = ticks_[hardware] != 0 && ticks_[hardware] <= ticks_[software] ? hardware : software;
  }

 private:
  [[nodiscard]] mode other() const noexcept { return best_ == hardware ? software : hardware; }
  double ticks_[2] = {0, 0};
  std::uint64_t window_ = 0;
  mode best_ = software;
};

/// The decode block over key tiles and key pairs (tiles_apply(a) must hold); pairs: the
/// bfloat16-pairs form (pairs_apply(a) must hold).
MINIFLOAT_TARGET_AVX512 inline void run_block_tiles(const block_args& a, bool pairs) {
  scratch& s = scratch::local();
  const std::size_t d = a.k.cols, rows = a.rows;
  const std::size_t d4 = a.k.row_bytes / a.k.element_bytes(), dv64 = a.v.row_bytes / a.v.element_bytes();
  const element_kind kk = a.k.kind, vk = a.v.kind;
  const softmax_step sm(a);

  s.srow.assign(rows * d4, 0.0f);
  for (std::size_t r = 0; r < rows; ++r) std::copy_n(a.q + r * a.q_stride, d, s.srow.data() + r * d4);
  if (pairs) {  // (q_2p, q_2p+1), the even channel high
    s.qw.resize(rows * d4 / 2);
    for (std::size_t i = 0; i < rows * d4 / 2; ++i)
      s.qw[i] = (std::bit_cast<std::uint32_t>(s.srow[2 * i]) & 0xFFFF0000U) | (std::bit_cast<std::uint32_t>(s.srow[2 * i + 1]) >> 16);
    s.pw.resize(rows * chunk_keys / 2);
  }
  const std::size_t kmax = start_block(s, a, dv64);

  line_prefetcher pf;
  fetch_choice& fetch = fetch_choice::local();
  const std::size_t chunks = (kmax + chunk_keys - 1) / chunk_keys;
  const std::size_t groups = (rows + 3) / 4;
  for (std::size_t c0 = 0; c0 < kmax; c0 += chunk_keys) {
    const std::size_t n = std::min(chunk_keys, kmax - c0), nkt = (n + 15) / 16, npairs = (n + 1) / 2, ci = c0 / chunk_keys;
    const bool timing = fetch_choice::times(ci, chunks);
    const std::uint64_t t0 = timing ? __rdtsc() : 0;
    if (fetch.for_chunk(ci, chunks) == fetch_choice::software) pf.reset(a.k, a.v, c0 + chunk_keys, std::min(kmax, c0 + 2 * chunk_keys));
    else pf.reset(a.k, a.v, 0, 0);
    // the next chunk's lines spread over S's inner loop as well as P V's (one step per two
    // channel units, one per two key pairs): paced per S call, S's 2 calls per chunk against
    // P V's 32 put the whole burst into P V, faster than one core streams, and P V's loads
    // queued behind it (docs/attention.md#key-tiles)
    const std::size_t s_calls = nkt / 4 + (nkt % 4) / 2 + nkt % 2;
    pf.pace(groups * (s_calls * ((d4 / 4 + 1) / 2) + (dv64 / 64) * ((npairs + 1) / 2)));
    const std::uint8_t* ktile = a.k.data + c0 * a.k.row_bytes;
    for (std::size_t r0 = 0; r0 < rows; r0 += 4)
      with_rows(rows - r0, [&]<int R>() {
        const float* q = s.srow.data() + r0 * d4;
        const std::uint32_t* qw = pairs ? s.qw.data() + r0 * d4 / 2 : nullptr;
        for (std::size_t tt = 0; tt < nkt;) {
          // four tiles at a time where the chunk has them: 16 independent sums (R = 4) keep
          // vdpbf16ps's latency covered, where two tiles' 8 left Zen 4 waiting on it (S alone,
          // in L1: 2.8 against 3.6 ns per key); the same sums in the same order either way
          const std::size_t nt = nkt - tt >= 4 ? 4 : nkt - tt >= 2 ? 2 : 1;
          const std::uint8_t* tile = ktile + tt * tiles::unit_bytes;
          float* st = s.st.data() + r0 * chunk_keys + 16 * tt;
          const auto run = [&]<int NT>() {
            if (kk == element_kind::bf16) {
              if (pairs) tile_dots<R, NT, element_kind::bf16, true>(a.k, tile, q, qw, d4, st, pf);
              else tile_dots<R, NT, element_kind::bf16, false>(a.k, tile, q, qw, d4, st, pf);
            } else if (pairs) {
              tile_dots<R, NT, element_kind::code8, true>(a.k, tile, q, qw, d4, st, pf);
            } else {
              tile_dots<R, NT, element_kind::code8, false>(a.k, tile, q, qw, d4, st, pf);
            }
          };
          if (nt == 4) run.template operator()<4>();
          else if (nt == 2) run.template operator()<2>();
          else run.template operator()<1>();
          tt += nt;
        }
      });
    std::size_t vis[max_block_rows];
    for (std::size_t r = 0; r < rows; ++r) vis[r] = a.limit[r] > c0 ? std::min(n, a.limit[r] - c0) : 0;
    for (std::size_t r0 = 0; r0 < rows; r0 += 4)
      with_rows(rows - r0, [&]<int R>() {
        const float* st = s.st.data() + r0 * chunk_keys;
        float* p = s.part.data() + r0 * chunk_keys;
        if (pairs) softmax_tiles<R, true>(sm, st, nkt, vis + r0, s.m + r0, s.l + r0, s.alpha + r0, p, s.pw.data() + r0 * (chunk_keys / 2));
        else softmax_tiles<R, false>(sm, st, nkt, vis + r0, s.m + r0, s.l + r0, s.alpha + r0, p, nullptr);
      });
    const std::uint8_t* vpairs = a.v.data + c0 * a.v.row_bytes;
    for (std::size_t r0 = 0; r0 < rows; r0 += 4)
      for (std::size_t g = 0; g < dv64; g += 64)
        with_rows(rows - r0, [&]<int R>() {
          const std::uint32_t* pw = s.pw.data() + r0 * (chunk_keys / 2);
          const float* p = s.part.data() + r0 * chunk_keys;
          float* acc = s.acc.data() + r0 * dv64;
          if (vk == element_kind::bf16) {
            if (pairs) pair_pv<R, element_kind::bf16, true>(a.v, vpairs, npairs, g, pw, p, acc, dv64, s.alpha + r0, a.v_factor, pf);
            else pair_pv<R, element_kind::bf16, false>(a.v, vpairs, npairs, g, pw, p, acc, dv64, s.alpha + r0, a.v_factor, pf);
          } else if (pairs) {
            pair_pv<R, element_kind::code8, true>(a.v, vpairs, npairs, g, pw, p, acc, dv64, s.alpha + r0, a.v_factor, pf);
          } else {
            pair_pv<R, element_kind::code8, false>(a.v, vpairs, npairs, g, pw, p, acc, dv64, s.alpha + r0, a.v_factor, pf);
          }
        });
    if (timing) fetch.timed(ci, chunks, t0, __rdtsc());
  }
  finish_block(a, s, dv64);
}

MINIFLOAT_ATTENTION_X86_DIAGNOSTICS_POP

#else

inline void run_block_tiles(const block_args& a, bool) { run_block_scalar(a); }

#endif

}  // namespace minifloat::attention::detail::x86
