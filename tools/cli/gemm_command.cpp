// minifloat gemm: a quantized GEMM of two .npy matrices, exact or in the fp32 order of the fast
// path, for kernel authors to check against (include/minifloat/gemm/reference.hpp).
#include <minifloat/io/npy.hpp>
// (io first: npy.hpp's enumerator float16 would shadow minifloat::float16 under -Wshadow)
#include <minifloat/core/checked.hpp>
#include <minifloat/gemm/gemm.hpp>
#include <minifloat/quant/scheme_string.hpp>

#include <array>
#include <string>
#include <vector>

#include "args.hpp"
#include "commands.hpp"

namespace minifloat::cli {
namespace {

constexpr auto gemm_usage =
    "minifloat gemm A.npy B.npy OUT.npy --a-scheme S --b-scheme S [--b-layout nk|kn] [--order exact|fp32_blocks|fast] "
    "[--threads N]";

// All file access of this command goes through these two functions.
std::vector<float> read_matrix(const std::string& path, const char* name, std::size_t& rows, std::size_t& cols) {
  const npy_array a = read_npy(path);
  if (a.shape.size() != 2)
    throw shape_error(std::string("gemm: ") + name + " (" + path + ") has " + std::to_string(a.shape.size()) +
                      " dimensions; expected a matrix");
  rows = a.shape[0], cols = a.shape[1];
  return to_float32(a);
}
void write_result(const std::string& path, std::span<const std::size_t> shape, std::span<const float> values) {
  write_npy(path, shape, values);
}

quant_scheme scheme_option(const args& a, const char* option, int mx_axis) {
  const auto text = a.get(option);
  if (!text) throw usage_error(std::string("--") + option + " is required; usage: " + gemm_usage);
  quant_scheme s;
  try {
    s = parse_scheme(*text).scheme;
  } catch (const std::invalid_argument& e) {
    throw usage_error(std::string("--") + option + ": " + e.what());
  }
  if (s.gran == granularity::mx) s.axis = mx_axis;  // MX blocks run along K for both operands
  return s;
}

}  // namespace

int cmd_gemm(const argv_t& argv) {
  args a(argv, {"a-scheme", "b-scheme", "b-layout", "order", "threads"});
  a.expect_positional(3, gemm_usage);
  const std::string layout_name = a.get_or("b-layout", "nk"), order = a.get_or("order", "exact");
  if (layout_name != "nk" && layout_name != "kn") throw usage_error("--b-layout must be nk or kn, got '" + layout_name + "'");
  if (order != "exact" && order != "fp32_blocks" && order != "fast")
    throw usage_error("--order must be exact, fp32_blocks or fast, got '" + order + "'");
  const gemm_layout layout = layout_name == "nk" ? gemm_layout::nk : gemm_layout::kn;
  const quant_scheme sa = scheme_option(a, "a-scheme", 1), sb = scheme_option(a, "b-scheme", layout == gemm_layout::nk ? 1 : 0);
  gemm_config cfg;
  if (auto t = a.get("threads")) cfg.threads = parse_integer<unsigned>(*t, "--threads");

  std::size_t m = 0, ka = 0, br = 0, bc = 0;
  const auto av = read_matrix(a.positional()[0], "A", m, ka);
  const auto bv = read_matrix(a.positional()[1], "B", br, bc);
  const std::size_t kb = layout == gemm_layout::nk ? bc : br, n = layout == gemm_layout::nk ? br : bc;
  if (ka != kb)
    throw shape_error("gemm: A is " + std::to_string(m) + "x" + std::to_string(ka) + " and B (" + layout_name + ") is " +
                      std::to_string(br) + "x" + std::to_string(bc) + "; expected B " +
                      (layout == gemm_layout::nk ? "(N, " + std::to_string(ka) + ")" : "(" + std::to_string(ka) + ", N)"));
  const quantized_tensor qa = quantize(av, m, ka, sa), qb = quantize(bv, br, bc, sb);
  std::vector<float> out(checked_mul(m, n, "gemm: M x N"));
  if (order == "fast") gemm(qa.view(), qb.view(), layout, {}, out, cfg);
  else
    gemm_reference(qa.view(), qb.view(), layout, {}, out,
                   order == "exact" ? gemm_accumulation::exact : gemm_accumulation::fp32_blocks);
  const std::array<std::size_t, 2> shape{m, n};
  write_result(a.positional()[2], shape, out);
  return 0;
}

}  // namespace minifloat::cli
