#pragma once
// The one matrix product of the model: C = A * B with fp32 (or fp64) output, where each operand
// is either 8-bit codes + scales (minifloat::quantized_tensor, multiplied by minifloat::gemm with
// fp32 accumulation) or plain values (fp32 / fp64, multiplied by OpenBLAS: the fp32 baseline, the
// gradient check, and the temporary bf16 and MX 32x32 paths, see quant_slot.hpp).
//
//   A: logical (M, K). Codes: stored (M, K) row-major. Values: stored (M, K), or (K, M) with
//      `trans` (so X^T needs no copy in fp32; the 8-bit path transposes codes, quant_slot.hpp).
//   B: logical (K, N), stored (K, N) (gemm_layout::kn) or (N, K) (gemm_layout::nk).
//   groups G: A is G stacked blocks, B is G stacked blocks, C is G stacked (M, N) blocks, and
//      C_g = A_g B_g (one attention head per group). The groups run in parallel, one thread each.
#include <cblas.h>

#include <cstddef>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>

#include <minifloat/gemm/gemm.hpp>
#include <minifloat/quant/quantized_tensor.hpp>

#include "common.hpp"

namespace lm {

template <class T>
struct operand {
  const mf::quantized_tensor* q = nullptr;  ///< 8-bit codes (float only), or
  const T* v = nullptr;                     ///< values
  std::size_t rows = 0, cols = 0;           ///< stored shape (all groups)
  bool trans = false;                       ///< values only: A is stored (K, M)
};

namespace detail {

inline std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

/// Rows [g * rows/G, (g+1) * rows/G) of a quantized tensor, as a view (scales sliced alike).
inline mf::quantized_tensor_view group_view(const mf::quantized_tensor& q, std::size_t g, std::size_t groups) {
  mf::quantized_tensor_view v = q.view();
  if (groups == 1) return v;
  const std::size_t rg = q.rows() / groups, row_bytes = q.codes().size() / q.rows();
  v.rows = rg;
  v.codes = q.codes().subspan(g * rg * row_bytes, rg * row_bytes);
  const mf::quant_scheme& s = q.scheme();
  if (s.gran == mf::granularity::mx) {
    const bool rows_of_32 = s.tile() == mf::mx_tile::square32 || s.axis == 0;
    if (rows_of_32 && rg % 32 != 0)
      throw std::logic_error("group_view: MX tiles along rows need groups of a multiple of 32 rows, got " +
                             std::to_string(rg));
    const std::size_t per = (rows_of_32 ? rg / 32 : rg) * v.scale_grid_cols();
    v.mx_scales = q.mx_scales().subspan(g * per, per);
  } else if (s.gran != mf::granularity::tensor) {
    throw std::logic_error("group_view: only per-tensor and MX operands are split into groups");
  }
  return v;
}

template <class T>
void blas_gemm(bool ta, bool tb, std::size_t m, std::size_t n, std::size_t k, const T* a, std::size_t lda, const T* b,
               std::size_t ldb, T* c, std::size_t ldc) {
  const auto i = [](std::size_t x) { return static_cast<int>(x); };
  const CBLAS_TRANSPOSE xa = ta ? CblasTrans : CblasNoTrans, xb = tb ? CblasTrans : CblasNoTrans;
  if constexpr (std::is_same_v<T, float>)
    cblas_sgemm(CblasRowMajor, xa, xb, i(m), i(n), i(k), 1.0f, a, i(lda), b, i(ldb), 0.0f, c, i(ldc));
  else
    cblas_dgemm(CblasRowMajor, xa, xb, i(m), i(n), i(k), 1.0, a, i(lda), b, i(ldb), 0.0, c, i(ldc));
}

}  // namespace detail

/// C (G * M x N) = A_g B_g for every group g (see the file comment). `threads` is the whole
/// budget: one product uses them all, groups are split over them.
template <class T>
void matmul(const operand<T>& a, const operand<T>& b, mf::gemm_layout layout, std::span<T> c, unsigned threads,
            std::size_t groups = 1) {
  const std::size_t m = (a.trans ? a.cols : a.rows / groups), k = (a.trans ? a.rows / groups : a.cols);
  const std::size_t n = layout == mf::gemm_layout::kn ? b.cols : b.rows / groups;
  const std::size_t kb = layout == mf::gemm_layout::kn ? b.rows / groups : b.cols;
  if (k != kb || c.size() != groups * m * n)
    throw std::logic_error("matmul: A is " + std::to_string(m) + "x" + std::to_string(k) + ", B is " +
                           std::to_string(kb) + "x" + std::to_string(n) + ", C has " + std::to_string(c.size()) +
                           " values, groups " + std::to_string(groups));
  if constexpr (std::is_same_v<T, float>) {
    if (a.q != nullptr || b.q != nullptr) {
      if (a.q == nullptr || b.q == nullptr) throw std::logic_error("matmul: one operand quantized, the other not");
      if (groups == 1) {
        mf::gemm(a.q->view(), b.q->view(), layout, {}, c, {.threads = threads});
        return;
      }
      parallel_rows(groups, threads, [&](std::size_t g0, std::size_t g1) {
        for (std::size_t g = g0; g < g1; ++g)
          mf::gemm(detail::group_view(*a.q, g, groups), detail::group_view(*b.q, g, groups), layout, {},
                   c.subspan(g * m * n, m * n), {.threads = 1});
      });
      return;
    }
  }
  const bool tb = layout == mf::gemm_layout::nk;
  const auto one = [&](std::size_t g) {
    detail::blas_gemm<T>(a.trans, tb, m, n, k, a.v + g * m * k, a.cols, b.v + g * k * n, b.cols, c.data() + g * m * n, n);
  };
  if (groups == 1) {
    // OpenBLAS runs single-threaded (main.cpp): the rows of C are split over the threads here,
    // so the split (and every sum) depends only on M and the thread count.
    parallel_rows(m, threads, [&](std::size_t m0, std::size_t m1) {
      const T* a0 = a.trans ? a.v + m0 : a.v + m0 * a.cols;
      detail::blas_gemm<T>(a.trans, tb, m1 - m0, n, k, a0, a.cols, b.v, b.cols, c.data() + m0 * n, n);
    });
    return;
  }
  // Per-head products are small: one thread each, the groups split over the threads.
  parallel_rows(groups, threads, [&](std::size_t g0, std::size_t g1) {
    for (std::size_t g = g0; g < g1; ++g) one(g);
  });
}

}  // namespace lm
