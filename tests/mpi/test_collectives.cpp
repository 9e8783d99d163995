// The quantized collectives under mpirun (-n 1, 2, 4): every result is compared bit for bit with
// the in-process reference (comm/reference.hpp), which every rank computes locally from every
// rank's contribution (tests/unit/comm/comm_data.hpp makes them deterministic), and with the
// other ranks' results (a hash exchanged over MPI). Collective calls must run in the same order
// on every rank, so these tests use CHECK (never REQUIRE) around them and Catch2 runs the cases
// in declaration order; a deadlock is bounded by the ctest TIMEOUT.
#include <catch2/catch.hpp>

#include <minifloat/comm/mpi.hpp>
#include <minifloat/comm/reference.hpp>

#include "unit/comm/comm_data.hpp"

namespace mf = minifloat;
namespace mc = minifloat::comm;

namespace {

std::size_t ranks() { return mc::detail::comm_size(MPI_COMM_WORLD); }
std::size_t rank() { return mc::detail::comm_rank(MPI_COMM_WORLD); }

std::vector<std::vector<float>> all_contributions(std::size_t n, unsigned seed, bool nan_on_last = false) {
  std::vector<std::vector<float>> xs;
  for (std::size_t k = 0; k < ranks(); ++k) xs.push_back(comm_test::contribution(k, n, seed));
  if (nan_on_last) xs.back() = comm_test::with_nonfinite(xs.back());
  return xs;
}

std::vector<std::span<const float>> views(const std::vector<std::vector<float>>& xs) { return {xs.begin(), xs.end()}; }

/// FNV-1a of the bits (every NaN hashed as one value).
std::uint64_t hash(std::span<const float> v) {
  std::uint64_t h = 1469598103934665603ULL;
  for (const float x : v) {
    const std::uint32_t b = std::isnan(x) ? 0x7FC00000U : std::bit_cast<std::uint32_t>(x);
    h = (h ^ b) * 1099511628211ULL;
  }
  return h;
}

/// True on every rank when every rank's v has the same hash.
bool same_on_every_rank(std::span<const float> v) {
  const std::uint64_t mine = hash(v);
  std::vector<std::uint64_t> all(ranks());
  MPI_Allgather(&mine, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD);
  return std::all_of(all.begin(), all.end(), [&](std::uint64_t h) { return h == mine; });
}

std::vector<mc::recipe> recipes() {
  std::vector<mc::recipe> r;
  for (const auto f : mc::all_wire_formats) r.push_back(mc::recipe::of(f, 1024));
  r.push_back(mc::recipe::of(mc::wire_format::hif8, 32));
  r.push_back(mc::recipe::of(mc::wire_format::mxfp8_e4m3, 64));
  auto hybrid = mc::recipe::of(mc::wire_format::hif8, 256);  // HiF8 contributions, bf16 sum
  hybrid.gather = mc::wire_format::bf16;
  r.push_back(hybrid);
  return r;
}

}  // namespace

TEST_CASE("mpi all_reduce equals the reference bit for bit, on every rank, twice", "[mpi]") {
  for (const auto& r : recipes())
    for (const std::size_t n : comm_test::sizes()) {
      const auto xs = all_contributions(n, 1);
      const auto ref = mc::reference::all_reduce(views(xs), r);
      std::vector<float> out(n, -1.0f);
      const auto res = mc::all_reduce(xs[rank()], out, r, MPI_COMM_WORLD);
      INFO("rank " << rank() << "/" << ranks() << " " << r.describe() << " n=" << n);
      CHECK(comm_test::describe_difference(out, ref.values) == "identical");
      CHECK(res.verdict == mc::step_verdict::apply);
      CHECK(res.bytes_sent == mc::all_reduce_bytes_sent(n, ranks(), rank(), r));
      CHECK(same_on_every_rank(out));
      std::vector<float> again = xs[rank()];  // in place, second run
      (void)mc::all_reduce(std::span<float>(again), r, MPI_COMM_WORLD);
      CHECK(comm_test::describe_difference(again, out) == "identical");
    }
}

TEST_CASE("mpi reduce_scatter and all_gather equal the reference", "[mpi]") {
  for (const auto& r : recipes())
    for (const std::size_t n : comm_test::sizes()) {
      const auto xs = all_contributions(n, 2);
      const auto ref = mc::reference::reduce_scatter(views(xs), r);
      const auto sh = mc::shard_range(n, ranks(), r.chunk, rank());
      std::vector<float> shard(sh.size());
      const auto res = mc::reduce_scatter(xs[rank()], shard, r, MPI_COMM_WORLD);
      INFO("rank " << rank() << " " << r.describe() << " n=" << n);
      CHECK(comm_test::describe_difference(shard, ref[rank()].values) == "identical");
      CHECK(res.verdict == mc::step_verdict::apply);
    }
  for (const auto& r : recipes())
    for (const std::size_t n : comm_test::sizes()) {
      // every rank a different count; rank 1 contributes nothing
      std::vector<std::vector<float>> xs;
      for (std::size_t k = 0; k < ranks(); ++k) xs.push_back(comm_test::contribution(k, k == 1 ? 0 : n + 7 * k, 3));
      const auto ref = mc::reference::all_gather(views(xs), r);
      const auto res = mc::all_gather(xs[rank()], r, MPI_COMM_WORLD);
      INFO("rank " << rank() << " " << r.describe() << " n=" << n);
      CHECK(res.counts == ref.counts);
      CHECK(comm_test::describe_difference(res.values, ref.values) == "identical");
      CHECK(same_on_every_rank(res.values));
    }
}

TEST_CASE("mpi all_to_all with variable counts (MoE dispatch and combine) equals the reference", "[mpi]") {
  const std::size_t p = ranks();
  for (const auto& r : recipes())
    for (const std::size_t cols : {std::size_t{1}, std::size_t{33}, std::size_t{64}}) {
      // rank k sends (k + 2 j) % 4 rows to rank j (zeros included)
      std::vector<std::vector<float>> rows;
      std::vector<mc::reference::a2a_send> sends;
      for (std::size_t k = 0; k < p; ++k) {
        std::vector<std::size_t> c(p);
        std::size_t total = 0;
        for (std::size_t j = 0; j < p; ++j) total += c[j] = (k + 2 * j) % 4;
        rows.push_back(comm_test::contribution(k, total * cols, 4));
        sends.push_back({{}, c});
      }
      for (std::size_t k = 0; k < p; ++k) sends[k].rows = rows[k];
      const auto ref = mc::reference::all_to_all(sends, cols, r);
      const auto res = mc::all_to_all(rows[rank()], cols, sends[rank()].counts, r, MPI_COMM_WORLD);
      INFO("rank " << rank() << " " << r.describe() << " cols=" << cols);
      CHECK(res.recv_counts == ref[rank()].recv_counts);
      CHECK(comm_test::describe_difference(res.rows, ref[rank()].rows) == "identical");
      // combine: the received rows go back with the received counts
      const auto back = mc::all_to_all(res.rows, cols, res.recv_counts, r, MPI_COMM_WORLD);
      CHECK(back.recv_counts == sends[rank()].counts);
      CHECK(back.rows.size() == rows[rank()].size());
      if (r.format != mc::wire_format::fp32) {
        const auto q = mc::all_to_all_quantized(rows[rank()], cols, sends[rank()].counts, r, MPI_COMM_WORLD);
        const auto qref = mc::reference::all_to_all_quantized(sends, cols, r);
        CHECK(q.rows.scheme() == qref[rank()].scheme());
        CHECK(std::equal(q.rows.codes().begin(), q.rows.codes().end(), qref[rank()].codes().begin(), qref[rank()].codes().end()));
        CHECK(std::equal(q.rows.mx_scales().begin(), q.rows.mx_scales().end(), qref[rank()].mx_scales().begin(),
                         qref[rank()].mx_scales().end()));
        CHECK(comm_test::describe_difference(q.rows.scales(), qref[rank()].scales()) == "identical");
      } else {
        CHECK_THROWS_AS(mc::all_to_all_quantized(rows[rank()], cols, sends[rank()].counts, r, MPI_COMM_WORLD),
                        mf::unsupported_error);
      }
    }
}

TEST_CASE("mpi NaN on one rank: every rank skips, values still match the reference", "[mpi]") {
  for (const auto& r : recipes()) {
    const std::size_t n = 3001;
    const auto xs = all_contributions(n, 5, true);
    std::vector<float> out(n);
    const auto res = mc::all_reduce(xs[rank()], out, r, MPI_COMM_WORLD);
    const auto ref = mc::reference::all_reduce(views(xs), r);
    INFO("rank " << rank() << " " << r.describe());
    CHECK(res.verdict == mc::step_verdict::skip);
    CHECK(ref.verdict == mc::step_verdict::skip);
    CHECK(comm_test::describe_difference(out, ref.values) == "identical");
    const auto g = mc::all_gather(xs[rank()], r, MPI_COMM_WORLD);
    CHECK(g.verdict == mc::step_verdict::skip);
    std::vector<float> shard(mc::shard_range(n, ranks(), r.chunk, rank()).size());
    CHECK(mc::reduce_scatter(xs[rank()], shard, r, MPI_COMM_WORLD).verdict == mc::step_verdict::skip);
    std::vector<std::size_t> counts(ranks(), 0);
    counts[0] = 1;
    const auto a = mc::all_to_all(std::span<const float>(xs[rank()]).first(50), 50, counts, r, MPI_COMM_WORLD);
    CHECK(a.verdict == mc::step_verdict::skip);
  }
  CHECK(mc::agree(rank() + 1 == ranks() ? mc::step_verdict::skip : mc::step_verdict::apply, MPI_COMM_WORLD) ==
        mc::step_verdict::skip);
  CHECK(mc::agree(mc::step_verdict::apply, MPI_COMM_WORLD) == mc::step_verdict::apply);
}

TEST_CASE("mpi mismatched count, format, operation or arguments: a clear error on every rank, no deadlock", "[mpi]") {
  const bool last = rank() + 1 == ranks();
  const auto h = mc::recipe::of(mc::wire_format::hif8);
  std::vector<float> x(last ? 1001 : 1000, 1.0f), out(x.size());
  if (ranks() > 1) {
    CHECK_THROWS_WITH(mc::all_reduce(x, out, h, MPI_COMM_WORLD),
                      Catch::Contains("disagree on the element count") && Catch::Contains("every rank must pass the same"));
    x.resize(1000), out.resize(1000);
    const auto other = last ? mc::recipe::of(mc::wire_format::e4m3) : h;
    CHECK_THROWS_WITH(mc::all_reduce(x, out, other, MPI_COMM_WORLD),
                      Catch::Contains("disagree on the wire recipe") && Catch::Contains("e4m3"));
    // one rank calls another collective
    if (last) CHECK_THROWS_WITH(mc::all_gather(x, h, MPI_COMM_WORLD), Catch::Contains("called all_reduce"));
    else CHECK_THROWS_WITH(mc::all_reduce(x, out, h, MPI_COMM_WORLD), Catch::Contains("but rank"));
    std::vector<std::size_t> counts(ranks(), 1);
    CHECK_THROWS_WITH(mc::all_to_all(std::span<const float>(x).first(ranks() * (last ? 5 : 4)), last ? 5 : 4, counts, h,
                                     MPI_COMM_WORLD),
                      Catch::Contains("disagree on the row length"));
  }
  // invalid arguments on one rank: it throws its own error, the others a mismatch_error naming it
  std::vector<float> short_out(last ? 10 : 1000);
  x.resize(1000);
  if (last) CHECK_THROWS_WITH(mc::all_reduce(x, short_out, h, MPI_COMM_WORLD), Catch::Contains("output needs 1000 floats"));
  else CHECK_THROWS_AS(mc::all_reduce(x, short_out, h, MPI_COMM_WORLD), mc::mismatch_error);
  std::vector<std::size_t> wrong(last ? ranks() + 1 : ranks(), 0);
  if (last) CHECK_THROWS_WITH(mc::all_to_all({}, 4, wrong, h, MPI_COMM_WORLD), Catch::Contains("one row count per rank"));
  else CHECK_THROWS_WITH(mc::all_to_all({}, 4, wrong, h, MPI_COMM_WORLD), Catch::Contains("passed invalid arguments"));
  auto bad = h;
  if (last) bad.chunk = 48;
  if (last) CHECK_THROWS_AS(mc::all_gather(x, bad, MPI_COMM_WORLD), mf::shape_error);
  else CHECK_THROWS_AS(mc::all_gather(x, bad, MPI_COMM_WORLD), mc::mismatch_error);
  // and the communicator still works afterwards
  std::vector<float> ones(100, 1.0f), sum(100);
  CHECK(mc::all_reduce(ones, sum, mc::recipe::of(mc::wire_format::fp32), MPI_COMM_WORLD).verdict == mc::step_verdict::apply);
  CHECK(sum[99] == static_cast<float>(ranks()));
}

TEST_CASE("mpi gradient_all_reduce and reduce_amax equal the reference", "[mpi]") {
  const std::vector<std::size_t> sizes = {2048, 64, 4096, 8, 0, 517};
  for (const auto f : mc::all_wire_formats)
    for (const auto red : {mc::reduction::sum, mc::reduction::mean}) {
      const auto r = mc::recipe::of(f, 256);
      std::vector<std::vector<std::vector<float>>> g(ranks());
      std::vector<std::vector<std::span<const float>>> gv(ranks());
      for (std::size_t k = 0; k < ranks(); ++k)
        for (std::size_t t = 0; t < sizes.size(); ++t) g[k].push_back(comm_test::contribution(k, sizes[t], static_cast<unsigned>(t)));
      for (std::size_t k = 0; k < ranks(); ++k) gv[k].assign(g[k].begin(), g[k].end());
      const auto ref = mc::reference::gradient_all_reduce(gv, r, red);
      auto mine = g[rank()];
      std::vector<std::span<float>> spans(mine.begin(), mine.end());
      const auto res = mc::gradient_all_reduce(spans, r, MPI_COMM_WORLD, red);
      const auto b = mc::make_bucket(sizes, r);
      std::vector<std::vector<float>> want;
      for (const auto n : sizes) want.emplace_back(n);
      std::vector<std::span<float>> wv(want.begin(), want.end());
      mc::unpack(ref.values, b, wv);
      INFO("rank " << rank() << " " << r.describe());
      CHECK(res.verdict == mc::step_verdict::apply);
      for (std::size_t t = 0; t < sizes.size(); ++t) CHECK(comm_test::describe_difference(mine[t], want[t]) == "identical");
    }
  std::vector<mf::amax_stats> st = {{static_cast<float>(rank()) + 0.5f, rank() == 0 ? 1U : 0U, 10}, {2.0f, 0, 3}};
  std::vector<std::vector<mf::amax_stats>> per;
  for (std::size_t k = 0; k < ranks(); ++k) per.push_back({{static_cast<float>(k) + 0.5f, k == 0 ? 1U : 0U, 10}, {2.0f, 0, 3}});
  mc::reduce_amax(st, MPI_COMM_WORLD);
  const auto want = mc::reference::reduce_amax(per);
  CHECK(st[0].amax == want[0].amax);
  CHECK(st[0].nonfinite == 1);
  CHECK(st[0].count == 10 * ranks());
  CHECK(st[1].amax == 2.0f);
}
