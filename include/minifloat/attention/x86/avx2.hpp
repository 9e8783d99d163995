#pragma once
// The AVX2 block kernel, for x86 cores without AVX-512 (AMD Zen 2 and 3, Intel client cores):
// fp32 FMAs eight lanes wide, for blocks of any size. kernel.hpp has the order of operations;
// pieces.hpp has what both x86 kernels share.
//
// Stored elements reach fp32 through the library's AVX2 decoders (simd/x86/avx2_codec.hpp: HiF8 by
// its vpshufb tables, E4M3/E5M2 by field moves), 32 codes at a time, in natural order; an MX
// scale multiplies the decoded values in fp32, exactly as kv_view::value does, so this kernel
// reads every MX tensor exactly (no bfloat16 range condition). K is decoded in registers for
// blocks of up to four rows (a decode block: one KV group's query heads); larger blocks decode
// each chunk of K once into fp32 scratch and read it from there. V is always decoded a chunk at
// a time into scratch: P V for four rows needs sixteen accumulators over 32 columns, all the
// registers AVX2 has.
//
// Summation orders: S is, per key and row, two 8-lane FMA sums over d (lane l of the first takes
// the elements l, l + 16, ..., of the second l + 8, l + 24, ...), added lane by lane, then the
// lanes summed as ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)); P V and the
// accumulator update are the scalar twin's order exactly (one FMA per key, key by key). The
// exp and the P rounding are the AVX-512 ones, bit for bit (tested).
#include "../../simd/x86/avx2_codec.hpp"
#include "pieces.hpp"

namespace minifloat::attention::detail::x86 {

#if MINIFLOAT_ATTENTION_X86

MINIFLOAT_ATTENTION_X86_DIAGNOSTICS_PUSH

// --- exp and P rounding, 8 lanes ----------------------------------------------------------------

/// 2^q for integral q in [-126, 127].
MINIFLOAT_INLINE_AVX2 __m256 pow2_256(__m256 q) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(q), _mm256_set1_epi32(127)), 23));
}

/// exp512's algorithm on 8 lanes (same constants, same operations: the same bits).
MINIFLOAT_INLINE_AVX2 __m256 exp256(__m256 x) {
  using c = exp_constants;
  const __m256 keep = _mm256_cmp_ps(x, _mm256_set1_ps(c::lo), _CMP_GE_OQ);
  x = _mm256_max_ps(x, _mm256_set1_ps(c::lo));
  x = _mm256_min_ps(x, _mm256_set1_ps(c::hi));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(c::log2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(c::ln2_hi), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(c::ln2_lo), r);
  __m256 p = _mm256_set1_ps(c::poly[0]);
  for (std::size_t i = 1; i < std::size(c::poly); ++i) p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(c::poly[i]));
  return _mm256_and_ps(keep, _mm256_mul_ps(p, pow2_256(n)));
}

/// floor(log2 x) for x >= 0 normal; -127 for 0 and subnormals (every caller clamps it higher).
MINIFLOAT_INLINE_AVX2 __m256 exponent256(__m256 x) {
  return _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_srli_epi32(_mm256_castps_si256(x), 23), _mm256_set1_epi32(127)));
}

/// round_grid_rne on 8 lanes.
MINIFLOAT_INLINE_AVX2 __m256 round_grid_rne256(__m256 x, int w, int emin, float max_value) {
  x = _mm256_min_ps(x, _mm256_set1_ps(max_value));
  const __m256 e = _mm256_max_ps(exponent256(x), _mm256_set1_ps(static_cast<float>(emin)));
  const __m256 q = _mm256_sub_ps(e, _mm256_set1_ps(static_cast<float>(w)));
  const __m256 y = _mm256_mul_ps(x, pow2_256(_mm256_sub_ps(_mm256_setzero_ps(), q)));
  const __m256 r = _mm256_round_ps(y, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  return _mm256_min_ps(_mm256_mul_ps(r, pow2_256(q)), _mm256_set1_ps(max_value));
}

/// round_p on 8 lanes: decode(encode_F(x)) for finite x >= 0, F's default rounding, saturating.
MINIFLOAT_INLINE_AVX2 __m256 round_p256(__m256 x, p_round kind, const static_format& p) {
  switch (kind) {
    case p_round::none: return x;
    case p_round::e4m3:
    case p_round::e4m3_le256: return round_grid_rne256(x, 3, -6, 448.0f);
    case p_round::e5m2:
    case p_round::e5m2_le256: return round_grid_rne256(x, 2, -14, 57344.0f);
    case p_round::bf16: {
      const __m256i b = _mm256_castps_si256(_mm256_min_ps(x, _mm256_set1_ps(bf16_max)));
      const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(b, 16), _mm256_set1_epi32(1));
      const __m256i r = _mm256_add_epi32(_mm256_add_epi32(b, _mm256_set1_epi32(0x7FFF)), odd);
      return _mm256_castsi256_ps(_mm256_and_si256(r, _mm256_set1_epi32(static_cast<int>(0xFFFF0000U))));
    }
    case p_round::f16: {
      const __m128i h = _mm256_cvtps_ph(_mm256_min_ps(x, _mm256_set1_ps(65504.0f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      return _mm256_cvtph_ps(h);
    }
    case p_round::hifloat8:
    case p_round::hifloat8_le256: {
      // pieces.hpp's integer form; the mantissa width w = [|E| < 4] + [|E| < 8] + [|E| < 16]
      const __m256i b = _mm256_castps_si256(_mm256_min_ps(x, _mm256_set1_ps(32768.0f)));
      const __m256i be = _mm256_srli_epi32(b, 23);
      const __m256i a = _mm256_abs_epi32(_mm256_sub_epi32(be, _mm256_set1_epi32(127)));
      const __m256i nw = _mm256_add_epi32(_mm256_add_epi32(_mm256_cmpgt_epi32(_mm256_set1_epi32(4), a), _mm256_cmpgt_epi32(_mm256_set1_epi32(8), a)),
                                          _mm256_cmpgt_epi32(_mm256_set1_epi32(16), a));  // -w
      const __m256i half = _mm256_srlv_epi32(_mm256_set1_epi32(1 << 22), _mm256_sub_epi32(_mm256_setzero_si256(), nw));
      __m256i r = _mm256_and_si256(_mm256_add_epi32(b, half), _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_add_epi32(half, half)));
      const __m256i tiny = _mm256_cmpgt_epi32(_mm256_set1_epi32(127 - 22), be);
      const __m256i up = _mm256_and_si256(_mm256_cmpeq_epi32(be, _mm256_set1_epi32(127 - 23)), _mm256_set1_epi32(0x34800000));
      r = _mm256_blendv_epi8(r, up, tiny);
      return _mm256_castsi256_ps(r);
    }
    case p_round::scalar: {
      alignas(32) float t[8];
      _mm256_store_ps(t, x);
      for (float& v : t) v = round_to_format(v, *p.format);
      return _mm256_load_ps(t);
    }
  }
  return x;
}

/// Array forms for tests (n a multiple of 8).
MINIFLOAT_TARGET_AVX2 inline void round_p_array_avx2(const float* x, float* out, std::size_t n, const static_format& p) {
  for (std::size_t i = 0; i < n; i += 8) _mm256_storeu_ps(out + i, round_p256(_mm256_loadu_ps(x + i), p_round_of(p), p));
}
MINIFLOAT_TARGET_AVX2 inline void exp_array_avx2(const float* x, float* out, std::size_t n) {
  for (std::size_t i = 0; i < n; i += 8) _mm256_storeu_ps(out + i, exp256(_mm256_loadu_ps(x + i)));
}

MINIFLOAT_INLINE_AVX2 float reduce_max256(__m256 x) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}
MINIFLOAT_INLINE_AVX2 float reduce_add256(__m256 x) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

/// softmax_row (pieces.hpp) on 8 lanes, P^ as fp32 at pf.
MINIFLOAT_TARGET_AVX2 inline float softmax_row_avx2(const softmax_step& k, const float* dots, std::size_t n, std::size_t vis, float& m,
                                                   float& l, float* pf) {
  if (vis == 0) {
    std::memset(pf, 0, chunk_keys * sizeof(float));
    return 1.0f;
  }
  constexpr std::size_t nv = chunk_keys / 8;
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256 sf = _mm256_set1_ps(k.s_factor), ninf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  __m256 v[nv], mk[nv];
  __m256 mc = ninf;
  for (std::size_t j = 0; j < nv; ++j) {
    mk[j] = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(vis)), _mm256_add_epi32(lane, _mm256_set1_epi32(static_cast<int>(8 * j)))));
    v[j] = 8 * j < n ? _mm256_and_ps(mk[j], _mm256_mul_ps(_mm256_loadu_ps(dots + 8 * j), sf)) : _mm256_setzero_ps();
    mc = _mm256_max_ps(mc, _mm256_blendv_ps(ninf, v[j], mk[j]));
  }
  const float mo = m, mn = std::max(mo, reduce_max256(mc));
  const float alpha = mo == -std::numeric_limits<float>::infinity() ? 0.0f : std::exp(mo - mn);
  __m256 lsum = _mm256_setzero_ps();
  const __m256 mnv = _mm256_set1_ps(mn), pinv = _mm256_set1_ps(k.p_inv), ps = _mm256_set1_ps(k.p_scale);
  for (std::size_t j = 0; j < nv; ++j) {
    __m256 e = _mm256_and_ps(mk[j], exp256(_mm256_sub_ps(v[j], mnv)));
    lsum = _mm256_add_ps(lsum, e);
    if (k.pr != p_round::none) e = round_p256(k.p_pow2 ? _mm256_mul_ps(e, pinv) : _mm256_div_ps(e, ps), k.pr, k.p);
    _mm256_storeu_ps(pf + 8 * j, e);
  }
  l = l * alpha + reduce_add256(lsum);
  m = mn;
  return alpha;
}

// --- stored rows to fp32 ------------------------------------------------------------------------

/// How a block's rows of one operand reach fp32: the element kind, and for 8-bit codes the
/// format's decoder.
enum class row_codec : std::uint8_t { f32, bf16, hifloat8, e4m3, e5m2 };

inline row_codec codec_of(const kv_view& x) noexcept {
  if (x.kind == element_kind::f32) return row_codec::f32;
  if (x.kind == element_kind::bf16) return row_codec::bf16;
  return x.format == format_id::hifloat8 ? row_codec::hifloat8 : x.format == format_id::float8_e5m2 ? row_codec::e5m2 : row_codec::e4m3;
}

template <row_codec C>
struct codec_decoder {
  struct none {};
  using type = std::conditional_t<C == row_codec::hifloat8, simd::avx2::detail::decoder8_for<hifloat8::spec>,
                                  std::conditional_t<C == row_codec::e4m3, simd::avx2::detail::decoder8_for<float8_e4m3fn::spec>,
                                                     std::conditional_t<C == row_codec::e5m2, simd::avx2::detail::decoder8_for<float8_e5m2::spec>, none>>>;
};

/// Elements c .. c + 31 of a stored row as fp32 in natural order, zero past cols.
template <row_codec C>
MINIFLOAT_INLINE_AVX2 void load32(const std::uint8_t* row, std::size_t c, std::size_t cols, const typename codec_decoder<C>::type& dec,
                                  __m256 out[4]) {
  const std::size_t left = cols - c;
  if constexpr (C == row_codec::f32) {
    const float* f = reinterpret_cast<const float*>(row) + c;  // NOLINT: fp32 rows
    if (left >= 32) {
      for (std::size_t b = 0; b < 4; ++b) out[b] = _mm256_loadu_ps(f + 8 * b);
      return;
    }
    for (std::size_t b = 0; b < 4; ++b) {
      const std::size_t in = left > 8 * b ? std::min<std::size_t>(8, left - 8 * b) : 0;
      const float* p = f + 8 * b;
      if (in == 8) out[b] = _mm256_loadu_ps(p);
      else if (in == 0) out[b] = _mm256_setzero_ps();
      else
        out[b] = _mm256_maskload_ps(p, _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(in)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)));
    }
  } else {
    constexpr std::size_t eb = C == row_codec::bf16 ? 2 : 1;
    alignas(32) std::uint8_t tail[32 * eb];
    const std::uint8_t* p = row + eb * c;
    if (left < 32) {
      std::memset(tail, 0, sizeof tail);
      std::memcpy(tail, p, left * eb);
      p = tail;
    }
    if constexpr (C == row_codec::bf16) {
      for (std::size_t b = 0; b < 4; ++b)
        out[b] = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * b))), 16));  // NOLINT
    } else {
      __m256i w[4];
      dec(p, w);
      for (std::size_t b = 0; b < 4; ++b) out[b] = _mm256_castsi256_ps(w[b]);
    }
  }
}

/// The scale of K row r's elements c .. c + 31 (MX along d), or of V's column c in row r's
/// 32-row block (MX along T).
inline float mx_factor(const kv_view& x, std::size_t r, std::size_t c) noexcept { return mx_scale_value(x.mx_code(r, c)); }

/// Rows c0 .. c0 + n - 1 of x as fp32 rows of `width` (a multiple of 32) floats at out, MX
/// scales applied; fac is scratch for a row of column scales (MX along T).
template <row_codec C>
MINIFLOAT_TARGET_AVX2 inline void decode_chunk(const kv_view& x, std::size_t c0, std::size_t n, std::size_t width, float* out,
                                              std::vector<float>& fac, line_prefetcher& pf) {
  const typename codec_decoder<C>::type dec{};
  const bool by_column = x.mx != nullptr && x.mx_axis == 0;
  std::size_t block = ~std::size_t{0};
  for (std::size_t j = 0; j < n; ++j) {
    pf.step();
    if (by_column && (c0 + j) / 32 != block) {
      block = (c0 + j) / 32;
      fac.assign(width, 0.0f);
      for (std::size_t c = 0; c < x.cols; ++c) fac[c] = mx_factor(x, c0 + j, c);
    }
    const std::uint8_t* row = x.data + (c0 + j) * x.row_bytes;
    for (std::size_t c = 0; c < width; c += 32) {
      __m256 v[4];
      if (c < x.cols) load32<C>(row, c, x.cols, dec, v);
      else v[0] = v[1] = v[2] = v[3] = _mm256_setzero_ps();
      if (by_column) {
        for (std::size_t b = 0; b < 4; ++b) v[b] = _mm256_mul_ps(v[b], _mm256_loadu_ps(fac.data() + c + 8 * b));
      } else if (x.mx != nullptr && c < x.cols) {
        const __m256 f = _mm256_set1_ps(mx_factor(x, c0 + j, c));
        for (auto& y : v) y = _mm256_mul_ps(y, f);
      }
      for (std::size_t b = 0; b < 4; ++b) _mm256_storeu_ps(out + j * width + c + 8 * b, v[b]);
    }
  }
}

// --- the block ----------------------------------------------------------------------------------

/// Raw dot products of R query rows (q: R x d32, zero past d) with the keys c0 .. c0 + n - 1 of
/// K, read through codec C (fp32 rows at x.data for a decoded chunk); s[row][j] for j < n. Per
/// key and row two accumulators (even and odd 8-element pieces of d) keep eight FMA chains in
/// flight within sixteen registers.
template <int R, row_codec C>
MINIFLOAT_TARGET_AVX2 inline void dots_avx2(const kv_view& k, std::size_t c0, std::size_t n, const float* q, std::size_t d32, float* s,
                                           line_prefetcher& pf) {
  const std::size_t d = k.cols;
  const typename codec_decoder<C>::type dec{};
  for (std::size_t j = 0; j < n; ++j) {
    if (j % 2 == 0) pf.step();
    const std::uint8_t* row = k.data + (c0 + j) * k.row_bytes;
    __m256 acc[R][2];
    MINIFLOAT_ATTENTION_UNROLL
    for (auto& x : acc) x[0] = x[1] = _mm256_setzero_ps();
    for (std::size_t c = 0; c < d32; c += 32) {
      __m256 kv[4];
      load32<C>(row, c, d, dec, kv);
      if (k.mx != nullptr) {
        const __m256 f = _mm256_set1_ps(mx_factor(k, c0 + j, c));
        MINIFLOAT_ATTENTION_UNROLL
        for (auto& y : kv) y = _mm256_mul_ps(y, f);
      }
      MINIFLOAT_ATTENTION_UNROLL
      for (int v = 0; v < 4; ++v)
        MINIFLOAT_ATTENTION_UNROLL
        for (int rr = 0; rr < R; ++rr)
          acc[rr][v % 2] = _mm256_fmadd_ps(kv[v], _mm256_loadu_ps(q + static_cast<std::size_t>(rr) * d32 + c + 8 * static_cast<std::size_t>(v)), acc[rr][v % 2]);
    }
    __m256 r4[4];
    for (int rr = 0; rr < 4; ++rr) r4[rr] = rr < R ? _mm256_add_ps(acc[rr][0], acc[rr][1]) : _mm256_setzero_ps();
    const __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(r4[0], r4[1]), _mm256_hadd_ps(r4[2], r4[3]));
    alignas(16) float sums[4];
    _mm_store_ps(sums, _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1)));
    for (int rr = 0; rr < R; ++rr) s[static_cast<std::size_t>(rr) * chunk_keys + j] = sums[rr];
  }
}

/// P V for R rows over the 16 columns g .. g + 15 of the chunk's decoded V (vb: n rows of
/// `width` floats), then the accumulator update (kernel.hpp's order: one FMA per key).
template <int R>
MINIFLOAT_TARGET_AVX2 inline void pv_avx2(const float* vb, std::size_t width, std::size_t n, std::size_t g, const float* p, float* acc,
                                         std::size_t acc_stride, const float* alpha, float v_factor) {
  __m256 part[R][2];
  MINIFLOAT_ATTENTION_UNROLL
  for (auto& row : part) row[0] = row[1] = _mm256_setzero_ps();
  for (std::size_t j = 0; j < n; ++j) {
    const __m256 v0 = _mm256_loadu_ps(vb + j * width + g), v1 = _mm256_loadu_ps(vb + j * width + g + 8);
    MINIFLOAT_ATTENTION_UNROLL
    for (int rr = 0; rr < R; ++rr) {
      const __m256 pj = _mm256_broadcast_ss(p + static_cast<std::size_t>(rr) * chunk_keys + j);
      part[rr][0] = _mm256_fmadd_ps(pj, v0, part[rr][0]);
      part[rr][1] = _mm256_fmadd_ps(pj, v1, part[rr][1]);
    }
  }
  const __m256 vf = _mm256_set1_ps(v_factor);
  MINIFLOAT_ATTENTION_UNROLL
  for (int rr = 0; rr < R; ++rr) {
    const __m256 al = _mm256_set1_ps(alpha[rr]);
    float* ar = acc + static_cast<std::size_t>(rr) * acc_stride + g;
    for (int b = 0; b < 2; ++b)
      _mm256_storeu_ps(ar + 8 * b, _mm256_fmadd_ps(part[rr][b], vf, _mm256_mul_ps(_mm256_loadu_ps(ar + 8 * b), al)));
  }
}

template <row_codec KC, row_codec VC>
MINIFLOAT_TARGET_AVX2 inline void run_block_avx2_as(const block_args& a) {
  scratch& s = scratch::local();
  const std::size_t d = a.k.cols, dv = a.v.cols, rows = a.rows;
  const std::size_t d32 = (d + 31) / 32 * 32, dv16 = (dv + 15) / 16 * 16, dv32 = (dv + 31) / 32 * 32;
  const softmax_step sm(a);
  // large blocks read K from a decoded fp32 chunk, decode blocks decode it in registers
  const bool k_chunk = KC != row_codec::f32 && rows > 4;

  s.srow.assign(rows * d32, 0.0f);
  for (std::size_t r = 0; r < rows; ++r) std::memcpy(s.srow.data() + r * d32, a.q + r * a.q_stride, d * sizeof(float));
  const std::size_t kmax = start_block(s, a, dv16);
  s.vdec.resize(chunk_keys * dv32);
  if (k_chunk) s.kdec.resize(chunk_keys * d32);
  kv_view kf;  // a decoded chunk of K as fp32 rows
  kf.kind = element_kind::f32, kf.cols = d, kf.row_bytes = d32 * 4;
  kf.data = reinterpret_cast<const std::uint8_t*>(s.kdec.data());  // NOLINT: read as bytes
  line_prefetcher pf;
  for (std::size_t c0 = 0; c0 < kmax; c0 += chunk_keys) {
    const std::size_t n = std::min(chunk_keys, kmax - c0);
    pf.reset(a.k, a.v, c0 + chunk_keys, std::min(kmax, c0 + 2 * chunk_keys));
    pf.pace((k_chunk ? n : (rows + 3) / 4 * ((n + 1) / 2)) + n);
    if (k_chunk) decode_chunk<KC>(a.k, c0, n, d32, s.kdec.data(), s.vfac, pf);
    for (std::size_t r0 = 0; r0 < rows; r0 += 4)
      with_rows(rows - r0, [&]<int R>() {
        const float* q = s.srow.data() + r0 * d32;
        float* st = s.st.data() + r0 * chunk_keys;
        if (k_chunk) dots_avx2<R, row_codec::f32>(kf, 0, n, q, d32, st, pf);
        else dots_avx2<R, KC>(a.k, c0, n, q, d32, st, pf);
      });
    for (std::size_t r = 0; r < rows; ++r) {
      const std::size_t vis = a.limit[r] > c0 ? std::min(n, a.limit[r] - c0) : 0;
      s.alpha[r] = softmax_row_avx2(sm, s.st.data() + r * chunk_keys, n, vis, s.m[r], s.l[r], s.part.data() + r * chunk_keys);
    }
    const float* vb = nullptr;
    std::size_t vw = 0;
    if constexpr (VC == row_codec::f32) {
      if (a.v.mx == nullptr && dv % 16 == 0) vb = reinterpret_cast<const float*>(a.v.data + c0 * a.v.row_bytes), vw = a.v.row_bytes / 4;  // NOLINT
    }
    if (vb == nullptr) {
      decode_chunk<VC>(a.v, c0, n, dv32, s.vdec.data(), s.vfac, pf);
      vb = s.vdec.data(), vw = dv32;
    }
    for (std::size_t r0 = 0; r0 < rows; r0 += 4)
      for (std::size_t g = 0; g < dv16; g += 16)
        with_rows(rows - r0, [&]<int R>() {
          pv_avx2<R>(vb, vw, n, g, s.part.data() + r0 * chunk_keys, s.acc.data() + r0 * dv16, dv16, s.alpha + r0, a.v_factor);
        });
  }
  finish_block(a, s, dv16);
}

/// Calls f.template operator()<C>() for the codec of x.
template <class F>
inline void with_codec(const kv_view& x, F&& f) {
  switch (codec_of(x)) {
    case row_codec::f32: f.template operator()<row_codec::f32>(); break;
    case row_codec::bf16: f.template operator()<row_codec::bf16>(); break;
    case row_codec::hifloat8: f.template operator()<row_codec::hifloat8>(); break;
    case row_codec::e4m3: f.template operator()<row_codec::e4m3>(); break;
    case row_codec::e5m2: f.template operator()<row_codec::e5m2>(); break;
  }
}

inline void run_block_avx2(const block_args& a) {
  with_codec(a.k, [&]<row_codec KC>() { with_codec(a.v, [&]<row_codec VC>() { run_block_avx2_as<KC, VC>(a); }); });
}

MINIFLOAT_ATTENTION_X86_DIAGNOSTICS_POP

#else

inline void run_block_avx2(const block_args& a) { run_block_scalar(a); }

#endif

}  // namespace minifloat::attention::detail::x86
