#pragma once
// The AVX-512 block kernel for decode-sized blocks: a few query rows (the query heads of one KV
// group at one or two positions) against many cached keys. kernel.hpp has the order of
// operations; pieces.hpp has the decoders and the softmax.
//
// Why not AMX here: a decode block has 4 rows where a tile has 16, and each chunk hands data
// between AVX-512 and the tiles four times (decoded K and V, S, P), each hand-off waiting for the
// other unit: a third of the tile kernel's decode time. fp32 FMAs or vdpbf16ps: on Sapphire
// Rapids one vdpbf16ps costs four FMAs' issue slots and does the work of two, on Zen 4 one, so
// the kernel has both forms with the same bits (docs/attention.md#bfloat16-pairs-kernel):
// dots_decoded<..., Pairs> and pv_pairs multiply bfloat16 words where pairs_apply holds, and
// block_kernels.hpp takes them where simd/x86/avx512_dot_rate.hpp measures pairs faster. The FMA
// form decodes stored rows in registers (8-bit codes through the bfloat16 byte tables, bfloat16
// by a shift) to fp32, 64 elements at a time, in the lane order the decoder leaves them
// (lane_element); Q is laid out in that order once per block, and P V accumulates in it,
// un-permuted when the block ends (the pair form: pair_column's order).
//
// Summation orders: S is 16 fp32 lanes of FMAs over d, then the lanes summed pairwise; P V and the
// accumulator update are the scalar twin's order exactly (one FMA per key, key by key).
#include "pieces.hpp"

namespace minifloat::attention::detail::x86 {

/// Whether every q of a block is a bfloat16 that is normal or zero (vdpbf16ps reads subnormals
/// as 0), and the smallest exponent of a non-zero one (128 where there is none). One branch-free
/// pass over the block's rows.
struct q_bf16_scan {
  bool bf16 = true;
  int min_exponent = 128;
};
inline q_bf16_scan scan_q_bf16(const block_args& a) noexcept {
  std::uint32_t bad = 0, min_e = 255;
  for (std::size_t r = 0; r < a.rows; ++r)
    for (std::size_t c = 0; c < a.k.cols; ++c) {
      const std::uint32_t b = std::bit_cast<std::uint32_t>(a.q[r * a.q_stride + c]);
      const std::uint32_t e = (b >> 23) & 0xFFU;
      const std::uint32_t zero = (b & 0x7FFFFFFFU) == 0 ? 1U : 0U;
      bad |= (b & 0xFFFFU) | ((e == 0 || e == 255) && zero == 0 ? 1U : 0U);
      min_e = std::min(min_e, zero != 0 ? 255U : e);
    }
  return {bad == 0, static_cast<int>(min_e) - 127};
}

#if MINIFLOAT_ATTENTION_X86

MINIFLOAT_ATTENTION_X86_DIAGNOSTICS_PUSH

/// The element (0 .. 63) of a 64-element stretch of a row that the decoders put at position
/// p = 16 v + m (vector v, lane m). code8: decode64's byte unpacks run inside 128-bit lanes, and
/// the conversion to fp32 splits each bfloat16 pair into an even and an odd vector; bf16: the
/// pair split alone; f32: natural.
inline std::size_t lane_element(element_kind kind, std::size_t p) noexcept {
  const std::size_t v = p / 16, m = p % 16;
  if (kind == element_kind::f32) return p;
  if (kind == element_kind::bf16) return (v / 2) * 32 + 2 * m + v % 2;
  const std::size_t k = 2 * m + v % 2;  // the word of w0 (v < 2) or w1 (v >= 2)
  return 16 * (k / 8) + (v / 2) * 8 + k % 8;
}

/// Lane i of the result is the sum of the 16 lanes of a[i], pairwise in four steps: lanes 4L + m
/// and 4L + m + 2, then + 1 (both inside 128-bit blocks: unpacks), then blocks 2B and 2B + 1,
/// then the two halves (lane-crossing shuffles, 6 of the 30 shuffles).
MINIFLOAT_INLINE_AVX512 __m512 sum_lanes16(const __m512 a[16]) {
  __m512 b[8], c[4], d[2];
  for (int i = 0; i < 8; ++i) b[i] = _mm512_add_ps(_mm512_unpacklo_ps(a[2 * i], a[2 * i + 1]), _mm512_unpackhi_ps(a[2 * i], a[2 * i + 1]));
  for (int i = 0; i < 4; ++i) {
    const __m512d x = _mm512_castps_pd(b[2 * i]), y = _mm512_castps_pd(b[2 * i + 1]);
    c[i] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(x, y)), _mm512_castpd_ps(_mm512_unpackhi_pd(x, y)));
  }
  for (int i = 0; i < 2; ++i)
    d[i] = _mm512_add_ps(_mm512_shuffle_f32x4(c[2 * i], c[2 * i + 1], 0x88), _mm512_shuffle_f32x4(c[2 * i], c[2 * i + 1], 0xDD));
  return _mm512_add_ps(_mm512_shuffle_f32x4(d[0], d[1], 0x88), _mm512_shuffle_f32x4(d[0], d[1], 0xDD));
}

/// Stores lanes 4 rr .. 4 rr + 3 of x (row rr's four dot products) at s + rr * stride.
template <int R>
MINIFLOAT_INLINE_AVX512 void store_dot_rows(__m512 x, float* s, std::size_t stride) {
  _mm_storeu_ps(s, _mm512_castps512_ps128(x));
  if constexpr (R > 1) _mm_storeu_ps(s + stride, _mm512_extractf32x4_ps(x, 1));
  if constexpr (R > 2) _mm_storeu_ps(s + 2 * stride, _mm512_extractf32x4_ps(x, 2));
  if constexpr (R > 3) _mm_storeu_ps(s + 3 * stride, _mm512_extractf32x4_ps(x, 3));
}

/// MX exponent deltas for the words of one 64-element stretch. Scales along the row (K): one per
/// 32 elements, the words' low 256 bits hold the first 32. Scales along T (V): one per column,
/// 64 of them at sc, in the words' order.
MINIFLOAT_INLINE_AVX512 __m512i row_scale_delta(const std::uint8_t* sc, std::size_t c, std::size_t cols) {
  const int d0 = (static_cast<int>(sc[c / 32]) - 127) * 128;
  const int d1 = c + 32 < cols ? (static_cast<int>(sc[c / 32 + 1]) - 127) * 128 : 0;
  return _mm512_mask_blend_epi16(0xFFFF0000U, _mm512_set1_epi16(static_cast<short>(d0)), _mm512_set1_epi16(static_cast<short>(d1)));
}
MINIFLOAT_INLINE_AVX512 void column_scale_delta(const std::uint8_t* sc, std::size_t left, __m512i& d0, __m512i& d1) {
  const __mmask64 mk = left >= 64 ? ~__mmask64{0} : ((__mmask64{1} << left) - 1);
  const __m512i s = _mm512_maskz_loadu_epi8(mk, sc), z = _mm512_setzero_si512(), bias = _mm512_set1_epi16(127);
  d0 = _mm512_slli_epi16(_mm512_sub_epi16(_mm512_unpacklo_epi8(s, z), bias), 7);
  d1 = _mm512_slli_epi16(_mm512_sub_epi16(_mm512_unpackhi_epi8(s, z), bias), 7);
}

/// Elements c .. c + 63 of a stored row of 8-bit codes or bfloat16 (zero past cols) as bfloat16
/// words, 32 per vector in the decoder's word order (lane_element: word k of w_h is the element
/// at position 16 (2h + k % 2) + k / 2); with `scaled` (8-bit codes only), d0 and d1 are the MX
/// exponent deltas of the two word vectors.
template <element_kind K>
MINIFLOAT_INLINE_AVX512 void load_words(const std::uint8_t* row, std::size_t c, std::size_t cols, const code_tables& t, bool scaled,
                                        __m512i d0, __m512i d1, __m512i& w0, __m512i& w1) {
  const std::size_t left = cols - c;
  if constexpr (K == element_kind::code8) {
    const __m512i codes =
        left >= 64 ? _mm512_loadu_si512(row + c) : _mm512_maskz_loadu_epi8((__mmask64{1} << left) - 1, row + c);
    decode64(codes, t.hi0, t.hi1, t.lo0, t.lo1, w0, w1);
    if (scaled) w0 = fold_exponent(w0, d0), w1 = fold_exponent(w1, d1);
  } else if (left >= 64) {
    w0 = _mm512_loadu_si512(row + 2 * c);
    w1 = _mm512_loadu_si512(row + 2 * c + 64);
  } else {
    const __mmask32 m0 = left >= 32 ? ~__mmask32{0} : ((__mmask32{1} << left) - 1);
    const __mmask32 m1 = left <= 32 ? __mmask32{0} : ((__mmask32{1} << (left - 32)) - 1);
    w0 = _mm512_maskz_loadu_epi16(m0, row + 2 * c);
    w1 = _mm512_maskz_loadu_epi16(m1, row + 2 * c + 64);
  }
}

/// Elements c .. c + 63 of a stored row (zero past cols) as fp32, in lane_element order; with
/// `scaled` (8-bit codes only), d0 and d1 are the MX exponent deltas of the two word vectors.
template <element_kind K>
MINIFLOAT_INLINE_AVX512 void load64(const std::uint8_t* row, std::size_t c, std::size_t cols, const code_tables& t, bool scaled, __m512i d0,
                                    __m512i d1, __m512 out[4]) {
  if constexpr (K == element_kind::f32) {
    const std::size_t left = cols - c;
    for (std::size_t b = 0; b < 4; ++b) {
      const std::size_t in = left > 16 * b ? std::min<std::size_t>(16, left - 16 * b) : 0;
      out[b] = in == 16 ? _mm512_loadu_ps(row + 4 * (c + 16 * b)) : _mm512_maskz_loadu_ps(static_cast<__mmask16>((1U << in) - 1), row + 4 * (c + 16 * b));
    }
    return;
  } else {
    __m512i w0, w1;
    load_words<K>(row, c, cols, t, scaled, d0, d1, w0, w1);
    const __m512i odd = _mm512_set1_epi32(static_cast<int>(0xFFFF0000U));
    out[0] = _mm512_castsi512_ps(_mm512_slli_epi32(w0, 16));
    out[1] = _mm512_castsi512_ps(_mm512_and_si512(w0, odd));
    out[2] = _mm512_castsi512_ps(_mm512_slli_epi32(w1, 16));
    out[3] = _mm512_castsi512_ps(_mm512_and_si512(w1, odd));
  }
}

/// Raw dot products of R query rows with the keys c0 .. c0 + n - 1 of K (any element kind):
/// q[row][d64] in lane_element order, s[row][j] for j < n4 (zero past n; `zero` is a row of
/// zero bytes as long as a stored row). Per lane the FMAs run over a bfloat16 pair's high word
/// first (vectors 1, 0, 3, 2), the order in which vdpbf16ps takes a pair, so that with Pairs
/// (8-bit codes or bfloat16 only; qw[row][d64 / 2] the pair words of q, pair_words) one
/// vdpbf16ps per 32 elements gives the same sums (docs/attention.md#bfloat16-pairs-kernel).
template <int R, element_kind K, bool Pairs = false>
MINIFLOAT_TARGET_AVX512 inline void dots_decoded(const kv_view& k, std::size_t c0, std::size_t n, std::size_t n4, const float* q,
                                               const std::uint32_t* qw, std::size_t d64, const std::uint8_t* zero, float* s,
                                               line_prefetcher& pf) {
  static_assert(!Pairs || K != element_kind::f32);
  const std::size_t d = k.cols;
  const code_tables t = K == element_kind::code8 ? load_tables(k) : code_tables{};
  const __m512i none = _mm512_setzero_si512();
  constexpr int order[4] = {K == element_kind::f32 ? 0 : 1, K == element_kind::f32 ? 1 : 0, K == element_kind::f32 ? 2 : 3,
                            K == element_kind::f32 ? 3 : 2};
  for (std::size_t j0 = 0; j0 < n4; j0 += 4) {
    pf.step();
    const std::uint8_t* row[4];
    bool scaled[4];
    for (std::size_t jj = 0; jj < 4; ++jj) {
      const bool real = j0 + jj < n;
      row[jj] = real ? k.data + (c0 + j0 + jj) * k.row_bytes : zero;
      scaled[jj] = real && K == element_kind::code8 && !Pairs && k.mx != nullptr;  // pairs_apply: no MX
    }
    __m512 acc[16];
    MINIFLOAT_ATTENTION_UNROLL
    for (auto& x : acc) x = _mm512_setzero_ps();
    for (std::size_t c = 0; c < d64; c += 64) {
      if constexpr (Pairs) {
        // q's words for this stretch stay in registers across the four keys: with one load per
        // vdpbf16ps the loads, not the products, would set the pace
        __m512i qv[R][2];
        MINIFLOAT_ATTENTION_UNROLL
        for (int rr = 0; rr < R; ++rr) {
          const std::uint32_t* qr = qw + (static_cast<std::size_t>(rr) * d64 + c) / 2;
          qv[rr][0] = _mm512_loadu_si512(qr), qv[rr][1] = _mm512_loadu_si512(qr + 16);
        }
        MINIFLOAT_ATTENTION_UNROLL
        for (int jj = 0; jj < 4; ++jj) {
          __m512i w0, w1;
          load_words<K>(row[jj], c, d, t, false, none, none, w0, w1);
          MINIFLOAT_ATTENTION_UNROLL
          for (int rr = 0; rr < R; ++rr) {
            __m512& x = acc[4 * rr + jj];
            x = _mm512_dpbf16_ps(x, reinterpret_cast<__m512bh>(w0), reinterpret_cast<__m512bh>(qv[rr][0]));
            x = _mm512_dpbf16_ps(x, reinterpret_cast<__m512bh>(w1), reinterpret_cast<__m512bh>(qv[rr][1]));
          }
        }
      } else {
        MINIFLOAT_ATTENTION_UNROLL
        for (int jj = 0; jj < 4; ++jj) {
          const __m512i dl = scaled[jj] ? row_scale_delta(k.mx + (c0 + j0 + static_cast<std::size_t>(jj)) * k.mx_stride, c, d) : none;
          __m512 kv[4];
          load64<K>(row[jj], c, d, t, scaled[jj], dl, dl, kv);
          MINIFLOAT_ATTENTION_UNROLL
          for (int rr = 0; rr < R; ++rr) {
            const float* qr = q + static_cast<std::size_t>(rr) * d64 + c;
            MINIFLOAT_ATTENTION_UNROLL
            for (int v : order) acc[4 * rr + jj] = _mm512_fmadd_ps(kv[v], _mm512_loadu_ps(qr + 16 * v), acc[4 * rr + jj]);
          }
        }
      }
    }
    store_dot_rows<R>(sum_lanes16(acc), s + j0, chunk_keys);
  }
}

/// The R x NB vectors a P V pass accumulates in, at zero.
template <int R, int NB>
MINIFLOAT_INLINE_AVX512 void zero_part(__m512 (&part)[R][NB]) {
  MINIFLOAT_ATTENTION_UNROLL
  for (auto& row : part)
    MINIFLOAT_ATTENTION_UNROLL
    for (auto& x : row) x = _mm512_setzero_ps();
}

/// acc[row][0 .. 16 NB) = acc * alpha + v_factor * part (kernel.hpp's order).
template <int R, int NB>
MINIFLOAT_INLINE_AVX512 void fold_part(const __m512 part[R][NB], float* acc, std::size_t acc_stride, const float* alpha, float v_factor) {
  const __m512 vf = _mm512_set1_ps(v_factor);
  MINIFLOAT_ATTENTION_UNROLL
  for (int rr = 0; rr < R; ++rr) {
    const __m512 al = _mm512_set1_ps(alpha[rr]);
    float* ar = acc + static_cast<std::size_t>(rr) * acc_stride;
    MINIFLOAT_ATTENTION_UNROLL
    for (int b = 0; b < NB; ++b)
      _mm512_storeu_ps(ar + 16 * b, _mm512_fmadd_ps(part[rr][b], vf, _mm512_mul_ps(_mm512_loadu_ps(ar + 16 * b), al)));
  }
}

/// P V for R rows over the columns g .. g + 63 of V (any element kind; acc in lane_element
/// order): one FMA per key and column, key by key. p[row][chunk_keys] is P^ in fp32.
template <int R, element_kind K>
MINIFLOAT_TARGET_AVX512 inline void pv_decoded(const kv_view& v, std::size_t c0, std::size_t n, std::size_t g, const float* p, float* acc,
                                             std::size_t acc_stride, const float* alpha, float v_factor, line_prefetcher& pf) {
  const std::size_t dv = v.cols;
  const code_tables t = K == element_kind::code8 ? load_tables(v) : code_tables{};
  const bool scaled = K == element_kind::code8 && v.mx != nullptr;
  __m512i d0 = _mm512_setzero_si512(), d1 = d0;
  std::size_t scale_block = ~std::size_t{0};
  __m512 part[R][4];
  zero_part<R, 4>(part);
  for (std::size_t j = 0; j < n; ++j) {
    if (j % 4 == 0) pf.step();
    if (scaled && (c0 + j) / 32 != scale_block) {
      scale_block = (c0 + j) / 32;
      column_scale_delta(v.mx + scale_block * v.mx_stride + g, dv - g, d0, d1);
    }
    __m512 vv[4];
    load64<K>(v.data + (c0 + j) * v.row_bytes, g, dv, t, scaled, d0, d1, vv);
    MINIFLOAT_ATTENTION_UNROLL
    for (int rr = 0; rr < R; ++rr) {
      const __m512 pj = _mm512_set1_ps(p[static_cast<std::size_t>(rr) * chunk_keys + j]);
      MINIFLOAT_ATTENTION_UNROLL
      for (int b = 0; b < 4; ++b) part[rr][b] = _mm512_fmadd_ps(pj, vv[b], part[rr][b]);
    }
  }
  fold_part<R, 4>(part, acc + g, acc_stride, alpha, v_factor);
}

/// The column (0 .. 63) of a 64-column stretch of V that pv_pairs accumulates at position
/// p = 16 b + i (vector b, lane i = 4 L + m): the in-lane unpacks that interleave keys j and
/// j + 1 (then, for codes, decode64's own unpacks) take four columns at a time per 128-bit lane.
inline std::size_t pair_column(element_kind kind, std::size_t p) noexcept {
  const std::size_t b = p / 16, lane = (p % 16) / 4, m = p % 4;
  if (kind == element_kind::bf16) return 32 * (b / 2) + 8 * lane + 4 * (b % 2) + m;
  return 16 * lane + 4 * b + m;
}

/// P V for R rows over the columns g .. g + 63 of V (8-bit codes without MX scales, or
/// bfloat16; acc in pair_column order) by bfloat16 pairs of keys: one vdpbf16ps per 16 columns
/// and pair (j, j + 1), key j in the high words, so each lane does the FMAs of key j then key
/// j + 1: pv_decoded's order. pw[row][chunk_keys / 2] are P^'s pair words (pair_words).
template <int R, element_kind K>
MINIFLOAT_TARGET_AVX512 inline void pv_pairs(const kv_view& v, std::size_t c0, std::size_t n, std::size_t g, const std::uint32_t* pw,
                                           float* acc, std::size_t acc_stride, const float* alpha, float v_factor, line_prefetcher& pf) {
  static_assert(K != element_kind::f32);
  const std::size_t dv = v.cols, left = dv - g;
  const code_tables t = K == element_kind::code8 ? load_tables(v) : code_tables{};
  // codes: one 64-byte load per key; bfloat16: two 32-word loads per key
  const __mmask64 m8 = left >= 64 ? ~__mmask64{0} : ((__mmask64{1} << left) - 1);
  const __mmask32 m16a = left >= 32 ? ~__mmask32{0} : ((__mmask32{1} << left) - 1);
  const __mmask32 m16b = left >= 64 ? ~__mmask32{0} : left <= 32 ? __mmask32{0} : ((__mmask32{1} << (left - 32)) - 1);
  __m512 part[R][4];
  zero_part<R, 4>(part);
  for (std::size_t j = 0; j < n; j += 2) {
    if (j % 4 == 0) pf.step();
    const std::uint8_t* ra = v.data + (c0 + j) * v.row_bytes;
    const bool has_b = j + 1 < n;
    __m512i vv[4];
    if constexpr (K == element_kind::code8) {
      // bytes (key j + 1, key j) per column, so decode64's words put key j high
      const __m512i a = _mm512_maskz_loadu_epi8(m8, ra + g);
      const __m512i b = has_b ? _mm512_maskz_loadu_epi8(m8, ra + v.row_bytes + g) : _mm512_setzero_si512();
      decode64(_mm512_unpacklo_epi8(b, a), t.hi0, t.hi1, t.lo0, t.lo1, vv[0], vv[1]);
      decode64(_mm512_unpackhi_epi8(b, a), t.hi0, t.hi1, t.lo0, t.lo1, vv[2], vv[3]);
    } else {
      MINIFLOAT_ATTENTION_UNROLL
      for (int h = 0; h < 2; ++h) {
        const __mmask32 mk = h == 0 ? m16a : m16b;
        const std::uint8_t* pa = ra + 2 * (g + 32 * static_cast<std::size_t>(h));
        const __m512i a = _mm512_maskz_loadu_epi16(mk, pa);
        const __m512i b = has_b ? _mm512_maskz_loadu_epi16(mk, pa + v.row_bytes) : _mm512_setzero_si512();
        vv[2 * h] = _mm512_unpacklo_epi16(b, a);
        vv[2 * h + 1] = _mm512_unpackhi_epi16(b, a);
      }
    }
    MINIFLOAT_ATTENTION_UNROLL
    for (int rr = 0; rr < R; ++rr) {
      const __m512bh pj = reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(pw[static_cast<std::size_t>(rr) * (chunk_keys / 2) + j / 2])));
      MINIFLOAT_ATTENTION_UNROLL
      for (int b = 0; b < 4; ++b) part[rr][b] = _mm512_dpbf16_ps(part[rr][b], reinterpret_cast<__m512bh>(vv[b]), pj);
    }
  }
  fold_part<R, 4>(part, acc + g, acc_stride, alpha, v_factor);
}

/// Pair words of bfloat16-exact fp32 values: word i = x[2i] high, x[2i + 1] low (n even).
MINIFLOAT_TARGET_AVX512 inline void pair_words(const float* x, std::size_t n, std::uint32_t* out) {
  // in the 64 words of two fp32 vectors, x[2i]'s high half is word 4i + 1, x[2i + 1]'s is 4i + 3
  const __m512i ix = _mm512_set_epi16(61, 63, 57, 59, 53, 55, 49, 51, 45, 47, 41, 43, 37, 39, 33, 35, 29, 31, 25, 27, 21, 23, 17, 19, 13,
                                      15, 9, 11, 5, 7, 1, 3);
  for (std::size_t i = 0; i < n; i += 32) {
    const __m512i a = _mm512_loadu_si512(x + i), b = _mm512_loadu_si512(x + i + 16);
    _mm512_storeu_si512(out + i / 2, _mm512_permutex2var_epi16(a, ix, b));
  }
}

/// Whether a block can take the bfloat16-pairs kernel: K and V 8-bit codes without MX scales or
/// bfloat16, P^ bfloat16-exact (an 8-bit format or bfloat16) and q exact in bfloat16 and not
/// subnormal (vdpbf16ps reads subnormals as 0).
inline bool pairs_apply(const block_args& a) noexcept {
  const auto rows_ok = [](const kv_view& x) {
    return (x.kind == element_kind::code8 && x.mx == nullptr) || x.kind == element_kind::bf16;
  };
  if (!rows_ok(a.k) || !rows_ok(a.v)) return false;
  const p_round pr = p_round_of(a.p);
  if (pr != p_round::hifloat8 && pr != p_round::e4m3 && pr != p_round::e5m2 && pr != p_round::bf16) return false;
  return scan_q_bf16(a).bf16;
}

/// pairs: the bfloat16-pairs kernel (pairs_apply(a) must hold): S and P V by vdpbf16ps.
MINIFLOAT_TARGET_AVX512 inline void run_block_avx512(const block_args& a, bool pairs = false) {
  scratch& s = scratch::local();
  const std::size_t d = a.k.cols, dv = a.v.cols, rows = a.rows;
  const std::size_t d16 = (d + 15) / 16 * 16, d64 = (d + 63) / 64 * 64, dv64 = (dv + 63) / 64 * 64;
  const element_kind kk = a.k.kind, vk = a.v.kind;
  const softmax_step sm(a);

  // Q in the order K's elements arrive (natural for fp32 K), zero past d
  const std::size_t qs = d64;
  s.srow.assign(rows * qs, 0.0f);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < qs; ++c) {
      const std::size_t e = (c / 64) * 64 + lane_element(kk, c % 64);
      if (e < d) s.srow[r * qs + c] = a.q[r * a.q_stride + e];
    }
  if (pairs) {  // dword m of word vector h of a stretch: positions 16 (2h + 1) + m (high), 16 (2h) + m
    s.qw.resize(rows * qs / 2);
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t c = 0; c < qs; c += 64)
        for (std::size_t h = 0; h < 2; ++h)
          for (std::size_t m = 0; m < 16; ++m) {
            const float* q = s.srow.data() + r * qs + c;
            s.qw[(r * qs + c) / 2 + 16 * h + m] = (std::bit_cast<std::uint32_t>(q[32 * h + 16 + m]) & 0xFFFF0000U) |
                                                  (std::bit_cast<std::uint32_t>(q[32 * h + m]) >> 16);
          }
    s.pw.resize(rows * chunk_keys / 2);
  }
  const std::size_t kmax = start_block(s, a, dv64);

  s.zero.assign(d16, 0.0f);
  const auto* zero = reinterpret_cast<const std::uint8_t*>(s.zero.data());  // NOLINT: zero bytes for any element kind
  line_prefetcher pf;
  for (std::size_t c0 = 0; c0 < kmax; c0 += chunk_keys) {
    const std::size_t n = std::min(chunk_keys, kmax - c0), n4 = (n + 3) / 4 * 4, nkt = (n + 15) / 16;
    // the next chunk's lines, spread over this chunk's loops
    pf.reset(a.k, a.v, c0 + chunk_keys, std::min(kmax, c0 + 2 * chunk_keys));
    pf.pace((rows + 3) / 4 * (n4 / 4) * (1 + dv64 / 64));
    for (std::size_t r0 = 0; r0 < rows; r0 += 4)
      with_rows(rows - r0, [&]<int R>() {
        const float* q = s.srow.data() + r0 * qs;
        const std::uint32_t* qw = pairs ? s.qw.data() + r0 * qs / 2 : nullptr;
        float* st = s.st.data() + r0 * chunk_keys;
        if (pairs && kk == element_kind::bf16) dots_decoded<R, element_kind::bf16, true>(a.k, c0, n, n4, q, qw, d64, zero, st, pf);
        else if (pairs) dots_decoded<R, element_kind::code8, true>(a.k, c0, n, n4, q, qw, d64, zero, st, pf);
        else if (kk == element_kind::f32) dots_decoded<R, element_kind::f32>(a.k, c0, n, n4, q, qw, d64, zero, st, pf);
        else if (kk == element_kind::bf16) dots_decoded<R, element_kind::bf16>(a.k, c0, n, n4, q, qw, d64, zero, st, pf);
        else dots_decoded<R, element_kind::code8>(a.k, c0, n, n4, q, qw, d64, zero, st, pf);
      });
    for (std::size_t r = 0; r < rows; ++r) {
      const std::size_t vis = a.limit[r] > c0 ? std::min(n, a.limit[r] - c0) : 0;
      s.alpha[r] = softmax_row(sm, s.st.data() + r * chunk_keys, nkt, vis, s.m[r], s.l[r], nullptr, 0, 0, s.part.data() + r * chunk_keys);
      if (pairs) pair_words(s.part.data() + r * chunk_keys, chunk_keys, s.pw.data() + r * (chunk_keys / 2));
    }
    for (std::size_t r0 = 0; r0 < rows; r0 += 4)
      for (std::size_t g = 0; g < dv64; g += 64)
        with_rows(rows - r0, [&]<int R>() {
          const float* p = s.part.data() + r0 * chunk_keys;
          float* acc = s.acc.data() + r0 * dv64;
          const std::uint32_t* pw = s.pw.data() + r0 * (chunk_keys / 2);
          if (pairs && vk == element_kind::bf16) pv_pairs<R, element_kind::bf16>(a.v, c0, n, g, pw, acc, dv64, s.alpha + r0, a.v_factor, pf);
          else if (pairs) pv_pairs<R, element_kind::code8>(a.v, c0, n, g, pw, acc, dv64, s.alpha + r0, a.v_factor, pf);
          else if (vk == element_kind::f32) pv_decoded<R, element_kind::f32>(a.v, c0, n, g, p, acc, dv64, s.alpha + r0, a.v_factor, pf);
          else if (vk == element_kind::bf16) pv_decoded<R, element_kind::bf16>(a.v, c0, n, g, p, acc, dv64, s.alpha + r0, a.v_factor, pf);
          else pv_decoded<R, element_kind::code8>(a.v, c0, n, g, p, acc, dv64, s.alpha + r0, a.v_factor, pf);
        });
  }
  for (std::size_t r = 0; r < rows; ++r) {
    float* o = a.out + r * a.out_stride;
    const float* acc = s.acc.data() + r * dv64;
    const float l = s.l[r];
    for (std::size_t c = 0; c < dv64; ++c) {
      const std::size_t e = (c / 64) * 64 + (pairs ? pair_column(vk, c % 64) : lane_element(vk, c % 64));
      if (e < dv) o[e] = l > 0.0f ? acc[c] / l : 0.0f;
    }
    a.m[r] = s.m[r], a.l[r] = l;
  }
}

MINIFLOAT_ATTENTION_X86_DIAGNOSTICS_POP

#else

inline void run_block_avx512(const block_args& a, bool = false) { run_block_scalar(a); }
inline bool pairs_apply(const block_args&) noexcept { return false; }

#endif

}  // namespace minifloat::attention::detail::x86
