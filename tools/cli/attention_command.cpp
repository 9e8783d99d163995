// minifloat attention: the reference (or fast) quantized attention on .npy files, for kernel
// authors to check against. Semantics: include/minifloat/attention/reference.hpp, docs/attention.md.
#include <minifloat/io/npy.hpp>
// (io first: npy.hpp's enumerator float16 would shadow minifloat::float16 under -Wshadow)
#include <minifloat/attention/forward.hpp>

#include <array>
#include <limits>
#include <optional>
#include <cstdio>
#include <string>
#include <vector>

#include "args.hpp"
#include "commands.hpp"
#include "format_args.hpp"
#include "paths.hpp"
#include "readers.hpp"

namespace minifloat::cli {
namespace {

/// A float32 operand (H, T, C) or (B, H, T, C), as (B, H, T, C).
struct operand {
  std::vector<float> values;
  std::array<std::size_t, 4> shape{};
  bool batched = false;
};

// All file access of this command goes through read_operand and one output_batch.
operand read_operand(const std::string& path, const char* name) {
  float_tensor a = read_float_tensor(path);
  if (a.shape.size() != 3 && a.shape.size() != 4)
    throw shape_error(std::string("attention: ") + name + " (" + terminal_text(path) + ") has " +
                      std::to_string(a.shape.size()) + " dimensions; expected (H, T, C) or (B, H, T, C)");
  operand o;
  o.batched = a.shape.size() == 4;
  o.shape = o.batched ? std::array<std::size_t, 4>{a.shape[0], a.shape[1], a.shape[2], a.shape[3]}
                      : std::array<std::size_t, 4>{1, a.shape[0], a.shape[1], a.shape[2]};
  o.values = std::move(a.values);
  return o;
}

struct attention_request {
  std::array<std::string, 4> paths;  // Q, K, V, OUT
  std::optional<std::string> stats;
  minifloat::attention::attention_recipe recipe;
  minifloat::attention::attention_options opt;
  bool fast = false;
};

/// An operand scheme option: fp32/bf16 as the library spells them, else checked like quantize's.
minifloat::attention::operand_scheme operand_option(const args& a, const char* name) {
  const std::string text = a.get_or(name, "fp32");
  try {
    auto s = minifloat::attention::parse_operand_scheme(text, std::string("--") + name);
    if (s && !(text == "bf16" || text == "bfloat16")) (void)parse_scheme_option(text, std::string("--") + name);
    return s;
  } catch (const std::invalid_argument& e) {
    throw usage_error(terminal_text(e.what()));
  }
}

attention_request parse_attention(const argv_t& argv) {
  args a("minifloat attention Q.npy K.npy V.npy OUT.npy [--q-scheme S] [--k-scheme S] [--v-scheme S] [--p-format F] "
         "[--p-scale X] [--causal] [--softmax-scale X] [--path reference|fast] [--threads N] [--isa LEVEL] "
         "[--kernel K] [--stats M_L.npy] [--hadamard [--rotation-seed N]]",
         "Quantized attention (docs/attention.md): float Q (Hq, Tq, d), K (Hkv, Tk, d), V (Hkv, Tk, dv), OUT (Hq, Tq, "
         "dv) float32, each with an optional leading batch dimension; Hq a multiple of Hkv.");
  a.option("q-scheme", "Q's scheme (as analyze's, or fp32, bf16; default fp32); Q, K quantized as (B*H*T, d)", "S");
  a.option("k-scheme", "K's scheme", "S");
  a.option("v-scheme", "V's scheme; V quantized as one (Tk, dv) matrix per head (mxfp8_e4m3/axis=0: blocks along T)",
           "S");
  a.option("p-format", "P~ = exp(S - m) quantized as X * decode(encode_F(P~ / X)) (default fp32)", "F");
  a.option("p-scale", "X above, a positive normal float32 (default 1)", "X");
  a.flag("causal", "key j visible to query i iff j <= i + Tk - Tq");
  a.option("softmax-scale", "default 1/sqrt(d); a finite float32", "X")->check(float32_number("--softmax-scale"));
  a.option("path", "reference (double precision, default) or fast (the tiled kernel)", "PATH");
  a.option("threads", "fast path worker threads (0: all hardware threads; default 1)", "N")
      ->check(integer_in<unsigned>("--threads", 0U, 4096U));
  a.option("isa", "fast path ISA: automatic, scalar, avx2, avx512 or neon", "LEVEL");
  a.option("kernel", "fast path block kernel: automatic, amx, avx512, avx512_bf16, avx2, scalar (one the CPU lacks "
           "falls back to the best it has)", "K");
  a.option("stats", "also write (..., Tq, 2): row max m and row sum l", "M_L.npy");
  a.flag("hadamard", "rotate Q and K along d by a random orthogonal Hadamard matrix before quantizing (d a power of two)");
  a.option("rotation-seed", "the rotation's random stream (with --hadamard)", "N")
      ->check(integer_in<std::uint64_t>("--rotation-seed"));
  a.parse(argv);
  a.expect_positional(4);
  using namespace minifloat::attention;
  attention_request req;
  attention_recipe& r = req.recipe;
  r.q = operand_option(a, "q-scheme");
  r.k = operand_option(a, "k-scheme");
  r.v = operand_option(a, "v-scheme");
  try {
    r.p.format = parse_static_format(a.get_or("p-format", "fp32"), "--p-format");
  } catch (const std::invalid_argument& e) {
    throw usage_error(terminal_text(e.what()));
  }
  if (auto x = a.get("p-scale")) {
    if (!r.p.format) throw usage_error("--p-scale needs --p-format");
    // Judged as the float32 it becomes (3.4028235e38 is FLT_MAX): X divides P~ in [0, 1], and
    // below the smallest normal float32 the quotient overflows.
    const double ps = static_cast<float>(parse_number(*x, "--p-scale"));
    if (!(ps >= static_cast<double>(std::numeric_limits<float>::min())) ||
        !(ps <= static_cast<double>(std::numeric_limits<float>::max())))
      throw usage_error("--p-scale " + *x + " is not a positive normal float32; expected a number from 1.17549435e-38 to "
                        "3.40282347e+38");
    r.p.scale = static_cast<float>(ps);
  }
  if (a.flag("hadamard")) r.rotation = qk_rotation::hadamard;
  if (auto x = a.get("rotation-seed")) {
    if (!a.flag("hadamard")) throw usage_error("--rotation-seed needs --hadamard");
    r.rotation_seed = parse_integer<std::uint64_t>(*x, "--rotation-seed");
  }
  attention_options& opt = req.opt;
  opt.mask = a.flag("causal") ? mask_kind::causal : mask_kind::none;
  // the float32 the option names (3.4028235e38 is FLT_MAX, not a double just above it)
  if (auto x = a.get("softmax-scale"))
    opt.softmax_scale = static_cast<float>(parse_float32_number(*x, "--softmax-scale"));
  if (auto x = a.get("threads")) opt.threads = parse_integer<unsigned>(*x, "--threads");
  if (auto x = a.get("isa"); x && !simd::parse_isa(*x, opt.isa))
    throw usage_error("unknown --isa '" + *x + "'; expected automatic, scalar, avx2, avx512 or neon");
  if (auto x = a.get("kernel")) {
    const auto k = parse_enum<block_kernel>(*x);
    if (!k) throw usage_error("unknown --kernel '" + *x + "'; expected " + enum_list<block_kernel>());
    opt.kernel = *k;
  }
  const std::string path = a.get_or("path", "reference");
  if (path != "reference" && path != "fast") throw usage_error("--path must be reference or fast, got '" + path + "'");
  req.fast = path == "fast";
  if (req.fast) {
    // what the fast path cannot run is a bad command line, known before any file is read
    try {
      minifloat::attention::detail::check_fast_operand(r.k, "K", 1);
      minifloat::attention::detail::check_fast_operand(r.v, "V", 0);
    } catch (const std::exception& e) {
      throw usage_error(terminal_text(e.what()));
    }
  }
  for (std::size_t i = 0; i < 4; ++i) req.paths[i] = a.positional()[i];
  req.stats = a.get("stats");
  if (req.stats && req.stats->empty()) throw usage_error("--stats is empty; expected --stats M_L.npy");
  return req;
}

}  // namespace

void check_attention_args(const argv_t& argv) { (void)parse_attention(argv); }

int cmd_attention(const argv_t& argv) {
  using namespace minifloat::attention;
  const attention_request req = parse_attention(argv);
  std::vector<role_path> outputs{{"OUT", req.paths[3]}};
  if (req.stats) outputs.push_back({"--stats", *req.stats});
  check_distinct_paths({{"Q", req.paths[0]}, {"K", req.paths[1]}, {"V", req.paths[2]}}, outputs);
  const auto& pos = req.paths;
  const operand q = read_operand(pos[0], "Q"), k = read_operand(pos[1], "K"), v = read_operand(pos[2], "V");
  if (q.batched != k.batched || q.batched != v.batched)
    throw shape_error("attention: Q, K and V must all have a batch dimension or none (got " + std::to_string(q.batched ? 4 : 3) +
                      ", " + std::to_string(k.batched ? 4 : 3) + ", " + std::to_string(v.batched ? 4 : 3) + " dimensions)");
  if (q.shape[0] != k.shape[0] || q.shape[0] != v.shape[0])
    throw shape_error("attention: batch sizes differ: Q " + std::to_string(q.shape[0]) + ", K " + std::to_string(k.shape[0]) +
                      ", V " + std::to_string(v.shape[0]));
  if (k.shape[1] != v.shape[1] || k.shape[2] != v.shape[2])
    throw shape_error("attention: V is (Hkv, Tk, dv) = (" + std::to_string(v.shape[1]) + ", " + std::to_string(v.shape[2]) + ", " +
                      std::to_string(v.shape[3]) + "); expected Hkv = " + std::to_string(k.shape[1]) + " and Tk = " +
                      std::to_string(k.shape[2]) + " as in K");
  if (q.shape[3] != k.shape[3])
    throw shape_error("attention: K has d = " + std::to_string(k.shape[3]) + "; expected Q's d = " + std::to_string(q.shape[3]));
  const attention_shape s{q.shape[0], q.shape[1], k.shape[1], q.shape[2], k.shape[2], q.shape[3], v.shape[3]};
  const attention_result res = minifloat::attention::attention(q.values, k.values, v.values, s, req.recipe, req.opt,
                                                               req.fast ? attention_path::fast : attention_path::reference);
  std::vector<std::size_t> out_shape{s.q_heads, s.q_len, s.v_dim};
  if (q.batched) out_shape.insert(out_shape.begin(), s.batch);
  // OUT and --stats are written all or nothing: both staged, renamed together.
  output_batch out;
  write_npy(out, pos[3], std::span<const std::size_t>(out_shape), std::span<const float>(res.out));
  if (const auto& st = req.stats) {
    // (..., Tq, 2): the row max m and the row sum l the backward needs
    std::vector<float> ml(2 * res.row_max.size());
    for (std::size_t i = 0; i < res.row_max.size(); ++i) ml[2 * i] = res.row_max[i], ml[2 * i + 1] = res.row_sum[i];
    out_shape.back() = 2;
    write_npy(out, *st, std::span<const std::size_t>(out_shape), std::span<const float>(ml));
  }
  out.commit();
  return 0;
}

}  // namespace minifloat::cli
