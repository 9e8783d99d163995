#pragma once
// The AVX-512 pieces both x86 block kernels share (amx.hpp: AMX-BF16 tiles for blocks of many
// query rows; avx512.hpp: fp32 FMAs for decode-sized blocks): decoding stored rows
// into bfloat16 planes, the exp and P rounding of the online softmax, and one row's softmax step
// over a chunk. kernel.hpp has the order of operations both follow.
//
// Why bfloat16 products are exact here: every 8-bit element value (HiF8, E4M3, E5M2) has at most
// 4 significant bits and lies in bfloat16's range, and an MX scale is a power of two that only
// moves the exponent, so a decoded code is a bfloat16 exactly (the preparation checks the range:
// the BF16 instructions flush subnormals). Operands that are not (fp32 values, P without a
// format) are split into three bfloat16 planes, hi + mid + lo = x exactly; a product of two split
// operands keeps the six planes pairs down to 2^-16 relative (hi*hi, hi*mid, mid*hi, mid*mid,
// hi*lo, lo*hi), the rest is below the fp32 rounding of the sum. So the products are exact (or
// within 2^-24 relative) and the error is the fp32 accumulation's (docs/attention.md#error-bound).
#include "../kernel.hpp"
#include "../../simd/x86/intrinsic_warnings.hpp"

#if MINIFLOAT_SIMD_X86
#define MINIFLOAT_ATTENTION_X86 1
#include <immintrin.h>
#else
#define MINIFLOAT_ATTENTION_X86 0
#endif

namespace minifloat::attention::detail::x86 {

#if MINIFLOAT_ATTENTION_X86

// Besides simd/x86/intrinsic_warnings.hpp's pair: without optimisation GCC's rounding
// intrinsics are macros that pass (__mmask16)-1 to a builtin taking a short, which
// -Wsign-conversion reports at every call. The x86 kernels' headers wrap their code in these two.
#if defined(__GNUC__) && !defined(__clang__)
#define MINIFLOAT_ATTENTION_X86_DIAGNOSTICS_PUSH \
  MINIFLOAT_AVX512_WARNINGS_PUSH _Pragma("GCC diagnostic ignored \"-Wsign-conversion\"")
#else
#define MINIFLOAT_ATTENTION_X86_DIAGNOSTICS_PUSH MINIFLOAT_AVX512_WARNINGS_PUSH
#endif
#define MINIFLOAT_ATTENTION_X86_DIAGNOSTICS_POP MINIFLOAT_AVX512_WARNINGS_POP
MINIFLOAT_ATTENTION_X86_DIAGNOSTICS_PUSH

// The register tiles of the kernels stay in registers only when their small loops unroll
// completely, which GCC at -O2 does not do by itself.
#if defined(__clang__)
#define MINIFLOAT_ATTENTION_UNROLL _Pragma("unroll")
#elif defined(__GNUC__)
#define MINIFLOAT_ATTENTION_UNROLL _Pragma("GCC unroll 16")
#else
#define MINIFLOAT_ATTENTION_UNROLL
#endif

/// Per-thread scratch, reused across calls (a fresh 300 KB allocation per block would be mmap'd).
struct scratch {
  std::vector<std::uint16_t> qt, kb, pa, vb;
  std::vector<std::uint32_t> qw, pw;  // bfloat16 pair words of q and P (avx512.hpp)
  std::vector<std::uint32_t> kp;      // K's pair-word panel (avx512_panels.hpp)
  std::vector<float> st, part, srow, acc, zero, kdec, vdec, vfac;
  std::vector<std::int32_t> lim;
  float m[max_block_rows], l[max_block_rows], alpha[max_block_rows];
  static scratch& local() {
    thread_local scratch s;
    return s;
  }
};

// --- bf16 helpers ----------------------------------------------------------------------------------

inline std::uint16_t bf16_rne(float x) noexcept {
  const std::uint32_t b = std::bit_cast<std::uint32_t>(x);
  return static_cast<std::uint16_t>((b + 0x7FFFU + ((b >> 16) & 1U)) >> 16);
}

/// x = hi + mid + lo (bfloat16 planes).
inline void split3(float x, std::uint16_t& hi, std::uint16_t& mid, std::uint16_t& lo) noexcept {
  hi = bf16_rne(x);
  const float r1 = x - bf16_value(hi);
  mid = bf16_rne(r1);
  lo = bf16_rne(r1 - bf16_value(mid));
}

/// The plane pairs (a, b) a product sums over (header comment).
struct term_list {
  std::uint8_t n = 0;
  std::uint8_t a[9] = {}, b[9] = {};
};
inline term_list terms(unsigned na, unsigned nb) noexcept {
  term_list t;
  auto add = [&](unsigned x, unsigned y) { t.a[t.n] = static_cast<std::uint8_t>(x), t.b[t.n] = static_cast<std::uint8_t>(y), ++t.n; };
  if (na == 3 && nb == 3) {
    add(0, 0), add(0, 1), add(1, 0), add(1, 1), add(0, 2), add(2, 0);
  } else {
    for (unsigned x = 0; x < na; ++x)
      for (unsigned y = 0; y < nb; ++y) add(x, y);
  }
  return t;
}

/// vpermb indices: the decoder's byte order (its unpacklo/hi run inside 128-bit lanes), alone
/// (K rows) and composed with the interleave of two rows into (c, t), (c, t+1) pairs (V).
struct perm_tables {
  alignas(64) std::uint8_t dec[64], pair[64];
};
inline const perm_tables& perms() {
  static const perm_tables p = [] {
    perm_tables t{};
    for (unsigned j = 0; j < 4; ++j)
      for (unsigned i = 0; i < 8; ++i) {
        t.dec[16 * j + i] = static_cast<std::uint8_t>(8 * j + i);
        t.dec[16 * j + 8 + i] = static_cast<std::uint8_t>(32 + 8 * j + i);
      }
    for (unsigned m = 0; m < 64; ++m) {
      const unsigned x = t.dec[m];  // natural position wanted at m; natural x = 2c + tok
      t.pair[m] = static_cast<std::uint8_t>((x % 2) * 32 + x / 2);
    }
    return t;
  }();
  return p;
}

// --- AVX-512 pieces --------------------------------------------------------------------------------

/// 64 codes (already permuted) -> 64 bfloat16 words in natural order (two zmm).
MINIFLOAT_TARGET_AVX512 inline void decode64(__m512i codes, __m512i thi0, __m512i thi1, __m512i tlo0, __m512i tlo1,
                                          __m512i& w0, __m512i& w1) {
  __m512i hi = _mm512_permutex2var_epi8(thi0, codes, thi1);
  const __m512i lo = _mm512_permutex2var_epi8(tlo0, codes, tlo1);
  hi = _mm512_ternarylogic_epi32(hi, codes, _mm512_set1_epi8(static_cast<char>(0x80)), 0xF8);  // hi | (codes & 0x80)
  w0 = _mm512_unpacklo_epi8(lo, hi);
  w1 = _mm512_unpackhi_epi8(lo, hi);
}

/// The bits of 16 bfloat16 values (a vector bit cast; std::bit_cast would be instantiated without
/// the AVX target).
MINIFLOAT_TARGET_AVX512 inline __m256i bf16_bits(__m256bh x) {
  __m256i r;
  std::memcpy(&r, &x, sizeof r);
  return r;
}

/// Adds delta to the exponent of every non-zero bfloat16 word (an MX power-of-two scale).
MINIFLOAT_TARGET_AVX512 inline __m512i fold_exponent(__m512i w, __m512i delta) {
  const __mmask32 nz = _mm512_test_epi16_mask(w, _mm512_set1_epi16(0x7FFF));
  return _mm512_mask_add_epi16(w, nz, w, delta);
}

/// The largest finite bfloat16 (0x7F7F).
inline constexpr float bf16_max = 3.38953138925153547590470800371487866880e+38f;

/// exp512's constants (also exp256's, x86/avx2.hpp): the range kept, ln 2 in two parts, and the
/// Taylor coefficients of e^r from r^7 down, Horner's order.
struct exp_constants {
  static constexpr float lo = -87.0f, hi = 88.0f, log2e = 1.44269504088896341f;
  static constexpr float ln2_hi = 0.693145751953125f, ln2_lo = 1.428606765330187045e-06f;
  static constexpr float poly[8] = {1.0f / 5040.0f, 1.0f / 720.0f, 1.0f / 120.0f, 1.0f / 24.0f, 1.0f / 6.0f, 0.5f, 1.0f, 1.0f};
};

/// exp(x) = p * 2^n for x in [lo, hi]: n = round(x log2 e), r = x - n ln 2 (two parts), p = e^r by
/// the Taylor polynomial (both exp forms below).
MINIFLOAT_INLINE_AVX512 __m512 exp512_poly(__m512 x, __m512& n) {
  using c = exp_constants;
  n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(c::log2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(c::ln2_hi), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(c::ln2_lo), r);
  __m512 p = _mm512_set1_ps(c::poly[0]);
  for (std::size_t i = 1; i < std::size(c::poly); ++i) p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(c::poly[i]));
  return p;
}

/// exp(x) in fp32 (|error| <= 3 ulp). Results below 2^-125 (x < -87, -inf) are 0: producing an
/// fp32 subnormal costs a microcode assist per instruction on Intel cores, and every masked lane
/// would produce one.
MINIFLOAT_INLINE_AVX512 __m512 exp512(__m512 x) {
  using c = exp_constants;
  const __mmask16 keep = _mm512_cmp_ps_mask(x, _mm512_set1_ps(c::lo), _CMP_GE_OQ);
  __m512 n;
  const __m512 p = exp512_poly(_mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(c::lo)), _mm512_set1_ps(c::hi)), n);
  return _mm512_maskz_mov_ps(keep, _mm512_scalef_ps(p, n));
}

/// maskz(visible, exp512(x)) where every visible x is at most 88 or NaN (the softmax's S - m <= 0):
/// no clamp from above, and the two masks applied by the one scalef. The same bits in those lanes.
MINIFLOAT_INLINE_AVX512 __m512 exp512_visible(__m512 x, __mmask16 visible) {
  using c = exp_constants;
  const __mmask16 keep = _mm512_mask_cmp_ps_mask(visible, x, _mm512_set1_ps(c::lo), _CMP_GE_OQ);
  __m512 n;
  const __m512 p = exp512_poly(_mm512_max_ps(x, _mm512_set1_ps(c::lo)), n);
  return _mm512_maskz_scalef_ps(keep, p, n);
}

/// The P formats with a vector rounding: decode(encode_F(x)) for finite x >= 0, F's default
/// rounding, saturating (equal to narrow<F>(x, saturating); tested against it). The `_le256`
/// kinds are the same roundings for x in [0, 256] only, in fewer instructions: the softmax's
/// P~ / p_scale, where P~ <= 1, when p_scale >= 2^-8 (p_round_for).
enum class p_round : std::uint8_t { none, hifloat8, e4m3, e5m2, bf16, f16, scalar, hifloat8_le256, e4m3_le256, e5m2_le256 };

inline p_round p_round_of(const static_format& p) noexcept {
  if (!p.format) return p_round::none;
  switch (*p.format) {
    case format_id::hifloat8: return p_round::hifloat8;
    case format_id::float8_e4m3fn: return p_round::e4m3;
    case format_id::float8_e5m2: return p_round::e5m2;
    case format_id::bfloat16: return p_round::bf16;
    case format_id::float16: return p_round::f16;
    default: return p_round::scalar;
  }
}

/// The rounding the softmax uses for P~ / p.scale (P~ in [0, 1]): the `_le256` form where
/// p.scale >= 2^-8 keeps the quotient at most 256.
inline p_round p_round_for(const static_format& p) noexcept {
  const p_round r = p_round_of(p);
  if (!(p.scale >= 0x1p-8f) || !std::isfinite(p.scale)) return r;
  switch (r) {
    case p_round::hifloat8: return p_round::hifloat8_le256;
    case p_round::e4m3: return p_round::e4m3_le256;
    case p_round::e5m2: return p_round::e5m2_le256;
    default: return r;
  }
}

/// Round to a binary grid with w mantissa bits above the exponent floor emin, RNE.
MINIFLOAT_TARGET_AVX512 inline __m512 round_grid_rne(__m512 x, int w, int emin, float max_value) {
  const __m512 e = _mm512_max_ps(_mm512_getexp_ps(x), _mm512_set1_ps(static_cast<float>(emin)));
  const __m512 q = _mm512_sub_ps(e, _mm512_set1_ps(static_cast<float>(w)));
  const __m512 y = _mm512_scalef_ps(x, _mm512_sub_ps(_mm512_setzero_ps(), q));
  const __m512 r = _mm512_roundscale_ps(y, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  return _mm512_min_ps(_mm512_scalef_ps(r, q), _mm512_set1_ps(max_value));
}

/// round_grid_rne for x in [0, 256] (no saturation): adding C = 2^(max(E, emin) + 23 - w), whose
/// fp32 ulp is x's grid step, rounds x to the grid, ties to even (C's low bits are zero, so the
/// sum's last bit is the grid multiple's parity); subtracting C is exact.
MINIFLOAT_INLINE_AVX512 __m512 round_grid_le256(__m512 x, int w, int emin) {
  const __m512i b = _mm512_max_epi32(_mm512_castps_si512(x), _mm512_set1_epi32((emin + 127) << 23));
  const __m512 c = _mm512_castsi512_ps(
      _mm512_add_epi32(_mm512_and_si512(b, _mm512_set1_epi32(0x7F800000)), _mm512_set1_epi32((23 - w) << 23)));
  return _mm512_sub_ps(_mm512_add_ps(x, c), c);
}

/// HiF8's rounding on the bits for x in [0, 256]: round_p's algorithm with the half step and the
/// mask of the kept bits looked up by the biased exponent be (vpermi2d reads its low 5 bits:
/// be = 104 .. 135 are 32 distinct entries), so no |E|, no clamp and no fix-up: be = 104
/// ([2^-23, 2^-22), ties away to 2^-22) adds a whole binade and keeps only the exponent, and
/// below 2^-23 the result is 0.
struct hif8_le256_tables {
  alignas(64) std::uint32_t half[32];
  alignas(64) std::uint32_t keep[32];
  constexpr hif8_le256_tables() : half{}, keep{} {
    for (int i = 0; i < 32; ++i) {
      const int be = i < 8 ? 128 + i : 96 + i, a = be > 127 ? be - 127 : 127 - be;
      const int w = a <= 3 ? 3 : a <= 7 ? 2 : a <= 15 ? 1 : 0;
      half[i] = be == 104 ? 1U << 23 : 1U << (22 - w);
      keep[i] = be == 104 ? 0xFF800000U : ~((1U << (23 - w)) - 1U);
    }
  }
};
inline constexpr hif8_le256_tables hif8_le256{};

MINIFLOAT_INLINE_AVX512 __m512 round_hif8_le256(__m512 x) {
  const __m512i b = _mm512_castps_si512(x), be = _mm512_srli_epi32(b, 23);
  const __m512i half = _mm512_permutex2var_epi32(_mm512_load_si512(hif8_le256.half), be, _mm512_load_si512(hif8_le256.half + 16));
  const __m512i keep = _mm512_permutex2var_epi32(_mm512_load_si512(hif8_le256.keep), be, _mm512_load_si512(hif8_le256.keep + 16));
  const __mmask16 some = _mm512_cmpge_epi32_mask(b, _mm512_set1_epi32(104 << 23));  // x >= 2^-23
  return _mm512_castsi512_ps(_mm512_maskz_and_epi32(some, _mm512_add_epi32(b, half), keep));
}

MINIFLOAT_INLINE_AVX512 __m512 round_p(__m512 x, p_round kind, const static_format& p) {
  switch (kind) {
    case p_round::none: return x;
    case p_round::hifloat8_le256: return round_hif8_le256(x);
    case p_round::e4m3_le256: return round_grid_le256(x, 3, -6);
    case p_round::e5m2_le256: return round_grid_le256(x, 2, -14);
    case p_round::e4m3: return round_grid_rne(x, 3, -6, 448.0f);
    case p_round::e5m2: return round_grid_rne(x, 2, -14, 57344.0f);
    case p_round::bf16: {
      // saturating: clamped to the largest bfloat16 first, which rounds to itself
      const __m256i h = bf16_bits(_mm512_cvtneps_pbh(_mm512_min_ps(x, _mm512_set1_ps(bf16_max))));
      return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    }
    case p_round::f16: {
      const __m256i h = _mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      return _mm512_min_ps(_mm512_cvtph_ps(h), _mm512_set1_ps(65504.0f));
    }
    case p_round::hifloat8: {
      // Tapered: 3 mantissa bits for |E| <= 3, 2 for 4..7, 1 for 8..15, 0 down to 2^-22; ties
      // away. On the bits: add half the grid step and clear the bits below it (a carry into the
      // exponent gives the next power of two, which is on the grid). Half a step per |E| from a
      // 16-entry table (2^(22 - w)); below 2^-22 the only grid points are 0 and 2^-22. Integer
      // ops only: 1.8x the speed of the getexp/scalef/roundscale form on Zen 4.
      const __m512i b = _mm512_castps_si512(_mm512_min_ps(x, _mm512_set1_ps(32768.0f)));
      const __m512i be = _mm512_srli_epi32(b, 23);
      const __m512i a = _mm512_abs_epi32(_mm512_sub_epi32(be, _mm512_set1_epi32(127)));
      const __m512i steps = _mm512_set_epi32(1 << 21, 1 << 21, 1 << 21, 1 << 21, 1 << 21, 1 << 21, 1 << 21, 1 << 21, 1 << 20, 1 << 20,
                                             1 << 20, 1 << 20, 1 << 19, 1 << 19, 1 << 19, 1 << 19);
      const __m512i half = _mm512_mask_permutexvar_epi32(_mm512_set1_epi32(1 << 22), _mm512_cmplt_epu32_mask(a, _mm512_set1_epi32(16)), a, steps);
      __m512i r = _mm512_and_si512(_mm512_add_epi32(b, half), _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_add_epi32(half, half)));
      const __mmask16 tiny = _mm512_cmplt_epu32_mask(be, _mm512_set1_epi32(127 - 22));  // below 2^-22
      const __mmask16 up = _mm512_cmpeq_epi32_mask(be, _mm512_set1_epi32(127 - 23));    // [2^-23, 2^-22): ties away up
      r = _mm512_mask_mov_epi32(r, tiny, _mm512_maskz_mov_epi32(up, _mm512_set1_epi32(0x34800000)));  // 2^-22
      return _mm512_castsi512_ps(r);
    }
    case p_round::scalar: {
      alignas(64) float t[16];
      _mm512_store_ps(t, x);
      for (float& v : t) v = round_to_format(v, *p.format);
      return _mm512_load_ps(t);
    }
  }
  return x;
}

/// x (16 lanes) -> bfloat16 planes at out[plane * plane_stride], 16 words each.
MINIFLOAT_TARGET_AVX512 inline void store_planes16(__m512 x, unsigned planes, std::uint16_t* out, std::size_t plane_stride) {
  const __m256i hi = bf16_bits(_mm512_cvtneps_pbh(x));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), hi);
  if (planes == 1) return;
  const __m512 hf = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(hi), 16));
  const __m512 r1 = _mm512_sub_ps(x, hf);
  const __m256i mid = bf16_bits(_mm512_cvtneps_pbh(r1));
  const __m512 mf = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(mid), 16));
  const __m256i lo = bf16_bits(_mm512_cvtneps_pbh(_mm512_sub_ps(r1, mf)));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + plane_stride), mid);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 2 * plane_stride), lo);
}

/// Array forms of round_p and exp512 for tests (n a multiple of 16).
MINIFLOAT_TARGET_AVX512 inline void round_p_array(const float* x, float* out, std::size_t n, const static_format& p, p_round kind) {
  for (std::size_t i = 0; i < n; i += 16) _mm512_storeu_ps(out + i, round_p(_mm512_loadu_ps(x + i), kind, p));
}
MINIFLOAT_TARGET_AVX512 inline void round_p_array(const float* x, float* out, std::size_t n, const static_format& p) {
  round_p_array(x, out, n, p, p_round_of(p));
}
MINIFLOAT_TARGET_AVX512 inline void exp_array(const float* x, float* out, std::size_t n) {
  for (std::size_t i = 0; i < n; i += 16) _mm512_storeu_ps(out + i, exp512(_mm512_loadu_ps(x + i)));
}
/// exp512_visible on x with lane i of each 16 visible where bit i of `visible` is set.
MINIFLOAT_TARGET_AVX512 inline void exp_visible_array(const float* x, float* out, std::size_t n, std::uint16_t visible) {
  for (std::size_t i = 0; i < n; i += 16) _mm512_storeu_ps(out + i, exp512_visible(_mm512_loadu_ps(x + i), visible));
}

// --- operand decoding ------------------------------------------------------------------------------

/// The bf16 byte tables of an 8-bit format (simd/decode_tables.hpp: 128 magnitudes, 64-byte
/// aligned), in registers.
struct code_tables {
  __m512i hi0, hi1, lo0, lo1;
};
MINIFLOAT_INLINE_AVX512 code_tables load_tables(const kv_view& x) {
  const auto& tb = *simd::detail::bf16_bytes_of(x.format);
  return {_mm512_load_si512(tb.hi.data()), _mm512_load_si512(tb.hi.data() + 64), _mm512_load_si512(tb.lo.data()),
          _mm512_load_si512(tb.lo.data() + 64)};
}

/// Prefetches the next chunk's K and V rows into L2 a few lines at a time, spread over the
/// current chunk's work. The hardware streamer alone falls behind: the decoders read a chunk in
/// a burst faster than one core's DRAM bandwidth, then the tiles compute on it, so the loads of
/// the burst stalled on DRAM (about half of the decoders' time). A whole-chunk burst of
/// software prefetches stalls the same way on the line-fill buffers.
class line_prefetcher {
 public:
  /// The rows [r0, r1) of k and of v (clipped to the rows that exist) become the lines to fetch.
  void reset(const kv_view& k, const kv_view& v, std::size_t r0, std::size_t r1) {
    n_ = 0, at_ = 0;
    add(k, r0, r1), add(v, r0, r1);
    cur_ = n_ > 0 ? range_[0].begin : 0;
  }
  /// Spreads the lines still to fetch over `calls` calls of step() without an argument.
  void pace(std::size_t calls) noexcept {
    std::size_t left = 0;
    for (std::size_t i = at_; i < n_; ++i) left += (range_[i].end - (i == at_ ? cur_ : range_[i].begin) + 63) / 64;
    rate_ = static_cast<unsigned>(std::min<std::size_t>(64, calls == 0 ? left : (left + calls - 1) / calls));
  }
  void step() { step(rate_); }
  void step(unsigned lines) {
    for (; lines > 0 && at_ < n_; --lines) {
      _mm_prefetch(reinterpret_cast<const char*>(cur_), _MM_HINT_T1);  // NOLINT: an address, never dereferenced
      cur_ += 64;
      if (cur_ >= range_[at_].end && ++at_ < n_) cur_ = range_[at_].begin;
    }
  }

 private:
  struct range {
    std::uintptr_t begin = 0, end = 0;
  };
  void add(const kv_view& x, std::size_t r0, std::size_t r1) {
    r1 = std::min(r1, x.rows);
    if (x.data == nullptr || r0 >= r1 || x.cols == 0) return;
    const auto base = reinterpret_cast<std::uintptr_t>(x.data);  // NOLINT: addresses only
    // a decode layout's keys [r0, r1) (r0 a multiple of its tile) are one stretch, padding included
    const std::uintptr_t end = x.order == kv_order::rows ? base + (r1 - 1) * x.row_bytes + x.cols * x.element_bytes()
                                                         : base + tiles::stored_keys(x.order, r1) * x.row_bytes;
    range_[n_++] = {(base + r0 * x.row_bytes) & ~std::uintptr_t{63}, end};
  }
  range range_[2];
  std::size_t n_ = 0, at_ = 0;
  std::uintptr_t cur_ = 0;
  unsigned rate_ = 0;
};

inline unsigned planes_of(element_kind k) noexcept { return k == element_kind::f32 ? 3U : 1U; }

/// Decodes `n` rows starting at r0 of a row-major operand into bfloat16 planes of `width`
/// (a multiple of 32) words per row; rows n .. rows_out - 1 are zero.
MINIFLOAT_TARGET_AVX512 inline void decode_rows(const kv_view& x, std::size_t r0, std::size_t n, std::size_t rows_out,
                                             std::size_t width, std::uint16_t* out, std::size_t plane_stride,
                                             line_prefetcher& pf) {
  const std::size_t cols = x.cols;
  const unsigned planes = planes_of(x.kind);
  for (std::size_t r = 0; r < rows_out; ++r) {
    pf.step(1);
    std::uint16_t* o = out + r * width;
    if (r >= n) {
      for (unsigned pl = 0; pl < planes; ++pl) std::memset(o + pl * plane_stride, 0, width * 2);
      continue;
    }
    const std::uint8_t* row = x.data + (r0 + r) * x.row_bytes;
    if (x.kind == element_kind::code8) {
      const code_tables t = load_tables(x);
      const __m512i perm = _mm512_load_si512(perms().dec);
      for (std::size_t c = 0; c < width; c += 64) {
        const std::size_t left = c < cols ? std::min<std::size_t>(64, cols - c) : 0;
        const __mmask64 mk = left == 64 ? ~__mmask64{0} : ((__mmask64{1} << left) - 1);
        const __m512i codes = _mm512_permutexvar_epi8(perm, _mm512_maskz_loadu_epi8(mk, row + c));
        __m512i w0, w1;
        decode64(codes, t.hi0, t.hi1, t.lo0, t.lo1, w0, w1);
        if (x.mx != nullptr) {
          const std::uint8_t* sc = x.mx + (r0 + r) * x.mx_stride;
          w0 = fold_exponent(w0, _mm512_set1_epi16(static_cast<short>((static_cast<int>(sc[c / 32]) - 127) * 128)));
          if (c + 32 < cols)
            w1 = fold_exponent(w1, _mm512_set1_epi16(static_cast<short>((static_cast<int>(sc[c / 32 + 1]) - 127) * 128)));
        }
        _mm512_storeu_si512(o + c, w0);
        if (c + 32 < width) _mm512_storeu_si512(o + c + 32, w1);
      }
    } else if (x.kind == element_kind::bf16) {
      for (std::size_t c = 0; c < width; c += 32) {
        const std::size_t left = c < cols ? std::min<std::size_t>(32, cols - c) : 0;
        const __mmask32 mk = left == 32 ? ~__mmask32{0} : ((__mmask32{1} << left) - 1);
        _mm512_storeu_si512(o + c, _mm512_maskz_loadu_epi16(mk, row + 2 * c));
      }
    } else {
      for (std::size_t c = 0; c < width; c += 16) {
        const std::size_t left = c < cols ? std::min<std::size_t>(16, cols - c) : 0;
        const __mmask16 mk = left == 16 ? __mmask16{0xFFFF} : static_cast<__mmask16>((1U << left) - 1);
        store_planes16(_mm512_maskz_loadu_ps(mk, row + 4 * c), 3, o + c, plane_stride);
      }
    }
  }
}

/// Decodes rows r0 .. r0 + n - 1 of V into the pair layout [pair][width][2] (pairs of rows
/// interleaved per column), `pairs_out` pairs, zero beyond n. Word 2c + 0 of pair p is row 2p's
/// column c and word 2c + 1 row 2p + 1's, so a 32-bit pair holds row 2p in its low half; with
/// `first_high` the rows swap places (row 2p in the high half: vdpbf16ps then takes it first).
MINIFLOAT_TARGET_AVX512 inline void decode_pairs(const kv_view& x, std::size_t r0, std::size_t n, std::size_t pairs_out,
                                              std::size_t width, std::uint16_t* out, std::size_t plane_stride,
                                              line_prefetcher& pf, bool first_high = false) {
  const std::size_t cols = x.cols;
  const unsigned planes = planes_of(x.kind);
  const __m512i zero = _mm512_setzero_si512();
  for (std::size_t p = 0; p < pairs_out; ++p) {
    pf.step(2);
    std::uint16_t* o = out + p * width * 2;
    const std::size_t t0 = 2 * p, t1 = 2 * p + 1;
    if (t0 >= n) {
      for (unsigned pl = 0; pl < planes; ++pl) std::memset(o + pl * plane_stride, 0, width * 4);
      continue;
    }
    // row0 fills the low words, row1 the high ones; a missing row (t1 >= n) reads as zero
    const std::uint8_t* first = x.data + (r0 + t0) * x.row_bytes;
    const std::uint8_t* second = t1 < n ? x.data + (r0 + t1) * x.row_bytes : nullptr;
    const std::uint8_t* row0 = first_high ? second : first;
    const std::uint8_t* row1 = first_high ? first : second;
    if (x.kind == element_kind::code8) {
      const code_tables t = load_tables(x);
      const __m512i perm = _mm512_load_si512(perms().pair);
      for (std::size_t c = 0; c < width; c += 32) {
        const std::size_t left = c < cols ? std::min<std::size_t>(32, cols - c) : 0;
        const __mmask32 mk = left == 32 ? ~__mmask32{0} : ((__mmask32{1} << left) - 1);
        const __m256i a = row0 != nullptr ? _mm256_maskz_loadu_epi8(mk, row0 + c) : _mm256_setzero_si256();
        const __m256i b = row1 != nullptr ? _mm256_maskz_loadu_epi8(mk, row1 + c) : _mm256_setzero_si256();
        const __m512i both = _mm512_inserti64x4(_mm512_castsi256_si512(a), b, 1);
        __m512i w0, w1;
        decode64(_mm512_permutexvar_epi8(perm, both), t.hi0, t.hi1, t.lo0, t.lo1, w0, w1);
        if (x.mx != nullptr) {
          // scales along T: one per (32-row block, column); both rows of a pair share the block
          const std::uint8_t* sc = x.mx + ((r0 + t0) / 32) * x.mx_stride + c;
          const __m512i bias = _mm512_set1_epi32(127);
          const __mmask16 m0 = static_cast<__mmask16>(left >= 16 ? 0xFFFF : (1U << left) - 1);
          const __mmask16 m1 = static_cast<__mmask16>(left <= 16 ? 0 : left >= 32 ? 0xFFFF : (1U << (left - 16)) - 1);
          __m512i d0 = _mm512_slli_epi32(_mm512_sub_epi32(_mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(m0, sc)), bias), 7);
          __m512i d1 = _mm512_slli_epi32(_mm512_sub_epi32(_mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(m1, sc + 16)), bias), 7);
          d0 = _mm512_or_si512(_mm512_and_si512(d0, _mm512_set1_epi32(0xFFFF)), _mm512_slli_epi32(d0, 16));
          d1 = _mm512_or_si512(_mm512_and_si512(d1, _mm512_set1_epi32(0xFFFF)), _mm512_slli_epi32(d1, 16));
          w0 = fold_exponent(w0, d0);
          w1 = fold_exponent(w1, d1);
        }
        _mm512_storeu_si512(o + 2 * c, w0);
        _mm512_storeu_si512(o + 2 * c + 32, w1);
      }
    } else if (x.kind == element_kind::bf16) {
      const __m512i i0 = _mm512_set_epi16(47, 15, 46, 14, 45, 13, 44, 12, 43, 11, 42, 10, 41, 9, 40, 8, 39, 7, 38, 6, 37, 5, 36, 4,
                                          35, 3, 34, 2, 33, 1, 32, 0);
      const __m512i i1 = _mm512_add_epi16(i0, _mm512_set1_epi16(16));
      for (std::size_t c = 0; c < width; c += 32) {
        const std::size_t left = c < cols ? std::min<std::size_t>(32, cols - c) : 0;
        const __mmask32 mk = left == 32 ? ~__mmask32{0} : ((__mmask32{1} << left) - 1);
        const __m512i a = row0 != nullptr ? _mm512_maskz_loadu_epi16(mk, row0 + 2 * c) : zero;
        const __m512i b = row1 != nullptr ? _mm512_maskz_loadu_epi16(mk, row1 + 2 * c) : zero;
        _mm512_storeu_si512(o + 2 * c, _mm512_permutex2var_epi16(a, i0, b));
        _mm512_storeu_si512(o + 2 * c + 32, _mm512_permutex2var_epi16(a, i1, b));
      }
    } else {
      const __m512i ix = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6, 21, 5, 20, 4,
                                          19, 3, 18, 2, 17, 1, 16, 0);
      alignas(64) std::uint16_t ta[3][16], tb2[3][16];
      for (std::size_t c = 0; c < width; c += 16) {
        const std::size_t left = c < cols ? std::min<std::size_t>(16, cols - c) : 0;
        const __mmask16 mk = left == 16 ? __mmask16{0xFFFF} : static_cast<__mmask16>((1U << left) - 1);
        store_planes16(row0 != nullptr ? _mm512_maskz_loadu_ps(mk, row0 + 4 * c) : _mm512_setzero_ps(), 3, ta[0], 16);
        store_planes16(row1 != nullptr ? _mm512_maskz_loadu_ps(mk, row1 + 4 * c) : _mm512_setzero_ps(), 3, tb2[0], 16);
        for (unsigned pl = 0; pl < 3; ++pl) {
          const __m512i both = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_load_si256(reinterpret_cast<const __m256i*>(ta[pl]))),
                                                  _mm256_load_si256(reinterpret_cast<const __m256i*>(tb2[pl])), 1);
          _mm512_storeu_si512(o + pl * plane_stride + 2 * c, _mm512_permutexvar_epi16(ix, both));
        }
      }
    }
  }
}

/// In-place transpose of a 16x16 matrix of 32-bit lanes.
MINIFLOAT_INLINE_AVX512 void transpose16(__m512i r[16]) {
  __m512i t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
    r[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
    r[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
    r[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
  }
  for (int i = 0; i < 4; ++i) {
    t[i] = _mm512_shuffle_i32x4(r[i], r[i + 4], 0x88);
    t[i + 4] = _mm512_shuffle_i32x4(r[i], r[i + 4], 0xDD);
    t[i + 8] = _mm512_shuffle_i32x4(r[i + 8], r[i + 12], 0x88);
    t[i + 12] = _mm512_shuffle_i32x4(r[i + 8], r[i + 12], 0xDD);
  }
  for (int i = 0; i < 4; ++i) {
    r[i] = _mm512_shuffle_i32x4(t[i], t[i + 8], 0x88);
    r[i + 8] = _mm512_shuffle_i32x4(t[i], t[i + 8], 0xDD);
    r[i + 4] = _mm512_shuffle_i32x4(t[i + 4], t[i + 12], 0x88);
    r[i + 12] = _mm512_shuffle_i32x4(t[i + 4], t[i + 12], 0xDD);
  }
}

/// acc = acc * alpha + v_factor * part, row by row (rows x width floats each).
MINIFLOAT_TARGET_AVX512 inline void update_acc(float* acc, const float* part, const float* alpha, std::size_t rows, std::size_t width,
                                            float v_factor) {
  const __m512 vf = _mm512_set1_ps(v_factor);
  for (std::size_t r = 0; r < rows; ++r) {
    const __m512 al = _mm512_set1_ps(alpha[r]);
    float* ar = acc + r * width;
    const float* pr = part + r * width;
    for (std::size_t c = 0; c < width; c += 16)
      _mm512_storeu_ps(ar + c, _mm512_fmadd_ps(_mm512_loadu_ps(pr + c), vf, _mm512_mul_ps(_mm512_loadu_ps(ar + c), al)));
  }
}


/// Calls f.template operator()<N>() for N = min(n, Max) (n >= 1): the row and vector counts of
/// the kernels' register tiles, as constants.
template <int Max, class F>
inline void with_count(std::size_t n, F&& f) {
  if constexpr (Max <= 1) {
    f.template operator()<1>();
  } else {
    if (n >= static_cast<std::size_t>(Max)) f.template operator()<Max>();
    else with_count<Max - 1>(n, f);
  }
}

/// with_count<4>: the row counts of the FMA kernels' tiles.
template <class F>
inline void with_rows(std::size_t rows, F&& f) {
  with_count<4>(rows, f);
}

/// Sets up the scratch of a vector kernel's block with one accumulator row of `width` floats per
/// query row: S and P^ rows of a chunk, zero accumulators, running max -inf and sum 0; returns
/// the keys the block reads (the most any row sees).
inline std::size_t start_block(scratch& s, const block_args& a, std::size_t width) {
  s.part.resize(a.rows * chunk_keys);
  s.st.resize(a.rows * chunk_keys);
  s.acc.assign(a.rows * width, 0.0f);
  std::size_t kmax = 0;
  for (std::size_t r = 0; r < a.rows; ++r) {
    kmax = std::max(kmax, a.limit[r]);
    s.m[r] = -std::numeric_limits<float>::infinity(), s.l[r] = 0.0f;
  }
  return kmax;
}

/// A block's outputs from its accumulator rows (natural order, `width` floats each): out = acc / l
/// (0 where nothing was visible), and each row's m and l.
inline void finish_block(const block_args& a, const scratch& s, std::size_t width) {
  for (std::size_t r = 0; r < a.rows; ++r) {
    float* o = a.out + r * a.out_stride;
    const float* acc = s.acc.data() + r * width;
    const float l = s.l[r];
    for (std::size_t c = 0; c < a.v.cols; ++c) o[c] = l > 0.0f ? acc[c] / l : 0.0f;
    a.m[r] = s.m[r], a.l[r] = l;
  }
}

// --- the online softmax ----------------------------------------------------------------------------

/// A block's softmax constants (kernel.hpp: S = s_factor * q.k, P^ = round_F(P~ / p_scale)).
struct softmax_step {
  float s_factor = 1.0f, p_scale = 1.0f, p_inv = 1.0f;
  bool p_pow2 = false;  ///< x / p_scale is x * (1 / p_scale) exactly (a power of two, 1 by default)
  static_format p;
  p_round pr = p_round::none;
  explicit softmax_step(const block_args& a) : s_factor(a.s_factor), p_scale(a.p.scale), p(a.p), pr(p_round_for(a.p)) {
    int e = 0;
    p_pow2 = std::isfinite(p_scale) && std::frexp(p_scale, &e) == 0.5f && e > -125 && e < 127;
    p_inv = p_pow2 ? 1.0f / p_scale : 1.0f;
  }
  /// bfloat16 planes P^ needs (P without a format and fp16 P are not bfloat16 values).
  [[nodiscard]] unsigned p_planes() const noexcept { return (pr == p_round::none || pr == p_round::f16) ? 3U : 1U; }
};

/// Calls f.template operator()<PR>() with the block's P rounding as a constant.
template <class F>
inline void with_p_round(p_round pr, F&& f) {
  switch (pr) {
    case p_round::none: f.template operator()<p_round::none>(); break;
    case p_round::hifloat8: f.template operator()<p_round::hifloat8>(); break;
    case p_round::e4m3: f.template operator()<p_round::e4m3>(); break;
    case p_round::e5m2: f.template operator()<p_round::e5m2>(); break;
    case p_round::bf16: f.template operator()<p_round::bf16>(); break;
    case p_round::f16: f.template operator()<p_round::f16>(); break;
    case p_round::scalar: f.template operator()<p_round::scalar>(); break;
    case p_round::hifloat8_le256: f.template operator()<p_round::hifloat8_le256>(); break;
    case p_round::e4m3_le256: f.template operator()<p_round::e4m3_le256>(); break;
    case p_round::e5m2_le256: f.template operator()<p_round::e5m2_le256>(); break;
  }
}

/// The softmax step of R query rows over one chunk of at most 64 keys (kernel.hpp's order).
/// dots: each row's raw dot products q . k_j (row stride chunk_keys, the first 16 nkt written);
/// position i of each 16-key group holds the group's key i (Swapped: i ^ 1, the lanes of the key
/// tiles, kv_tiles.hpp); row r sees its first vis[r]
/// keys; m, l are the rows' running max and sum. Leaves P^ in p (same positions, 0 where not
/// visible) and alpha = exp(m_old - m_new) per row (1 where nothing is visible). All rows in one
/// step so that their 4 R vectors of exp and P rounding overlap: row by row, the step's latency
/// chain (max, exp, rounding) left the vector units idle.
template <int R, p_round PR, bool Swapped>
MINIFLOAT_TARGET_AVX512 inline void softmax_rows(const softmax_step& k, const float* dots, std::size_t nkt, const std::size_t* vis, float* m,
                                              float* l, float* alpha, __m512 (&p)[R][4]) {
  const __m512i lane_key = Swapped ? _mm512_set_epi32(14, 15, 12, 13, 10, 11, 8, 9, 6, 7, 4, 5, 2, 3, 0, 1)
                                   : _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  const __m512 sf = _mm512_set1_ps(k.s_factor), pinv = _mm512_set1_ps(k.p_inv), ps = _mm512_set1_ps(k.p_scale);
  __mmask16 mk[R][4];
  float mn[R];
  MINIFLOAT_ATTENTION_UNROLL
  for (int rr = 0; rr < R; ++rr) {
    __m512 mc = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
    MINIFLOAT_ATTENTION_UNROLL
    for (int j4 = 0; j4 < 4; ++j4) {
      mk[rr][j4] = _mm512_cmpgt_epi32_mask(_mm512_set1_epi32(static_cast<int>(vis[rr])), _mm512_add_epi32(lane_key, _mm512_set1_epi32(16 * j4)));
      p[rr][j4] = static_cast<std::size_t>(j4) < nkt
                      ? _mm512_maskz_mul_ps(mk[rr][j4], _mm512_loadu_ps(dots + static_cast<std::size_t>(rr) * chunk_keys + 16 * static_cast<std::size_t>(j4)), sf)
                      : _mm512_setzero_ps();
      mc = _mm512_mask_max_ps(mc, mk[rr][j4], mc, p[rr][j4]);
    }
    mn[rr] = vis[rr] == 0 ? m[rr] : std::max(m[rr], _mm512_reduce_max_ps(mc));
    alpha[rr] = vis[rr] == 0 ? 1.0f : m[rr] == -std::numeric_limits<float>::infinity() ? 0.0f : std::exp(m[rr] - mn[rr]);
  }
  MINIFLOAT_ATTENTION_UNROLL
  for (int rr = 0; rr < R; ++rr) {
    __m512 lsum = _mm512_setzero_ps();
    const __m512 mnv = _mm512_set1_ps(vis[rr] == 0 ? 0.0f : mn[rr]);
    MINIFLOAT_ATTENTION_UNROLL
    for (int j4 = 0; j4 < 4; ++j4) {
      __m512 e = exp512_visible(_mm512_sub_ps(p[rr][j4], mnv), mk[rr][j4]);
      lsum = _mm512_add_ps(lsum, e);
      if constexpr (PR != p_round::none) e = round_p(k.p_pow2 ? _mm512_mul_ps(e, pinv) : _mm512_div_ps(e, ps), PR, k.p);
      p[rr][j4] = e;
    }
    if (vis[rr] == 0) continue;
    l[rr] = l[rr] * alpha[rr] + _mm512_reduce_add_ps(lsum);
    m[rr] = mn[rr];
  }
}

/// One query row's step over a chunk of at most 64 keys (softmax_rows, keys in natural order):
/// dots[0 .. 16 * nkt) are its raw dot products q . k_j, the first `vis` visible; m and l are the
/// row's running max and sum. Writes P^ for the chunk's 64 keys (0 beyond vis) as `npp` bfloat16
/// planes at pa (plane stride pa_plane), or as fp32 at pf when pa is null; returns alpha.
MINIFLOAT_TARGET_AVX512 inline float softmax_row(const softmax_step& k, const float* dots, std::size_t nkt, std::size_t vis, float& m,
                                              float& l, std::uint16_t* pa, unsigned npp, std::size_t pa_plane, float* pf) {
  float alpha = 1.0f;
  __m512 p[1][4];
  with_p_round(k.pr, [&]<p_round PR>() { softmax_rows<1, PR, false>(k, dots, nkt, &vis, &m, &l, &alpha, p); });
  for (std::size_t j4 = 0; j4 < 4; ++j4) {
    if (pa != nullptr) store_planes16(p[0][j4], npp, pa + 16 * j4, pa_plane);
    else if (pf != nullptr) _mm512_storeu_ps(pf + 16 * j4, p[0][j4]);  // (the AMX kernel passes pa only)
  }
  return alpha;
}

MINIFLOAT_ATTENTION_X86_DIAGNOSTICS_POP

#endif  // MINIFLOAT_ATTENTION_X86

}  // namespace minifloat::attention::detail::x86
