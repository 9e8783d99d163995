#pragma once
// Quantized collectives on an MPI communicator (target minifloat::mpi, CMake option
// MINIFLOAT_WITH_MPI). The payload is codes + scales (comm/recipe.hpp: formats, chunks, message
// layout); the arithmetic is comm/reference.hpp's, bit for bit (that file says where rounding
// happens); the bytes are moved by MPI_Alltoallv / MPI_Allgatherv.
//
//   all_reduce(in, out, r, comm)          sum: reduce-scatter (MPI_Alltoallv of each rank's
//                                         quantized shards), fp32 accumulation in rank order by
//                                         the shard's owner, one re-quantization, all-gather
//                                         (MPI_Allgatherv). out may be in.
//   reduce_scatter(in, shard, r, comm)    shard: this rank's shard_range() of the fp32 sum
//   all_gather(in, r, comm)               counts may differ per rank
//   all_to_all(rows, cols, counts, r, comm)   counts[j] rows to rank j (MoE dispatch; the
//                                         combine is the same call with the received counts)
//   all_to_all_quantized(...)             the same, the rows returned as a quantized_tensor
//                                         (codes + scales as received, ready for a GEMM)
//   gradient_all_reduce(tensors, r, comm, reduction)  a bucket of gradient spans, in place
//   reduce_amax(stats, comm)              delayed scaling: amax max, Inf/NaN counts summed
//   agree(verdict, comm)                  skip on every rank if any rank says skip
//
// Every call is collective: every rank of `comm` must make it, in the same order. Each starts by
// exchanging a small descriptor (operation, recipe, count, local argument checks; one
// MPI_Allgather of 64 bytes a rank), so that a rank passing a different count, recipe or
// operation, or invalid arguments, makes EVERY rank throw (mismatch_error, or the rank's own
// error) instead of deadlocking or reading garbage. The Inf/NaN flag travels in every message
// header, so the verdict is agreed without another round trip.
//
// The returned collective_result counts the payload bytes this rank sent and received (headers,
// scales, codes; not the descriptor) and the seconds spent quantizing / dequantizing /
// accumulating. MPI errors (a return code other than MPI_SUCCESS, with an error handler that
// returns) throw mpi_error. Messages are limited to MPI's int counts (2^31 - 1 bytes a buffer).
#include <mpi.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "../quant/quantized_tensor.hpp"
#include "../recipes/scaling_rule.hpp"
#include "bucket.hpp"
#include "codec.hpp"
#include "recipe.hpp"

namespace minifloat::comm {

/// An MPI call failed.
class mpi_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct collective_result {
  step_verdict verdict = step_verdict::apply;
  std::size_t bytes_sent = 0;      ///< payload bytes this rank sent to other ranks
  std::size_t bytes_received = 0;  ///< payload bytes it received from other ranks
  double codec_seconds = 0.0;      ///< time in quantize / dequantize / accumulate
};

namespace detail {

inline void check_mpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw mpi_error(std::string(what) + " failed: " + std::string(text, static_cast<std::size_t>(std::max(len, 0))));
}

inline std::size_t comm_size(MPI_Comm c) {
  int n = 0;
  check_mpi(MPI_Comm_size(c, &n), "MPI_Comm_size");
  return static_cast<std::size_t>(n);
}
inline std::size_t comm_rank(MPI_Comm c) {
  int r = 0;
  check_mpi(MPI_Comm_rank(c, &r), "MPI_Comm_rank");
  return static_cast<std::size_t>(r);
}

enum class op_id : std::uint64_t { all_reduce = 1, reduce_scatter, all_gather, all_to_all, reduce_amax, agree };

constexpr const char* op_name(std::uint64_t op) noexcept {
  switch (static_cast<op_id>(op)) {
    case op_id::all_reduce: return "all_reduce";
    case op_id::reduce_scatter: return "reduce_scatter";
    case op_id::all_gather: return "all_gather";
    case op_id::all_to_all: return "all_to_all";
    case op_id::reduce_amax: return "reduce_amax";
    case op_id::agree: return "agree";
  }
  return "an unknown collective";
}

/// What a rank announces before a collective. Word order is the wire order of the exchange.
struct descriptor {
  std::uint64_t op = 0;
  std::uint64_t format = 0;
  std::uint64_t chunk = 0;
  std::uint64_t target = 0;  // hif8_target + 1024 (non-negative)
  std::uint64_t count = 0;   // elements (flat), rows (all_to_all), stats (reduce_amax), verdict (agree)
  std::uint64_t cols = 0;
  std::uint64_t fault = 0;   // 1: this rank's arguments are invalid (it throws its own error)
  std::uint64_t magic = 0x6D66636F6D6DULL;
};
inline constexpr int descriptor_words = 8;

inline std::array<std::uint64_t, descriptor_words> words(const descriptor& d) {
  return {d.op, d.format, d.chunk, d.target, d.count, d.cols, d.fault, d.magic};
}

inline descriptor describe(op_id op, const recipe& r, std::size_t count, std::size_t cols) {
  descriptor d;
  d.op = static_cast<std::uint64_t>(op);
  d.format = static_cast<std::uint64_t>(r.format) | (r.gather ? (static_cast<std::uint64_t>(*r.gather) + 1) << 8 : 0);
  d.chunk = r.chunk;
  d.target = static_cast<std::uint64_t>(static_cast<std::int64_t>(r.hif8_target) + 1024);
  d.count = count;
  d.cols = cols;
  return d;
}

inline std::string recipe_text(const std::array<std::uint64_t, descriptor_words>& w) {
  recipe r;
  r.format = static_cast<wire_format>(w[1] & 0xFFU);
  if ((w[1] >> 8) != 0) r.gather = static_cast<wire_format>((w[1] >> 8) - 1);
  r.chunk = static_cast<std::size_t>(w[2]);
  r.hif8_target = static_cast<int>(static_cast<std::int64_t>(w[3]) - 1024);
  return r.describe();
}

enum class must_match : std::uint8_t { recipe, recipe_and_count, recipe_and_cols, nothing };

/// The descriptor exchange: returns every rank's words, or throws on every rank when one faulted
/// (that rank rethrows `local`) or the ranks disagree on what must match.
inline std::vector<std::array<std::uint64_t, descriptor_words>> agree_on(descriptor mine, const std::exception_ptr& local,
                                                                         must_match what, MPI_Comm comm, const char* who) {
  if (local) mine.fault = 1;
  const std::size_t p = comm_size(comm);
  const auto w = words(mine);
  std::vector<std::array<std::uint64_t, descriptor_words>> all(p);
  check_mpi(MPI_Allgather(w.data(), descriptor_words, MPI_UINT64_T, all.data(), descriptor_words, MPI_UINT64_T, comm),
            "MPI_Allgather (collective descriptor)");
  const std::string prefix = std::string("comm::") + who + ": ";
  for (std::size_t k = 0; k < p; ++k)
    if (all[k][7] != mine.magic)
      throw mismatch_error(prefix + "rank " + std::to_string(k) +
                           " is not in a minifloat collective (its descriptor is not one); every rank must make the same calls");
  for (std::size_t k = 0; k < p; ++k)
    if (all[k][6] != 0) {
      if (local) std::rethrow_exception(local);
      throw mismatch_error(prefix + "rank " + std::to_string(k) +
                           " passed invalid arguments (it throws the details); no rank ran the collective");
    }
  const auto first_differing = [&](std::size_t word) {
    for (std::size_t k = 1; k < p; ++k)
      if (all[k][word] != all[0][word]) return k;
    return std::size_t{0};
  };
  if (const std::size_t k = first_differing(0); k != 0)
    throw mismatch_error(prefix + "rank 0 called " + op_name(all[0][0]) + " but rank " + std::to_string(k) + " called " +
                         op_name(all[k][0]) + "; every rank must make the same collective calls in the same order");
  if (what != must_match::nothing)
    for (const std::size_t word : {std::size_t{1}, std::size_t{2}, std::size_t{3}})
      if (const std::size_t k = first_differing(word); k != 0)
        throw mismatch_error(prefix + "the ranks disagree on the wire recipe: rank 0 passed " + recipe_text(all[0]) +
                             ", rank " + std::to_string(k) + " passed " + recipe_text(all[k]) +
                             "; every rank must pass the same recipe");
  if (what == must_match::recipe_and_count)
    if (const std::size_t k = first_differing(4); k != 0)
      throw mismatch_error(prefix + "the ranks disagree on the element count: rank 0 passed " + std::to_string(all[0][4]) +
                           ", rank " + std::to_string(k) + " passed " + std::to_string(all[k][4]) +
                           "; every rank must pass the same count");
  if (what == must_match::recipe_and_cols)
    if (const std::size_t k = first_differing(5); k != 0)
      throw mismatch_error(prefix + "the ranks disagree on the row length: rank 0 passed " + std::to_string(all[0][5]) +
                           " columns, rank " + std::to_string(k) + " passed " + std::to_string(all[k][5]) +
                           "; every rank must pass the same");
  return all;
}

/// Runs `checks`; returns the exception it threw (the fault is reported in the exchange).
template <class F>
std::exception_ptr capture(F&& checks) {
  try {
    checks();
  } catch (...) {
    return std::current_exception();
  }
  return nullptr;
}

inline int as_count(std::size_t n, const char* what) {
  if (n > static_cast<std::size_t>(INT_MAX))
    throw shape_error(std::string("comm: ") + what + " of " + std::to_string(n) +
                      " bytes exceeds MPI's int count limit (2^31 - 1); split the collective");
  return static_cast<int>(n);
}

/// Displacements of consecutive blocks; throws if any buffer would exceed MPI's int counts.
inline std::vector<int> displacements(const std::vector<int>& counts, const char* what) {
  std::vector<int> d(counts.size());
  std::size_t at = 0;
  for (std::size_t k = 0; k < counts.size(); ++k) {
    d[k] = as_count(at, what);
    at += static_cast<std::size_t>(counts[k]);
  }
  as_count(at, what);
  return d;
}

inline std::size_t total(const std::vector<int>& counts) {
  std::size_t t = 0;
  for (const int c : counts) t += static_cast<std::size_t>(c);
  return t;
}

/// A grow-only buffer: reused across calls, so that a collective's message buffers are neither
/// zero-filled nor faulted in again every call.
template <class T>
class scratch_buffer {
 public:
  std::span<T> get(std::size_t n) {
    if (n > capacity_) {
      data_ = std::make_unique_for_overwrite<T[]>(n);
      capacity_ = n;
    }
    return {data_.get(), n};
  }
  void release() noexcept { data_.reset(), capacity_ = 0; }

 private:
  std::unique_ptr<T[]> data_;
  std::size_t capacity_ = 0;
};

struct scratch {
  scratch_buffer<std::uint8_t> send, recv, mine, all;
};
inline scratch& thread_scratch() {
  thread_local scratch s;
  return s;
}

class stopwatch {
 public:
  void start() { t0_ = std::chrono::steady_clock::now(); }
  void stop() { seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count(); }
  double seconds = 0.0;

 private:
  std::chrono::steady_clock::time_point t0_;
};

/// The exchange of the reduce-scatter half: every rank's quantized shards to their owners. Returns
/// this rank's received messages (one per rank, in rank order, each `bytes` long; in
/// thread_scratch().recv) and whether any contribution held Inf/NaN.
struct contributions {
  std::vector<std::span<const std::uint8_t>> bodies;
  bool nonfinite = false;
};
inline contributions exchange_contributions(std::span<const float> in, const recipe& r, MPI_Comm comm, std::size_t p,
                                            std::size_t me, collective_result& res, stopwatch& sw) {
  const std::size_t n = in.size();
  std::vector<int> send_counts(p), recv_counts(p);
  for (std::size_t k = 0; k < p; ++k) send_counts[k] = as_count(flat_message_bytes(shard_range(n, p, r.chunk, k).size(), r), "message");
  const index_range mine = shard_range(n, p, r.chunk, me);
  const int mine_bytes = as_count(flat_message_bytes(mine.size(), r), "message");
  std::fill(recv_counts.begin(), recv_counts.end(), mine_bytes);
  const auto sdisp = displacements(send_counts, "send buffer"), rdisp = displacements(recv_counts, "receive buffer");
  const std::span<std::uint8_t> sendbuf = thread_scratch().send.get(total(send_counts)),
                                recvbuf = thread_scratch().recv.get(total(recv_counts));
  sw.start();
  bool bad = false;
  for (std::size_t k = 0; k < p; ++k) {
    const index_range sh = shard_range(n, p, r.chunk, k);
    const auto msg = sendbuf.subspan(static_cast<std::size_t>(sdisp[k]), static_cast<std::size_t>(send_counts[k]));
    bad = encode_flat(in.subspan(sh.begin, sh.size()), r, msg.subspan(header_bytes)) || bad;
  }
  for (std::size_t k = 0; k < p; ++k)  // every header carries the flag of the whole contribution
    write_header(sendbuf.subspan(static_cast<std::size_t>(sdisp[k])), bad, shard_range(n, p, r.chunk, k).size());
  sw.stop();
  check_mpi(MPI_Alltoallv(sendbuf.data(), send_counts.data(), sdisp.data(), MPI_BYTE, recvbuf.data(), recv_counts.data(),
                          rdisp.data(), MPI_BYTE, comm),
            "MPI_Alltoallv (reduce-scatter)");
  contributions c;
  for (std::size_t k = 0; k < p; ++k) {
    if (k != me) {
      res.bytes_sent += static_cast<std::size_t>(send_counts[k]);
      res.bytes_received += static_cast<std::size_t>(recv_counts[k]);
    }
    const auto msg = std::span<const std::uint8_t>(recvbuf).subspan(static_cast<std::size_t>(rdisp[k]), static_cast<std::size_t>(mine_bytes));
    c.nonfinite = c.nonfinite || read_header(msg).nonfinite;
    c.bodies.push_back(msg.subspan(header_bytes));
  }
  return c;
}

}  // namespace detail

/// The collectives keep their message buffers per thread between calls (an all_reduce of n
/// elements over P ranks: about 3 n + n / P bytes with 8-bit codes); this frees them.
inline void release_scratch() noexcept {
  auto& s = detail::thread_scratch();
  s.send.release(), s.recv.release(), s.mine.release(), s.all.release();
}

/// Sum over the ranks of `in`, quantized as comm/reference.hpp describes; out (in.size()
/// floats; may be `in` itself) gets the same bits on every rank.
inline collective_result all_reduce(std::span<const float> in, std::span<float> out, const recipe& r, MPI_Comm comm) {
  const auto err = detail::capture([&] {
    r.validate();
    if (out.size() != in.size())
      throw shape_error("comm::all_reduce: output needs " + std::to_string(in.size()) + " floats (the input's count), got " +
                        std::to_string(out.size()));
    (void)detail::as_count(flat_message_bytes(in.size(), r), "message");
    (void)detail::as_count(flat_message_bytes(in.size(), r.gather_recipe()), "message");
  });
  detail::agree_on(detail::describe(detail::op_id::all_reduce, r, in.size(), 0), err, detail::must_match::recipe_and_count,
                   comm, "all_reduce");
  const std::size_t p = detail::comm_size(comm), me = detail::comm_rank(comm), n = in.size();
  collective_result res;
  detail::stopwatch sw;
  const detail::contributions c = detail::exchange_contributions(in, r, comm, p, me, res, sw);
  // The all-gather half: this rank's reduced shard, quantized once (fused with the sum, which
  // gives the bits of summing the whole shard first).
  const recipe rg = r.gather_recipe();
  std::vector<int> counts(p);
  for (std::size_t k = 0; k < p; ++k) counts[k] = detail::as_count(flat_message_bytes(shard_range(n, p, r.chunk, k).size(), rg), "message");
  const auto disp = detail::displacements(counts, "gather buffer");
  const std::span<std::uint8_t> mine = detail::thread_scratch().mine.get(static_cast<std::size_t>(counts[me])),
                                all = detail::thread_scratch().all.get(detail::total(counts));
  const std::size_t own = shard_range(n, p, r.chunk, me).size();
  sw.start();
  const bool bad = reduce_encode_flat(c.bodies, own, r, rg, std::span(mine).subspan(header_bytes)) || c.nonfinite;
  detail::write_header(mine, bad, own);
  sw.stop();
  detail::check_mpi(MPI_Allgatherv(mine.data(), counts[me], MPI_BYTE, all.data(), counts.data(), disp.data(), MPI_BYTE, comm),
                    "MPI_Allgatherv (all-gather)");
  sw.start();
  bool any = false;
  const bool streamed = streams_output(rg, n);
  for (std::size_t k = 0; k < p; ++k) {
    const index_range sh = shard_range(n, p, r.chunk, k);
    const auto msg = std::span<const std::uint8_t>(all).subspan(static_cast<std::size_t>(disp[k]), static_cast<std::size_t>(counts[k]));
    any = any || detail::read_header(msg).nonfinite;
    decode_flat(msg.subspan(header_bytes), rg, out.subspan(sh.begin, sh.size()), streamed);
    if (k != me) {
      res.bytes_sent += static_cast<std::size_t>(counts[me]);
      res.bytes_received += static_cast<std::size_t>(counts[k]);
    }
  }
  if (streamed) simd::stream_fence();
  sw.stop();
  res.verdict = any ? step_verdict::skip : step_verdict::apply;
  res.codec_seconds = sw.seconds;
  return res;
}

/// In-place all_reduce.
inline collective_result all_reduce(std::span<float> inout, const recipe& r, MPI_Comm comm) {
  return all_reduce(std::span<const float>(inout), inout, r, comm);
}

/// This rank's shard (shard_range(in.size(), ranks, r.chunk, rank)) of the fp32 sum of the
/// dequantized contributions. The verdict covers the contributions.
inline collective_result reduce_scatter(std::span<const float> in, std::span<float> shard, const recipe& r, MPI_Comm comm) {
  const auto err = detail::capture([&] {
    r.validate();
    const index_range sh = shard_range(in.size(), detail::comm_size(comm), r.chunk, detail::comm_rank(comm));
    if (shard.size() != sh.size())
      throw shape_error("comm::reduce_scatter: this rank's shard is elements [" + std::to_string(sh.begin) + ", " +
                        std::to_string(sh.end) + ") of " + std::to_string(in.size()) + ", so the output needs " +
                        std::to_string(sh.size()) + " floats, got " + std::to_string(shard.size()));
    (void)detail::as_count(flat_message_bytes(in.size(), r), "message");
  });
  detail::agree_on(detail::describe(detail::op_id::reduce_scatter, r, in.size(), 0), err,
                   detail::must_match::recipe_and_count, comm, "reduce_scatter");
  const std::size_t p = detail::comm_size(comm), me = detail::comm_rank(comm);
  collective_result res;
  detail::stopwatch sw;
  const detail::contributions c = detail::exchange_contributions(in, r, comm, p, me, res, sw);
  sw.start();
  std::fill(shard.begin(), shard.end(), 0.0f);
  for (const auto& body : c.bodies) accumulate_flat(body, r, shard);  // rank order: the documented summation order
  sw.stop();
  res.verdict = c.nonfinite ? step_verdict::skip : step_verdict::apply;
  res.codec_seconds = sw.seconds;
  return res;
}

struct all_gather_result : collective_result {
  std::vector<float> values;        ///< every rank's dequantized contribution, in rank order
  std::vector<std::size_t> counts;  ///< elements from each rank
};

/// Every rank's `in` (counts may differ, 0 included), quantized chunk by chunk, concatenated.
inline all_gather_result all_gather(std::span<const float> in, const recipe& r, MPI_Comm comm) {
  const auto err = detail::capture([&] {
    r.validate();
    (void)detail::as_count(flat_message_bytes(in.size(), r), "message");
  });
  const auto all_d = detail::agree_on(detail::describe(detail::op_id::all_gather, r, in.size(), 0), err,
                                      detail::must_match::recipe, comm, "all_gather");
  const std::size_t p = all_d.size(), me = detail::comm_rank(comm);
  all_gather_result res;
  std::vector<int> counts(p);
  std::size_t n_total = 0;
  for (std::size_t k = 0; k < p; ++k) {
    res.counts.push_back(static_cast<std::size_t>(all_d[k][4]));
    counts[k] = detail::as_count(flat_message_bytes(res.counts[k], r), "message");
    n_total = checked_add(n_total, res.counts[k], "comm::all_gather: total count");
  }
  const auto disp = detail::displacements(counts, "gather buffer");
  detail::stopwatch sw;
  const std::span<std::uint8_t> mine = detail::thread_scratch().mine.get(static_cast<std::size_t>(counts[me])),
                                all = detail::thread_scratch().all.get(detail::total(counts));
  sw.start();
  const bool bad = encode_flat(in, r, std::span(mine).subspan(header_bytes));
  detail::write_header(mine, bad, in.size());
  sw.stop();
  detail::check_mpi(MPI_Allgatherv(mine.data(), counts[me], MPI_BYTE, all.data(), counts.data(), disp.data(), MPI_BYTE, comm),
                    "MPI_Allgatherv");
  sw.start();
  res.values.resize(n_total);
  bool any = false;
  for (std::size_t k = 0, at = 0; k < p; at += res.counts[k], ++k) {
    const auto msg = std::span<const std::uint8_t>(all).subspan(static_cast<std::size_t>(disp[k]), static_cast<std::size_t>(counts[k]));
    any = any || detail::read_header(msg).nonfinite;
    decode_flat(msg.subspan(header_bytes), r, std::span(res.values).subspan(at, res.counts[k]));
    if (k != me) {
      res.bytes_sent += static_cast<std::size_t>(counts[me]);
      res.bytes_received += static_cast<std::size_t>(counts[k]);
    }
  }
  sw.stop();
  res.verdict = any ? step_verdict::skip : step_verdict::apply;
  res.codec_seconds = sw.seconds;
  return res;
}

namespace detail {

struct a2a_exchange {
  std::span<std::uint8_t> recv;  // thread_scratch().recv
  std::vector<int> counts, disp;
  std::vector<std::size_t> rows;
};

inline a2a_exchange all_to_all_core(std::span<const float> rows, std::size_t cols, std::span<const std::size_t> send_rows,
                                    const recipe& r, MPI_Comm comm, collective_result& res, stopwatch& sw, const char* who) {
  const std::size_t p = comm_size(comm), me = comm_rank(comm);
  std::size_t total_rows = 0;
  const auto err = capture([&] {
    r.validate();
    if (send_rows.size() != p)
      throw shape_error(std::string("comm::") + who + ": needs one row count per rank (" + std::to_string(p) + "), got " +
                        std::to_string(send_rows.size()));
    for (const std::size_t c : send_rows) {
      total_rows = checked_add(total_rows, c, "comm::all_to_all: rows");
      (void)as_count(row_message_bytes(c, cols, r), "message");
    }
    if (rows.size() != checked_mul(total_rows, cols, "comm::all_to_all: rows x cols"))
      throw shape_error(std::string("comm::") + who + ": the counts add up to " + std::to_string(total_rows) + " rows of " +
                        std::to_string(cols) + " = " + std::to_string(total_rows * cols) + " values, got " +
                        std::to_string(rows.size()));
  });
  agree_on(describe(op_id::all_to_all, r, total_rows, cols), err, must_match::recipe_and_cols, comm, who);
  std::vector<std::uint64_t> sc(send_rows.begin(), send_rows.end()), rc(p);
  check_mpi(MPI_Alltoall(sc.data(), 1, MPI_UINT64_T, rc.data(), 1, MPI_UINT64_T, comm), "MPI_Alltoall (row counts)");
  a2a_exchange ex;
  std::vector<int> send_counts(p);
  ex.counts.resize(p);
  for (std::size_t k = 0; k < p; ++k) {
    ex.rows.push_back(static_cast<std::size_t>(rc[k]));
    send_counts[k] = as_count(row_message_bytes(send_rows[k], cols, r), "message");
    ex.counts[k] = as_count(row_message_bytes(ex.rows[k], cols, r), "message");
  }
  const auto sdisp = displacements(send_counts, "send buffer");
  ex.disp = displacements(ex.counts, "receive buffer");
  const std::span<std::uint8_t> sendbuf = thread_scratch().send.get(total(send_counts));
  ex.recv = thread_scratch().recv.get(total(ex.counts));
  sw.start();
  bool bad = false;
  for (std::size_t k = 0, first = 0; k < p; first += send_rows[k], ++k) {
    const auto msg = sendbuf.subspan(static_cast<std::size_t>(sdisp[k]), static_cast<std::size_t>(send_counts[k]));
    bad = encode_rows(rows.subspan(first * cols, send_rows[k] * cols), send_rows[k], cols, r, msg.subspan(header_bytes)) || bad;
  }
  for (std::size_t k = 0; k < p; ++k)
    write_header(sendbuf.subspan(static_cast<std::size_t>(sdisp[k])), bad, send_rows[k]);
  sw.stop();
  check_mpi(MPI_Alltoallv(sendbuf.data(), send_counts.data(), sdisp.data(), MPI_BYTE, ex.recv.data(), ex.counts.data(),
                          ex.disp.data(), MPI_BYTE, comm),
            "MPI_Alltoallv (rows)");
  bool any = false;
  for (std::size_t k = 0; k < p; ++k) {
    any = any || read_header(std::span<const std::uint8_t>(ex.recv).subspan(static_cast<std::size_t>(ex.disp[k]))).nonfinite;
    if (k != me) {
      res.bytes_sent += static_cast<std::size_t>(send_counts[k]);
      res.bytes_received += static_cast<std::size_t>(ex.counts[k]);
    }
  }
  res.verdict = any ? step_verdict::skip : step_verdict::apply;
  return ex;
}

}  // namespace detail

struct all_to_all_result : collective_result {
  std::vector<float> rows;               ///< received rows (dequantized), by source rank
  std::vector<std::size_t> recv_counts;  ///< rows from each source rank
};

/// Sends send_counts[j] consecutive rows of `rows` (sum x cols, row-major) to rank j, each row
/// quantized with its own scale group (recipe::row_scheme()).
inline all_to_all_result all_to_all(std::span<const float> rows, std::size_t cols, std::span<const std::size_t> send_counts,
                                    const recipe& r, MPI_Comm comm) {
  all_to_all_result res;
  detail::stopwatch sw;
  const auto ex = detail::all_to_all_core(rows, cols, send_counts, r, comm, res, sw, "all_to_all");
  std::size_t total_rows = 0;
  for (const auto c : ex.rows) total_rows += c;
  res.rows.resize(total_rows * cols);
  sw.start();
  for (std::size_t k = 0, at = 0; k < ex.rows.size(); at += ex.rows[k], ++k) {
    const auto msg = std::span<const std::uint8_t>(ex.recv).subspan(static_cast<std::size_t>(ex.disp[k]), static_cast<std::size_t>(ex.counts[k]));
    decode_rows(msg.subspan(header_bytes), ex.rows[k], cols, r, std::span(res.rows).subspan(at * cols, ex.rows[k] * cols));
  }
  sw.stop();
  res.recv_counts = ex.rows;
  res.codec_seconds = sw.seconds;
  return res;
}

struct all_to_all_quantized_result : collective_result {
  quantized_tensor rows;                 ///< received rows under recipe::row_scheme(), by source
  std::vector<std::size_t> recv_counts;  ///< rows from each source rank
};

/// all_to_all whose received rows stay quantized: codes and scales as they arrived, one
/// quantized_tensor (token or MX axis-1 scales: a GEMM's A operand). Not for fp32.
inline all_to_all_quantized_result all_to_all_quantized(std::span<const float> rows, std::size_t cols,
                                                        std::span<const std::size_t> send_counts, const recipe& r,
                                                        MPI_Comm comm) {
  if (r.format == wire_format::fp32)  // reported through the exchange (it throws), so that no peer hangs
    detail::agree_on(detail::describe(detail::op_id::all_to_all, r, 0, cols),
                     std::make_exception_ptr(unsupported_error(
                         "comm::all_to_all_quantized: fp32 rows are not quantized; use all_to_all")),
                     detail::must_match::recipe_and_cols, comm, "all_to_all_quantized");
  all_to_all_quantized_result res;
  detail::stopwatch sw;
  const auto ex = detail::all_to_all_core(rows, cols, send_counts, r, comm, res, sw, "all_to_all_quantized");
  const quant_scheme s = r.row_scheme();
  std::size_t total_rows = 0;
  for (const auto c : ex.rows) total_rows += c;
  const std::size_t rb = minifloat::detail::code_row_bytes(s.format, cols), sbr = row_scale_bytes(cols, r);
  std::vector<std::uint8_t> codes, mx;
  std::vector<float> scales;
  codes.reserve(total_rows * rb);
  sw.start();
  for (std::size_t k = 0; k < ex.rows.size(); ++k) {
    const auto body = std::span<const std::uint8_t>(ex.recv).subspan(static_cast<std::size_t>(ex.disp[k]) + header_bytes,
                                                                     static_cast<std::size_t>(ex.counts[k]) - header_bytes);
    const std::size_t sb = ex.rows[k] * sbr;
    codes.insert(codes.end(), body.begin() + static_cast<std::ptrdiff_t>(sb), body.end());
    if (s.gran == granularity::mx) {
      mx.insert(mx.end(), body.begin(), body.begin() + static_cast<std::ptrdiff_t>(sb));
    } else if (scale_kind_of(r.format) == scale_kind::fp32) {
      for (std::size_t i = 0; i < ex.rows[k]; ++i) scales.push_back(detail::get_scale(body, i));
    }
  }
  if (r.format == wire_format::bf16) scales.assign(total_rows, 1.0f);  // bf16 rows carry no scale: s = 1
  res.rows = quantized_tensor::from_parts(s, total_rows, cols, std::move(codes), std::move(scales), std::move(mx));
  sw.stop();
  res.recv_counts = ex.rows;
  res.codec_seconds = sw.seconds;
  return res;
}

/// Data-parallel gradients: the tensors (the same sizes on every rank) packed into one bucket
/// (bucket.hpp), all_reduce'd with `r`, divided by the rank count for reduction::mean, unpacked
/// in place. Every rank ends with the same bits; the verdict says whether to skip the step.
inline collective_result gradient_all_reduce(std::span<const std::span<float>> tensors, const recipe& r, MPI_Comm comm,
                                             reduction red = reduction::sum) {
  bucket b;
  const auto err = detail::capture([&] {
    r.validate();
    b = make_bucket_of(tensors, r);
  });
  if (err) {  // report through all_reduce's exchange
    detail::agree_on(detail::describe(detail::op_id::all_reduce, r, 0, 0), err, detail::must_match::recipe_and_count, comm,
                     "gradient_all_reduce");
  }
  std::vector<float> flat(b.total);
  pack(tensors, b, std::span<float>(flat));
  const collective_result res = all_reduce(std::span<float>(flat), r, comm);
  apply_reduction(flat, red, detail::comm_size(comm));
  unpack(flat, b, tensors);
  return res;
}

/// Transformer Engine's reduce_amax for delayed scaling: each stat's amax becomes the max over the
/// ranks, its nonfinite and count the sums, on every rank. Record the reduced stats
/// (delayed_scaling::step(stats, x)) on every rank and the amax histories stay identical.
inline void reduce_amax(std::span<amax_stats> stats, MPI_Comm comm) {
  detail::agree_on(detail::describe(detail::op_id::reduce_amax, recipe{}, stats.size(), 0), nullptr,
                   detail::must_match::recipe_and_count, comm, "reduce_amax");
  if (stats.empty()) return;
  std::vector<float> amax(stats.size());
  std::vector<std::uint64_t> counts(2 * stats.size());
  for (std::size_t i = 0; i < stats.size(); ++i) {
    amax[i] = stats[i].amax;
    counts[2 * i] = stats[i].nonfinite;
    counts[2 * i + 1] = stats[i].count;
  }
  detail::check_mpi(MPI_Allreduce(MPI_IN_PLACE, amax.data(), detail::as_count(amax.size(), "amax count"), MPI_FLOAT, MPI_MAX, comm),
                    "MPI_Allreduce (amax)");
  detail::check_mpi(MPI_Allreduce(MPI_IN_PLACE, counts.data(), detail::as_count(counts.size(), "stat count"), MPI_UINT64_T,
                                  MPI_SUM, comm),
                    "MPI_Allreduce (nonfinite counts)");
  for (std::size_t i = 0; i < stats.size(); ++i) {
    stats[i].amax = amax[i];
    stats[i].nonfinite = static_cast<std::size_t>(counts[2 * i]);
    stats[i].count = static_cast<std::size_t>(counts[2 * i + 1]);
  }
}

/// The cross-rank skip rule: skip on every rank when any rank says skip.
[[nodiscard]] inline step_verdict agree(step_verdict local, MPI_Comm comm) {
  auto d = detail::describe(detail::op_id::agree, recipe{}, 0, 0);
  d.cols = local == step_verdict::skip ? 1 : 0;  // cols is not compared for agree
  const auto all = detail::agree_on(d, nullptr, detail::must_match::recipe, comm, "agree");
  for (const auto& w : all)
    if (w[5] != 0) return step_verdict::skip;
  return step_verdict::apply;
}

}  // namespace minifloat::comm
