#pragma once
// The fast path: a cache-blocked GEMM (GotoBLAS/BLIS loop order) whose packing routines decode
// the quantized codes, plus a GEMV path for small M that streams the weights. Both compute the
// fp32_blocks order of reference.hpp bit for bit (same fma sequence per output).
//
// Loop nest of the blocked path (one thread's share of N, or of M), for a micro-kernel family
// of MR x NR tiles (6 x 16 fp32: scalar twins and AVX2; 12 x 32 on AVX-512: fp32 FMA, or
// bfloat16 pairs on vdpbf16ps, gemm/x86/avx512.hpp; gemm_config::isa and ::microkernel choose):
//   for jc in N step nc                     B panel kc x nc   (L3)
//     for pc in K step kc                   kc: a multiple of the K-block L (or 256 if one block)
//       pack B(pc.., jc..) -> micro-panels of NR columns, decoded, [k][NR] (bf16: [k/2][NR] pairs)
//       for ic in M step mc                 A block mc x kc   (L2)
//         pack A(ic.., pc..) -> micro-panels of MR rows, decoded, [k][MR]
//         for jr, ir: micro-kernel MR x NR  B micro-panel kc x NR (L1)
//   single-block mode (L >= K): C holds the raw sum across the kc chunks, then one epilogue pass
//   C = fma(C, sA * sB, bias). K-block mode: C starts at bias, each block adds fma(p, sA*sB, C).
// Scales ride along with the packed panels ([block][MR] for A, [block][NR] for B).
// docs/gemm.md proves each family equal to the fp32_blocks order.
//
// GEMV path (M <= gemv_max_m, default 8): B's codes are read exactly once, streamed.
//   B stored (N, K), AVX2 (K-block L a multiple of 32, or one block): gemv_nk_avx2 -- 32 rows of
//   B per pass, 64 bytes of each staged, 8 x 8 byte transposes, decoded straight into k-columns
//   of 8 outputs, four interleaved fma chains per A row (gemm/x86/avx2.hpp).
//   Otherwise: A is packed once; for each 16-column panel of B and each gemv_kc chunk, the panel
//   is decoded into a small buffer and consumed at once by the micro-kernel for the M rows.
//   The transposes cost more than the decode: weights used for many GEMVs should be packed once
//   (packed_weights.hpp, gemv_packed.hpp), which is 3-7x faster and bit-identical.
// Threads split N (GEMV) or the larger of M and N (blocked); every output is computed by one
// thread in the same order, so results do not depend on the thread count.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdlib>
#include <exception>
#include <memory>
#include <new>
#include <span>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "entry_points.hpp"
#include "../core/threads.hpp"
#include "kernels.hpp"
#include "reference.hpp"
#include "x86/avx512.hpp"
#include "../simd/x86/avx512_dot_rate.hpp"

namespace minifloat {

namespace detail::gemm {

/// cfg.isa resolved against this CPU; a level it cannot run is an error, as in the bulk kernels.
inline simd::isa resolve_gemm_isa(simd::isa requested) {
  const simd::isa level = simd::detail::resolve(requested);
  if (level == simd::isa::automatic)
    throw unsupported_error("gemm: ISA level " + std::string(simd::to_string(requested)) +
                            " is not available on this CPU (available: " +
                            std::string(simd::available_isas_string()) + ")");
  return level;
}

/// 64-byte aligned scratch of T (float, or std::uint32_t bfloat16 pairs).
template <class T>
struct aligned_buffer {
  struct free_deleter {
    void operator()(T* ptr) const noexcept { std::free(ptr); }
  };
  std::unique_ptr<T, free_deleter> p;
  std::size_t n = 0;
  T* get(std::size_t count) {
    if (count > n) {
      const std::size_t bytes = ((checked_mul(count, sizeof(T), "gemm: scratch bytes") + 63) / 64) * 64;
      p.reset(static_cast<T*>(std::aligned_alloc(64, bytes)));
      if (!p) throw std::bad_alloc();
      n = count;
    }
    return p.get();
  }
};
using aligned_floats = aligned_buffer<float>;

/// The micro-kernel family a blocked run uses (tile shape, panel format, instructions).
enum class blocked_family : std::uint8_t { scalar, avx2, avx512_fp32, avx512_bf16 };

/// Everything one thread's loops need.
struct context {
  const problem* p = nullptr;
  isa_kernels isa;
  blocked_family family = blocked_family::scalar;
  decode_words_fn words_a = nullptr, words_b = nullptr;  // AVX-512 bf16 packing (nullptr: decode + pair)
  std::size_t kc = 256, mc = 144, nc = 3072, gemv_kc = 1024;
  bool single = true;       // one K-block (L >= K)
  std::size_t l = 0;        // K-block length passed to the kernel (0 in single mode)
  float* c = nullptr;       // fp32 C, M x N, row stride ldc
  std::size_t ldc = 0;
  std::span<const float> bias;
};

inline std::size_t blocks_in(std::size_t kc, std::size_t l) { return l == 0 ? 1 : (kc + l - 1) / l; }

/// Packs rows [i0, i0 + rows) x k [k0, k0 + kc) of operand o into panels of P rows
/// ([panel][k][P], zero-padded) and, in K-block mode, their scales ([panel][block][P]).
/// tmp: 8 * kc + 16 floats; dst: 2 floats of slack past the last panel.
template <std::size_t P>
void pack_k_major(const operand& o, decode_fn decode, bool avx2, std::size_t i0, std::size_t rows, std::size_t k0,
                  std::size_t kc, std::size_t l, float* dst, float* dst_scales, float* tmp) {
  const std::size_t panels = (rows + P - 1) / P, nb = blocks_in(kc, l);
  bool packed = false;
#if MINIFLOAT_SIMD_X86
  if (avx2) pack_rows_avx2<P>(o, decode, i0, rows, k0, kc, dst, tmp), packed = true;
#else
  (void)avx2;
#endif
  for (std::size_t q = 0; q < panels; ++q) {
    float* panel = dst + q * kc * P;
    for (std::size_t r = 0; r < P; ++r) {
      const std::size_t i = q * P + r;
      if (!packed) {  // scalar twin: decode the row, scatter it with stride P
        if (i < rows) decode(o, i0 + i + o.outer_offset, k0, kc, tmp);
        for (std::size_t k = 0; k < kc; ++k) panel[k * P + r] = i < rows ? tmp[k] : 0.0f;
      }
      if (l != 0)
        for (std::size_t j = 0; j < nb; ++j)
          dst_scales[(q * nb + j) * P + r] = i < rows ? o.scale(i0 + i, k0 + j * l) : 0.0f;
    }
  }
}

/// Packs B columns [n0, n0 + cols) x k [k0, k0 + kc) into panels of nr columns.
inline void pack_b(const operand& b, decode_fn decode, bool avx2, std::size_t n0, std::size_t cols, std::size_t k0,
                   std::size_t kc, std::size_t l, float* dst, float* dst_scales, float* tmp) {
  if (b.k_major) {
    pack_k_major<nr>(b, decode, avx2, n0, cols, k0, kc, l, dst, dst_scales, tmp);
    return;
  }
  // (K, N) storage: each stored row k holds the 16 columns of a panel contiguously.
  const std::size_t panels = (cols + nr - 1) / nr, nb = blocks_in(kc, l);
  for (std::size_t q = 0; q < panels; ++q) {
    float* panel = dst + q * kc * nr;
    const std::size_t c0 = q * nr, w = std::min(nr, cols - c0);
    for (std::size_t k = 0; k < kc; ++k) {
      decode(b, k0 + k, n0 + c0 + b.outer_offset, w, panel + k * nr);
      for (std::size_t j = w; j < nr; ++j) panel[k * nr + j] = 0.0f;
    }
    if (l != 0)
      for (std::size_t j = 0; j < nb; ++j)
        for (std::size_t c = 0; c < nr; ++c)
          dst_scales[(q * nb + j) * nr + c] = c < w ? b.scale(n0 + c0 + c, k0 + j * l) : 0.0f;
  }
}

/// One micro-tile: rows x cols (<= 6 x 16) of C at (m, n); goes through a 6 x 16 buffer at edges.
inline void run_tile(const context& ctx, std::size_t rows, std::size_t cols, std::size_t kc, const float* a,
                     const float* b, std::size_t m, std::size_t n, bool load_c, const float* sa, const float* sb) {
  float* c = ctx.c + m * ctx.ldc + n;
  const kernel_fn kern = ctx.isa.kernel[rows];
  if (cols == nr) {
    kern(kc, a, b, c, ctx.ldc, load_c, ctx.l, sa, sb);
    return;
  }
  alignas(64) float t[mr * nr] = {};
  if (load_c || ctx.l != 0)
    for (std::size_t r = 0; r < rows; ++r) std::copy(c + r * ctx.ldc, c + r * ctx.ldc + cols, t + r * nr);
  kern(kc, a, b, t, nr, load_c, ctx.l, sa, sb);
  for (std::size_t r = 0; r < rows; ++r) std::copy(t + r * nr, t + r * nr + cols, c + r * ctx.ldc);
}

/// C rows [m0, m1) x cols [n0, n1) := bias (K-block mode) before accumulation.
inline void init_c(const context& ctx, std::size_t m0, std::size_t m1, std::size_t n0, std::size_t n1) {
  for (std::size_t m = m0; m < m1; ++m)
    for (std::size_t n = n0; n < n1; ++n) ctx.c[m * ctx.ldc + n] = ctx.bias.empty() ? 0.0f : ctx.bias[n];
}

/// The single-block epilogue on one row of C: c[j] = fma(c[j], sa * sb[j], bias[j]) for j in
/// [0, count) (bias may be null), the last step of the fp32 order; AVX2 when `avx2`.
inline void epilogue_row(float* c, std::size_t count, float sa, const float* sb, const float* bias, bool avx2) {
#if MINIFLOAT_SIMD_X86
  if (avx2) {
    epilogue_row_avx2(c, count, sa, sb, bias);
    return;
  }
#else
  (void)avx2;
#endif
  for (std::size_t j = 0; j < count; ++j) c[j] = std::fma(c[j], sa * sb[j], bias != nullptr ? bias[j] : 0.0f);
}

/// Single-block mode epilogue: C = fma(C, sA * sB, bias), the last step of the fp32 order.
inline void epilogue(const context& ctx, std::size_t m0, std::size_t m1, std::size_t n0, std::size_t n1) {
  const problem& p = *ctx.p;
  if (p.k == 0) {  // no K-block: acc = bias (and there are no scales to read)
    for (std::size_t m = m0; m < m1; ++m)
      for (std::size_t n = n0; n < n1; ++n) ctx.c[m * ctx.ldc + n] = ctx.bias.empty() ? 0.0f : ctx.bias[n];
    return;
  }
  std::vector<float> sb(n1 - n0);
  for (std::size_t n = n0; n < n1; ++n) sb[n - n0] = p.b.scale(n, 0);
  for (std::size_t m = m0; m < m1; ++m)
    epilogue_row(ctx.c + m * ctx.ldc + n0, n1 - n0, p.a.scale(m, 0), sb.data(),
                 ctx.bias.empty() ? nullptr : ctx.bias.data() + n0, ctx.isa.avx2);
}

/// The 6 x 16 fp32 family (scalar twins or AVX2): panels of floats.
struct family_6x16 {
  using word = float;
  static constexpr std::size_t mr = gemm::mr, nr = gemm::nr;
  static constexpr std::size_t words(std::size_t kc) noexcept { return kc; }
  static void pack_a(const context& ctx, std::size_t i0, std::size_t rows, std::size_t k0, std::size_t kc, float* dst,
                     float* sc, float* tmp, std::uint32_t*) {
    pack_k_major<mr>(ctx.p->a, ctx.isa.decode_a, ctx.isa.avx2, i0, rows, k0, kc, ctx.l, dst, sc, tmp);
  }
  static void pack_b(const context& ctx, std::size_t n0, std::size_t cols, std::size_t k0, std::size_t kc, float* dst,
                     float* sc, float* tmp, std::uint32_t*) {
    gemm::pack_b(ctx.p->b, ctx.isa.decode_b, ctx.isa.avx2, n0, cols, k0, kc, ctx.l, dst, sc, tmp);
  }
  static void tile(const context& ctx, std::size_t rows, std::size_t cols, std::size_t kc, const float* a,
                   const float* b, std::size_t m, std::size_t n, bool load_c, const float* sa, const float* sb) {
    run_tile(ctx, rows, cols, kc, a, b, m, n, load_c, sa, sb);
  }
  static constexpr bool tile_inits_c = false;
  static void prefetch_c(const context&, std::size_t, std::size_t, std::size_t) noexcept {}
};

#if MINIFLOAT_SIMD_X86
/// The AVX-512 12 x 32 families (gemm/x86/avx512.hpp): T = float (fp32 FMA) or std::uint32_t
/// (bfloat16 pairs, vdpbf16ps).
template <class T>
struct family_12x32 {
  using word = T;
  static constexpr bool pairs = std::is_same_v<T, std::uint32_t>;
  static constexpr std::size_t mr = mr512, nr = nr512;
  static constexpr std::size_t words(std::size_t kc) noexcept { return pairs ? (kc + 1) / 2 : kc; }
  using kernel_t = void (*)(std::size_t, const T*, const T*, float*, std::size_t, bool, std::size_t, const float*,
                            const float*) noexcept;
  template <std::size_t... R>
  static constexpr std::array<kernel_t, mr + 1> table(std::index_sequence<R...>) noexcept {
    if constexpr (pairs) return {nullptr, &kernel_avx512_bf16<static_cast<int>(R) + 1>...};
    else return {nullptr, &kernel_avx512_fp32<static_cast<int>(R) + 1>...};
  }
  static constexpr std::array<kernel_t, mr + 1> kernels = table(std::make_index_sequence<mr>{});

  static void pack_a(const context& ctx, std::size_t i0, std::size_t rows, std::size_t k0, std::size_t kc, T* dst,
                     float* sc, float* tmp, std::uint32_t* wtmp) {
    pack_k_major_avx512<mr, T>(ctx.p->a, ctx.isa.decode_a, ctx.words_a, i0, rows, k0, kc, ctx.l, dst, sc, tmp, wtmp);
  }
  static void pack_b(const context& ctx, std::size_t n0, std::size_t cols, std::size_t k0, std::size_t kc, T* dst,
                     float* sc, float* tmp, std::uint32_t* wtmp) {
    if (ctx.p->b.k_major)
      pack_k_major_avx512<nr, T>(ctx.p->b, ctx.isa.decode_b, ctx.words_b, n0, cols, k0, kc, ctx.l, dst, sc, tmp, wtmp);
    else pack_kn_avx512<T>(ctx.p->b, ctx.isa.decode_b, n0, cols, k0, kc, ctx.l, dst, sc, tmp);
  }
  static void tile(const context& ctx, std::size_t rows, std::size_t cols, std::size_t kc, const T* a, const T* b,
                   std::size_t m, std::size_t n, bool load_c, const float* sa, const float* sb) {
    const std::size_t kw = words(kc), lw = pairs ? ctx.l / 2 : ctx.l;
    float* c = ctx.c + m * ctx.ldc + n;
    const kernel_t kern = kernels[rows];
    // K-block mode reads and writes C once per block: through a contiguous tile, since 12 rows
    // of C a power of two apart would share L1 sets.
    if (cols == nr && ctx.l == 0) {
      kern(kw, a, b, c, ctx.ldc, load_c, lw, sa, sb);
      return;
    }
    alignas(64) float t[mr * nr];
    if (ctx.l != 0 && !load_c) tile_bias(ctx.bias.empty() ? nullptr : ctx.bias.data() + n, rows, cols, t);
    else if (load_c || ctx.l != 0) tile_in(c, ctx.ldc, rows, cols, t);
    kern(kw, a, b, t, nr, load_c, lw, sa, sb);
    tile_out(t, rows, cols, c, ctx.ldc);
  }
  /// K-block mode starts each tile at the bias (tile), so C needs no separate initialisation.
  static constexpr bool tile_inits_c = true;
  /// Asks for the C rows of the tile at (m, n) ahead of its kernel run (their loads would
  /// otherwise stall it: C is larger than L2).
  static void prefetch_c(const context& ctx, std::size_t m, std::size_t rows, std::size_t n) noexcept {
    prefetch_c_rows(ctx.c, ctx.ldc, m, rows, n);
  }
};
#endif

/// The blocked loop nest over C rows [m0, m1) x cols [n0, n1), for one micro-kernel family.
template <class Fam>
void run_blocked_family(const context& ctx, std::size_t m0, std::size_t m1, std::size_t n0, std::size_t n1) {
  using word = typename Fam::word;
  constexpr std::size_t fmr = Fam::mr, fnr = Fam::nr;
  if (m0 >= m1 || n0 >= n1) return;
  const problem& p = *ctx.p;
  if (!ctx.single && !Fam::tile_inits_c) init_c(ctx, m0, m1, n0, n1);
  const std::size_t nc = std::min(ctx.nc, ((n1 - n0 + fnr - 1) / fnr) * fnr);
  const std::size_t mc = std::min(ctx.mc, ((m1 - m0 + fmr - 1) / fmr) * fmr);
  const std::size_t kc_max = std::min(ctx.kc, std::max<std::size_t>(p.k, 1)), kw_max = Fam::words(kc_max);
  const std::size_t nb_max = blocks_in(kc_max, ctx.l);
  // Per-thread scratch kept between calls (it only grows): no page faults on every call.
  thread_local aligned_buffer<word> bbuf, abuf;
  thread_local aligned_floats bsc, asc, tmpbuf;
  thread_local aligned_buffer<std::uint32_t> wbuf;
  word* bp = bbuf.get(kw_max * nc + 8);
  word* ap = abuf.get(kw_max * mc + 8);
  float* bs = bsc.get(nb_max * nc);
  float* as = asc.get(nb_max * mc);
  float* tmp = tmpbuf.get(8 * kc_max + 2 * nr512 + 16);
  std::uint32_t* wt = wbuf.get(8 * kw_max + 16);
  for (std::size_t jc = n0; jc < n1; jc += nc) {
    const std::size_t ncur = std::min(nc, n1 - jc);
    for (std::size_t pc = 0; pc < p.k; pc += ctx.kc) {
      const std::size_t kc = std::min(ctx.kc, p.k - pc), kw = Fam::words(kc), nb = blocks_in(kc, ctx.l);
      Fam::pack_b(ctx, jc, ncur, pc, kc, bp, bs, tmp, wt);
      for (std::size_t ic = m0; ic < m1; ic += mc) {
        const std::size_t mcur = std::min(mc, m1 - ic);
        Fam::pack_a(ctx, ic, mcur, pc, kc, ap, as, tmp, wt);
        for (std::size_t jr = 0; jr < ncur; jr += fnr) {
          const word* bpanel = bp + (jr / fnr) * kw * fnr;
          const float* bscale = bs + (jr / fnr) * nb * fnr;
          const std::size_t cols = std::min(fnr, ncur - jr);
          for (std::size_t ir = 0; ir < mcur; ir += fmr) {
            if (ir + fmr < mcur && (pc > 0 || !ctx.single))
              Fam::prefetch_c(ctx, ic + ir + fmr, std::min(fmr, mcur - ir - fmr), jc + jr);
            Fam::tile(ctx, std::min(fmr, mcur - ir), cols, kc, ap + (ir / fmr) * kw * fmr, bpanel, ic + ir, jc + jr,
                      pc > 0, as + (ir / fmr) * nb * fmr, bscale);
          }
        }
      }
    }
  }
  if (ctx.single) epilogue(ctx, m0, m1, n0, n1);
}

inline void run_blocked(const context& ctx, std::size_t m0, std::size_t m1, std::size_t n0, std::size_t n1) {
  switch (ctx.family) {
#if MINIFLOAT_SIMD_X86
    case blocked_family::avx512_fp32: return run_blocked_family<family_12x32<float>>(ctx, m0, m1, n0, n1);
    case blocked_family::avx512_bf16: return run_blocked_family<family_12x32<std::uint32_t>>(ctx, m0, m1, n0, n1);
#endif
    default: return run_blocked_family<family_6x16>(ctx, m0, m1, n0, n1);
  }
}

/// GEMV with B stored (N, K) on AVX2: gemv_nk_avx2 over groups of up to 8 A rows.
inline bool run_gemv_nk(const context& ctx, std::size_t m0, std::size_t m1, std::size_t n0, std::size_t n1) {
#if MINIFLOAT_SIMD_X86
  const problem& p = *ctx.p;
  if (!ctx.isa.avx2 || !p.b.k_major || (ctx.l != 0 && ctx.l % 32 != 0) || p.k == 0) return false;
  const gemv_nk_fn fn = gemv_nk_avx2_for(p.b.format);
  if (fn == nullptr) return false;
  if (!ctx.single) init_c(ctx, m0, m1, n0, n1);
  const std::size_t nb = blocks_in(p.k, ctx.l);
  std::vector<float> a(8 * p.k), sa(8 * nb);
  for (std::size_t g = m0; g < m1; g += 8) {
    const std::size_t rows = std::min<std::size_t>(8, m1 - g);
    for (std::size_t r = 0; r < rows; ++r) {
      float* ar = a.data() + r * p.k;
      ctx.isa.decode_a(p.a, g + r + p.a.outer_offset, 0, p.k, ar);
      if (p.b.format == format_id::float8_e4m3fn)  // see gemv_nk_avx2: a * 2^8 exactly
        for (std::size_t k = 0; k < p.k; ++k) ar[k] *= 256.0f;
      if (ctx.l != 0)
        for (std::size_t j = 0; j < nb; ++j) sa[r * nb + j] = p.a.scale(g + r, j * ctx.l);
    }
    fn(p.b, a.data(), rows, p.k, n0, n1, ctx.l, sa.data(), nb, ctx.c + g * ctx.ldc, ctx.ldc);
  }
  if (ctx.single) epilogue(ctx, m0, m1, n0, n1);
  return true;
#else
  (void)ctx, (void)m0, (void)m1, (void)n0, (void)n1;
  return false;
#endif
}

/// The GEMV loop nest over C rows [m0, m1) x cols [n0, n1): every A row packed once, B streamed.
inline void run_gemv(const context& ctx, std::size_t m0, std::size_t m1, std::size_t n0, std::size_t n1) {
  if (m0 >= m1 || n0 >= n1) return;
  if (run_gemv_nk(ctx, m0, m1, n0, n1)) return;
  const problem& p = *ctx.p;
  if (!ctx.single) init_c(ctx, m0, m1, n0, n1);
  const std::size_t rows = m1 - m0, kall = std::max<std::size_t>(p.k, 1);
  const std::size_t nb_all = blocks_in(kall, ctx.l), a_panels = (rows + mr - 1) / mr;
  const std::size_t kc_max = std::min(ctx.gemv_kc, kall), nb_max = blocks_in(kc_max, ctx.l);
  aligned_floats abuf, asc, bbuf, bsc, tmpbuf;
  float* ap = abuf.get(a_panels * kall * mr + 8);
  float* as = asc.get(a_panels * nb_all * mr);
  float* bp = bbuf.get(kc_max * nr + 8);
  float* bs = bsc.get(nb_max * nr);
  float* tmp = tmpbuf.get(8 * kall + 16);
  if (p.k > 0) pack_k_major<mr>(p.a, ctx.isa.decode_a, ctx.isa.avx2, m0, rows, 0, p.k, ctx.l, ap, as, tmp);
  for (std::size_t jr = n0; jr < n1; jr += nr) {
    const std::size_t cols = std::min(nr, n1 - jr);
    for (std::size_t pc = 0; pc < p.k; pc += ctx.gemv_kc) {
      const std::size_t kc = std::min(ctx.gemv_kc, p.k - pc);
      pack_b(p.b, ctx.isa.decode_b, ctx.isa.avx2, jr, cols, pc, kc, ctx.l, bp, bs, tmp);
      const std::size_t blk0 = ctx.l == 0 ? 0 : pc / ctx.l;
      for (std::size_t q = 0; q < a_panels; ++q)
        run_tile(ctx, std::min(mr, rows - q * mr), cols, kc, ap + q * kall * mr + pc * mr, bp, m0 + q * mr, jr,
                 pc > 0, as + (q * nb_all + blk0) * mr, bs);
    }
  }
  if (ctx.single) epilogue(ctx, m0, m1, n0, n1);
}

/// The AVX-512 micro-kernel gemm_microkernel::automatic runs. Both give the same bits, so this
/// is about speed only, and the rate of vdpbf16ps against vfmadd231ps differs between cores
/// (on the Intel core of bench/README.md vdpbf16ps zmm issues every other cycle and fp32 zmm
/// FMAs twice per cycle, so fp32_fma is twice as fast per k; cores that run vdpbf16ps at the
/// FMA rate make bf16_dot twice as fast). The rate is simd/x86/avx512_dot_rate.hpp's, measured
/// once per process. Threshold: bf16_dot is taken only when it is more than 15 % faster per k.
/// Per K pair it issues one vdpbf16ps where fp32_fma issues two FMAs (same loads, stores and
/// scale steps), so that is a vdpbf16ps costing less than 2 x 0.85 = 1.7 FMAs.
inline gemm_microkernel preferred_microkernel() noexcept {
  return simd::avx512::bf16_pair_cost_in_fmas() < 1.7 ? gemm_microkernel::bf16_dot : gemm_microkernel::fp32_fma;
}

/// The blocked family a call runs: the widest `level` allows, the AVX-512 one chosen by `want`.
/// bf16 pairs need even K-blocks (l == 0: one block, any K).
inline blocked_family blocked_family_for(simd::isa level, gemm_microkernel want, std::size_t l) noexcept {
#if MINIFLOAT_SIMD_X86
  if (simd::detail::allows(level, simd::isa::avx512)) {
    if (want == gemm_microkernel::automatic) want = preferred_microkernel();
    return want == gemm_microkernel::bf16_dot && l % 2 == 0 ? blocked_family::avx512_bf16 : blocked_family::avx512_fp32;
  }
  if (simd::detail::allows(level, simd::isa::avx2)) return blocked_family::avx2;
#else
  (void)level, (void)want, (void)l;
#endif
  return blocked_family::scalar;
}

/// cfg's blocking, 0 fields replaced by the family's defaults, rounded to its tile.
struct blocking {
  std::size_t mc, kc, nc;
};
inline blocking blocking_of(blocked_family f, const gemm_config& cfg) noexcept {
  const bool wide = f == blocked_family::avx512_fp32 || f == blocked_family::avx512_bf16;
  const std::size_t tm = wide ? mr512 : mr, tn = wide ? nr512 : nr;
  const std::size_t mc = cfg.mc != 0 ? cfg.mc : wide ? 240 : 144;
  const std::size_t kc = cfg.kc != 0 ? cfg.kc : f == blocked_family::avx512_bf16 ? 512 : 256;
  const std::size_t nc = cfg.nc != 0 ? cfg.nc : 3072;
  return {std::max(tm, (mc / tm) * tm), kc, std::max(tn, (nc / tn) * tn)};
}


/// Splits [0, M) x [0, N) over threads (along N in 16-column units when N allows, else M)
/// and runs `body(m0, m1, n0, n1)` on each part; the calling thread takes the first, workers of
/// the process-wide pool the others (core/threads.hpp).
template <class Body>
void parallel_split(std::size_t m, std::size_t n, unsigned threads, bool prefer_n, std::size_t unit_m,
                    std::size_t unit_n, Body&& body) {
  const std::size_t n_units = (n + unit_n - 1) / unit_n, m_units = (m + unit_m - 1) / unit_m;
  const bool by_n = prefer_n ? n_units >= threads : n_units >= m_units;
  const std::size_t units = by_n ? n_units : m_units, unit = by_n ? unit_n : unit_m, extent = by_n ? n : m;
  const std::size_t parts = std::max<std::size_t>(1, std::min<std::size_t>(threads, units));
  const auto range = [&](std::size_t t) {
    const std::size_t u0 = units * t / parts, u1 = units * (t + 1) / parts;
    return std::pair<std::size_t, std::size_t>{std::min(extent, u0 * unit), std::min(extent, u1 * unit)};
  };
  minifloat::detail::fork_join(parts, [&](std::size_t t) {
    const auto [a, b] = range(t);
    if (by_n) body(std::size_t{0}, m, a, b);
    else body(a, b, std::size_t{0}, n);
  });
}

/// Runs the fast path for a checked problem into fp32 C (M x N, row stride ldc).
inline void run_fast(const problem& p, std::span<const float> bias, float* c, std::size_t ldc, const gemm_config& cfg) {
  if (p.m == 0 || p.n == 0) return;
  context ctx;
  ctx.p = &p;
  const simd::isa level = resolve_gemm_isa(cfg.isa);
  ctx.isa = select_kernels(p.a.format, p.b.format, level);
  ctx.single = p.l >= p.k;
  ctx.l = ctx.single ? 0 : p.l;
  const bool gemv = cfg.path == gemm_path::gemv || (cfg.path == gemm_path::automatic && p.m <= cfg.gemv_max_m);
  ctx.family = gemv ? (ctx.isa.avx2 ? blocked_family::avx2 : blocked_family::scalar)
                    : blocked_family_for(level, cfg.microkernel, ctx.l);
#if MINIFLOAT_SIMD_X86
  if (ctx.family == blocked_family::avx512_fp32 || ctx.family == blocked_family::avx512_bf16) {
    // The VBMI decoders (8- and 6-bit formats); FP4 keeps the AVX2 one.
    if (simd::detail::bf16_bytes_of(p.a.format) != nullptr) ctx.isa.decode_a = &decode_run_vbmi, ctx.words_a = &decode_words_vbmi;
    if (simd::detail::bf16_bytes_of(p.b.format) != nullptr) ctx.isa.decode_b = &decode_run_vbmi, ctx.words_b = &decode_words_vbmi;
  }
#endif
  const blocking bl = blocking_of(ctx.family, cfg);
  ctx.kc = ctx.single ? bl.kc : p.l * std::max<std::size_t>(1, bl.kc / p.l);
  if (ctx.family == blocked_family::avx512_bf16 && ctx.single) ctx.kc = std::max<std::size_t>(2, ctx.kc & ~std::size_t{1});
  ctx.gemv_kc = ctx.single ? std::max<std::size_t>(cfg.gemv_kc, 1) : p.l * std::max<std::size_t>(1, cfg.gemv_kc / p.l);
  ctx.mc = bl.mc, ctx.nc = bl.nc;
  ctx.c = c, ctx.ldc = ldc, ctx.bias = bias;
  const unsigned threads = minifloat::thread_count(cfg.threads);
  const bool wide = ctx.family == blocked_family::avx512_fp32 || ctx.family == blocked_family::avx512_bf16;
  parallel_split(p.m, p.n, threads, gemv, wide ? mr512 : mr, wide ? nr512 : nr,
                 [&](std::size_t m0, std::size_t m1, std::size_t n0, std::size_t n1) {
                   if (gemv) run_gemv(ctx, m0, m1, n0, n1);
                   else run_blocked(ctx, m0, m1, n0, n1);
                   fix_fp32_overflow(p, bias, c, ldc, m0, m1, n0, n1);  // reference.hpp's overflow rule
                 });
}

/// fp32 C -> bfloat16 (RNE), row-major M x N.
inline void to_bf16_rows(const float* c, std::span<bfloat16> out) {
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = to_bf16(c[i]);
}

}  // namespace detail::gemm

#if MINIFLOAT_DEFINE_KERNELS(MINIFLOAT_KERNELS_GEMM)  // declared and documented in entry_points.hpp
MINIFLOAT_KERNEL_API void gemm(const quantized_tensor_view& a, const quantized_tensor_view& b, gemm_layout layout,
                 std::span<const float> bias, std::span<float> out, const gemm_config& cfg) {
  const auto p = detail::gemm::make_problem(a, b, layout, bias.size(), out.size());
  detail::gemm::run_fast(p, bias, out.data(), p.n, cfg);
}
MINIFLOAT_KERNEL_API void gemm(const quantized_tensor_view& a, const quantized_tensor_view& b, gemm_layout layout,
                 std::span<const float> bias, std::span<bfloat16> out, const gemm_config& cfg) {
  const auto p = detail::gemm::make_problem(a, b, layout, bias.size(), out.size());
  std::vector<float> c(p.m * p.n);
  detail::gemm::run_fast(p, bias, c.data(), p.n, cfg);
  detail::gemm::to_bf16_rows(c.data(), out);
}
#endif

}  // namespace minifloat
