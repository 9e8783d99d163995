// moe_all_to_all: a mixture-of-experts layer over MPI ranks whose token dispatch and combine are
// the quantized all-to-all (comm/mpi.hpp) and whose experts run the grouped GEMM (W4A8: expert
// weights MXFP4, activations MXFP8 E4M3 or HiF8).
//
//   mpirun -n P moe_all_to_all [--tokens T] [--act mxfp8_e4m3|hif8|all]      P in {1, 2, 4, 8}, T <= 65536
//
// The layer (8 experts, top-2 routing, expert e on rank e / (8 / P)):
//   router   logits = x Wr^T in fp32; each token picks its 2 largest logits, gates = softmax of the two
//   dispatch every (token, choice) row goes to its expert's rank: all_to_all_quantized, so the rows
//            arrive as codes + scales (per-token HiF8, or MXFP8 blocks along the hidden dim), which
//            are exactly the expert GEMM's A operand: they are not quantized again
//   experts  h = silu(A W1_e^T), quantized like the activations, y = h W2_e^T (grouped_gemm over the
//            rank's experts; W1, W2 MXFP4 with blocks along K)
//   combine  y rows return with all_to_all (the received counts, reversed), dequantized, and
//            out[t] = g0 y(t, 0) + g1 y(t, 1) in fp32
//
// Checks (rank 0, over all P * T tokens): the output equals, bit for bit, the same layer computed
// in one process with the in-process reference of the collectives (comm/reference.hpp), so it does
// not depend on P; and its SQNR against the layer in fp32 (fp32 weights and activations, no
// quantization), next to the SQNR of the one-process W4A8 layer with an fp32 combine (what the
// quantized combine costs). Exit code 1 if the bits differ or the SQNR is below 10 dB.
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <numeric>
#include <string>
#include <string_view>
#include <vector>

#include <minifloat/comm/mpi.hpp>
#include <minifloat/comm/reference.hpp>
#include <minifloat/gemm/gemm.hpp>
#include <minifloat/quant/quantized_tensor.hpp>

#include "../common/args.hpp"

namespace mf = minifloat;
namespace mc = minifloat::comm;

namespace {

constexpr std::size_t d_model = 128, d_ffn = 256, experts = 8, top_k = 2;

std::uint64_t mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}
/// Deterministic N(0, 1)-ish values (sum of 4 uniforms, scaled), the same on every rank.
float value(std::uint64_t stream, std::uint64_t i) {
  double s = 0.0;
  for (std::uint64_t k = 0; k < 4; ++k) s += static_cast<double>(mix(stream * 0x9E3779B97F4A7C15ULL + 4 * i + k) >> 11) * 0x1.0p-53;
  return static_cast<float>((s - 2.0) * std::sqrt(3.0));
}
std::vector<float> matrix(std::uint64_t stream, std::size_t rows, std::size_t cols, float scale) {
  std::vector<float> m(rows * cols);
  for (std::size_t i = 0; i < m.size(); ++i) m[i] = scale * value(stream, i);
  return m;
}

struct weights {
  std::vector<float> router;                 // experts x d_model
  std::vector<std::vector<float>> w1, w2;    // per expert: d_ffn x d_model, d_model x d_ffn (out, in)
  std::vector<mf::quantized_tensor> q1, q2;  // MXFP4, blocks along K
};

weights make_weights() {
  weights w;
  w.router = matrix(1, experts, d_model, 1.0f / std::sqrt(static_cast<float>(d_model)));
  const auto mxfp4 = mf::quant_scheme::make(mf::format_id::float4_e2m1fn, mf::granularity::mx);
  for (std::size_t e = 0; e < experts; ++e) {
    w.w1.push_back(matrix(100 + e, d_ffn, d_model, 1.0f / std::sqrt(static_cast<float>(d_model))));
    w.w2.push_back(matrix(200 + e, d_model, d_ffn, 1.0f / std::sqrt(static_cast<float>(d_ffn))));
    w.q1.push_back(mf::quantize(w.w1.back(), d_ffn, d_model, mxfp4));
    w.q2.push_back(mf::quantize(w.w2.back(), d_model, d_ffn, mxfp4));
  }
  return w;
}

/// Token t's row: heavier tails in a few channels, as activations have.
std::vector<float> tokens(std::size_t first, std::size_t count) {
  std::vector<float> x(count * d_model);
  for (std::size_t t = 0; t < count; ++t)
    for (std::size_t c = 0; c < d_model; ++c)
      x[t * d_model + c] = value(7, (first + t) * d_model + c) * (c % 16 == 3 ? 6.0f : 1.0f);
  return x;
}

struct route {
  std::array<std::size_t, top_k> expert{};
  std::array<float, top_k> gate{};
};

std::vector<route> routing(const std::vector<float>& x, std::size_t count, const weights& w) {
  std::vector<route> r(count);
  for (std::size_t t = 0; t < count; ++t) {
    std::array<float, experts> logit{};
    for (std::size_t e = 0; e < experts; ++e) {
      float s = 0.0f;
      for (std::size_t c = 0; c < d_model; ++c) s += x[t * d_model + c] * w.router[e * d_model + c];
      logit[e] = s;
    }
    std::array<std::size_t, experts> order{};
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return logit[a] > logit[b]; });
    const float m = logit[order[0]], e1 = std::exp(logit[order[1]] - m);
    r[t].expert = {order[0], order[1]};
    r[t].gate = {1.0f / (1.0f + e1), e1 / (1.0f + e1)};
  }
  return r;
}

float silu(float v) { return v / (1.0f + std::exp(-v)); }

/// The rows of q in the order `perm` (row i of the result is row perm[i] of q).
mf::quantized_tensor permute_rows(const mf::quantized_tensor& q, const std::vector<std::size_t>& perm) {
  const std::size_t rb = q.rows() == 0 ? 0 : q.codes().size() / q.rows();
  const std::size_t mb = q.rows() == 0 ? 0 : q.mx_scales().size() / q.rows();
  const std::size_t fb = q.rows() == 0 ? 0 : q.scales().size() / q.rows();
  std::vector<std::uint8_t> codes, mx;
  std::vector<float> scales;
  for (const std::size_t r : perm) {
    codes.insert(codes.end(), q.codes().begin() + static_cast<std::ptrdiff_t>(r * rb), q.codes().begin() + static_cast<std::ptrdiff_t>((r + 1) * rb));
    mx.insert(mx.end(), q.mx_scales().begin() + static_cast<std::ptrdiff_t>(r * mb), q.mx_scales().begin() + static_cast<std::ptrdiff_t>((r + 1) * mb));
    scales.insert(scales.end(), q.scales().begin() + static_cast<std::ptrdiff_t>(r * fb), q.scales().begin() + static_cast<std::ptrdiff_t>((r + 1) * fb));
  }
  return mf::quantized_tensor::from_parts(q.scheme(), perm.size(), q.cols(), std::move(codes), std::move(scales), std::move(mx));
}

/// The experts [e0, e0 + group_sizes.size()) on rows a (grouped by expert): y = (silu(a W1^T))q W2^T.
std::vector<float> run_experts(const mf::quantized_tensor& a, const std::vector<std::size_t>& group_sizes, std::size_t e0,
                               const weights& w, const mc::recipe& act) {
  std::vector<mf::quantized_tensor_view> b1, b2;
  for (std::size_t g = 0; g < group_sizes.size(); ++g) b1.push_back(w.q1[e0 + g].view()), b2.push_back(w.q2[e0 + g].view());
  std::vector<float> h(a.rows() * d_ffn), y(a.rows() * d_model);
  mf::grouped_gemm(a.view(), group_sizes, b1, mf::gemm_layout::nk, {}, std::span<float>(h));
  for (float& v : h) v = silu(v);
  const auto hq = mf::quantize(h, a.rows(), d_ffn, act.row_scheme());
  mf::grouped_gemm(hq.view(), group_sizes, b2, mf::gemm_layout::nk, {}, std::span<float>(y));
  return y;
}

/// Rows of the (token, choice) pairs sorted by (expert, token, choice): the dispatch order.
struct dispatch_plan {
  std::vector<std::size_t> token, choice, expert;
};
dispatch_plan plan(const std::vector<route>& r) {
  dispatch_plan p;
  for (std::size_t e = 0; e < experts; ++e)
    for (std::size_t t = 0; t < r.size(); ++t)
      for (std::size_t k = 0; k < top_k; ++k)
        if (r[t].expert[k] == e) p.token.push_back(t), p.choice.push_back(k), p.expert.push_back(e);
  return p;
}

std::vector<float> combine(const std::vector<float>& y, const dispatch_plan& p, const std::vector<route>& r) {
  std::vector<std::array<const float*, top_k>> rows(r.size());
  for (std::size_t i = 0; i < p.token.size(); ++i) rows[p.token[i]][p.choice[i]] = y.data() + i * d_model;
  std::vector<float> out(r.size() * d_model);
  for (std::size_t t = 0; t < r.size(); ++t)
    for (std::size_t c = 0; c < d_model; ++c) {
      float s = 0.0f;
      for (std::size_t k = 0; k < top_k; ++k) s += r[t].gate[k] * rows[t][k][c];
      out[t * d_model + c] = s;
    }
  return out;
}

/// The whole layer in one process on `count` tokens. transport: the combine rows pass through the
/// in-process reference of the quantized all-to-all (else they stay fp32); quantized: W4A8 (else
/// everything fp32, the reference of the SQNR).
enum class transport : std::uint8_t { quantized, fp32 };
enum class arithmetic : std::uint8_t { w4a8, fp32 };
std::vector<float> one_process(const std::vector<float>& x, std::size_t count, const weights& w, const mc::recipe& act,
                               transport tr, arithmetic ar) {
  const auto r = routing(x, count, w);
  const auto p = plan(r);
  std::vector<float> rows(p.token.size() * d_model);
  for (std::size_t i = 0; i < p.token.size(); ++i)
    std::copy_n(x.begin() + static_cast<std::ptrdiff_t>(p.token[i] * d_model), d_model, rows.begin() + static_cast<std::ptrdiff_t>(i * d_model));
  std::vector<std::size_t> groups(experts, 0);
  for (const auto e : p.expert) ++groups[e];
  std::vector<float> y(rows.size());
  if (ar == arithmetic::w4a8) {
    y = run_experts(mf::quantize(rows, p.token.size(), d_model, act.row_scheme()), groups, 0, w, act);
  } else {
    for (std::size_t i = 0; i < p.token.size(); ++i) {
      const std::size_t e = p.expert[i];
      std::vector<float> h(d_ffn);
      for (std::size_t j = 0; j < d_ffn; ++j) {
        float s = 0.0f;
        for (std::size_t c = 0; c < d_model; ++c) s += rows[i * d_model + c] * w.w1[e][j * d_model + c];
        h[j] = silu(s);
      }
      for (std::size_t c = 0; c < d_model; ++c) {
        float s = 0.0f;
        for (std::size_t j = 0; j < d_ffn; ++j) s += h[j] * w.w2[e][c * d_ffn + j];
        y[i * d_model + c] = s;
      }
    }
  }
  if (tr == transport::quantized) y = mc::reference::detail::fake_rows(y, p.token.size(), d_model, act);
  return combine(y, p, r);
}

/// The layer over MPI: this rank's `count` tokens in, their outputs out.
std::vector<float> distributed(const std::vector<float>& x, std::size_t count, const weights& w, const mc::recipe& act,
                               MPI_Comm comm, std::size_t& bytes, std::size_t& fp32_bytes) {
  const std::size_t ranks = mc::detail::comm_size(comm), per_rank = experts / ranks;
  const auto r = routing(x, count, w);
  const auto p = plan(r);  // sorted by expert, so by destination rank too
  std::vector<float> rows(p.token.size() * d_model);
  for (std::size_t i = 0; i < p.token.size(); ++i)
    std::copy_n(x.begin() + static_cast<std::ptrdiff_t>(p.token[i] * d_model), d_model, rows.begin() + static_cast<std::ptrdiff_t>(i * d_model));
  std::vector<std::size_t> send(ranks, 0);
  std::vector<int> per_expert(experts, 0), recv_per_expert(experts, 0);  // [dest rank][its local expert]
  for (const auto e : p.expert) ++send[e / per_rank], ++per_expert[e];
  // how many of the incoming rows from each source are for each of this rank's experts
  MPI_Alltoall(per_expert.data(), static_cast<int>(per_rank), MPI_INT, recv_per_expert.data(), static_cast<int>(per_rank), MPI_INT, comm);
  const auto in = mc::all_to_all_quantized(rows, d_model, send, act, comm);
  // rows arrive grouped by (source, expert); the grouped GEMM wants them grouped by expert
  std::vector<std::size_t> perm, groups(per_rank, 0);
  std::vector<std::size_t> start(ranks * per_rank);
  for (std::size_t s = 0, at = 0; s < ranks; ++s)
    for (std::size_t e = 0; e < per_rank; ++e) start[s * per_rank + e] = at, at += static_cast<std::size_t>(recv_per_expert[s * per_rank + e]);
  for (std::size_t e = 0; e < per_rank; ++e)
    for (std::size_t s = 0; s < ranks; ++s)
      for (int i = 0; i < recv_per_expert[s * per_rank + e]; ++i) perm.push_back(start[s * per_rank + e] + static_cast<std::size_t>(i)), ++groups[e];
  const std::size_t me = mc::detail::comm_rank(comm);
  const auto y_by_expert = run_experts(permute_rows(in.rows, perm), groups, me * per_rank, w, act);
  std::vector<float> y(y_by_expert.size());
  for (std::size_t i = 0; i < perm.size(); ++i)
    std::copy_n(y_by_expert.begin() + static_cast<std::ptrdiff_t>(i * d_model), d_model, y.begin() + static_cast<std::ptrdiff_t>(perm[i] * d_model));
  const auto back = mc::all_to_all(y, d_model, in.recv_counts, act, comm);
  bytes = in.bytes_sent + back.bytes_sent;
  fp32_bytes = 0;  // the same rows sent as plain fp32 values
  for (std::size_t k = 0; k < ranks; ++k)
    if (k != me) fp32_bytes += (send[k] + in.recv_counts[k]) * d_model * 4;
  return combine(back.rows, p, r);
}

double sqnr_db(const std::vector<float>& got, const std::vector<float>& want) {
  double e = 0.0, s = 0.0;
  for (std::size_t i = 0; i < got.size(); ++i) e += std::pow(double{got[i]} - want[i], 2), s += std::pow(double{want[i]}, 2);
  return 10.0 * std::log10(s / e);
}

constexpr const char* usage_text =
    "usage: mpirun -n P moe_all_to_all [--tokens T] [--act mxfp8_e4m3|hif8|all]      P in {1, 2, 4, 8}\n"
    "  --tokens T   tokens a rank, 1 .. 65536 (default 64)\n"
    "  --act A      the activations' wire format: mxfp8_e4m3, hif8, or all (both, the default)\n";

struct options {
  std::size_t per_rank_tokens = 64;
  std::vector<mc::wire_format> acts = {mc::wire_format::mxfp8_e4m3, mc::wire_format::hif8};
  bool help = false;
};

// Rank 0 gathers all P * T output rows (MPI counts are int) and computes the layer three more times
// in one process; 2^16 tokens a rank keeps every count below 2^31 and rank 0 below a few GiB.
constexpr std::size_t max_tokens = std::size_t{1} << 16;

options parse(int argc, char** argv, std::size_t ranks) {
  options o;
  for (minifloat_examples::arg_cursor arg(argc, argv); arg.next();) {
    const std::string_view a = arg.name();
    if (a == "--help" || a == "-h") o.help = true;
    else if (a == "--tokens") o.per_rank_tokens = arg.integer<std::size_t>(1, max_tokens);
    else if (a == "--act") {
      const std::string_view v = arg.value();
      if (v == "all") {
        o.acts = {mc::wire_format::mxfp8_e4m3, mc::wire_format::hif8};
        continue;
      }
      const auto f = mc::parse_wire_format(v);
      if (!f || (*f != mc::wire_format::mxfp8_e4m3 && *f != mc::wire_format::hif8))
        throw minifloat_examples::usage_error("--act expects mxfp8_e4m3, hif8 or all, got " + minifloat_examples::quote_arg(v));
      o.acts = {*f};
    } else {
      arg.unknown();
    }
  }
  if (!o.help && experts % ranks != 0)
    throw minifloat_examples::usage_error("run on " + std::to_string(ranks) + " ranks, which do not divide the " +
                                          std::to_string(experts) + " experts; expected mpirun -n P with P in {1, 2, 4, 8}");
  return o;
}

int run(const options& o, std::size_t ranks, std::size_t me) {
  const std::size_t per_rank_tokens = o.per_rank_tokens;
  const std::vector<mc::wire_format>& acts = o.acts;
  const weights w = make_weights();
  const std::size_t total = per_rank_tokens * ranks;
  const auto x = tokens(me * per_rank_tokens, per_rank_tokens);
  bool ok = true;
  if (me == 0)
    std::printf("MoE layer: %zu experts (top-%zu) on %zu ranks, d_model %zu, d_ffn %zu, %zu tokens a rank; weights MXFP4\n\n"
                "| activations | SQNR vs fp32 | SQNR of 1-process W4A8, fp32 combine | bit-identical to 1 process | "
                "bytes sent a rank (dispatch + combine) | vs fp32 rows |\n|---|---|---|---|---|---|\n",
                experts, top_k, ranks, d_model, d_ffn, per_rank_tokens);
  for (const auto f : acts) {
    const auto act = mc::recipe::of(f);
    std::size_t bytes = 0, fp32_bytes = 0;
    const auto out = distributed(x, per_rank_tokens, w, act, MPI_COMM_WORLD, bytes, fp32_bytes);
    std::vector<float> all(me == 0 ? total * d_model : 0);
    MPI_Gather(out.data(), static_cast<int>(out.size()), MPI_FLOAT, all.data(), static_cast<int>(out.size()), MPI_FLOAT, 0,
               MPI_COMM_WORLD);
    std::array<std::uint64_t, 2> mine = {bytes, fp32_bytes}, sums = {0, 0};
    MPI_Reduce(mine.data(), sums.data(), 2, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    if (me != 0) continue;
    const auto xs = tokens(0, total);
    const auto same = one_process(xs, total, w, act, transport::quantized, arithmetic::w4a8);
    const auto w4a8 = one_process(xs, total, w, act, transport::fp32, arithmetic::w4a8);
    const auto ref = one_process(xs, total, w, act, transport::fp32, arithmetic::fp32);
    const bool identical = std::equal(all.begin(), all.end(), same.begin(), same.end(), [](float a, float b) {
      return std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b);
    });
    const double q = sqnr_db(all, ref);
    const double avg = static_cast<double>(sums[0]) / static_cast<double>(ranks);
    std::printf("| %s | %.2f dB | %.2f dB | %s | %.0f | %s |\n", std::string(mc::to_string(f)).c_str(), q, sqnr_db(w4a8, ref),
                identical ? "yes" : "NO", avg,
                sums[1] == 0 ? "-" : (std::to_string(static_cast<double>(sums[0]) / static_cast<double>(sums[1])).substr(0, 5) + "x").c_str());
    ok = ok && identical && q > 10.0;
  }
  if (me == 0)
    std::printf("\nvs fp32 rows: bytes on the wire (codes, scales, headers) against the same rows as plain fp32\n");
  int okv = ok ? 1 : 0;
  MPI_Bcast(&okv, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return okv == 1 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const std::size_t ranks = mc::detail::comm_size(MPI_COMM_WORLD), me = mc::detail::comm_rank(MPI_COMM_WORLD);
  options o;
  try {
    o = parse(argc, argv, ranks);  // every rank parses the same arguments: all of them stop alike
  } catch (const minifloat_examples::usage_error& e) {
    const int code = me == 0 ? minifloat_examples::report("moe_all_to_all", e) : 2;
    MPI_Finalize();
    return code;
  }
  if (o.help) {
    if (me == 0) std::fputs(usage_text, stdout);
    MPI_Finalize();
    return 0;
  }
  try {
    const int code = run(o, ranks, me);
    MPI_Finalize();
    return code;
  } catch (const std::exception& e) {
    // a rank that fails (out of memory) while the others wait in a collective would leave them
    // waiting: stop the whole job
    minifloat_examples::report("moe_all_to_all", e);
    MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
  }
}
