#pragma once
// The AMX block kernel for blocks of many query rows (prefill; kernel.hpp has the order of
// operations): AVX-512 decodes the stored rows of a 64-key chunk into bfloat16 planes
// (pieces.hpp), AMX-BF16 tiles compute S^T = K Q^T and out = P V, AVX-512 runs the online
// softmax with one query per lane. pieces.hpp says why the bfloat16 products are exact.
//
// Used at isa level avx512 when the CPU also has AMX-TILE and AMX-BF16 and Linux grants the
// tile state (arch_prctl ARCH_REQ_XCOMP_PERM); block.hpp picks it for blocks of more than a few
// rows, where a tile's 16 rows are filled.
#include "pieces.hpp"

#if MINIFLOAT_ATTENTION_X86 && defined(__linux__)
#define MINIFLOAT_ATTENTION_AMX 1
#else
#define MINIFLOAT_ATTENTION_AMX 0
#endif

namespace minifloat::attention::detail::x86 {

#if MINIFLOAT_ATTENTION_AMX

MINIFLOAT_ATTENTION_X86_DIAGNOSTICS_PUSH

/// AMX usable in this process (the one CPU probe, simd/isa.hpp).
inline bool amx_available() noexcept { return simd::cpu().amx_bf16; }

struct alignas(64) tile_config {
  std::uint8_t palette = 1, start_row = 0;
  std::uint8_t reserved[14] = {};
  std::uint16_t colsb[16] = {};
  std::uint8_t rows[16] = {};
};


/// The S^T tiles 0 .. nkt - 1 (16 keys x 16 queries each) to st.
MINIFLOAT_TARGET_AMX inline void store_s_tiles(float* st, std::size_t nkt) {
  _tile_stored(0, st, 64);
  if (nkt > 1) _tile_stored(1, st + 256, 64);
  if (nkt > 2) _tile_stored(2, st + 512, 64);
  if (nkt > 3) _tile_stored(3, st + 768, 64);
}


// --- the block -------------------------------------------------------------------------------------

MINIFLOAT_TARGET_AMX inline void run_block_amx(const block_args& a) {
  scratch& s = scratch::local();
  const std::size_t d = a.k.cols, dv = a.v.cols, rows = a.rows;
  const std::size_t dp = (d + 31) / 32 * 32, dvp = (dv + 31) / 32 * 32;
  const std::size_t nqt = (rows + 15) / 16;
  const unsigned nkp = planes_of(a.k.kind), nvp = planes_of(a.v.kind);
  const unsigned npp = softmax_step(a).p_planes();

  // Q^T planes, [plane][q tile][d pair][16 queries][2]
  bool q_exact = true;
  for (std::size_t r = 0; r < rows && q_exact; ++r)
    for (std::size_t c = 0; c < d; ++c) {
      const float v = a.q[r * a.q_stride + c];
      if (bf16_value(bf16_rne(v)) != v) {
        q_exact = false;
        break;
      }
    }
  const unsigned nqp = q_exact ? 1U : 3U;
  const std::size_t qt_plane = nqt * dp * 16;
  s.qt.assign(nqp * qt_plane, 0);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < d; ++c) {
      std::uint16_t h = 0, m = 0, lo = 0;
      split3(a.q[r * a.q_stride + c], h, m, lo);
      const std::size_t at = (r / 16) * dp * 16 + (c / 2) * 32 + (r % 16) * 2 + (c % 2);
      s.qt[at] = h;
      if (nqp == 3) s.qt[qt_plane + at] = m, s.qt[2 * qt_plane + at] = lo;
    }

  const std::size_t kb_plane = chunk_keys * dp, vb_plane = (chunk_keys / 2) * dvp * 2, pa_plane = nqt * 16 * chunk_keys;
  s.kb.resize(2 * nkp * kb_plane), s.vb.resize(nvp * vb_plane);
  s.pa.assign(npp * pa_plane, 0);
  s.st.resize(nqt * chunk_keys * 16), s.part.resize(nqt * 16 * dvp), s.srow.resize(16 * chunk_keys);
  s.acc.assign(nqt * 16 * dvp, 0.0f);
  s.lim.assign(nqt * 16, 0);
  std::size_t kmax = 0;
  for (std::size_t r = 0; r < rows; ++r) s.lim[r] = static_cast<std::int32_t>(a.limit[r]), kmax = std::max(kmax, a.limit[r]);
  for (std::size_t r = 0; r < nqt * 16; ++r) s.m[r] = -std::numeric_limits<float>::infinity(), s.l[r] = 0.0f;

  tile_config cfg;
  for (int t = 0; t < 8; ++t) cfg.rows[t] = 16, cfg.colsb[t] = 64;
  _tile_loadconfig(&cfg);

  const term_list tqk = terms(nkp, nqp), tpv = terms(npp, nvp);
  const softmax_step sm(a);
  const std::size_t vs = dvp * 4;

  // Software pipelining: a tile product runs asynchronously, and a hand-off between AMX and
  // AVX-512 (tile store -> vector load, vector store -> tile load) waits for it, so each
  // product is followed by AVX-512 work that does not depend on it: V's decode after S^T, the
  // next chunk's K decode after P V, and the accumulator update of a chunk at the start of the
  // next. The order of the arithmetic is unchanged (kernel.hpp).
  line_prefetcher pf;
  const bool k_in_place = a.k.kind == element_kind::bf16 && d % 32 == 0 && a.k.row_bytes % 4 == 0;
  const auto k_rows = [&](std::size_t c0, std::size_t& kstride) -> const std::uint16_t* {
    const std::size_t n = std::min(chunk_keys, kmax - c0);
    const std::size_t slot = (c0 / chunk_keys) % 2;
    if (k_in_place && n % 16 == 0) {
      kstride = a.k.row_bytes;
      return reinterpret_cast<const std::uint16_t*>(a.k.data + c0 * a.k.row_bytes);  // NOLINT: bf16 words as stored
    }
    kstride = dp * 2;
    return s.kb.data() + slot * nkp * kb_plane;
  };
  const auto decode_k = [&](std::size_t c0) {
    const std::size_t n = std::min(chunk_keys, kmax - c0);
    if (k_in_place && n % 16 == 0) return;
    const std::size_t slot = (c0 / chunk_keys) % 2;
    decode_rows(a.k, c0, n, (n + 15) / 16 * 16, dp, s.kb.data() + slot * nkp * kb_plane, kb_plane, pf);
  };
  if (kmax > 0) decode_k(0);
  bool pending = false;  // s.part and s.alpha hold a chunk not yet added to acc
  for (std::size_t c0 = 0; c0 < kmax; c0 += chunk_keys) {
    const std::size_t n = std::min(chunk_keys, kmax - c0);
    const std::size_t nkt = (n + 15) / 16, nu = (n + 31) / 32;
    std::size_t kstride = 0;
    const std::uint16_t* kb = k_rows(c0, kstride);
    const std::size_t kplane_bytes = kb_plane * 2;
    pf.reset(a.k, a.v, c0 + chunk_keys, std::min(kmax, c0 + 2 * chunk_keys));  // K first: decoded at this chunk's end
    // S^T = K Q^T: the four key tiles of the chunk accumulate in tiles 0-3 (independent chains:
    // a tile product's latency is several times its throughput); A alternates between tiles 4
    // and 6 so a load never waits for the product still reading the other. The last query
    // tile's result is stored after V's decode.
    for (std::size_t qt = 0; qt < nqt; ++qt) {
      if (qt > 0) store_s_tiles(s.st.data() + (qt - 1) * chunk_keys * 16, nkt);
      _tile_zero(0);
      _tile_zero(1);
      _tile_zero(2);
      _tile_zero(3);
      const auto* kbytes = reinterpret_cast<const std::uint8_t*>(kb);  // NOLINT: tile rows as bytes
      for (std::size_t sl = 0; sl < dp / 32; ++sl)
        for (unsigned t = 0; t < tqk.n; ++t) {
          pf.step(16);
          _tile_loadd(5, s.qt.data() + tqk.b[t] * qt_plane + qt * dp * 16 + sl * 16 * 32, 64);
          const std::uint8_t* ka = kbytes + tqk.a[t] * kplane_bytes + sl * 64;
          _tile_loadd(4, ka, kstride);
          _tile_dpbf16ps(0, 4, 5);
          if (nkt > 1) {
            _tile_loadd(6, ka + 16 * kstride, kstride);
            _tile_dpbf16ps(1, 6, 5);
          }
          if (nkt > 2) {
            _tile_loadd(4, ka + 32 * kstride, kstride);
            _tile_dpbf16ps(2, 4, 5);
          }
          if (nkt > 3) {
            _tile_loadd(6, ka + 48 * kstride, kstride);
            _tile_dpbf16ps(3, 6, 5);
          }
        }
    }
    if (pending) update_acc(s.acc.data(), s.part.data(), s.alpha, rows, dvp, a.v_factor);
    decode_pairs(a.v, c0, n, nu * 16, dvp, s.vb.data(), vb_plane, pf);
    store_s_tiles(s.st.data() + (nqt - 1) * chunk_keys * 16, nkt);

    const bool has_next = c0 + chunk_keys < kmax;
    for (std::size_t qt = 0; qt < nqt; ++qt) {
      // S^T tiles (keys x queries) -> S rows (queries x keys): the softmax then runs over the
      // keys of one query per vector and writes P straight into the A-tile layout.
      const float* st = s.st.data() + qt * chunk_keys * 16;
      float* srow = s.srow.data();
      for (std::size_t kt = 0; kt < nkt; ++kt) {
        __m512i rr[16];
        for (std::size_t i = 0; i < 16; ++i) rr[i] = _mm512_loadu_si512(st + (kt * 16 + i) * 16);
        transpose16(rr);
        for (std::size_t q = 0; q < 16; ++q) _mm512_storeu_si512(srow + q * chunk_keys + kt * 16, rr[q]);
      }
      const std::size_t valid_rows = std::min<std::size_t>(16, rows - qt * 16);
      for (std::size_t r = 0; r < valid_rows; ++r) {
        pf.step(16);
        const std::size_t row = qt * 16 + r;
        const std::size_t vis = a.limit[row] > c0 ? std::min(n, a.limit[row] - c0) : 0;
        s.alpha[row] = softmax_row(sm, srow + r * chunk_keys, nkt, vis, s.m[row], s.l[row],
                                   s.pa.data() + qt * 16 * chunk_keys + r * chunk_keys, npp, pa_plane, nullptr);
      }
      // part = P V over this chunk, 16 queries x dv, four 16-column tiles at a time; the last
      // group's result is stored after the next chunk's K decode
      const bool last_qt = qt + 1 == nqt;
      for (std::size_t g = 0; g < dvp; g += 64) {
        const std::size_t nt = std::min<std::size_t>(4, (dvp - g) / 16);
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
        for (std::size_t u = 0; u < nu; ++u)
          for (unsigned t = 0; t < tpv.n; ++t) {
            pf.step(16);
            _tile_loadd(4, s.pa.data() + tpv.a[t] * pa_plane + qt * 16 * chunk_keys + u * 32, chunk_keys * 2);
            const std::uint16_t* vb = s.vb.data() + tpv.b[t] * vb_plane + u * 16 * dvp * 2 + g * 2;
            _tile_loadd(5, vb, vs);
            _tile_dpbf16ps(0, 4, 5);
            if (nt > 1) {
              _tile_loadd(7, vb + 32, vs);
              _tile_dpbf16ps(1, 4, 7);
            }
            if (nt > 2) {
              _tile_loadd(5, vb + 64, vs);
              _tile_dpbf16ps(2, 4, 5);
            }
            if (nt > 3) {
              _tile_loadd(7, vb + 96, vs);
              _tile_dpbf16ps(3, 4, 7);
            }
          }
        if (last_qt && g + 64 >= dvp && has_next) decode_k(c0 + chunk_keys);
        float* part = s.part.data() + qt * 16 * dvp + g;
        _tile_stored(0, part, vs);
        if (nt > 1) _tile_stored(1, part + 16, vs);
        if (nt > 2) _tile_stored(2, part + 32, vs);
        if (nt > 3) _tile_stored(3, part + 48, vs);
      }
    }
    pending = true;
  }
  if (pending) update_acc(s.acc.data(), s.part.data(), s.alpha, rows, dvp, a.v_factor);
  _tile_release();
  finish_block(a, s, dvp);
}

MINIFLOAT_ATTENTION_X86_DIAGNOSTICS_POP

#else

inline bool amx_available() noexcept { return false; }
inline void run_block_amx(const block_args& a) { run_block_scalar(a); }

#endif

}  // namespace minifloat::attention::detail::x86
