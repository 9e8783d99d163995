#pragma once
// The in-process reference of the quantized collectives: given what each of P ranks passes, what
// each rank gets back from comm/mpi.hpp, bit for bit. It needs no MPI, so unit tests run it
// without mpirun, and the MPI tests compare every collective against it. It is written with
// minifloat::quantize() / dequantize() (the scalar reference loops), not with the SIMD codec the
// MPI path uses (comm/codec.hpp), so the comparison checks that codec too.
//
// Where rounding happens (the whole error budget of a collective; nothing depends on the order in
// which messages arrive, nor on how MPI moves the bytes):
//   all_reduce     1. each rank quantizes its contribution, chunk by chunk: q_r = Q(x_r)
//                  2. the owner of each shard dequantizes the P contributions and adds them in
//                     fp32 in rank order: s = ((0 + D(q_0)) + D(q_1)) + ... + D(q_{P-1})
//                  3. the owner quantizes its reduced shard once, Q(s) (in recipe::gather's format
//                     when it is set), and every rank returns D(Q(s)): the same bits on every rank
//                     and in every run
//   reduce_scatter steps 1-2; rank k returns s restricted to its shard (not re-quantized)
//   all_gather     every rank returns D(Q(x_r)) concatenated in rank order
//   all_to_all     rows quantized with a scale group per row; D(Q(rows)) concatenated by source
// Q and D are quantize() / dequantize() under recipe::flat_scheme() (one 1 x len tensor per chunk)
// or recipe::row_scheme(); for fp32 both are the identity. The chunks do not depend on P, so the
// quantization of one contribution does not either; for fp32 only step 2 rounds.
//
// Verdict: skip when any contribution held Inf/NaN; for all_reduce also when the fp32 sum of
// step 2 did (a finite overflow). Values are then still computed (NaN stays NaN; HiF8 / FP8
// saturate Inf), but a NaN's payload bits are not specified.
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "../quant/quantized_tensor.hpp"
#include "../recipes/scaling_rule.hpp"
#include "bucket.hpp"
#include "recipe.hpp"

namespace minifloat::comm::reference {

namespace detail {

[[nodiscard]] inline bool has_nonfinite(std::span<const float> x) { return !scan_amax(x).finite(); }

/// D(Q(x)) chunk by chunk (x starts on a chunk boundary).
[[nodiscard]] inline std::vector<float> fake_flat(std::span<const float> x, const recipe& r) {
  if (r.format == wire_format::fp32) return {x.begin(), x.end()};
  std::vector<float> out;
  out.reserve(x.size());
  const quant_scheme s = r.flat_scheme();
  for (std::size_t c0 = 0; c0 < x.size(); c0 += r.chunk) {
    const auto xc = x.subspan(c0, std::min(r.chunk, x.size() - c0));
    const auto d = dequantize(quantize(xc, 1, xc.size(), s));
    out.insert(out.end(), d.begin(), d.end());
  }
  return out;
}

/// D(Q(rows x cols)) with a scale group per row.
[[nodiscard]] inline std::vector<float> fake_rows(std::span<const float> x, std::size_t rows, std::size_t cols,
                                                  const recipe& r) {
  if (r.format == wire_format::fp32) return {x.begin(), x.end()};
  return dequantize(quantize(x, rows, cols, r.row_scheme()));
}

inline void check_ranks(std::size_t p, const char* who) {
  if (p == 0) throw shape_error(std::string(who) + ": needs at least one rank's contribution");
}

/// Steps 1-2: the fp32 sum, in rank order, of the dequantized contributions.
[[nodiscard]] inline std::vector<float> reduced_sum(std::span<const std::span<const float>> xs, const recipe& r,
                                                    bool& nonfinite, const char* who) {
  r.validate();
  check_ranks(xs.size(), who);
  const std::size_t n = xs[0].size();
  for (std::size_t k = 1; k < xs.size(); ++k)
    if (xs[k].size() != n)
      throw mismatch_error(std::string(who) + ": the ranks disagree on the element count: rank 0 passed " +
                           std::to_string(n) + ", rank " + std::to_string(k) + " passed " + std::to_string(xs[k].size()) +
                           "; every rank must pass the same");
  std::vector<float> sum(n, 0.0f);
  nonfinite = false;
  for (const auto x : xs) {
    nonfinite = nonfinite || has_nonfinite(x);
    const auto d = fake_flat(x, r);
    for (std::size_t i = 0; i < n; ++i) sum[i] += d[i];
  }
  return sum;
}

}  // namespace detail

struct flat_result {
  std::vector<float> values;
  step_verdict verdict = step_verdict::apply;
};

/// What every rank's all_reduce returns when rank k passes xs[k].
[[nodiscard]] inline flat_result all_reduce(std::span<const std::span<const float>> xs, const recipe& r) {
  bool bad = false;
  const auto sum = detail::reduced_sum(xs, r, bad, "comm::reference::all_reduce");
  bad = bad || detail::has_nonfinite(sum);
  return {detail::fake_flat(sum, r.gather_recipe()), bad ? step_verdict::skip : step_verdict::apply};
}

/// What rank k's reduce_scatter returns (element k of the result): its shard of the fp32 sum.
[[nodiscard]] inline std::vector<flat_result> reduce_scatter(std::span<const std::span<const float>> xs, const recipe& r) {
  bool bad = false;
  const auto sum = detail::reduced_sum(xs, r, bad, "comm::reference::reduce_scatter");
  std::vector<flat_result> out;
  for (std::size_t k = 0; k < xs.size(); ++k) {
    const index_range sh = shard_range(sum.size(), xs.size(), r.chunk, k);
    out.push_back({{sum.begin() + static_cast<std::ptrdiff_t>(sh.begin), sum.begin() + static_cast<std::ptrdiff_t>(sh.end)},
                   bad ? step_verdict::skip : step_verdict::apply});
  }
  return out;
}

struct gather_result {
  std::vector<float> values;
  std::vector<std::size_t> counts;
  step_verdict verdict = step_verdict::apply;
};

/// What every rank's all_gather returns when rank k passes xs[k] (counts may differ).
[[nodiscard]] inline gather_result all_gather(std::span<const std::span<const float>> xs, const recipe& r) {
  r.validate();
  detail::check_ranks(xs.size(), "comm::reference::all_gather");
  gather_result g;
  bool bad = false;
  for (const auto x : xs) {
    bad = bad || detail::has_nonfinite(x);
    const auto d = detail::fake_flat(x, r);
    g.values.insert(g.values.end(), d.begin(), d.end());
    g.counts.push_back(x.size());
  }
  g.verdict = bad ? step_verdict::skip : step_verdict::apply;
  return g;
}

/// What one rank sends in all_to_all: rows (sum(counts) x cols, row-major), counts[j] of them to
/// rank j, in destination order.
struct a2a_send {
  std::span<const float> rows;
  std::vector<std::size_t> counts;
};

struct a2a_result {
  std::vector<float> rows;                ///< received rows, by source rank
  std::vector<std::size_t> recv_counts;   ///< rows from each source
  step_verdict verdict = step_verdict::apply;
};

namespace detail {
inline void check_a2a(std::span<const a2a_send> sends, std::size_t cols, const recipe& r) {
  r.validate();
  check_ranks(sends.size(), "comm::reference::all_to_all");
  for (std::size_t k = 0; k < sends.size(); ++k) {
    if (sends[k].counts.size() != sends.size())
      throw shape_error("comm::reference::all_to_all: rank " + std::to_string(k) + " passed " +
                        std::to_string(sends[k].counts.size()) + " counts, expected one per rank (" +
                        std::to_string(sends.size()) + ")");
    std::size_t rows = 0;
    for (const auto c : sends[k].counts) rows = checked_add(rows, c, "comm::reference::all_to_all: rows");
    if (sends[k].rows.size() != checked_mul(rows, cols, "comm::reference::all_to_all: rows x cols"))
      throw shape_error("comm::reference::all_to_all: rank " + std::to_string(k) + " sends " + std::to_string(rows) +
                        " rows of " + std::to_string(cols) + " but passed " + std::to_string(sends[k].rows.size()) +
                        " values");
  }
}
}  // namespace detail

/// Element j: what rank j's all_to_all returns.
[[nodiscard]] inline std::vector<a2a_result> all_to_all(std::span<const a2a_send> sends, std::size_t cols, const recipe& r) {
  detail::check_a2a(sends, cols, r);
  const std::size_t p = sends.size();
  bool bad = false;
  std::vector<std::vector<float>> fq;
  for (const auto& s : sends) {
    bad = bad || detail::has_nonfinite(s.rows);
    fq.push_back(detail::fake_rows(s.rows, s.rows.size() / std::max<std::size_t>(cols, 1), cols, r));
    if (cols == 0) fq.back().clear();
  }
  std::vector<a2a_result> out(p);
  for (std::size_t j = 0; j < p; ++j) {
    out[j].verdict = bad ? step_verdict::skip : step_verdict::apply;
    for (std::size_t k = 0; k < p; ++k) {
      std::size_t first = 0;
      for (std::size_t d = 0; d < j; ++d) first += sends[k].counts[d];
      const auto b = fq[k].begin() + static_cast<std::ptrdiff_t>(first * cols);
      out[j].rows.insert(out[j].rows.end(), b, b + static_cast<std::ptrdiff_t>(sends[k].counts[j] * cols));
      out[j].recv_counts.push_back(sends[k].counts[j]);
    }
  }
  return out;
}

/// Element j: the rows rank j's all_to_all_quantized returns, as one quantized tensor under
/// recipe::row_scheme() (codes and scales concatenated by source; not for fp32).
[[nodiscard]] inline std::vector<quantized_tensor> all_to_all_quantized(std::span<const a2a_send> sends, std::size_t cols,
                                                                       const recipe& r) {
  detail::check_a2a(sends, cols, r);
  if (r.format == wire_format::fp32)
    throw unsupported_error("comm::all_to_all_quantized: fp32 rows are not quantized; use all_to_all");
  const std::size_t p = sends.size();
  const quant_scheme s = r.row_scheme();
  std::vector<quantized_tensor> q;
  for (const auto& snd : sends) {
    std::size_t rows = 0;
    for (const auto c : snd.counts) rows += c;
    q.push_back(quantize(snd.rows, rows, cols, s));
  }
  const std::size_t rb = minifloat::detail::code_row_bytes(s.format, cols);
  const std::size_t sb = s.gran == granularity::mx ? minifloat::detail::ceil_div(cols, mx_group) : 1;
  std::vector<quantized_tensor> out;
  for (std::size_t j = 0; j < p; ++j) {
    std::vector<std::uint8_t> codes, mx;
    std::vector<float> scales;
    std::size_t rows = 0;
    for (std::size_t k = 0; k < p; ++k) {
      std::size_t first = 0;
      for (std::size_t d = 0; d < j; ++d) first += sends[k].counts[d];
      const std::size_t c = sends[k].counts[j];
      rows += c;
      const auto cb = q[k].codes().begin() + static_cast<std::ptrdiff_t>(first * rb);
      codes.insert(codes.end(), cb, cb + static_cast<std::ptrdiff_t>(c * rb));
      if (s.gran == granularity::mx) {
        const auto mb = q[k].mx_scales().begin() + static_cast<std::ptrdiff_t>(first * sb);
        mx.insert(mx.end(), mb, mb + static_cast<std::ptrdiff_t>(c * sb));
      } else {
        const auto fb = q[k].scales().begin() + static_cast<std::ptrdiff_t>(first);
        scales.insert(scales.end(), fb, fb + static_cast<std::ptrdiff_t>(c));
      }
    }
    out.push_back(quantized_tensor::from_parts(s, rows, cols, std::move(codes), std::move(scales), std::move(mx)));
  }
  return out;
}

/// What every rank's gradient_all_reduce leaves in its tensors when rank k holds grads[k]
/// (the same list of sizes on every rank): the tensors packed into one bucket (bucket.hpp),
/// all_reduce, `red` applied, unpacked.
[[nodiscard]] inline flat_result gradient_all_reduce(std::span<const std::vector<std::span<const float>>> grads,
                                                     const recipe& r, reduction red = reduction::sum) {
  detail::check_ranks(grads.size(), "comm::reference::gradient_all_reduce");
  const bucket b = make_bucket_of(std::span<const std::span<const float>>(grads[0]), r);
  std::vector<std::vector<float>> flats;
  std::vector<std::span<const float>> views;
  for (const auto& g : grads) {
    flats.emplace_back(b.total);
    pack(std::span<const std::span<const float>>(g), b, std::span<float>(flats.back()));
  }
  for (const auto& f : flats) views.emplace_back(f);
  flat_result res = all_reduce(views, r);
  apply_reduction(res.values, red, grads.size());
  return res;  // the bucket's flat vector; unpack(res.values, b, tensors) gives the tensors
}

/// Element-wise over ranks: amax max, nonfinite and count summed (what reduce_amax leaves).
[[nodiscard]] inline std::vector<amax_stats> reduce_amax(std::span<const std::vector<amax_stats>> per_rank) {
  detail::check_ranks(per_rank.size(), "comm::reference::reduce_amax");
  std::vector<amax_stats> out = per_rank[0];
  for (std::size_t k = 1; k < per_rank.size(); ++k) {
    if (per_rank[k].size() != out.size())
      throw mismatch_error("comm::reference::reduce_amax: rank 0 passed " + std::to_string(out.size()) +
                           " stats, rank " + std::to_string(k) + " passed " + std::to_string(per_rank[k].size()));
    for (std::size_t i = 0; i < out.size(); ++i) {
      out[i].amax = std::max(out[i].amax, per_rank[k][i].amax);
      out[i].nonfinite += per_rank[k][i].nonfinite;
      out[i].count += per_rank[k][i].count;
    }
  }
  return out;
}

}  // namespace minifloat::comm::reference
