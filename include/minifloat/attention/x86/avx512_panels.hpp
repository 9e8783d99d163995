#pragma once
// The AVX-512 block kernel for blocks of many query rows (prefill) on CPUs without AMX: per
// chunk of 64 keys the stored K and V rows are decoded once into panels that every row of the
// block then reads, and S = Q K^T and P V run as small register-blocked GEMMs over them.
// kernel.hpp has the order of operations; pieces.hpp the decoders, exp, P rounding and the
// softmax step.
//
// Why panels (docs/attention.md#prefill-kernel): the decode kernels (avx512.hpp) decode K and V
// again for every 4 rows and sum S across lanes, which is right for the 4 rows of a decode block
// and wasteful for 64; with K transposed into a panel (d rows of 64 keys) a broadcast q element
// times 4 vectors of keys gives S one key per lane with no lane sums, and a broadcast P^ times a
// row of V gives P V one column per lane. A micro-tile is 6 query rows x 4 vectors (24 sums).
//
// Two forms with the same bits, as in the decode kernels: fp32 FMAs on fp32 panels (any K, V, q
// and P), and bfloat16 pairs (vdpbf16ps, one instruction per two products; pairs_apply: 8-bit
// codes without MX scales or bfloat16, P^ and q bfloat16 values) on panels of pair words with
// the even element high. Both sum S over d in natural order (channel 0 first) and P V key by
// key, one rounding per product: the scalar twin's order for both products.
#include "avx512.hpp"

namespace minifloat::attention::detail::x86 {

/// log2 of the grid an 8-bit format's values are all multiples of (its smallest positive value);
/// 0 for other formats (no claim).
inline int code_grid_exponent(format_id f) noexcept {
  switch (f) {
    case format_id::hifloat8: return -22;
    case format_id::float8_e4m3fn: return -9;
    case format_id::float8_e5m2: return -16;
    default: return 0;
  }
}

/// Whether the panel kernel's pairs form gives its FMA form's bits on this block: pairs_apply,
/// or the same with 8-bit K and V in MX blocks (bfloat16 values exactly, block_kernels.hpp's
/// bf16_reads_exactly) and P in an 8-bit format, where no product or partial sum of S or of
/// P V can be an fp32 subnormal, which vdpbf16ps would flush. Every value of an operand is a
/// multiple of its grid (q: 2^(e - 7) for the smallest exponent e of a non-zero q, a bfloat16's
/// last bit; an MX-scaled code: its format's grid times the smallest scale), so every product
/// and every sum of them, rounded or not, is 0 or at least the product of the two grids; the
/// condition is that this is at least 2^-126.
inline bool panel_pairs_apply(const block_args& a) noexcept {
  if (pairs_apply(a)) return true;
  const auto grid = [](const kv_view& x) {
    return x.mx == nullptr ? code_grid_exponent(x.format) : code_grid_exponent(x.format) + static_cast<int>(x.mx_lo) - 127;
  };
  const bool codes = a.k.kind == element_kind::code8 && a.v.kind == element_kind::code8 && code_grid_exponent(a.k.format) != 0 &&
                     code_grid_exponent(a.v.format) != 0 && a.k.mx_bf16_exact && a.v.mx_bf16_exact;
  if (!codes || !a.p.format || code_grid_exponent(*a.p.format) == 0) return false;
  const int p_grid = code_grid_exponent(*a.p.format);
  const q_bf16_scan q = scan_q_bf16(a);
  return q.bf16 && q.min_exponent - 7 + grid(a.k) >= -126 && p_grid + grid(a.v) >= -126;
}

#if MINIFLOAT_ATTENTION_X86

MINIFLOAT_ATTENTION_X86_DIAGNOSTICS_PUSH

/// Query rows per micro-tile: 6 rows x 4 vectors of sums, 4 operand vectors and a broadcast fit
/// the 32 registers.
inline constexpr int panel_tile_rows = 6;

// --- panels ------------------------------------------------------------------------------------

/// The K panel of the FMA form: kt[c][j] = k_jc as fp32 for the chunk's 64 keys (zero past n
/// keys and past d), c < dp. words: the chunk's rows decoded to bfloat16 ([64][dp] words, code8
/// and bf16); fp32 K is read from its rows.
MINIFLOAT_TARGET_AVX512 inline void k_panel_f32(const kv_view& k, std::size_t c0, std::size_t n, const std::uint16_t* words,
                                             std::size_t dp, float* kt) {
  const std::size_t d = k.cols;
  for (std::size_t j0 = 0; j0 < chunk_keys; j0 += 16)
    for (std::size_t cb = 0; cb < dp; cb += 16) {
      __m512i r[16];
      if (k.kind == element_kind::f32) {
        const std::size_t left = cb < d ? std::min<std::size_t>(16, d - cb) : 0;
        const __mmask16 mk = static_cast<__mmask16>((1U << left) - 1U);
        for (std::size_t i = 0; i < 16; ++i)  // no address past the stored rows is formed
          r[i] = j0 + i < n && left > 0 ? _mm512_maskz_loadu_epi32(mk, k.data + (c0 + j0 + i) * k.row_bytes + 4 * cb) : _mm512_setzero_si512();
      } else {
        for (std::size_t i = 0; i < 16; ++i)
          r[i] = _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(words + (j0 + i) * dp + cb))), 16);
      }
      transpose16(r);
      for (std::size_t i = 0; i < 16; ++i) _mm512_storeu_si512(kt + (cb + i) * chunk_keys + j0, r[i]);
    }
}

/// The K panel of the pairs form: kp[i][j] = the pair word (k_j,2i high, k_j,2i+1 low) for the
/// chunk's 64 keys, i < dp / 2, from the chunk's decoded rows ([64][dp] bfloat16 words).
MINIFLOAT_TARGET_AVX512 inline void k_panel_pairs(const std::uint16_t* words, std::size_t dp, std::uint32_t* kp) {
  for (std::size_t j0 = 0; j0 < chunk_keys; j0 += 16)
    for (std::size_t ib = 0; ib < dp / 2; ib += 16) {
      __m512i r[16];
      for (std::size_t i = 0; i < 16; ++i) r[i] = _mm512_loadu_si512(words + (j0 + i) * dp + 2 * ib);
      transpose16(r);
      // a row's words in memory pair (2i low, 2i + 1 high): swap the halves, even channel high
      for (std::size_t i = 0; i < 16; ++i) _mm512_storeu_si512(kp + (ib + i) * chunk_keys + j0, _mm512_rol_epi32(r[i], 16));
    }
}

/// The V panel of the FMA form: vt[j][c] = v_jc as fp32 (zero past n keys and past dv), c < dvp.
/// pairs: the chunk decoded by decode_pairs (row 2p low, code8 and bf16); fp32 V is read from its rows.
MINIFLOAT_TARGET_AVX512 inline void v_panel_f32(const kv_view& v, std::size_t c0, std::size_t n, const std::uint16_t* pairs,
                                             std::size_t dvp, float* vt) {
  const std::size_t dv = v.cols;
  if (v.kind == element_kind::f32) {
    for (std::size_t j = 0; j < chunk_keys; ++j)
      for (std::size_t c = 0; c < dvp; c += 16) {
        const std::size_t left = j < n && c < dv ? std::min<std::size_t>(16, dv - c) : 0;
        const __mmask16 mk = static_cast<__mmask16>((1U << left) - 1U);
        _mm512_storeu_ps(vt + j * dvp + c, left > 0 ? _mm512_maskz_loadu_ps(mk, v.data + (c0 + j) * v.row_bytes + 4 * c) : _mm512_setzero_ps());
      }
    return;
  }
  const __m512i high = _mm512_set1_epi32(static_cast<int>(0xFFFF0000U));
  for (std::size_t p = 0; p < chunk_keys / 2; ++p)
    for (std::size_t c = 0; c < dvp; c += 16) {
      const __m512i w = _mm512_loadu_si512(pairs + (p * dvp + c) * 2);
      _mm512_storeu_si512(vt + 2 * p * dvp + c, _mm512_slli_epi32(w, 16));
      _mm512_storeu_si512(vt + (2 * p + 1) * dvp + c, _mm512_and_si512(w, high));
    }
}

// --- micro-kernels -----------------------------------------------------------------------------

/// Raw dot products of R query rows with the chunk's 64 keys over channels 0 .. d - 1 in
/// order, to s[row][64]. FMA form: q[row][dp] fp32 (zero past d), kt the fp32 K panel. Pairs:
/// qw[row][dp / 2] q's pair words, kt the pairs K panel; each lane takes channel 2i then 2i + 1,
/// the FMA form's order.
template <int R, bool Pairs>
MINIFLOAT_TARGET_AVX512 inline void panel_dots(const float* q, const std::uint32_t* qw, std::size_t dp, std::size_t d, const void* kt,
                                            float* s) {
  __m512 acc[R][4];
  MINIFLOAT_ATTENTION_UNROLL
  for (auto& row : acc)
    MINIFLOAT_ATTENTION_UNROLL
    for (auto& x : row) x = _mm512_setzero_ps();
  if constexpr (Pairs) {
    const auto* kp = static_cast<const std::uint32_t*>(kt);
    for (std::size_t i = 0; i < (d + 1) / 2; ++i) {
      __m512bh kv[4];
      MINIFLOAT_ATTENTION_UNROLL
      for (int v = 0; v < 4; ++v) kv[v] = reinterpret_cast<__m512bh>(_mm512_loadu_si512(kp + i * chunk_keys + 16 * static_cast<std::size_t>(v)));
      MINIFLOAT_ATTENTION_UNROLL
      for (int rr = 0; rr < R; ++rr) {
        const __m512bh b = reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(qw[static_cast<std::size_t>(rr) * (dp / 2) + i])));
        MINIFLOAT_ATTENTION_UNROLL
        for (int v = 0; v < 4; ++v) acc[rr][v] = _mm512_dpbf16_ps(acc[rr][v], kv[v], b);
      }
    }
  } else {
    const auto* kf = static_cast<const float*>(kt);
    for (std::size_t c = 0; c < d; ++c) {
      __m512 kv[4];
      MINIFLOAT_ATTENTION_UNROLL
      for (int v = 0; v < 4; ++v) kv[v] = _mm512_loadu_ps(kf + c * chunk_keys + 16 * static_cast<std::size_t>(v));
      MINIFLOAT_ATTENTION_UNROLL
      for (int rr = 0; rr < R; ++rr) {
        const __m512 b = _mm512_set1_ps(q[static_cast<std::size_t>(rr) * dp + c]);
        MINIFLOAT_ATTENTION_UNROLL
        for (int v = 0; v < 4; ++v) acc[rr][v] = _mm512_fmadd_ps(b, kv[v], acc[rr][v]);
      }
    }
  }
  MINIFLOAT_ATTENTION_UNROLL
  for (int rr = 0; rr < R; ++rr)
    MINIFLOAT_ATTENTION_UNROLL
    for (int v = 0; v < 4; ++v) _mm512_storeu_ps(s + static_cast<std::size_t>(rr) * chunk_keys + 16 * static_cast<std::size_t>(v), acc[rr][v]);
}

/// P V for R rows over the columns g .. g + 16 NB - 1 of the chunk's nk keys, key by key; then
/// acc = acc * alpha + v_factor * part. FMA form: p[row][64] P^ in fp32, vt the fp32 V panel (row
/// stride dvp). Pairs: pw[row][32] P^'s pair words (key 2t high), vt the chunk's V pairs
/// (decode_pairs with first_high, dvp pair words a pair); each lane takes key 2t then 2t + 1.
template <int R, int NB, bool Pairs>
MINIFLOAT_TARGET_AVX512 inline void panel_pv(const float* p, const std::uint32_t* pw, const void* vt, std::size_t dvp, std::size_t g,
                                          std::size_t nk, float* acc, std::size_t acc_stride, const float* alpha, float v_factor) {
  __m512 part[R][NB];
  MINIFLOAT_ATTENTION_UNROLL
  for (auto& row : part)
    MINIFLOAT_ATTENTION_UNROLL
    for (auto& x : row) x = _mm512_setzero_ps();
  if constexpr (Pairs) {
    const auto* vp = static_cast<const std::uint32_t*>(vt);
    for (std::size_t t = 0; t < (nk + 1) / 2; ++t) {
      __m512bh vv[NB];
      MINIFLOAT_ATTENTION_UNROLL
      for (int b = 0; b < NB; ++b) vv[b] = reinterpret_cast<__m512bh>(_mm512_loadu_si512(vp + t * dvp + g + 16 * static_cast<std::size_t>(b)));
      MINIFLOAT_ATTENTION_UNROLL
      for (int rr = 0; rr < R; ++rr) {
        const __m512bh pj = reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(pw[static_cast<std::size_t>(rr) * (chunk_keys / 2) + t])));
        MINIFLOAT_ATTENTION_UNROLL
        for (int b = 0; b < NB; ++b) part[rr][b] = _mm512_dpbf16_ps(part[rr][b], vv[b], pj);
      }
    }
  } else {
    const auto* vf = static_cast<const float*>(vt);
    for (std::size_t j = 0; j < nk; ++j) {
      __m512 vv[NB];
      MINIFLOAT_ATTENTION_UNROLL
      for (int b = 0; b < NB; ++b) vv[b] = _mm512_loadu_ps(vf + j * dvp + g + 16 * static_cast<std::size_t>(b));
      MINIFLOAT_ATTENTION_UNROLL
      for (int rr = 0; rr < R; ++rr) {
        const __m512 pj = _mm512_set1_ps(p[static_cast<std::size_t>(rr) * chunk_keys + j]);
        MINIFLOAT_ATTENTION_UNROLL
        for (int b = 0; b < NB; ++b) part[rr][b] = _mm512_fmadd_ps(pj, vv[b], part[rr][b]);
      }
    }
  }
  fold_part<R, NB>(part, acc + g, acc_stride, alpha, v_factor);
}

/// The softmax step of R rows over one chunk (pieces.hpp, softmax_rows; keys in natural order):
/// P^ in fp32 to p[row][64], and where pw is given its pair words (key 2t high) to pw[row][32].
template <int R>
MINIFLOAT_TARGET_AVX512 inline void softmax_panel(const softmax_step& k, const float* dots, std::size_t nkt, const std::size_t* vis, float* m,
                                               float* l, float* alpha, float* p, std::uint32_t* pw) {
  __m512 e[R][4];
  with_p_round(k.pr, [&]<p_round PR>() { softmax_rows<R, PR, false>(k, dots, nkt, vis, m, l, alpha, e); });
  MINIFLOAT_ATTENTION_UNROLL
  for (int rr = 0; rr < R; ++rr) {
    float* pr = p + static_cast<std::size_t>(rr) * chunk_keys;
    MINIFLOAT_ATTENTION_UNROLL
    for (int j4 = 0; j4 < 4; ++j4) _mm512_storeu_ps(pr + 16 * j4, e[rr][j4]);
    if (pw != nullptr) pair_words(pr, chunk_keys, pw + static_cast<std::size_t>(rr) * (chunk_keys / 2));
  }
}

// --- the block ---------------------------------------------------------------------------------

/// The block (row-major K and V, any element kind the AVX-512 kernels read); pairs: the
/// bfloat16-pairs form (pairs_apply(a) must hold).
MINIFLOAT_TARGET_AVX512 inline void run_block_panels(const block_args& a, bool pairs) {
  scratch& s = scratch::local();
  const std::size_t d = a.k.cols, dv = a.v.cols, rows = a.rows;
  const std::size_t dp = (d + 31) / 32 * 32, dvp = (dv + 31) / 32 * 32;
  const softmax_step sm(a);

  // Q rows zero-padded to dp; the pairs form multiplies their pair words (even channel high)
  s.srow.assign(rows * dp, 0.0f);
  for (std::size_t r = 0; r < rows; ++r) std::copy_n(a.q + r * a.q_stride, d, s.srow.data() + r * dp);
  if (pairs) {
    s.qw.resize(rows * dp / 2);
    pair_words(s.srow.data(), rows * dp, s.qw.data());
    s.pw.resize(rows * chunk_keys / 2);
  }
  const std::size_t kmax = start_block(s, a, dvp);
  const bool k_words = a.k.kind != element_kind::f32, v_pairs = a.v.kind != element_kind::f32;
  if (k_words) s.kb.resize(chunk_keys * dp);
  if (v_pairs) s.vb.resize(chunk_keys * dvp);
  if (pairs) s.kp.resize(chunk_keys * dp / 2);
  else s.kdec.resize(chunk_keys * dp), s.vdec.resize(chunk_keys * dvp);

  line_prefetcher pf;  // K and V of a prefill block stay in L2: no prefetch schedule
  std::size_t vis[max_block_rows];
  for (std::size_t c0 = 0; c0 < kmax; c0 += chunk_keys) {
    const std::size_t n = std::min(chunk_keys, kmax - c0), nkt = (n + 15) / 16;
    // K: decode once, transpose into the panel the S micro-kernel reads
    if (k_words) decode_rows(a.k, c0, n, chunk_keys, dp, s.kb.data(), chunk_keys * dp, pf);
    if (pairs) k_panel_pairs(s.kb.data(), dp, s.kp.data());
    else k_panel_f32(a.k, c0, n, s.kb.data(), dp, s.kdec.data());
    const void* kt = pairs ? static_cast<const void*>(s.kp.data()) : s.kdec.data();
    for (std::size_t r0 = 0; r0 < rows; r0 += std::size_t{panel_tile_rows})
      with_count<panel_tile_rows>(rows - r0, [&]<int R>() {
        float* st = s.st.data() + r0 * chunk_keys;
        if (pairs) panel_dots<R, true>(nullptr, s.qw.data() + r0 * dp / 2, dp, d, kt, st);
        else panel_dots<R, false>(s.srow.data() + r0 * dp, nullptr, dp, d, kt, st);
      });
    for (std::size_t r = 0; r < rows; ++r) vis[r] = a.limit[r] > c0 ? std::min(n, a.limit[r] - c0) : 0;
    for (std::size_t r0 = 0; r0 < rows; r0 += 4)
      with_rows(rows - r0, [&]<int R>() {
        softmax_panel<R>(sm, s.st.data() + r0 * chunk_keys, nkt, vis + r0, s.m + r0, s.l + r0, s.alpha + r0,
                         s.part.data() + r0 * chunk_keys, pairs ? s.pw.data() + r0 * (chunk_keys / 2) : nullptr);
      });
    // V: decode once into pairs of keys (the pairs form's panel; the FMA form splits them)
    if (v_pairs) decode_pairs(a.v, c0, n, chunk_keys / 2, dvp, s.vb.data(), chunk_keys * dvp, pf, pairs);
    if (!pairs) v_panel_f32(a.v, c0, n, s.vb.data(), dvp, s.vdec.data());
    const void* vt = pairs ? static_cast<const void*>(s.vb.data()) : s.vdec.data();
    for (std::size_t g = 0; g < dvp; g += 64)
      with_count<4>((dvp - g) / 16, [&]<int NB>() {
        for (std::size_t r0 = 0; r0 < rows; r0 += std::size_t{panel_tile_rows})
          with_count<panel_tile_rows>(rows - r0, [&]<int R>() {
            float* acc = s.acc.data() + r0 * dvp;
            if (pairs) panel_pv<R, NB, true>(nullptr, s.pw.data() + r0 * (chunk_keys / 2), vt, dvp, g, n, acc, dvp, s.alpha + r0, a.v_factor);
            else panel_pv<R, NB, false>(s.part.data() + r0 * chunk_keys, nullptr, vt, dvp, g, n, acc, dvp, s.alpha + r0, a.v_factor);
          });
      });
  }
  finish_block(a, s, dvp);
}

MINIFLOAT_ATTENTION_X86_DIAGNOSTICS_POP

#else

inline void run_block_panels(const block_args& a, bool) { run_block_scalar(a); }

#endif

}  // namespace minifloat::attention::detail::x86
