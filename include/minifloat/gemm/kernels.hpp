#pragma once
// The fast path's building blocks in their scalar form, the function-pointer types each ISA's
// versions fill in, and the choice of one ISA's set. gemm/x86/avx2.hpp has the AVX2 versions,
// each bit-identical to its scalar twin; gemm/x86/avx512.hpp the 12 x 32 AVX-512 families.
//   decode_run   n consecutive codes of one stored row -> n floats (exact element values)
//   micro-kernel an R x 16 tile (R <= 6) of the fp32_blocks order (reference.hpp):
//                single-block mode  C (+)= sum_k a_k * b_k       (the scale comes later)
//                K-block mode       per block j: p = sum_k a_k * b_k; C = fma(p, sa_j * sb_j, C)
//                Sums run k ascending with one fma per k (products are exact), like the reference.
// AVX2 code is compiled through [[gnu::target]] (no -mavx2 needed) and chosen at run time with
// the one CPU probe (simd/isa.hpp); gemm_config::isa caps the level per call.
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "operand.hpp"

#include "../simd/isa.hpp"

namespace minifloat::detail::gemm {

inline constexpr std::size_t mr = 6;   // micro-tile rows
inline constexpr std::size_t nr = 16;  // micro-tile columns (two 8-float vectors)

/// Which SIMD decoder fits a format.
enum class decode_kind : std::uint8_t { table, e4m3, e5m2, fp4 };

inline decode_kind decode_kind_of(format_id f) noexcept {
  switch (f) {
    case format_id::float8_e4m3fn: return decode_kind::e4m3;
    case format_id::float8_e5m2: return decode_kind::e5m2;
    case format_id::float4_e2m1fn: return decode_kind::fp4;
    default: return decode_kind::table;
  }
}

/// Scalar twin: codes [col, col + n) of stored row `row` -> out.
inline void decode_run_scalar(const operand& o, std::size_t row, std::size_t col, std::size_t n, float* out) noexcept {
  const std::uint8_t* r = o.codes + row * o.row_bytes;
  const float* t = o.table->data();
  if (o.bits == 4) {
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t c = col + i;
      out[i] = t[(r[c / 2] >> (4 * (c & 1))) & 0xFU];
    }
  } else {
    for (std::size_t i = 0; i < n; ++i) out[i] = t[r[col + i]];
  }
}

/// One code of stored row `row`, column `col`, decoded.
inline float decode_run_scalar_one(const operand& o, std::size_t row, std::size_t col) noexcept {
  const std::uint8_t* r = o.codes + row * o.row_bytes;
  const unsigned code = o.bits == 4 ? (static_cast<unsigned>(r[col / 2]) >> (4 * (col & 1))) & 0xFU : r[col];
  return (*o.table)[code];
}

/// Scalar twin of the micro-kernel. a: kc x mr floats (row r of step k at a[k*mr + r]);
/// b: kc x nr; c: R x nr floats with row stride ldc. l == 0: single-block mode (c is loaded
/// if load_c, else starts at 0); l > 0: K-block mode, blocks of l, scales sa[j*mr + r] and
/// sb[j*nr + col], c always loaded.
template <int R>
void kernel_scalar(std::size_t kc, const float* a, const float* b, float* c, std::size_t ldc, bool load_c,
                   std::size_t l, const float* sa, const float* sb) noexcept {
  if (l == 0) {
    for (int r = 0; r < R; ++r)
      for (std::size_t j = 0; j < nr; ++j) {
        const std::size_t ri = static_cast<std::size_t>(r);
        float acc = load_c ? c[ri * ldc + j] : 0.0f;
        for (std::size_t k = 0; k < kc; ++k) acc = std::fma(a[k * mr + ri], b[k * nr + j], acc);
        c[ri * ldc + j] = acc;
      }
    return;
  }
  for (std::size_t k0 = 0, blk = 0; k0 < kc; k0 += l, ++blk) {
    const std::size_t k1 = k0 + l < kc ? k0 + l : kc;
    for (int r = 0; r < R; ++r)
      for (std::size_t j = 0; j < nr; ++j) {
        const std::size_t ri = static_cast<std::size_t>(r);
        float p = 0.0f;
        for (std::size_t k = k0; k < k1; ++k) p = std::fma(a[k * mr + ri], b[k * nr + j], p);
        const float s = sa[blk * mr + ri] * sb[blk * nr + j];
        c[ri * ldc + j] = std::fma(p, s, c[ri * ldc + j]);
      }
  }
}

using kernel_fn = void (*)(std::size_t, const float*, const float*, float*, std::size_t, bool, std::size_t,
                           const float*, const float*);
using decode_fn = void (*)(const operand&, std::size_t, std::size_t, std::size_t, float*);
using gemv_nk_fn = void (*)(const operand&, const float*, std::size_t, std::size_t, std::size_t, std::size_t,
                            std::size_t, const float*, std::size_t, float*, std::size_t);

/// The kernel and decoder set of one ISA.
struct isa_kernels {
  kernel_fn kernel[mr + 1] = {};  // by row count 1..6
  decode_fn decode_a = nullptr, decode_b = nullptr;
  bool avx2 = false;
};

#if MINIFLOAT_SIMD_X86
/// Fills k with the AVX2 set (gemm/x86/avx2.hpp, included at the end of this header).
inline void avx2_kernels(isa_kernels& k, format_id fa, format_id fb) noexcept;
#endif

/// The kernels of the widest path `level` (already resolved: simd::detail::resolve) allows.
inline isa_kernels select_kernels(format_id fa, format_id fb, simd::isa level) noexcept {
  isa_kernels k;
#if MINIFLOAT_SIMD_X86
  if (simd::detail::allows(level, simd::isa::avx2)) {
    avx2_kernels(k, fa, fb);
    return k;
  }
#else
  (void)level, (void)fa, (void)fb;
#endif
  k.kernel[1] = &kernel_scalar<1>, k.kernel[2] = &kernel_scalar<2>, k.kernel[3] = &kernel_scalar<3>;
  k.kernel[4] = &kernel_scalar<4>, k.kernel[5] = &kernel_scalar<5>, k.kernel[6] = &kernel_scalar<6>;
  k.decode_a = k.decode_b = &decode_run_scalar;
  return k;
}

}  // namespace minifloat::detail::gemm

// Last: the AVX2 versions are written against the types above, and select_kernels needs them.
#include "x86/avx2.hpp"  // IWYU pragma: export
