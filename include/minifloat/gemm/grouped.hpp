#pragma once
// Grouped GEMM for mixture-of-experts (aclnnGroupedMatmulV4/V5 with groupListType = counts):
// one A (total_tokens x K) whose rows are split into consecutive groups by a list of token
// counts, one B (and optionally one bias) per group/expert:
//   out[r0_g .. r0_g + count_g) = A[r0_g .. r0_g + count_g) * B_g [+ bias_g]
// A's scales are read in place (a group may start inside a block of a block-scaled A), so any A
// granularity GEMM accepts works. Every B_g must have the same layout, K and N. A group of 0
// tokens is allowed and writes nothing.
#include <numeric>

#include "entry_points.hpp"
#include "blocked.hpp"

namespace minifloat {

namespace detail::gemm {

/// One group's problem: A rows [r0, r0 + rows) of `a_full`, B = b.
inline problem group_problem(const operand& a_full, std::size_t r0, std::size_t rows, const quantized_tensor_view& b,
                             gemm_layout layout, std::size_t g) {
  problem p;
  p.a = a_full;
  p.a.outer_offset = r0;
  p.a.outer = rows;
  p.b = make_operand(b, 'B', layout);
  if (p.b.k != p.a.k)
    throw shape_error("grouped_gemm: B[" + std::to_string(g) + "] has K = " + std::to_string(p.b.k) +
                      " but A has K = " + std::to_string(p.a.k));
  p.m = rows, p.n = p.b.outer, p.k = p.a.k;
  p.l = k_block(p.a, p.b);
  return p;
}

/// The checks every grouped GEMM shares: one B (and one bias span, if any) per group, and the
/// group sizes adding up to A's rows (summed in checked arithmetic: sizes that wrap around to
/// A's row count are a shape_error, not a group that runs past A).
inline void check_groups(const quantized_tensor_view& a, std::span<const std::size_t> group_sizes, std::size_t b_count,
                         std::size_t bias_count) {
  if (group_sizes.size() != b_count)
    throw shape_error("grouped_gemm: " + std::to_string(group_sizes.size()) + " group sizes but " +
                      std::to_string(b_count) + " B operands; expected one B per group");
  if (bias_count != 0 && bias_count != b_count)
    throw shape_error("grouped_gemm: bias needs one span per group (" + std::to_string(b_count) + ") or none, got " +
                      std::to_string(bias_count));
  std::size_t total = 0;
  for (const std::size_t g : group_sizes) {
    const auto t = checked_add_or(total, g);
    if (!t)
      throw shape_error("grouped_gemm: the group sizes add up to more than 2^64 - 1 tokens (" + std::to_string(total) +
                        " + " + std::to_string(g) + "); A has " + std::to_string(a.rows) + " rows");
    total = *t;
  }
  if (total != a.rows)
    throw shape_error("grouped_gemm: group sizes add up to " + std::to_string(total) + " tokens but A has " +
                      std::to_string(a.rows) + " rows");
}

/// Every check of grouped_gemm / grouped_gemm_reference; returns one problem per group.
inline std::vector<problem> grouped_problems(const quantized_tensor_view& a, std::span<const std::size_t> group_sizes,
                                             std::span<const quantized_tensor_view> b, gemm_layout layout,
                                             std::span<const std::span<const float>> bias, std::size_t out_size) {
  const operand af = make_operand(a, 'A', gemm_layout::nk);
  check_groups(a, group_sizes, b.size(), bias.size());
  const std::size_t n = b.empty() ? 0 : make_operand(b[0], 'B', layout).outer;
  check_out_size(a.rows, n, out_size, "grouped_gemm");
  std::vector<problem> problems;
  problems.reserve(b.size());
  for (std::size_t g = 0, r0 = 0; g < b.size(); r0 += group_sizes[g], ++g) {
    problems.push_back(group_problem(af, r0, group_sizes[g], b[g], layout, g));
    if (problems.back().n != n)
      throw shape_error("grouped_gemm: B[" + std::to_string(g) + "] has N = " + std::to_string(problems.back().n) +
                        " but B[0] has N = " + std::to_string(n) + "; every expert needs the same N");
    const std::span<const float> bg = bias.empty() ? std::span<const float>{} : bias[g];
    if (!bg.empty() && bg.size() != n)
      throw shape_error("grouped_gemm: bias[" + std::to_string(g) + "] needs N = " + std::to_string(n) +
                        " floats (or none), got " + std::to_string(bg.size()));
  }
  return problems;
}

template <class Run>
void grouped_run(const quantized_tensor_view& a, std::span<const std::size_t> group_sizes,
                 std::span<const quantized_tensor_view> b, gemm_layout layout,
                 std::span<const std::span<const float>> bias, std::size_t out_size, Run&& run) {
  const std::vector<problem> problems = grouped_problems(a, group_sizes, b, layout, bias, out_size);
  const std::size_t n = problems.empty() ? 0 : problems[0].n;
  if (a.rows == 0 || n == 0) return;  // nothing to write
  for (std::size_t g = 0, r0 = 0; g < b.size(); r0 += group_sizes[g], ++g)
    run(problems[g], bias.empty() ? std::span<const float>{} : bias[g], r0, n);
}

/// grouped_gemm_reference for either output type: the reference of each group into its rows.
template <class Out>
void grouped_reference(const quantized_tensor_view& a, std::span<const std::size_t> group_sizes,
                       std::span<const quantized_tensor_view> b, gemm_layout layout,
                       std::span<const std::span<const float>> bias, std::span<Out> out, gemm_accumulation mode) {
  grouped_run(a, group_sizes, b, layout, bias, out.size(),
              [&](const problem& p, std::span<const float> bg, std::size_t r0, std::size_t n) {
                reference_run(p, bg, out.subspan(r0 * n, p.m * n), mode);
              });
}

}  // namespace detail::gemm

#if MINIFLOAT_DEFINE_KERNELS(MINIFLOAT_KERNELS_GEMM)  // declared and documented in entry_points.hpp
MINIFLOAT_KERNEL_API gemm_shape validate_grouped_gemm(const quantized_tensor_view& a, std::span<const std::size_t> group_sizes,
                                        std::span<const quantized_tensor_view> b, gemm_layout layout,
                                        std::span<const std::span<const float>> bias, std::size_t out_size) {
  const auto problems = detail::gemm::grouped_problems(a, group_sizes, b, layout, bias, out_size);
  if (problems.empty()) return {a.rows, 0, a.cols, 1};
  return {a.rows, problems[0].n, problems[0].k, problems[0].l};
}
#endif

#if MINIFLOAT_DEFINE_KERNELS(MINIFLOAT_KERNELS_GEMM)  // declared and documented in entry_points.hpp
MINIFLOAT_KERNEL_API void grouped_gemm(const quantized_tensor_view& a, std::span<const std::size_t> group_sizes,
                         std::span<const quantized_tensor_view> b, gemm_layout layout,
                         std::span<const std::span<const float>> bias, std::span<float> out,
                         const gemm_config& cfg) {
  detail::gemm::grouped_run(a, group_sizes, b, layout, bias, out.size(),
                            [&](const detail::gemm::problem& p, std::span<const float> bg, std::size_t r0, std::size_t n) {
                              detail::gemm::run_fast(p, bg, out.data() + r0 * n, n, cfg);
                            });
}
MINIFLOAT_KERNEL_API void grouped_gemm(const quantized_tensor_view& a, std::span<const std::size_t> group_sizes,
                         std::span<const quantized_tensor_view> b, gemm_layout layout,
                         std::span<const std::span<const float>> bias, std::span<bfloat16> out,
                         const gemm_config& cfg) {
  std::vector<float> c(out.size());
  grouped_gemm(a, group_sizes, b, layout, bias, std::span<float>(c), cfg);
  detail::gemm::to_bf16_rows(c.data(), out);
}
#endif

#if MINIFLOAT_DEFINE_KERNELS(MINIFLOAT_KERNELS_GEMM)  // declared and documented in entry_points.hpp
MINIFLOAT_KERNEL_API void grouped_gemm_reference(const quantized_tensor_view& a, std::span<const std::size_t> group_sizes,
                                   std::span<const quantized_tensor_view> b, gemm_layout layout,
                                   std::span<const std::span<const float>> bias, std::span<float> out,
                                   gemm_accumulation mode) {
  detail::gemm::grouped_reference(a, group_sizes, b, layout, bias, out, mode);
}
MINIFLOAT_KERNEL_API void grouped_gemm_reference(const quantized_tensor_view& a, std::span<const std::size_t> group_sizes,
                                   std::span<const quantized_tensor_view> b, gemm_layout layout,
                                   std::span<const std::span<const float>> bias, std::span<bfloat16> out,
                                   gemm_accumulation mode) {
  detail::gemm::grouped_reference(a, group_sizes, b, layout, bias, out, mode);
}
#endif

}  // namespace minifloat
