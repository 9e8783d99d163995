#pragma once
// The fast path: a cache-blocked GEMM (GotoBLAS/BLIS loop order) whose packing routines decode
// the quantized codes, plus a GEMV path for small M that streams the weights. Both compute the
// fp32_blocks order of reference.hpp bit for bit (same fma sequence per output).
//
// Loop nest of the blocked path (one thread's share of N, or of M):
//   for jc in N step nc                     B panel kc x nc   (L3)
//     for pc in K step kc                   kc: a multiple of the K-block L (or 256 if one block)
//       pack B(pc.., jc..) -> micro-panels of 16 columns, decoded, [k][16]
//       for ic in M step mc                 A block mc x kc   (L2)
//         pack A(ic.., pc..) -> micro-panels of 6 rows, decoded, [k][6]
//         for jr, ir: micro-kernel 6 x 16   B micro-panel kc x 16 (L1)
//   single-block mode (L >= K): C holds the raw sum across the kc chunks, then one epilogue pass
//   C = fma(C, sA * sB, bias). K-block mode: C starts at bias, each block adds fma(p, sA*sB, C).
// Scales ride along with the packed panels ([block][6] for A, [block][16] for B).
//
// GEMV path (M <= gemv_max_m, default 8): B's codes are read exactly once, streamed.
//   B stored (N, K), AVX2 (K-block L a multiple of 32, or one block): gemv_nk_avx2 -- 32 rows of
//   B per pass, 64 bytes of each staged, 8 x 8 byte transposes, decoded straight into k-columns
//   of 8 outputs, four interleaved fma chains per A row (kernels.hpp).
//   Otherwise: A is packed once; for each 16-column panel of B and each gemv_kc chunk, the panel
//   is decoded into a small buffer and consumed at once by the micro-kernel for the M rows.
//   The transposes cost more than the decode: weights used for many GEMVs should be packed once
//   (packed_weights.hpp, gemv_packed.hpp), which is 3-7x faster and bit-identical.
// Threads split N (GEMV) or the larger of M and N (blocked); every output is computed by one
// thread in the same order, so results do not depend on the thread count.
#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <exception>
#include <memory>
#include <new>
#include <span>
#include <thread>
#include <vector>

#include "../simd/fork_join.hpp"
#include "kernels.hpp"
#include "reference.hpp"

namespace minifloat {

/// Which loop nest gemm() runs.
enum class gemm_path : std::uint8_t {
  automatic,  ///< gemv when M <= gemv_max_m, else blocked
  blocked,    ///< the cache-blocked GEMM
  gemv,       ///< the weight-streaming path (any M; meant for small M)
};


struct gemm_config {
  unsigned threads = 1;          ///< worker threads (0: std::thread::hardware_concurrency())
  gemm_path path = gemm_path::automatic;
  /// The widest ISA level the fast path may use (simd/isa.hpp): automatic = the CPU's best;
  /// scalar = the portable twins (bit-identical results); avx2 caps the AVX-512 paths.
  simd::isa isa = simd::isa::automatic;
  std::size_t gemv_max_m = 8;    ///< automatic path: gemv for M <= this
  std::size_t mc = 144, kc = 256, nc = 3072;  ///< blocking (mc rounded to 6, nc to 16)
  std::size_t gemv_kc = 1024;                 ///< GEMV: K run decoded per 16-row panel (long runs stream better)
};

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

/// 64-byte aligned float scratch.
struct aligned_floats {
  struct free_deleter {
    void operator()(float* ptr) const noexcept { std::free(ptr); }
  };
  std::unique_ptr<float, free_deleter> p;
  std::size_t n = 0;
  float* get(std::size_t count) {
    if (count > n) {
      const std::size_t bytes = ((count * sizeof(float) + 63) / 64) * 64;
      p.reset(static_cast<float*>(std::aligned_alloc(64, bytes)));
      if (!p) throw std::bad_alloc();
      n = count;
    }
    return p.get();
  }
};

/// Everything one thread's loops need.
struct context {
  const problem* p = nullptr;
  isa_kernels isa;
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

/// The blocked loop nest over C rows [m0, m1) x cols [n0, n1).
inline void run_blocked(const context& ctx, std::size_t m0, std::size_t m1, std::size_t n0, std::size_t n1) {
  if (m0 >= m1 || n0 >= n1) return;
  const problem& p = *ctx.p;
  if (!ctx.single) init_c(ctx, m0, m1, n0, n1);
  const std::size_t nc = std::min(ctx.nc, ((n1 - n0 + nr - 1) / nr) * nr);
  const std::size_t mc = std::min(ctx.mc, ((m1 - m0 + mr - 1) / mr) * mr);
  const std::size_t kc_max = std::min(ctx.kc, std::max<std::size_t>(p.k, 1));
  const std::size_t nb_max = blocks_in(kc_max, ctx.l);
  // Per-thread scratch kept between calls (it only grows): no page faults on every call.
  thread_local aligned_floats bbuf, abuf, bsc, asc, tmpbuf;
  float* bp = bbuf.get(kc_max * nc + 8);
  float* ap = abuf.get(kc_max * mc + 8);
  float* bs = bsc.get(nb_max * nc);
  float* as = asc.get(nb_max * mc);
  float* tmp = tmpbuf.get(8 * kc_max + 16);
  for (std::size_t jc = n0; jc < n1; jc += nc) {
    const std::size_t ncur = std::min(nc, n1 - jc);
    for (std::size_t pc = 0; pc < p.k; pc += ctx.kc) {
      const std::size_t kc = std::min(ctx.kc, p.k - pc), nb = blocks_in(kc, ctx.l);
      pack_b(p.b, ctx.isa.decode_b, ctx.isa.avx2, jc, ncur, pc, kc, ctx.l, bp, bs, tmp);
      for (std::size_t ic = m0; ic < m1; ic += mc) {
        const std::size_t mcur = std::min(mc, m1 - ic);
        pack_k_major<mr>(p.a, ctx.isa.decode_a, ctx.isa.avx2, ic, mcur, pc, kc, ctx.l, ap, as, tmp);
        for (std::size_t jr = 0; jr < ncur; jr += nr) {
          const float* bpanel = bp + (jr / nr) * kc * nr;
          const float* bscale = bs + (jr / nr) * nb * nr;
          const std::size_t cols = std::min(nr, ncur - jr);
          for (std::size_t ir = 0; ir < mcur; ir += mr)
            run_tile(ctx, std::min(mr, mcur - ir), cols, kc, ap + (ir / mr) * kc * mr, bpanel, ic + ir, jc + jr,
                     pc > 0, as + (ir / mr) * nb * mr, bscale);
        }
      }
    }
  }
  if (ctx.single) epilogue(ctx, m0, m1, n0, n1);
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

inline unsigned thread_count(const gemm_config& cfg) {
  unsigned t = cfg.threads == 0 ? std::thread::hardware_concurrency() : cfg.threads;
  return t == 0 ? 1 : t;
}

/// Splits [0, M) x [0, N) over threads (along N in 16-column units when N allows, else M)
/// and runs `body(m0, m1, n0, n1)` on each part; the calling thread takes the first, workers of
/// the process-wide pool the others (detail/fork_join.hpp).
template <class Body>
void parallel_split(std::size_t m, std::size_t n, unsigned threads, bool prefer_n, Body&& body) {
  const std::size_t n_units = (n + nr - 1) / nr, m_units = (m + mr - 1) / mr;
  const bool by_n = prefer_n ? n_units >= threads : n_units >= m_units;
  const std::size_t units = by_n ? n_units : m_units, unit = by_n ? nr : mr, extent = by_n ? n : m;
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
  ctx.isa = select_kernels(p.a.format, p.b.format, resolve_gemm_isa(cfg.isa));
  ctx.single = p.l >= p.k;
  ctx.l = ctx.single ? 0 : p.l;
  const std::size_t kc_target = std::max<std::size_t>(cfg.kc, 1);
  ctx.kc = ctx.single ? kc_target : p.l * std::max<std::size_t>(1, kc_target / p.l);
  ctx.gemv_kc = ctx.single ? std::max<std::size_t>(cfg.gemv_kc, 1) : p.l * std::max<std::size_t>(1, cfg.gemv_kc / p.l);
  ctx.mc = std::max(mr, (cfg.mc / mr) * mr);
  ctx.nc = std::max(nr, (cfg.nc / nr) * nr);
  ctx.c = c, ctx.ldc = ldc, ctx.bias = bias;
  const bool gemv = cfg.path == gemm_path::gemv || (cfg.path == gemm_path::automatic && p.m <= cfg.gemv_max_m);
  const unsigned threads = thread_count(cfg);
  parallel_split(p.m, p.n, threads, gemv, [&](std::size_t m0, std::size_t m1, std::size_t n0, std::size_t n1) {
    if (gemv) run_gemv(ctx, m0, m1, n0, n1);
    else run_blocked(ctx, m0, m1, n0, n1);
  });
}

/// fp32 C -> bfloat16 (RNE), row-major M x N.
inline void to_bf16_rows(const float* c, std::span<bfloat16> out) {
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = to_bf16(c[i]);
}

}  // namespace detail::gemm

/// Fast quantized GEMM: out (M x N, row-major) = A * B [+ bias], computed in the fp32_blocks
/// order of reference.hpp, bit-identical to gemm_reference(..., gemm_accumulation::fp32_blocks)
/// for every shape, thread count, path and ISA. Same operand rules and errors as the reference.
inline void gemm(const quantized_tensor_view& a, const quantized_tensor_view& b, gemm_layout layout,
                 std::span<const float> bias, std::span<float> out, const gemm_config& cfg = {}) {
  const auto p = detail::gemm::make_problem(a, b, layout, bias.size(), out.size());
  detail::gemm::run_fast(p, bias, out.data(), p.n, cfg);
}
inline void gemm(const quantized_tensor_view& a, const quantized_tensor_view& b, gemm_layout layout,
                 std::span<const float> bias, std::span<bfloat16> out, const gemm_config& cfg = {}) {
  const auto p = detail::gemm::make_problem(a, b, layout, bias.size(), out.size());
  std::vector<float> c(p.m * p.n);
  detail::gemm::run_fast(p, bias, c.data(), p.n, cfg);
  detail::gemm::to_bf16_rows(c.data(), out);
}

}  // namespace minifloat
