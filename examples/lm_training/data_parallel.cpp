// lm_training_dp: the lm_training model trained data-parallel under MPI (README.md, "Data-parallel
// training"). Every rank holds the whole model; rank k of P trains on rows [B k / P, B (k+1) / P)
// of every global batch of B, its gradients are averaged over the ranks with
// comm::gradient_all_reduce in a wire format, and every rank applies the same update.
//
//   mpirun -n P lm_training_dp [--smoke] [--text FILE] [--steps N] [--batch B] [--seed S]
//       [--lr X] [--warmup N] [--wire fp32,bf16,hif8,e4m3,mxfp8_e4m3] [--chunk C] [--val-windows N]
//       [--layers L --d-model D --heads H --d-ff F --context T]
//
// Runs, in order: the single-process fp32 baseline (each rank trains it alone on the whole batch;
// the same run on every rank), one data-parallel run with fp32 GEMMs per wire format, and one
// with HiF8 delayed-scaling GEMMs and a HiF8 wire, whose amax stats are reduced over the ranks
// (comm::reduce_amax) before any scaling state records them. In every data-parallel run an Inf
// gradient and a NaN activation are injected on the last rank only: every rank must skip the step
// and retry the batch. After every step the ranks compare a hash of their master weights.
// Exit 1 if the weights ever differ, a fault is not skipped and retried on every rank, or a run's
// loss does not fall.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <limits>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <minifloat/comm/mpi.hpp>

#include "../common/args.hpp"
#include "options_check.hpp"
#include "trainer.hpp"

namespace {

using namespace lm;
using minifloat_examples::arg_cursor;
using minifloat_examples::quote_arg;
using minifloat_examples::usage_error;
namespace mc = minifloat::comm;

struct options {
  std::string text = LM_TRAINING_DEFAULT_TEXT;
  train_config tc;
  std::vector<mc::wire_format> wires{mc::wire_format::fp32, mc::wire_format::bf16, mc::wire_format::hif8,
                                     mc::wire_format::e4m3, mc::wire_format::mxfp8_e4m3};
  std::size_t chunk = 256, val_windows = 0;
  bool help = false;
};

constexpr const char* usage_text =
    "usage: mpirun -n P lm_training_dp [--smoke] [--text FILE] [--steps N] [--batch B] [--seed S]\n"
    "  [--lr X] [--warmup N] [--wire LIST] [--chunk C] [--val-windows N] [--inject-inf STEP]\n"
    "  [--inject-nan STEP] [--layers L --d-model D --heads H --d-ff F --context T]\n"
    "  --wire LIST   comma list of fp32, bf16, hif8, e4m3, e5m2, mxfp8_e4m3, mxfp8_e5m2\n"
    "                (default fp32,bf16,hif8,e4m3,mxfp8_e4m3)\n"
    "  --chunk C     elements per wire scale group, a multiple of 32 in [32, 2^20] (default 256)\n";

options parse(int argc, char** argv) {
  options o;
  o.tc = smoke_config();
  for (arg_cursor arg(argc, argv); arg.next();) {
    const std::string_view a = arg.name();
    if (a == "--smoke") o.tc = smoke_config();
    else if (a == "--text") o.text = arg.value();
    else if (a == "--steps") o.tc.steps = arg.integer<std::size_t>(20, limits::steps);
    else if (a == "--batch") o.tc.batch = arg.integer<std::size_t>(1, 4096);
    else if (a == "--seed") o.tc.seed = arg.integer<std::uint64_t>(0, std::numeric_limits<std::uint64_t>::max());
    else if (a == "--lr") o.tc.opt.lr = arg.real(0.0, 1.0, true);
    else if (a == "--warmup") o.tc.opt.warmup = arg.integer<std::size_t>(0, limits::steps);
    else if (a == "--chunk") {
      o.chunk = arg.integer<std::size_t>(32, std::size_t{1} << 20);
      if (o.chunk % 32 != 0)
        throw usage_error("--chunk expects a multiple of 32 (the MX block) in [32, 2^20], got " + std::to_string(o.chunk));
    } else if (a == "--val-windows") o.val_windows = arg.integer<std::size_t>(0, std::size_t{1} << 32);
    else if (a == "--inject-inf") o.tc.inject_inf_step = arg.integer<std::size_t>(0, limits::steps);
    else if (a == "--inject-nan") o.tc.inject_nan_step = arg.integer<std::size_t>(0, limits::steps);
    else if (a == "--layers") o.tc.model.layers = arg.integer<std::size_t>(1, 64);
    else if (a == "--d-model") o.tc.model.d_model = arg.integer<std::size_t>(1, 4096);
    else if (a == "--heads") o.tc.model.heads = arg.integer<std::size_t>(1, 256);
    else if (a == "--d-ff") o.tc.model.d_ff = arg.integer<std::size_t>(1, 16384);
    else if (a == "--context") o.tc.model.context = arg.integer<std::size_t>(1, 4096);
    else if (a == "--wire") {
      o.wires.clear();
      for (const std::string& item : arg.list("wire formats")) {
        const auto w = mc::parse_wire_format(item);
        if (!w) throw usage_error("--wire: unknown format " + quote_arg(item) + "; expected fp32, bf16, hif8, e4m3, e5m2, mxfp8_e4m3 or mxfp8_e5m2");
        o.wires.push_back(*w);
      }
    } else if (a == "--help" || a == "-h") o.help = true;
    else arg.unknown();
  }
  if (!o.help) check_training_options(o.tc, "");
  return o;
}

std::uint64_t weights_hash(transformer<float>& m) {
  std::uint64_t h = 1469598103934665603ULL;
  for (auto& p : m.parameters())
    for (const float x : p.value->v) h = (h ^ std::bit_cast<std::uint32_t>(x)) * 1099511628211ULL;
  return h;
}

struct dp_result {
  std::string name;
  run_result run;
  std::vector<double> grad_sqnr;  ///< per applied step: all-reduced vs exact fp64 mean
  double bytes_per_step = 0.0;    ///< this rank, gradient all-reduce only
  std::size_t weight_mismatches = 0;
  bool faults_ok = true, falls = true;
};

double mean_loss(const run_result& r, std::size_t from, std::size_t n) {
  double s = 0.0;
  for (std::size_t i = from; i < from + n; ++i) s += r.steps[i].loss;
  return s / static_cast<double>(n);
}

void check_run(dp_result& d, const train_config& c) {
  const auto& st = d.run.steps;
  const std::size_t n = st.size();
  d.falls = n == c.steps && mean_loss(d.run, n - 10, 10) < mean_loss(d.run, 0, 10) - 0.3;
  for (const auto& fs : {c.inject_inf_step, c.inject_nan_step})
    if (fs) d.faults_ok = d.faults_ok && *fs < n && st[*fs].attempts == 2 && std::isfinite(st[*fs].loss);
  const std::size_t expected = (c.inject_inf_step ? 1U : 0U) + (c.inject_nan_step ? 1U : 0U);
  d.faults_ok = d.faults_ok && d.run.skipped == expected && d.run.given_up == 0;
}

dp_result run_dp(const options& o, const corpus& data, recipe rc, const mc::recipe& wire, std::string name, int rank, int ranks) {
  train_config c = o.tc;
  c.rank = static_cast<std::size_t>(rank), c.ranks = static_cast<std::size_t>(ranks), c.fault_rank = c.ranks - 1;
  c.threads = 1, c.quiet = true, c.log_every = 0;
  dp_result d;
  d.name = std::move(name);
  trainer tr(c, rc, data);
  const amax_reducer reduce = [](minifloat::amax_stats& st) { mc::reduce_amax(std::span<minifloat::amax_stats>(&st, 1), MPI_COMM_WORLD); };
  tr.model().for_each_slot([&](quant_slot<float>& q) { q.set_amax_reducer(&reduce); });
  bool wire_skip = false;
  double bytes = 0.0;
  std::size_t reduces = 0;
  tr.set_gradient_hook([&](std::span<const gradient_span> g) {
    std::vector<std::span<float>> t;
    std::vector<double> exact;
    for (const auto& x : g) {
      t.push_back(x.grad);
      for (const float v : x.grad) exact.push_back(static_cast<double>(v) / ranks);
    }
    MPI_Allreduce(MPI_IN_PLACE, exact.data(), static_cast<int>(exact.size()), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    const auto cr = mc::gradient_all_reduce(t, wire, MPI_COMM_WORLD, mc::reduction::mean);
    wire_skip = cr.verdict == mc::step_verdict::skip;
    bytes += static_cast<double>(cr.bytes_sent), ++reduces;
    if (wire_skip) return;
    double err = 0.0, sig = 0.0;
    std::size_t i = 0;
    for (const auto& x : g)
      for (const float v : x.grad) err += (v - exact[i]) * (v - exact[i]), sig += exact[i] * exact[i], ++i;
    if (std::isfinite(sig) && std::isfinite(err)) d.grad_sqnr.push_back(err > 0.0 ? 10.0 * std::log10(sig / err) : 300.0);
  });
  tr.set_agree_hook([&](bool stop) {
    const bool s = stop || wire_skip;
    wire_skip = false;
    return mc::agree(s ? mc::step_verdict::skip : mc::step_verdict::apply, MPI_COMM_WORLD) == mc::step_verdict::skip;
  });
  tr.set_loss_hook([&](double local) {
    MPI_Allreduce(MPI_IN_PLACE, &local, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return local / ranks;
  });
  tr.set_step_hook([&](std::size_t) {
    const std::uint64_t h = weights_hash(tr.model());
    std::vector<std::uint64_t> all(static_cast<std::size_t>(ranks));
    MPI_Allgather(&h, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD);
    if (std::any_of(all.begin(), all.end(), [&](std::uint64_t x) { return x != all[0]; })) ++d.weight_mismatches;
  });
  d.run = tr.run();
  tr.evaluate(d.run, o.val_windows);
  d.bytes_per_step = reduces > 0 ? bytes / static_cast<double>(reduces) : 0.0;
  check_run(d, c);
  return d;
}

std::string fixed(double v, int prec) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(prec) << v;
  return s.str();
}

int run(int argc, char** argv, int rank, int ranks) {
  const options o = parse(argc, argv);
  if (o.help) {
    if (rank == 0) std::cout << usage_text;
    return 0;
  }
  if (o.tc.batch % static_cast<std::size_t>(ranks) != 0)
    throw usage_error("--batch " + std::to_string(o.tc.batch) + " is not a multiple of the " + std::to_string(ranks) +
                                " ranks (every rank takes the same number of rows)");
  const corpus data = load_corpus(o.text, o.tc.model.context);
  const bool root = rank == 0;
  if (root)
    std::cout << "lm_training_dp: " << ranks << " ranks, " << o.text << ", " << o.tc.model.describe() << ", " << o.tc.steps
              << " steps of " << o.tc.batch << " (" << o.tc.batch / static_cast<std::size_t>(ranks) << " per rank); faults on rank "
              << ranks - 1 << ": Inf gradient at step " << (o.tc.inject_inf_step ? std::to_string(*o.tc.inject_inf_step) : "-")
              << ", NaN activation at step " << (o.tc.inject_nan_step ? std::to_string(*o.tc.inject_nan_step) : "-") << "\n";

  // the single-process baseline, on every rank alike (no faults: it is the reference)
  train_config bc = o.tc;
  bc.threads = 1, bc.quiet = true, bc.log_every = 0;
  bc.inject_inf_step.reset(), bc.inject_nan_step.reset();
  trainer base(bc, recipe{recipe_kind::fp32}, data);
  run_result b = base.run();
  base.evaluate(b, o.val_windows);
  if (root) std::cout << "  single process fp32: val loss " << fixed(b.val_fp32, 4) << " (" << fixed(b.wall_s, 1) << " s)\n";

  std::vector<dp_result> rows;
  for (const auto w : o.wires)
    rows.push_back(run_dp(o, data, recipe{recipe_kind::fp32}, mc::recipe::of(w, o.chunk), std::string("fp32 GEMMs, wire ") + std::string(mc::to_string(w)), rank, ranks));
  rows.push_back(run_dp(o, data, recipe{recipe_kind::hif8_delayed}, mc::recipe::of(mc::wire_format::hif8, o.chunk),
                        "HiF8 delayed GEMMs (amax reduced), wire hif8", rank, ranks));

  int failures = 0;
  if (root) {
    std::cout << "\n| run | train loss (last 10 %) | val loss (fp32 forward) | gap to single-process fp32 | grad SQNR median / min (dB) | "
                 "all-reduce bytes per step and rank | skipped | weights identical on every rank | wall s |\n"
                 "|---|---|---|---|---|---|---|---|---|\n";
  }
  for (auto& d : rows) {
    std::vector<double> s = d.grad_sqnr;
    std::sort(s.begin(), s.end());
    const double med = s.empty() ? NAN : s[s.size() / 2], lo = s.empty() ? NAN : s.front();
    const bool ok = d.weight_mismatches == 0 && d.faults_ok && d.falls;
    failures += ok ? 0 : 1;
    if (root)
      std::cout << "| " << d.name << " | " << fixed(d.run.train_loss_tail, 4) << " | " << fixed(d.run.val_fp32, 4) << " | "
                << (d.run.val_fp32 >= b.val_fp32 ? "+" : "") << fixed(100.0 * (d.run.val_fp32 - b.val_fp32) / b.val_fp32, 2) << " % | "
                << fixed(med, 1) << " / " << fixed(lo, 1) << " | " << fixed(d.bytes_per_step / 1e6, 3) << " MB | " << d.run.skipped
                << (d.faults_ok ? " (retried on every rank)" : " (FAULTS NOT HANDLED)") << " | "
                << (d.weight_mismatches == 0 ? "yes" : "NO (" + std::to_string(d.weight_mismatches) + " steps differ)") << " | "
                << fixed(d.run.wall_s, 1) << (d.falls ? "" : " (LOSS DOES NOT FALL)") << " |\n";
  }
  if (root)
    std::cout << (failures == 0 ? "\nlm_training_dp: every run trains, keeps the ranks' weights identical and skips the injected faults on every rank\n"
                                : "\nlm_training_dp: FAILED\n");
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  int code = 0;
  try {
    code = run(argc, argv, rank, ranks);
  } catch (const std::exception& e) {
    // Every rank parses the same arguments and reads the same text file, so a bad argument or
    // file stops all of them alike (rank 0 says why); a failure inside a collective is reported
    // by comm on every rank.
    const bool usage = dynamic_cast<const usage_error*>(&e) != nullptr;
    const bool alike = usage || dynamic_cast<const minifloat::io_error*>(&e) != nullptr;
    code = rank == 0 || !alike ? minifloat_examples::report("lm_training_dp", e) : usage ? 2 : 1;
  }
  MPI_Finalize();
  return code;
}
