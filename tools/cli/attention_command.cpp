// minifloat attention: the reference (or fast) quantized attention on .npy files, for kernel
// authors to check against. Semantics: include/minifloat/attention/reference.hpp, docs/attention.md.
#include <minifloat/io/npy.hpp>
// (io first: npy.hpp's enumerator float16 would shadow minifloat::float16 under -Wshadow)
#include <minifloat/attention/forward.hpp>

#include <array>
#include <cstdio>
#include <string>
#include <vector>

#include "args.hpp"
#include "commands.hpp"

namespace minifloat::cli {
namespace {

constexpr auto attention_usage =
    "minifloat attention Q.npy K.npy V.npy OUT.npy [--q-scheme S] [--k-scheme S] [--v-scheme S] [--p-format F] "
    "[--p-scale X] [--causal] [--softmax-scale X] [--path reference|fast] [--threads N] [--isa LEVEL] [--kernel K] [--stats M_L.npy] "
    "[--hadamard [--rotation-seed N]]";

/// A float32 operand (H, T, C) or (B, H, T, C), as (B, H, T, C).
struct operand {
  std::vector<float> values;
  std::array<std::size_t, 4> shape{};
  bool batched = false;
};

// All file access of this command goes through these two functions.
operand read_operand(const std::string& path, const char* name) {
  const npy_array a = read_npy(path);
  if (a.shape.size() != 3 && a.shape.size() != 4)
    throw shape_error(std::string("attention: ") + name + " (" + path + ") has " + std::to_string(a.shape.size()) +
                      " dimensions; expected (H, T, C) or (B, H, T, C)");
  operand o;
  o.batched = a.shape.size() == 4;
  o.shape = o.batched ? std::array<std::size_t, 4>{a.shape[0], a.shape[1], a.shape[2], a.shape[3]}
                      : std::array<std::size_t, 4>{1, a.shape[0], a.shape[1], a.shape[2]};
  o.values = to_float32(a);
  return o;
}
void write_result(const std::string& path, std::span<const std::size_t> shape, std::span<const float> values) {
  write_npy(path, shape, values);
}

}  // namespace

int cmd_attention(const argv_t& argv) {
  args a(argv, {"q-scheme", "k-scheme", "v-scheme", "p-format", "p-scale", "softmax-scale", "path", "threads", "isa", "kernel",
          "stats", "rotation-seed"},
         {"causal", "hadamard"});
  a.expect_positional(4, attention_usage);
  using namespace minifloat::attention;
  attention_recipe r;
  try {
    r.q = parse_operand_scheme(a.get_or("q-scheme", "fp32"), "--q-scheme");
    r.k = parse_operand_scheme(a.get_or("k-scheme", "fp32"), "--k-scheme");
    r.v = parse_operand_scheme(a.get_or("v-scheme", "fp32"), "--v-scheme");
    r.p.format = parse_static_format(a.get_or("p-format", "fp32"), "--p-format");
  } catch (const std::invalid_argument& e) {
    throw usage_error(e.what());
  }
  if (auto x = a.get("p-scale")) {
    if (!r.p.format) throw usage_error("--p-scale needs --p-format");
    const double ps = parse_number(*x, "--p-scale");
    if (!(ps > 0) || !std::isfinite(static_cast<float>(ps))) throw usage_error("--p-scale must be a finite positive number, got " + *x);
    r.p.scale = static_cast<float>(ps);
  }
  if (a.flag("hadamard")) r.rotation = qk_rotation::hadamard;
  if (auto x = a.get("rotation-seed")) {
    if (!a.flag("hadamard")) throw usage_error("--rotation-seed needs --hadamard");
    r.rotation_seed = parse_integer<std::uint64_t>(*x, "--rotation-seed");
  }
  attention_options opt;
  opt.mask = a.flag("causal") ? mask_kind::causal : mask_kind::none;
  if (auto x = a.get("softmax-scale")) opt.softmax_scale = parse_number(*x, "--softmax-scale");
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

  const auto& pos = a.positional();
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
  const attention_result res = minifloat::attention::attention(q.values, k.values, v.values, s, r, opt,
                                         path == "fast" ? attention_path::fast : attention_path::reference);
  std::vector<std::size_t> out_shape{s.q_heads, s.q_len, s.v_dim};
  if (q.batched) out_shape.insert(out_shape.begin(), s.batch);
  write_result(pos[3], out_shape, res.out);
  if (auto st = a.get("stats")) {
    // (..., Tq, 2): the row max m and the row sum l the backward needs
    std::vector<float> ml(2 * res.row_max.size());
    for (std::size_t i = 0; i < res.row_max.size(); ++i) ml[2 * i] = res.row_max[i], ml[2 * i + 1] = res.row_sum[i];
    out_shape.back() = 2;
    write_result(*st, out_shape, ml);
  }
  return 0;
}

}  // namespace minifloat::cli
