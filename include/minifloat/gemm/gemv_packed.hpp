#pragma once
// gemm() on packed_weights (packed_weights.hpp): the weight-streaming GEMV for the decode phase
// of inference. out (M x N) = A (M x K) * B [+ bias], in the fp32_blocks order of reference.hpp,
// bit-identical to gemm() / gemm_reference(fp32_blocks) on the tensor B was packed from, for
// every M, thread count and ISA.
//
// Per panel of 64 outputs (threads take whole panels), per A row: one fma chain per output over
// k ascending (8 outputs per vector, 8 vectors per panel), per K-block p = sum a*b, then
// acc = fma(p, sA * sB, acc); one K-block: raw sum, then the epilogue fma(sum, sA * sB, bias).
// M = 1 decodes each k's 64 codes into registers and feeds them to the 8 chains at once; M > 1
// decodes 32 k at a time into an L1 buffer (8 KiB) that every A row then reuses.
//
// AVX2 decoders (products a*b are exact in fp32, so only the sums round, as in the reference):
//   float8_e4m3fn  per 16-bit lane, an arithmetic shift right by 4 and a mask turn the code in
//                  the high byte into the bfloat16 of 2^-120 x (sign in place, exponent and
//                  mantissa bits under bfloat16's; subnormal codes become subnormal floats);
//                  the code in the low byte is shifted up first; the lane's two values become
//                  floats by a shift and a mask. 9 operations per 32 codes, no shuffle.
//   float8_e5m2    the same, shift 3: the bfloat16 of 2^-112 x.
//                  A comes in multiplied by 2^64, and each block sum p' is multiplied back by
//                  2^56 (E4M3) or 2^48 (E5M2): with every product >= 2^-87 and every sum far
//                  below 2^128, power-of-two scaling commutes with rounding, so p is unchanged.
//                  Subnormal B operands need MXCSR.DAZ clear: the kernel clears it for its
//                  own duration (and restores the caller's MXCSR); FTZ never matters.
//   float4_e2m1fn  two 16-entry vpshufb tables: the high and low byte of the bfloat16 of x.
//   hifloat8       stored as sign | magnitude rank (packed_weights.hpp): bfloat16 = base[run] +
//                  (rank % 8) * step[run], two vpshufb for base, one for step, vpmullw.
//   float6         the 128-entry lut128 (simd/decode_tables.hpp) to the two bfloat16 bytes.
// bfloat16 -> float32 is a shift or a mask of each 32-bit lane (two values per lane), which is
// why packing places rows in the byte order packed_weights::byte_of documents. NaN and Inf
// codes (packed_special) are not decoded by SIMD: panels holding one run the scalar twin.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "entry_points.hpp"
#include "blocked.hpp"
#include "grouped.hpp"
#include "packed_weights.hpp"

namespace minifloat {

namespace detail::gemm {

/// What one panel run reads: A (decoded; x 2^8 for E4M3 B on the AVX2 path), its block
/// scales, and where C lives. c is pre-set to bias in K-block mode.
struct packed_job {
  const packed_weights* w = nullptr;
  const float* a = nullptr;   // m_rows x K, row-major
  std::size_t m_rows = 0;
  std::size_t l = 0;          // K-block length; 0: one block (raw sums, epilogue later)
  const float* sa = nullptr;  // m_rows x nblocks (K-block mode)
  std::size_t nblocks = 0;
  float* c = nullptr;         // M x N, row stride ldc
  std::size_t ldc = 0;
};

/// Scalar twin: the fp32_blocks chain for each output of panel q, read through packed_weights::code.
inline void packed_panel_scalar(const packed_job& j, std::size_t q) {
  const packed_weights& w = *j.w;
  const auto& table = decode_table_of(w.format());
  const std::size_t k_all = w.k(), n0 = q * packed_weights::panel_rows;
  const std::size_t rows = std::min(packed_weights::panel_rows, w.n() - n0);
  const std::size_t l = j.l == 0 ? std::max<std::size_t>(k_all, 1) : j.l;
  for (std::size_t r = 0; r < rows; ++r) {
    const std::size_t n = n0 + r;
    for (std::size_t m = 0; m < j.m_rows; ++m) {
      const float* am = j.a + m * k_all;
      float acc = j.l == 0 ? 0.0f : j.c[m * j.ldc + n];
      for (std::size_t k0 = 0, blk = 0; k0 < k_all; k0 += l, ++blk) {
        const std::size_t k1 = std::min(k_all, k0 + l);
        float part = 0.0f;
        for (std::size_t k = k0; k < k1; ++k) part = std::fma(am[k], table[w.code(n, k)], part);
        if (j.l == 0) acc = part;
        else acc = std::fma(part, j.sa[m * j.nblocks + blk] * w.scale(n, k0), acc);
      }
      j.c[m * j.ldc + n] = acc;
    }
  }
}

/// a_unit / p_unit of a decoder: A is multiplied by a_unit, each block sum by p_unit (exact).
constexpr float packed_a_unit(packed_decoder d) noexcept {
  return d == packed_decoder::shift_e4m3 || d == packed_decoder::shift_e5m2 ? 0x1p64f : 1.0f;
}
constexpr float packed_p_unit(packed_decoder d) noexcept {
  return d == packed_decoder::shift_e4m3 ? 0x1p56f : d == packed_decoder::shift_e5m2 ? 0x1p48f : 1.0f;
}

/// hifloat8 by magnitude rank: the high ([0, 128)) and low ([128, 256)) byte of each rank's
/// bfloat16 (rank 0, zero, is 0).
inline constexpr std::array<std::uint8_t, 256> hif8_rank_bf16_bytes = [] {
  std::array<std::uint8_t, 256> t{};
  constexpr hif8_ranks r = make_hif8_ranks();
  const auto& values = simd::detail::decode_values<hifloat8_spec>;
  for (unsigned k = 0; k < 128; ++k) {
    const std::uint32_t b = k == 0 ? 0U : std::bit_cast<std::uint32_t>(values[r.code_of[k]]);
    t[k] = static_cast<std::uint8_t>(b >> 24), t[128 + k] = static_cast<std::uint8_t>(b >> 16);
  }
  return t;
}();

#if MINIFLOAT_SIMD_X86

/// Decoder constants kept in registers (or L1) for a whole run.
struct packed_tables {
  lut_regs lut;
  bool sign7 = false;
  __m256i th, tl;   // float4: high / low bfloat16 byte of each of the 16 codes; hifloat8: base
  __m256i step;     // hifloat8: step of each run (<= 128, one byte)
};

MINIFLOAT_TARGET_AVX2 inline void load_packed_tables(const packed_weights& w, packed_tables& t) noexcept {
  alignas(16) std::uint8_t hi[16] = {}, lo[16] = {}, st[16] = {};
  if (w.decoder() == packed_decoder::bf16_lut) {
    const lut128& l = lut128_of(w.format());
    load_lut(l, t.lut);
    t.sign7 = l.sign7;
  } else if (w.decoder() == packed_decoder::bf16_nibble) {
    const auto& b = simd::detail::bf16_bytes<float4_e2m1fn::spec, 16>;
    for (unsigned c = 0; c < 16; ++c) hi[c] = b.hi[c], lo[c] = b.lo[c];
  } else if (w.decoder() == packed_decoder::rank_hif8) {
    const hif8_ranks& r = hif8_rank_table();
    for (unsigned g = 0; g < 16; ++g)
      hi[g] = static_cast<std::uint8_t>(r.base[g] >> 8), lo[g] = static_cast<std::uint8_t>(r.base[g]),
      st[g] = static_cast<std::uint8_t>(r.step[g]);
  }
  t.th = _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(hi)));
  t.tl = _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(lo)));
  t.step = _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(st)));
}

/// 16 bfloat16 words per vector (two per 32-bit lane) -> floats: low words, high words.
MINIFLOAT_TARGET_AVX2 inline __m256 bf16_low_words(__m256i w) noexcept {
  return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}
MINIFLOAT_TARGET_AVX2 inline __m256 bf16_high_words(__m256i w) noexcept {
  return _mm256_castsi256_ps(_mm256_and_si256(w, _mm256_set1_epi32(static_cast<int>(0xFFFF0000U))));
}

/// bfloat16 bytes (lo, hi; 32 values) -> 4 x 8 floats (packed_weights::byte_of order).
MINIFLOAT_TARGET_AVX2 inline void widen_bf16(__m256i lo, __m256i hi, __m256* f) noexcept {
  const __m256i w0 = _mm256_unpacklo_epi8(lo, hi), w1 = _mm256_unpackhi_epi8(lo, hi);
  f[0] = bf16_low_words(w0), f[1] = bf16_high_words(w0);
  f[2] = bf16_low_words(w1), f[3] = bf16_high_words(w1);
}

/// Rows 32 part .. 32 part + 31 of one packed k-slice -> 4 x 8 floats (rows in order).
template <packed_decoder D>
MINIFLOAT_TARGET_AVX2 inline void packed_decode_part(const std::uint8_t* s, int part, const packed_tables& t,
                                                          __m256* f) noexcept {
  if constexpr (D == packed_decoder::shift_e4m3 || D == packed_decoder::shift_e5m2) {
    constexpr int sh = D == packed_decoder::shift_e4m3 ? 4 : 3;
    const __m256i mask = _mm256_set1_epi16(static_cast<short>(D == packed_decoder::shift_e4m3 ? 0x87F0 : 0x8FE0));
    const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + 32 * part));
    const __m256i odd = _mm256_and_si256(_mm256_srai_epi16(x, sh), mask);                           // bytes 1, 3
    const __m256i even = _mm256_and_si256(_mm256_srai_epi16(_mm256_slli_epi16(x, 8), sh), mask);  // bytes 0, 2
    f[0] = bf16_low_words(even), f[1] = bf16_low_words(odd);
    f[2] = bf16_high_words(even), f[3] = bf16_high_words(odd);
  } else if constexpr (D == packed_decoder::bf16_nibble) {
    const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s));
    const __m256i n = _mm256_and_si256(part == 0 ? x : _mm256_srli_epi16(x, 4), _mm256_set1_epi8(0x0F));
    widen_bf16(_mm256_shuffle_epi8(t.tl, n), _mm256_shuffle_epi8(t.th, n), f);
  } else if constexpr (D == packed_decoder::rank_hif8) {
    const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + 32 * part));
    const __m256i mag = _mm256_and_si256(x, _mm256_set1_epi8(0x7F));
    // run = rank / 8; rank 0 (zero) gets index bit 7, so every lookup returns 0 for it
    const __m256i run = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(x, 3), _mm256_set1_epi8(0x0F)),
                                        _mm256_cmpeq_epi8(mag, _mm256_setzero_si256()));
    const __m256i base_lo = _mm256_shuffle_epi8(t.tl, run);
    const __m256i base_hi = _mm256_or_si256(_mm256_shuffle_epi8(t.th, run),
                                            _mm256_and_si256(x, _mm256_set1_epi8(static_cast<char>(0x80))));
    const __m256i step = _mm256_shuffle_epi8(t.step, run), lo3 = _mm256_and_si256(x, _mm256_set1_epi8(7));
    const __m256i z = _mm256_setzero_si256();
    const __m256i w0 = _mm256_add_epi16(_mm256_unpacklo_epi8(base_lo, base_hi),
                                        _mm256_mullo_epi16(_mm256_unpacklo_epi8(lo3, z), _mm256_unpacklo_epi8(step, z)));
    const __m256i w1 = _mm256_add_epi16(_mm256_unpackhi_epi8(base_lo, base_hi),
                                        _mm256_mullo_epi16(_mm256_unpackhi_epi8(lo3, z), _mm256_unpackhi_epi8(step, z)));
    f[0] = bf16_low_words(w0), f[1] = bf16_high_words(w0);
    f[2] = bf16_low_words(w1), f[3] = bf16_high_words(w1);
  } else {
    const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + 32 * part));
    __m256i hi, lo;
    lut_bytes(t.lut, t.sign7, x, hi, lo);
    widen_bf16(lo, hi, f);
  }
}

/// B's scales of panel q, tile ti, as 8 x 8 floats (rows in order).
MINIFLOAT_TARGET_AVX2 inline void packed_tile_scales(const packed_weights& w, std::size_t q, std::size_t ti,
                                                          __m256* sb) noexcept {
  if (w.one_tile()) {
    for (int v = 0; v < 8; ++v) sb[v] = _mm256_loadu_ps(w.row_scales().data() + q * packed_weights::panel_rows + 8 * v);
    return;
  }
  const std::size_t tiles = (w.k() + w.tile_k() - 1) / w.tile_k();
  const std::size_t at = (q * tiles + ti) * packed_weights::panel_rows;
  if (!w.mx()) {
    for (int v = 0; v < 8; ++v) sb[v] = _mm256_loadu_ps(w.tile_scales().data() + at + 8 * v);
    return;
  }
  // mx_scale_value for codes 1..254 (0 and 0xFF make the panel special): the float is e << 23.
  const std::uint8_t* p = w.mx_tile_scales().data() + at;
  for (int v = 0; v < 8; ++v)
    sb[v] = _mm256_castsi256_ps(
        _mm256_slli_epi32(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 8 * v))), 23));
}

/// Software prefetch of a panel's code stream, 2 KiB (into L1) and 16 KiB (into L2) ahead of
/// slice k: a panel is one sequential stream, and the hardware prefetchers alone kept too few
/// lines in flight (bench/README.md: the 1 x 4096 x 4096 GEMV ran about 1.5x slower without).
MINIFLOAT_TARGET_AVX2 inline void packed_prefetch(const std::uint8_t* panel, std::size_t k, std::size_t k_all,
                                                  std::size_t sbytes) noexcept {
  const std::size_t near = 2048 / sbytes, far = 16384 / sbytes;
  if (k + near < k_all) _mm_prefetch(reinterpret_cast<const char*>(panel + (k + near) * sbytes), _MM_HINT_T0);
  if (k + far < k_all) _mm_prefetch(reinterpret_cast<const char*>(panel + (k + far) * sbytes), _MM_HINT_T1);
}

/// One panel, all A rows of the job. buf: 32 x 64 floats (M > 1 only).
template <packed_decoder D>
MINIFLOAT_TARGET_AVX2 void packed_panel_avx2(const packed_job& j, std::size_t q, const packed_tables& tables,
                                                  float* buf) noexcept {
  const packed_tables t = tables;  // a local copy: stores to C and buf cannot alias it
  const __m256 p_unit = _mm256_set1_ps(packed_p_unit(D));
  constexpr std::size_t pr = packed_weights::panel_rows, kchunk = 32;
  const packed_weights& w = *j.w;
  const std::size_t k_all = w.k(), sbytes = w.slice_bytes(), n0 = q * pr;
  const std::size_t rows = std::min(pr, w.n() - n0);
  const std::uint8_t* codes = w.codes().data() + q * k_all * sbytes;
  const std::size_t l = j.l == 0 ? k_all : j.l;
  alignas(32) float acc[8][pr];
  for (std::size_t m = 0; m < j.m_rows; ++m)
    for (std::size_t r = 0; r < pr; ++r) acc[m][r] = j.l != 0 && r < rows ? j.c[m * j.ldc + n0 + r] : 0.0f;
  alignas(32) float part_mem[8][pr];
  for (std::size_t k0 = 0, blk = 0; k0 < k_all; k0 += l, ++blk) {
    const std::size_t k1 = std::min(k_all, k0 + l);
    if (j.m_rows == 1) {
      __m256 p[8];
      for (auto& v : p) v = _mm256_setzero_ps();
      const float* a = j.a;
      for (std::size_t k = k0; k < k1; ++k) {
        packed_prefetch(codes, k, k_all, sbytes);
        const std::uint8_t* s = codes + k * sbytes;
        const __m256 av = _mm256_broadcast_ss(a + k);
        __m256 f[4];
        packed_decode_part<D>(s, 0, t, f);
        for (int v = 0; v < 4; ++v) p[v] = _mm256_fmadd_ps(av, f[v], p[v]);
        packed_decode_part<D>(s, 1, t, f);
        for (int v = 0; v < 4; ++v) p[4 + v] = _mm256_fmadd_ps(av, f[v], p[4 + v]);
      }
      if constexpr (packed_p_unit(D) != 1.0f)
        for (auto& v : p) v = _mm256_mul_ps(v, p_unit);
      if (j.l == 0) {
        for (int v = 0; v < 8; ++v) _mm256_store_ps(acc[0] + 8 * v, p[v]);
        continue;
      }
      __m256 sb[8];  // the block step straight from the registers
      packed_tile_scales(w, q, k0 / w.tile_k(), sb);
      const __m256 sa = _mm256_set1_ps(j.sa[blk]);
      for (int v = 0; v < 8; ++v)
        _mm256_store_ps(acc[0] + 8 * v,
                        _mm256_fmadd_ps(p[v], _mm256_mul_ps(sa, sb[v]), _mm256_load_ps(acc[0] + 8 * v)));
      continue;
    } else {
      for (std::size_t m = 0; m < j.m_rows; ++m) std::fill(part_mem[m], part_mem[m] + pr, 0.0f);
      for (std::size_t c0 = k0; c0 < k1; c0 += kchunk) {
        const std::size_t c1 = std::min(k1, c0 + kchunk);
        for (std::size_t k = c0; k < c1; ++k) {
          packed_prefetch(codes, k, k_all, sbytes);
          __m256 f[4];
          float* dst = buf + (k - c0) * pr;
          packed_decode_part<D>(codes + k * sbytes, 0, t, f);
          for (int v = 0; v < 4; ++v) _mm256_store_ps(dst + 8 * v, f[v]);
          packed_decode_part<D>(codes + k * sbytes, 1, t, f);
          for (int v = 0; v < 4; ++v) _mm256_store_ps(dst + 32 + 8 * v, f[v]);
        }
        for (std::size_t m = 0; m < j.m_rows; ++m) {
          __m256 p[8];
          for (int v = 0; v < 8; ++v) p[v] = _mm256_load_ps(part_mem[m] + 8 * v);
          const float* a = j.a + m * k_all;
          for (std::size_t k = c0; k < c1; ++k) {
            const __m256 av = _mm256_broadcast_ss(a + k);
            const float* col = buf + (k - c0) * pr;
            for (int v = 0; v < 8; ++v) p[v] = _mm256_fmadd_ps(av, _mm256_load_ps(col + 8 * v), p[v]);
          }
          for (int v = 0; v < 8; ++v) _mm256_store_ps(part_mem[m] + 8 * v, p[v]);
        }
      }
      if constexpr (packed_p_unit(D) != 1.0f)
        for (std::size_t m = 0; m < j.m_rows; ++m)
          for (int v = 0; v < 8; ++v)
            _mm256_store_ps(part_mem[m] + 8 * v, _mm256_mul_ps(_mm256_load_ps(part_mem[m] + 8 * v), p_unit));
    }
    if (j.l == 0) {
      for (std::size_t m = 0; m < j.m_rows; ++m) std::copy(part_mem[m], part_mem[m] + pr, acc[m]);
      continue;
    }
    __m256 sb[8];
    packed_tile_scales(w, q, k0 / w.tile_k(), sb);
    for (std::size_t m = 0; m < j.m_rows; ++m) {
      const __m256 sa = _mm256_set1_ps(j.sa[m * j.nblocks + blk]);
      for (int v = 0; v < 8; ++v)
        _mm256_store_ps(acc[m] + 8 * v, _mm256_fmadd_ps(_mm256_load_ps(part_mem[m] + 8 * v), _mm256_mul_ps(sa, sb[v]),
                                                        _mm256_load_ps(acc[m] + 8 * v)));
    }
  }
  for (std::size_t m = 0; m < j.m_rows; ++m) std::copy(acc[m], acc[m] + rows, j.c + m * j.ldc + n0);
}

using packed_panel_fn = void (*)(const packed_job&, std::size_t, const packed_tables&, float*) noexcept;

inline packed_panel_fn packed_panel_avx2_for(const packed_weights& w) noexcept {
  switch (w.decoder()) {
    case packed_decoder::shift_e4m3: return &packed_panel_avx2<packed_decoder::shift_e4m3>;
    case packed_decoder::shift_e5m2: return &packed_panel_avx2<packed_decoder::shift_e5m2>;
    case packed_decoder::bf16_nibble: return &packed_panel_avx2<packed_decoder::bf16_nibble>;
    case packed_decoder::rank_hif8: return &packed_panel_avx2<packed_decoder::rank_hif8>;
    default: return lut128_of(w.format()).ok ? &packed_panel_avx2<packed_decoder::bf16_lut> : nullptr;
  }
}


// GCC 12's AVX-512 headers build constants from a deliberately uninitialised variable.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
/// hifloat8 (rank-coded) on AVX-512 VBMI, one A row: vpermi2b looks the 64 codes of a k up in
/// two 128-entry byte tables (the bfloat16's high and low byte by rank; rank 0 is zero), one
/// vpternlogd adds the sign. The 64 codes in one zmm are the AVX2 layout's two 32-byte parts
/// side by side, so the same packing serves both: float vector v holds rows 8v .. 8v + 7 in its
/// low half and rows 32 + 8v .. in its high half. Same fma chains and block steps as the AVX2
/// kernel (bit-identical); more than one A row goes to the AVX2 kernel.
MINIFLOAT_TARGET_AVX512 inline void packed_panel_hif8_avx512(const packed_job& j, std::size_t q,
                                                           const packed_tables& tables, float* buf) noexcept {
  if (j.m_rows != 1) {
    packed_panel_avx2<packed_decoder::rank_hif8>(j, q, tables, buf);
    return;
  }
  const auto& tab = hif8_rank_bf16_bytes;
  const __m512i th0 = _mm512_loadu_si512(tab.data()), th1 = _mm512_loadu_si512(tab.data() + 64);
  const __m512i tl0 = _mm512_loadu_si512(tab.data() + 128), tl1 = _mm512_loadu_si512(tab.data() + 192);
  const __m512i m80 = _mm512_set1_epi8(static_cast<char>(0x80));
  const __m512i top = _mm512_set1_epi32(static_cast<int>(0xFFFF0000U));
  constexpr std::size_t pr = packed_weights::panel_rows;
  const packed_weights& w = *j.w;
  const std::size_t k_all = w.k(), n0 = q * pr, rows = std::min(pr, w.n() - n0);
  const std::uint8_t* codes = w.codes().data() + q * k_all * pr;
  const std::size_t l = j.l == 0 ? k_all : j.l;
  alignas(64) float acc[pr], part[pr];
  for (std::size_t r = 0; r < pr; ++r) acc[r] = j.l != 0 && r < rows ? j.c[n0 + r] : 0.0f;
  for (std::size_t k0 = 0, blk = 0; k0 < k_all; k0 += l, ++blk) {
    const std::size_t k1 = std::min(k_all, k0 + l);
    __m512 p0 = _mm512_setzero_ps(), p1 = p0, p2 = p0, p3 = p0;
    for (std::size_t k = k0; k < k1; ++k) {
      packed_prefetch(codes, k, k_all, pr);
      const __m512i x = _mm512_loadu_si512(codes + k * pr);
      const __m512i hi = _mm512_ternarylogic_epi32(_mm512_permutex2var_epi8(th0, x, th1), x, m80, 0xF8);  // a | (b & c)
      const __m512i lo = _mm512_permutex2var_epi8(tl0, x, tl1);
      const __m512i w0 = _mm512_unpacklo_epi8(lo, hi), w1 = _mm512_unpackhi_epi8(lo, hi);
      const __m512 av = _mm512_set1_ps(j.a[k]);
      p0 = _mm512_fmadd_ps(av, _mm512_castsi512_ps(_mm512_slli_epi32(w0, 16)), p0);
      p1 = _mm512_fmadd_ps(av, _mm512_castsi512_ps(_mm512_and_si512(w0, top)), p1);
      p2 = _mm512_fmadd_ps(av, _mm512_castsi512_ps(_mm512_slli_epi32(w1, 16)), p2);
      p3 = _mm512_fmadd_ps(av, _mm512_castsi512_ps(_mm512_and_si512(w1, top)), p3);
    }
    const __m512 ps[4] = {p0, p1, p2, p3};
    for (int v = 0; v < 4; ++v) {
      _mm256_store_ps(part + 8 * v, _mm512_castps512_ps256(ps[v]));
      _mm256_store_ps(part + 32 + 8 * v, _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(ps[v]), 1)));
    }
    if (j.l == 0) {
      std::copy(part, part + pr, acc);
      continue;
    }
    __m256 sb[8];
    packed_tile_scales(w, q, k0 / w.tile_k(), sb);
    const __m256 sa = _mm256_set1_ps(j.sa[blk]);
    for (int v = 0; v < 8; ++v)
      _mm256_store_ps(acc + 8 * v, _mm256_fmadd_ps(_mm256_load_ps(part + 8 * v), _mm256_mul_ps(sa, sb[v]),
                                                   _mm256_load_ps(acc + 8 * v)));
  }
  std::copy(acc, acc + rows, j.c + n0);
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

/// Clears MXCSR.DAZ for its lifetime (the shift decoders feed subnormal B values to the fma).
struct mxcsr_no_daz {
  unsigned saved;
  MINIFLOAT_TARGET_AVX2 mxcsr_no_daz() noexcept : saved(_mm_getcsr()) {
    if ((saved & 0x40U) != 0) _mm_setcsr(saved & ~0x40U);
  }
  MINIFLOAT_TARGET_AVX2 ~mxcsr_no_daz() { _mm_setcsr(saved); }
  mxcsr_no_daz(const mxcsr_no_daz&) = delete;
  mxcsr_no_daz& operator=(const mxcsr_no_daz&) = delete;
};

#endif  // MINIFLOAT_SIMD_X86

/// Checks A against the packed B and the output/bias sizes; returns A's operand and L.
inline std::pair<operand, std::size_t> packed_problem(const quantized_tensor_view& a, const packed_weights& w,
                                                      std::size_t bias_size, std::size_t out_size) {
  operand oa = make_operand(a, 'A', gemm_layout::nk);
  if (oa.k != w.k())
    throw shape_error("gemm: A is " + shape_str(a.rows, a.cols) + " (M x K) but the packed weights have K = " +
                      std::to_string(w.k()) + " (N = " + std::to_string(w.n()) + "): K must agree (" +
                      std::to_string(oa.k) + " vs " + std::to_string(w.k()) + ")");
  if (bias_size != 0 && bias_size != w.n())
    throw shape_error("gemm: bias needs N = " + std::to_string(w.n()) + " floats (or none), got " +
                      std::to_string(bias_size));
  check_out_size(oa.outer, w.n(), out_size, "gemm");
  const std::size_t l = k_block(oa, w.tile_shape());
  return {oa, l};
}

/// The checks of grouped_gemm over packed experts: A's operand, N, and each group's K-block.
struct packed_group_set {
  operand a;
  std::size_t n = 0;
  std::vector<std::size_t> blocks;
};

inline packed_group_set packed_groups(const quantized_tensor_view& a, std::span<const std::size_t> group_sizes,
                                      std::span<const packed_weights> b, std::span<const std::span<const float>> bias,
                                      std::size_t out_size) {
  packed_group_set r;
  r.a = make_operand(a, 'A', gemm_layout::nk);
  check_groups(a, group_sizes, b.size(), bias.size());
  r.n = b.empty() ? 0 : b[0].n();
  check_out_size(a.rows, r.n, out_size, "grouped_gemm");
  r.blocks.resize(b.size());
  for (std::size_t g = 0; g < b.size(); ++g) {
    const std::string who = "grouped_gemm: B[" + std::to_string(g) + "]";
    if (b[g].k() != r.a.k)
      throw shape_error(who + " has K = " + std::to_string(b[g].k()) + " but A has K = " + std::to_string(r.a.k));
    if (b[g].n() != r.n)
      throw shape_error(who + " has N = " + std::to_string(b[g].n()) + " but B[0] has N = " + std::to_string(r.n) +
                        "; every expert needs the same N");
    if (!bias.empty() && !bias[g].empty() && bias[g].size() != r.n)
      throw shape_error("grouped_gemm: bias[" + std::to_string(g) + "] needs N = " + std::to_string(r.n) +
                        " floats (or none), got " + std::to_string(bias[g].size()));
    r.blocks[g] = k_block(r.a, b[g].tile_shape());
  }
  return r;
}

/// The packed GEMV into fp32 C (M x N, row stride N).
inline void run_packed(const operand& oa, std::size_t l_block, const packed_weights& w, std::span<const float> bias,
                       float* c, const gemm_config& cfg) {
  const std::size_t m_all = oa.outer, n_all = w.n(), k_all = w.k();
  if (m_all == 0 || n_all == 0) return;
  if (k_all == 0) {  // no K-block: acc = bias, and there are no scales to read
    for (std::size_t m = 0; m < m_all; ++m)
      for (std::size_t n = 0; n < n_all; ++n) c[m * n_all + n] = bias.empty() ? 0.0f : bias[n];
    return;
  }
  const bool single = l_block >= k_all;
  const std::size_t l = single ? 0 : l_block, nb = single ? 1 : (k_all + l - 1) / l;
  const simd::isa level = resolve_gemm_isa(cfg.isa);
  const isa_kernels isa = select_kernels(oa.format, w.format(), level);
  bool fast = false;  // a SIMD panel kernel exists for this format and ISA
#if MINIFLOAT_SIMD_X86
  packed_panel_fn avx2_panel = isa.avx2 ? packed_panel_avx2_for(w) : nullptr;
  if (avx2_panel != nullptr && w.decoder() == packed_decoder::rank_hif8 && simd::detail::allows(level, simd::isa::avx512))
    avx2_panel = &packed_panel_hif8_avx512;
  fast = avx2_panel != nullptr;
#endif
  const float a_unit = fast ? packed_a_unit(w.decoder()) : 1.0f;
  // A decoded once: values (x a_unit for the shift decoders; unscaled for the scalar twin), block scales.
  std::vector<float> a(m_all * k_all), sa(m_all * nb);
  std::vector<float> a_plain(a_unit != 1.0f ? m_all * k_all : 0);

  for (std::size_t m = 0; m < m_all; ++m) {
    float* am = a.data() + m * k_all;
    isa.decode_a(oa, m + oa.outer_offset, 0, k_all, am);
    if (a_unit != 1.0f) {
      std::copy(am, am + k_all, a_plain.data() + m * k_all);
      for (std::size_t k = 0; k < k_all; ++k) am[k] *= a_unit;
    }
    if (!single)
      for (std::size_t j = 0; j < nb; ++j) sa[m * nb + j] = oa.scale(m, j * l);
  }
  if (!single)
    for (std::size_t m = 0; m < m_all; ++m)
      for (std::size_t n = 0; n < n_all; ++n) c[m * n_all + n] = bias.empty() ? 0.0f : bias[n];

  const std::size_t panels = w.panels();
  const auto work = [&](std::size_t q0, std::size_t q1) {
#if MINIFLOAT_SIMD_X86
    packed_tables tables;
    std::vector<float> buf_store;
    float* buf = nullptr;
    std::optional<mxcsr_no_daz> no_daz;
    if (fast) {
      if (a_unit != 1.0f) no_daz.emplace();
      load_packed_tables(w, tables);
      if (m_all > 1) {
        buf_store.resize(32 * packed_weights::panel_rows + 8);
        buf = buf_store.data();
        while (reinterpret_cast<std::uintptr_t>(buf) % 32 != 0) ++buf;
      }
    }
#endif
    for (std::size_t m0 = 0; m0 < m_all; m0 += 8) {
      packed_job job;
      job.w = &w, job.a = a.data() + m0 * k_all, job.m_rows = std::min<std::size_t>(8, m_all - m0);
      job.l = l, job.sa = sa.data() + m0 * nb, job.nblocks = nb, job.c = c + m0 * n_all, job.ldc = n_all;
      packed_job plain = job;  // the scalar twin reads A unscaled
      plain.a = a_plain.empty() ? nullptr : a_plain.data() + m0 * k_all;  // empty when A is read unscaled anyway
      for (std::size_t q = q0; q < q1; ++q) {
#if MINIFLOAT_SIMD_X86
        if (fast && !w.special_panel(q)) {
          avx2_panel(job, q, tables, buf);
          continue;
        }
#endif
        packed_panel_scalar(a_unit == 1.0f ? job : plain, q);
      }
    }
  };
  const std::size_t parts = std::max<std::size_t>(1, std::min<std::size_t>(minifloat::thread_count(cfg.threads), panels));
  minifloat::detail::fork_join(parts, [&](std::size_t t) { work(panels * t / parts, panels * (t + 1) / parts); });

  if (single) {  // epilogue: C = fma(sum, sA * sB, bias)
    std::vector<float> sb_store;
    const float* sb = w.row_scales().data();
    if (!w.one_tile()) {  // MX with K <= 32: one K-block, scales in the tile grid
      sb_store.resize(n_all);
      for (std::size_t n = 0; n < n_all; ++n) sb_store[n] = w.scale(n, 0);
      sb = sb_store.data();
    }
    for (std::size_t m = 0; m < m_all; ++m)
      epilogue_row(c + m * n_all, n_all, oa.scale(m, 0), sb, bias.empty() ? nullptr : bias.data(), isa.avx2);
  }
}

}  // namespace detail::gemm

#if MINIFLOAT_DEFINE_KERNELS(MINIFLOAT_KERNELS_GEMM)  // declared and documented in entry_points.hpp
MINIFLOAT_KERNEL_API void gemm(const quantized_tensor_view& a, const packed_weights& b, std::span<const float> bias,
                 std::span<float> out, const gemm_config& cfg) {
  const auto [oa, l] = detail::gemm::packed_problem(a, b, bias.size(), out.size());
  detail::gemm::run_packed(oa, l, b, bias, out.data(), cfg);
}
MINIFLOAT_KERNEL_API void gemm(const quantized_tensor_view& a, const packed_weights& b, std::span<const float> bias,
                 std::span<bfloat16> out, const gemm_config& cfg) {
  const auto [oa, l] = detail::gemm::packed_problem(a, b, bias.size(), out.size());
  std::vector<float> c(oa.outer * b.n());
  detail::gemm::run_packed(oa, l, b, bias, c.data(), cfg);
  detail::gemm::to_bf16_rows(c.data(), out);
}
#endif

#if MINIFLOAT_DEFINE_KERNELS(MINIFLOAT_KERNELS_GEMM)  // declared and documented in entry_points.hpp
MINIFLOAT_KERNEL_API void grouped_gemm(const quantized_tensor_view& a, std::span<const std::size_t> group_sizes,
                         std::span<const packed_weights> b, std::span<const std::span<const float>> bias,
                         std::span<float> out, const gemm_config& cfg) {
  using namespace detail::gemm;
  const auto [af, n, blocks] = packed_groups(a, group_sizes, b, bias, out.size());
  if (a.rows == 0 || n == 0) return;
  for (std::size_t g = 0, r0 = 0; g < b.size(); r0 += group_sizes[g], ++g) {
    operand ag = af;
    ag.outer_offset = r0, ag.outer = group_sizes[g];
    run_packed(ag, blocks[g], b[g], bias.empty() ? std::span<const float>{} : bias[g], out.data() + r0 * n, cfg);
  }
}
#endif

#if MINIFLOAT_DEFINE_KERNELS(MINIFLOAT_KERNELS_GEMM)  // declared and documented in entry_points.hpp
MINIFLOAT_KERNEL_API gemm_shape validate_gemm(const quantized_tensor_view& a, const packed_weights& b, std::size_t bias_size,
                                std::size_t out_size) {
  const auto [oa, l] = detail::gemm::packed_problem(a, b, bias_size, out_size);
  return {oa.outer, b.n(), b.k(), l};
}
#endif

#if MINIFLOAT_DEFINE_KERNELS(MINIFLOAT_KERNELS_GEMM)  // declared and documented in entry_points.hpp
MINIFLOAT_KERNEL_API gemm_shape validate_grouped_gemm(const quantized_tensor_view& a, std::span<const std::size_t> group_sizes,
                                        std::span<const packed_weights> b,
                                        std::span<const std::span<const float>> bias, std::size_t out_size) {
  const auto [af, n, blocks] = detail::gemm::packed_groups(a, group_sizes, b, bias, out_size);
  return {a.rows, n, af.k, blocks.empty() ? 1 : blocks[0]};
}
#endif

}  // namespace minifloat
