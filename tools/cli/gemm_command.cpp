// minifloat gemm: a quantized GEMM of two .npy matrices, exact or in the fp32 order of the fast
// path, for kernel authors to check against (include/minifloat/gemm/reference.hpp).
#include <minifloat/io/npy.hpp>
// (io first: npy.hpp's enumerator float16 would shadow minifloat::float16 under -Wshadow)
#include <minifloat/core/checked.hpp>
#include <minifloat/gemm/gemm.hpp>
#include <minifloat/quant/scheme_string.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "args.hpp"
#include "commands.hpp"
#include "format_args.hpp"
#include "paths.hpp"
#include "readers.hpp"

namespace minifloat::cli {
namespace {

struct gemm_request {
  std::string a, b, out;
  quant_scheme sa, sb;
  gemm_layout layout = gemm_layout::nk;
  std::string layout_name = "nk", order = "exact";
  gemm_config cfg;
};

// All file access of this command goes through these two functions.
std::vector<float> read_matrix(const std::string& path, const char* name, std::size_t& rows, std::size_t& cols) {
  float_tensor t = read_float_tensor(path);
  if (t.shape.size() != 2)
    throw shape_error(std::string("gemm: ") + name + " (" + terminal_text(path) + ") has " +
                      std::to_string(t.shape.size()) + " dimensions; expected a matrix");
  rows = t.shape[0], cols = t.shape[1];
  return std::move(t.values);
}
void write_result(const std::string& path, std::span<const std::size_t> shape, std::span<const float> values) {
  write_npy(path, shape, values);
}

gemm_request parse_gemm(const argv_t& argv) {
  args a("minifloat gemm A.npy B.npy OUT.npy --a-scheme S --b-scheme S [--b-layout nk|kn] "
         "[--order exact|fp32_blocks|fast] [--threads N]",
         "Quantized GEMM: A (M, K) and B (N, K) or (K, N) float .npy matrices, each quantized under its scheme (MX "
         "blocks run along K), OUT (M, N) float32.");
  a.option("a-scheme", "A's scheme, FORMAT/GRANULARITY[/key=value...] as analyze's --schemes", "S");
  a.option("b-scheme", "B's scheme", "S");
  a.option("b-layout", "nk (default) or kn", "nk|kn");
  a.option("order", "exact (default): the exact sum rounded once; fp32_blocks: the fast path's fp32 order "
           "(reference code); fast: the fast GEMM", "ORDER");
  a.option("threads", "worker threads of --order fast (0: all hardware threads; default 1)", "N")
      ->check(integer_in<unsigned>("--threads", 0U, 4096U));
  a.parse(argv);
  a.expect_positional(3);
  gemm_request r;
  r.layout_name = a.get_or("b-layout", "nk"), r.order = a.get_or("order", "exact");
  if (r.layout_name != "nk" && r.layout_name != "kn")
    throw usage_error("--b-layout must be nk or kn, got '" + r.layout_name + "'");
  if (r.order != "exact" && r.order != "fp32_blocks" && r.order != "fast")
    throw usage_error("--order must be exact, fp32_blocks or fast, got '" + r.order + "'");
  r.layout = r.layout_name == "nk" ? gemm_layout::nk : gemm_layout::kn;
  auto scheme = [&](const char* option, int mx_axis) {
    const auto text = a.get(option);
    if (!text) throw usage_error(std::string("--") + option + " is required; usage: " + a.usage());
    quant_scheme s = parse_scheme_option(*text, std::string("--") + option);
    // MX blocks run along K for both operands (a 32x32 tile covers both axes anyway)
    if (s.gran == granularity::mx) s.axis = mx_axis;
    return s;
  };
  r.sa = scheme("a-scheme", 1);
  r.sb = scheme("b-scheme", r.layout == gemm_layout::nk ? 1 : 0);
  if (auto t = a.get("threads")) r.cfg.threads = parse_integer<unsigned>(*t, "--threads");
  r.a = a.positional()[0], r.b = a.positional()[1], r.out = a.positional()[2];
  return r;
}

}  // namespace

void check_gemm_args(const argv_t& argv) { (void)parse_gemm(argv); }

int cmd_gemm(const argv_t& argv) {
  const gemm_request r = parse_gemm(argv);
  check_distinct_paths({{"A", r.a}, {"B", r.b}}, {{"OUT", r.out}});
  std::size_t m = 0, ka = 0, br = 0, bc = 0;
  const auto av = read_matrix(r.a, "A", m, ka);
  const auto bv = read_matrix(r.b, "B", br, bc);
  const std::size_t kb = r.layout == gemm_layout::nk ? bc : br, n = r.layout == gemm_layout::nk ? br : bc;
  if (ka != kb)
    throw shape_error("gemm: A is " + std::to_string(m) + "x" + std::to_string(ka) + " and B (" + r.layout_name +
                      ") is " + std::to_string(br) + "x" + std::to_string(bc) + "; expected B " +
                      (r.layout == gemm_layout::nk ? "(N, " + std::to_string(ka) + ")" : "(" + std::to_string(ka) + ", N)"));
  const quantized_tensor qa = quantize(av, m, ka, r.sa), qb = quantize(bv, br, bc, r.sb);
  std::vector<float> out(checked_mul(m, n, "gemm: M x N"));
  if (r.order == "fast") gemm(qa.view(), qb.view(), r.layout, {}, out, r.cfg);
  else
    gemm_reference(qa.view(), qb.view(), r.layout, {}, out,
                   r.order == "exact" ? gemm_accumulation::exact : gemm_accumulation::fp32_blocks);
  // Finite A and B whose product leaves float32 (the exactly rounded sum is +-Inf) are refused
  // like every finite input that would come back non-finite (docs/errors.md), not written.
  const auto finite = [](const std::vector<float>& v) {
    return std::all_of(v.begin(), v.end(), [](float x) { return std::isfinite(x); });
  };
  if (const auto bad = std::find_if(out.begin(), out.end(), [](float x) { return !std::isfinite(x); });
      bad != out.end() && finite(av) && finite(bv)) {
    const auto i = static_cast<std::size_t>(bad - out.begin());
    throw io_error("gemm: OUT[" + std::to_string(i / n) + ", " + std::to_string(i % n) + "] of finite A and B is " +
                   (std::isnan(*bad) ? std::string("nan") : *bad > 0 ? std::string("inf") : std::string("-inf")) +
                   ": the product's exact value lies beyond float32; expected inputs whose products and sums stay "
                   "within +-3.40282347e+38 (scale A or B down)");
  }
  const std::array<std::size_t, 2> shape{m, n};
  write_result(r.out, shape, out);
  return 0;
}

}  // namespace minifloat::cli
