// Merged-KV attention study: one decode step whose single cache C (T x d) is both K and V
// (MLA's compressed latent, DeepSeek sparse attention): out = softmax(scale * q C^T) C.
// The fp32 result is compared with C stored as
//   (a) HiF8, one static pow2 scale per tensor (N_guard 11), the same codes for both products;
//   (b) MXFP8 E4M3 with blocks along d (right for q C^T), re-quantized with blocks along T for
//       P C: (b1) from the fp32 values (a second copy written at append time), (b2) from the
//       stored codes (dequantize, re-quantize: rounds twice);
//   (c) FP8 E4M3, one fp32 scale per tensor (amax -> 448).
// Each stored cache is a merged attention::kv_cache (C stored once; the MX P C copy as the recipe
// says) and the decode step is the library's fast kernel (attention::decode_step) with fp32 q
// and fp32 P, whose own error (~1e-7) is far below the cache's; the reference is the fp32 cache
// in double (attention::decode_attention). See README.md here.
//
// Usage: kv_study [--full] [--data DIR] [--queries N] [--lengths T1,T2,...] [--dim D] [--seed S]
//   default (also the ctest smoke run): PP-OCRv4 data + one synthetic cache T = 4096, 8 queries,
//     then the full-recipe tables (PP-OCRv4, synthetic GQA decode T = 2048)
//   --full: the README's numbers: synthetic T = 4096, 16384, 65536 with 64 queries each; full
//     recipes at T = 4096 and 16384
//   --lengths: the synthetic lengths of both parts
#include <minifloat/io/npy.hpp>
// (io first: npy.hpp's enumerator float16 would shadow minifloat::float16 under -Wshadow)

#include <minifloat/analysis/metrics.hpp>
#include <minifloat/attention/attention.hpp>
#include <minifloat/quant/scheme_string.hpp>

#include "../common/args.hpp"
#include "../common/rng.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

namespace fs = std::filesystem;
using namespace minifloat;

using minifloat_examples::rng;  // deterministic on every platform

struct dataset {
  std::string name;
  std::size_t t = 0, d = 0;
  std::vector<float> cache;    // T x d
  std::vector<float> queries;  // nq x d
  double scale = 1.0;
  std::vector<std::size_t> outlier_channels;  // for the "without outlier channels" column
};

// --- the storage recipes ---------------------------------------------------------------------
std::vector<attention::merged_kv_recipe> recipes() {
  using attention::requantize_source;
  auto mx_d = parse_scheme("mxfp8_e4m3").scheme;             // blocks along d (axis 1)
  auto mx_t = parse_scheme("mxfp8_e4m3/axis=0").scheme;      // blocks along T (axis 0)
  auto mx_d_rceil = parse_scheme("mxfp8_e4m3/scale-rule=rceil").scheme;
  auto mx_t_rceil = parse_scheme("mxfp8_e4m3/axis=0/scale-rule=rceil").scheme;
  return {
      {"fp32 (reference)", std::nullopt, std::nullopt, requantize_source::fp32},
      {"(a) hifloat8/tensor, one copy", parse_scheme("hifloat8/tensor").scheme, std::nullopt, requantize_source::fp32},
      // Sensitivity: the same format with less headroom above amax (N_guard 8: amax -> [128, 256)).
      {"(a8) hifloat8/tensor/n-guard=8, one copy", parse_scheme("hifloat8/tensor/n-guard=8").scheme, std::nullopt,
       requantize_source::fp32},
      {"(b1) mxfp8_e4m3 d-blocks + T-blocks from fp32", mx_d, mx_t, requantize_source::fp32},
      {"(b2) mxfp8_e4m3 d-blocks, T-blocks from codes", mx_d, mx_t, requantize_source::stored_codes},
      {"(c) float8_e4m3fn/tensor, one copy", parse_scheme("float8_e4m3fn/tensor").scheme, std::nullopt,
       requantize_source::fp32},
      // The OCP floor rule clips a block's largest values by up to 12.5 %; rceil never clips.
      {"(b1r) as (b1), scale rule rceil", mx_d_rceil, mx_t_rceil, requantize_source::fp32},
      {"(b2r) as (b2), scale rule rceil", mx_d_rceil, mx_t_rceil, requantize_source::stored_codes},
  };
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  if (v.empty()) return std::nan("");
  const double pos = p * static_cast<double>(v.size() - 1);
  const auto i = static_cast<std::size_t>(pos);
  const double f = pos - static_cast<double>(i);
  return i + 1 < v.size() ? v[i] * (1 - f) + v[i + 1] * f : v[i];
}

std::string cell(double v) {
  char buf[32];
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

void run(const dataset& ds, unsigned threads) {
  const std::size_t nq = ds.queries.size() / ds.d, t = ds.t, d = ds.d;
  const matrix_view<const float> q(std::span<const float>(ds.queries), nq, d);
  std::vector<double> ref(nq * d), ref_logits(nq * t);
  const auto start = std::chrono::steady_clock::now();
  attention::decode_attention_parallel(q, {std::span<const float>(ds.cache), t, d}, {std::span<const float>(ds.cache), t, d},
                                       ds.scale, ref, ref_logits, threads);
  std::vector<bool> is_outlier(d, false);
  for (auto j : ds.outlier_channels) is_outlier[j] = true;

  std::printf("\n%s: T = %zu, d = %zu, %zu queries%s\n", ds.name.c_str(), t, d, nq,
              ds.outlier_channels.empty() ? "" : (", " + std::to_string(ds.outlier_channels.size()) + " outlier channels").c_str());
  std::printf("  %-48s %6s | %29s | %s%s\n", "cache storage", "B/elem", "output SQNR dB: pooled median p05 min",
              "logits SQNR median", ds.outlier_channels.empty() ? "" : " | out SQNR w/o outlier ch. (median)");
  for (const auto& r : recipes()) {
    if (!r.stored) continue;
    // C stored as the recipe says; every query is a query head of the cache's one KV head
    attention::kv_cache cache = attention::make_merged_cache(r, 1, d, d);
    cache.append(ds.cache, {}, t);
    attention::attention_options opt;
    opt.softmax_scale = ds.scale;
    opt.threads = threads;
    const auto step = attention::decode_step(cache, ds.queries, nq, 1, {}, opt);
    const std::vector<double> out(step.out.begin(), step.out.end());
    // the scores the kernel sees: q C^T on the stored codes
    const auto ck = cache.dequantized_k(0);
    std::vector<double> logits(nq * t);
    for (std::size_t i = 0; i < nq; ++i)
      for (std::size_t j = 0; j < t; ++j) {
        double acc = 0;
        for (std::size_t c = 0; c < d; ++c) acc += static_cast<double>(ds.queries[i * d + c]) * ck[j * d + c];
        logits[i * t + j] = ds.scale * acc;
      }
    std::vector<double> per_query, per_query_logits, per_query_normal;
    for (std::size_t i = 0; i < nq; ++i) {
      const std::span<const double> a(ref.data() + i * d, d), b(out.data() + i * d, d);
      per_query.push_back(analysis::sqnr_db(a, b));
      per_query_logits.push_back(analysis::sqnr_db({ref_logits.data() + i * t, t}, {logits.data() + i * t, t}));
      if (!ds.outlier_channels.empty()) {
        std::vector<double> an, bn;
        for (std::size_t j = 0; j < d; ++j)
          if (!is_outlier[j]) an.push_back(a[j]), bn.push_back(b[j]);
        per_query_normal.push_back(analysis::sqnr_db(an, bn));
      }
    }
    std::printf("  %-48s %6.3f | %7s %6s %5s %5s      | %18s", r.name.c_str(),
                static_cast<double>(cache.bytes()) / static_cast<double>(t * d),
                cell(analysis::sqnr_db(ref, out)).c_str(), cell(percentile(per_query, 0.5)).c_str(),
                cell(percentile(per_query, 0.05)).c_str(),
                cell(*std::min_element(per_query.begin(), per_query.end())).c_str(),
                cell(percentile(per_query_logits, 0.5)).c_str());
    if (!per_query_normal.empty()) std::printf(" | %33s", cell(percentile(per_query_normal, 0.5)).c_str());
    std::printf("\n");
  }
  std::printf("  (%.1f s)\n", std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

// --- PP-OCRv4: the latent is the qkv Linear's input; queries absorbed through W_K ---------------
// Per head h: logits = q_h K^T = q_h (C W_K,h + b_K,h)^T = (q_h W_K,h^T) C^T + const, and the
// constant q_h . b_K,h cancels in the softmax. So with q' = q_h W_K,h^T (120 values) and C the
// LayerNorm output, softmax(q' C^T) is the model's own attention (checked against the stored
// attn_probs: max difference 9e-8 / 8e-7), and P C is the latent the value projection maps.
bool load_ppocr(const fs::path& dir, const std::string& block, const std::string& weight, dataset& ds) {
  const fs::path c_path = dir / "activations" / ("line0." + block + ".qkv_in.npy");
  const fs::path q_path = dir / "activations" / ("line0." + block + ".q_scaled.npy");
  const fs::path w_path = dir / "weights" / (weight + ".npy");
  if (!fs::exists(c_path) || !fs::exists(q_path) || !fs::exists(w_path)) return false;
  const npy_array c = read_npy(c_path), q = read_npy(q_path), w = read_npy(w_path);
  const auto cv = to_float32(c), qv = to_float32(q), wv = to_float32(w);
  const std::size_t t = c.shape.at(0), d = c.shape.at(1), heads = q.shape.at(0), hd = q.shape.at(2), nt = q.shape.at(1);
  const std::size_t wcols = w.shape.at(1);  // 3 * heads * hd, stored (in, out): columns q | k | v
  ds.name = "PP-OCRv4 " + block + " (real activations, line 0; C = LayerNorm output, queries absorbed per head)";
  ds.t = t, ds.d = d, ds.scale = 1.0;  // q_scaled already holds head_dim^-0.5
  ds.cache = cv;
  for (std::size_t h = 0; h < heads; ++h)
    for (std::size_t i = 0; i < nt; ++i)
      for (std::size_t j = 0; j < d; ++j) {
        double s = 0;
        for (std::size_t m = 0; m < hd; ++m)
          s += static_cast<double>(qv[(h * nt + i) * hd + m]) * wv[j * wcols + heads * hd + h * hd + m];
        ds.queries.push_back(static_cast<float>(s));
      }
  return true;
}

// --- synthetic long cache with outlier channels -----------------------------------------------
// C[t, j] = g_j * r_t * z,  z ~ N(0, 1); r_t = exp(0.3 N(0, 1)) (token norms vary); g_j = 1 except
// d/64 outlier channels with g_j log-uniform in [20, 100]. Queries q_j = 2.5 u_j / g_j, u ~ N(0, 1),
// so with scale 1/sqrt(d) the logits are about 2.5 r_t N(0, 1) and are carried by the ordinary
// channels, while the outliers set the cache's amax.
dataset synthetic(std::size_t t, std::size_t d, std::size_t nq, std::uint64_t seed) {
  dataset ds;
  rng g{seed * 0x100000001B3ULL + t};
  std::vector<double> gain(d, 1.0);
  const std::size_t n_out = std::max<std::size_t>(1, d / 64);
  for (std::size_t k = 0; k < n_out; ++k) {
    std::size_t j;
    do j = static_cast<std::size_t>(g.uniform() * static_cast<double>(d));
    while (gain[j] != 1.0);
    gain[j] = std::exp(std::log(20.0) + g.uniform() * (std::log(100.0) - std::log(20.0)));
    ds.outlier_channels.push_back(j);
  }
  std::sort(ds.outlier_channels.begin(), ds.outlier_channels.end());
  ds.name = "synthetic";
  ds.t = t, ds.d = d, ds.scale = 1.0 / std::sqrt(static_cast<double>(d));
  ds.cache.resize(t * d);
  for (std::size_t i = 0; i < t; ++i) {
    const double r = std::exp(0.3 * g.normal());
    for (std::size_t j = 0; j < d; ++j) ds.cache[i * d + j] = static_cast<float>(gain[j] * r * g.normal());
  }
  for (std::size_t i = 0; i < nq; ++i)
    for (std::size_t j = 0; j < d; ++j) ds.queries.push_back(static_cast<float>(2.5 * g.normal() / gain[j]));
  return ds;
}

// --- full recipes: Q, K, V and P quantized, against fp64 attention on the unquantized inputs ------
struct full_recipe {
  const char* name;
  const char* q;
  const char* k;
  const char* v;
  const char* p;
  float p_scale;
  bool hadamard;
};
constexpr full_recipe full_recipes[] = {
    {"bf16 Q K V P", "bf16", "bf16", "bf16", "bf16", 1.0f, false},
    {"hifloat8/tensor Q K V, P fp32", "hifloat8/tensor", "hifloat8/tensor", "hifloat8/tensor", "fp32", 1.0f, false},
    {"hifloat8/tensor Q K V P (all-HiF8)", "hifloat8/tensor", "hifloat8/tensor", "hifloat8/tensor", "hifloat8", 1.0f, false},
    {"  + Hadamard Q K", "hifloat8/tensor", "hifloat8/tensor", "hifloat8/tensor", "hifloat8", 1.0f, true},
    {"float8_e4m3fn/tensor Q K V, P fp32", "float8_e4m3fn/tensor", "float8_e4m3fn/tensor", "float8_e4m3fn/tensor", "fp32", 1.0f, false},
    {"float8_e4m3fn/tensor Q K V P, p-scale 1", "float8_e4m3fn/tensor", "float8_e4m3fn/tensor", "float8_e4m3fn/tensor", "float8_e4m3fn", 1.0f, false},
    {"float8_e4m3fn/tensor Q K V P, p-scale 2^-8", "float8_e4m3fn/tensor", "float8_e4m3fn/tensor", "float8_e4m3fn/tensor", "float8_e4m3fn", 1.0f / 256, false},
    {"  + Hadamard Q K", "float8_e4m3fn/tensor", "float8_e4m3fn/tensor", "float8_e4m3fn/tensor", "float8_e4m3fn", 1.0f / 256, true},
    {"mxfp8_e4m3 Q K (d), V (T), P e4m3 2^-8", "mxfp8_e4m3", "mxfp8_e4m3", "mxfp8_e4m3/axis=0", "float8_e4m3fn", 1.0f / 256, false},
    {"  + Hadamard Q K", "mxfp8_e4m3", "mxfp8_e4m3", "mxfp8_e4m3/axis=0", "float8_e4m3fn", 1.0f / 256, true},
};

void recipe_table(const std::string& title, const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v,
                  const attention::attention_shape& s, double scale, bool causal, unsigned threads) {
  std::vector<double> ref, m, l;
  attention::attention_options opt;
  opt.softmax_scale = scale, opt.threads = threads;
  opt.mask = causal ? attention::mask_kind::causal : attention::mask_kind::none;
  attention::detail::forward_double(q.data(), k.data(), v.data(), s, {}, scale, opt.mask, ref, m, l);
  std::printf("\n%s: %s%s\n  %-44s | output SQNR dB vs fp64 (pooled, median over query rows)\n", title.c_str(),
              s.describe().c_str(), causal ? ", causal" : "", "recipe (fast path)");
  const bool pow2 = (s.head_dim & (s.head_dim - 1)) == 0;
  for (const auto& fr : full_recipes) {
    if (fr.hadamard && !pow2) {
      std::printf("  %-44s |   n/a (d = %zu is not a power of two)\n", fr.name, s.head_dim);
      continue;
    }
    attention::attention_recipe r;
    r.q = attention::parse_operand_scheme(fr.q, "Q"), r.k = attention::parse_operand_scheme(fr.k, "K");
    r.v = attention::parse_operand_scheme(fr.v, "V");
    r.p.format = attention::parse_static_format(fr.p, "P");
    if (r.p.format) r.p.scale = fr.p_scale;
    if (fr.hadamard) r.rotation = attention::qk_rotation::hadamard, r.rotation_seed = 1;
    const auto out = attention::attention_forward(q, k, v, s, r, opt).out;
    const std::vector<double> o(out.begin(), out.end());
    std::vector<double> rows;
    for (std::size_t i = 0; i < s.rows(); ++i)
      rows.push_back(analysis::sqnr_db({ref.data() + i * s.v_dim, s.v_dim}, {o.data() + i * s.v_dim, s.v_dim}));
    std::printf("  %-44s | %6s %6s\n", fr.name, cell(analysis::sqnr_db(ref, o)).c_str(), cell(percentile(rows, 0.5)).c_str());
  }
}

/// PP-OCRv4 SVTR attention as it runs: Q = q_scaled (8 heads x 86 x 15, scaled), K, V = the head
/// slices of qkv_in W (the data set ships no bias: the key bias cancels in the softmax, the value
/// bias adds the same row to every output).
bool ppocr_full(const fs::path& dir, const std::string& block, const std::string& weight, unsigned threads) {
  const fs::path c_path = dir / "activations" / ("line0." + block + ".qkv_in.npy");
  const fs::path q_path = dir / "activations" / ("line0." + block + ".q_scaled.npy");
  const fs::path w_path = dir / "weights" / (weight + ".npy");
  if (!fs::exists(c_path) || !fs::exists(q_path) || !fs::exists(w_path)) return false;
  const npy_array c = read_npy(c_path), qa = read_npy(q_path), w = read_npy(w_path);
  const auto cv = to_float32(c), qv = to_float32(qa), wv = to_float32(w);
  const std::size_t t = c.shape.at(0), din = c.shape.at(1), heads = qa.shape.at(0), hd = qa.shape.at(2);
  const std::size_t wcols = w.shape.at(1);
  std::vector<float> k(heads * t * hd), v(heads * t * hd);
  for (std::size_t h = 0; h < heads; ++h)
    for (std::size_t i = 0; i < t; ++i)
      for (std::size_t m = 0; m < hd; ++m) {
        double sk = 0, sv = 0;
        for (std::size_t j = 0; j < din; ++j) {
          sk += static_cast<double>(cv[i * din + j]) * wv[j * wcols + heads * hd + h * hd + m];
          sv += static_cast<double>(cv[i * din + j]) * wv[j * wcols + 2 * heads * hd + h * hd + m];
        }
        k[(h * t + i) * hd + m] = static_cast<float>(sk), v[(h * t + i) * hd + m] = static_cast<float>(sv);
      }
  const attention::attention_shape s{1, heads, heads, qa.shape.at(1), t, hd, hd};
  recipe_table("PP-OCRv4 " + block + " attention (real Q, K, V)", qv, k, v, s, 1.0, false, threads);
  return true;
}

/// A GQA decode over a synthetic long cache: Hq 32, Hkv 8, d 128, 4 new tokens per head (causal),
/// K with d/64 outlier channels (gains 20..100). `compensated`: the queries undo the gains, so the
/// ordinary channels carry the scores (q_j = 2.5 u_j / g_j); otherwise the queries are plain
/// (q_j = 2.5 u_j / rms(g)) and the outlier channels carry them.
void synthetic_full(std::size_t t, std::uint64_t seed, unsigned threads, bool compensated) {
  constexpr std::size_t hq = 32, hkv = 8, d = 128, nq = 4;
  rng g{seed * 7919 + t};
  std::vector<double> gain(d, 1.0);
  for (std::size_t i = 0; i < d / 64; ++i) gain[(i * 53 + 11) % d] = std::exp(std::log(20.0) + g.uniform() * std::log(5.0));
  std::vector<float> k(hkv * t * d), v(hkv * t * d), q(hq * nq * d);
  for (std::size_t i = 0; i < hkv * t; ++i) {
    const double r = std::exp(0.3 * g.normal());
    for (std::size_t j = 0; j < d; ++j) k[i * d + j] = static_cast<float>(gain[j] * r * g.normal()), v[i * d + j] = static_cast<float>(g.normal());
  }
  double rms = 0;
  for (const double x : gain) rms += x * x / static_cast<double>(d);
  rms = std::sqrt(rms);
  for (std::size_t i = 0; i < hq * nq; ++i)
    for (std::size_t j = 0; j < d; ++j) q[i * d + j] = static_cast<float>(2.5 * g.normal() / (compensated ? gain[j] : rms));
  const attention::attention_shape s{1, hq, hkv, nq, t, d, d};
  recipe_table(std::string("synthetic long cache, outlier channels, ") + (compensated ? "queries undo the gains" : "plain queries") +
                   " (seed " + std::to_string(seed) + ")", q, k, v, s,
               1.0 / std::sqrt(static_cast<double>(d)), true, threads);
}


constexpr const char* usage_text =
    "usage: kv_study [--full] [--data DIR] [--queries N] [--lengths T1,T2,...] [--dim D] [--seed S]\n"
    "  --full        the README's numbers: synthetic T = 4096, 16384, 65536 with 64 queries each\n"
    "  --data DIR    the PP-OCRv4 data folder (holding activations/ and weights/); default data/ppocrv4\n"
    "  --queries N   queries per synthetic cache, 1 .. 4096 (default 8, 64 with --full)\n"
    "  --lengths L   synthetic cache lengths T, each 1 .. 262144 (default 4096)\n"
    "  --dim D       synthetic head dimension, 1 .. 4096 (default 512)\n"
    "  --seed S      synthetic data seed (default 1)\n";

// The largest synthetic cache, T x d floats (1 GiB), and score matrix, queries x T doubles (1 GiB).
constexpr std::size_t max_cache_elements = std::size_t{1} << 28, max_score_elements = std::size_t{1} << 27;

int body(int argc, char** argv) {
  fs::path data = fs::path(__FILE__).parent_path() / ".." / ".." / "data" / "ppocrv4";
  bool full = false, data_given = false;
  std::size_t queries = 0, dim = 512;
  std::vector<std::size_t> lengths;
  std::uint64_t seed = 1;
  for (minifloat_examples::arg_cursor arg(argc, argv); arg.next();) {
    const std::string_view a = arg.name();
    if (a == "--help" || a == "-h") {
      std::fputs(usage_text, stdout);
      return 0;
    }
    if (a == "--full") full = true;
    else if (a == "--data") data = std::string(arg.value()), data_given = true;
    else if (a == "--queries") queries = arg.integer<std::size_t>(1, 4096);
    else if (a == "--dim") dim = arg.integer<std::size_t>(1, 4096);
    else if (a == "--seed") seed = arg.integer<std::uint64_t>(0, std::numeric_limits<std::uint64_t>::max());
    else if (a == "--lengths") lengths = arg.integer_list<std::size_t>(1, 262144);
    else arg.unknown();
  }
  const bool lengths_given = !lengths.empty();
  if (lengths.empty()) lengths = full ? std::vector<std::size_t>{4096, 16384, 65536} : std::vector<std::size_t>{4096};
  if (queries == 0) queries = full ? 64 : 8;
  for (const std::size_t t : lengths) {
    if (t * dim > max_cache_elements)  // both factors are at most 2^18 and 2^12: no wrap
      throw minifloat_examples::usage_error("--lengths " + std::to_string(t) + " with --dim " + std::to_string(dim) + " is a cache of " +
                                            std::to_string(t * dim) + " values; expected at most 2^28 (1 GiB of float32)");
    if (t * queries > max_score_elements)
      throw minifloat_examples::usage_error("--lengths " + std::to_string(t) + " with --queries " + std::to_string(queries) +
                                            " is " + std::to_string(t * queries) + " scores; expected at most 2^27");
  }
  if (data_given && !fs::is_directory(data))
    throw minifloat::io_error("--data " + minifloat_examples::quote_arg(data.string()) +
                              ": no such folder; expected the PP-OCRv4 data folder holding activations/ and weights/");
  const unsigned threads = std::max(1U, std::min(2U, std::thread::hardware_concurrency()));

  std::printf("Merged-KV decode attention: out = softmax(scale q C^T) C, cache C stored in 8 bits.\n");
  std::printf("Output SQNR = 10 log10(sum out_ref^2 / sum (out_ref - out)^2) per query vector; pooled = over all\n");
  std::printf("queries at once; p05 = 5th percentile; logits SQNR: the same for scale q C^T.\n");
  {
    for (const auto& [block, weight] : {std::pair{"svtr0", "rec.linear_77.w_0"}, std::pair{"svtr1", "rec.linear_81.w_0"}}) {
      dataset ds;
      if (load_ppocr(data, block, weight, ds)) run(ds, threads);
      else std::printf("\n(PP-OCRv4 data not found under %s; pass --data DIR)\n", data.string().c_str());
    }
    for (const auto t : lengths) {
      dataset ds = synthetic(t, dim, queries, seed);
      ds.name = "synthetic long cache (seed " + std::to_string(seed) + ")";
      run(ds, threads);
    }
    std::printf("\nFull recipes: Q, K, V and P quantized (the fast path), against fp64 attention on the unquantized\n"
                "inputs. P~ = exp(S - m) is quantized with p-scale X as X * decode(encode(P~ / X)).\n");
    for (const auto& [block, weight] : {std::pair{"svtr0", "rec.linear_77.w_0"}, std::pair{"svtr1", "rec.linear_81.w_0"}})
      if (!ppocr_full(data, block, weight, threads)) std::printf("\n(PP-OCRv4 data not found under %s)\n", data.string().c_str());
    for (const auto t : full ? std::vector<std::size_t>{4096, 16384} : lengths_given ? lengths : std::vector<std::size_t>{2048}) {
      synthetic_full(t, seed, threads, true);
      synthetic_full(t, seed, threads, false);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return minifloat_examples::guarded_main("kv_study", [&] { return body(argc, argv); });
}
