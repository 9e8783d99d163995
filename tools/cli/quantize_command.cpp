// minifloat quantize: scaled quantization of a .npy tensor; writes the fake-quantized floats and,
// on request, the codes and scales.
#include <minifloat/io/npy.hpp>
#include <minifloat/io/tensor_files.hpp>
#include <minifloat/all.hpp>
#include <minifloat/quant/quantized_tensor.hpp>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <numeric>
#include <string>
#include <vector>

#include "commands.hpp"
#include "format_args.hpp"

namespace minifloat::cli {
namespace {

/// "RxC" -> (R, C).
std::pair<std::size_t, std::size_t> parse_block(const std::string& text) {
  const auto x = text.find_first_of("xX");
  if (x == std::string::npos) throw usage_error("--block must look like RxC (e.g. 1x128, 128x128), got '" + text + "'");
  const auto r = parse_integer<std::size_t>(std::string_view(text).substr(0, x), "--block rows");
  const auto c = parse_integer<std::size_t>(std::string_view(text).substr(x + 1), "--block cols");
  if (r == 0 || c == 0) throw usage_error("--block sizes must be at least 1, got '" + text + "'");
  return {r, c};
}

double sqnr_db(std::span<const float> x, std::span<const float> y) {
  double signal = 0, noise = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (!std::isfinite(x[i])) continue;
    const double d = static_cast<double>(x[i]) - static_cast<double>(y[i]);
    signal += static_cast<double>(x[i]) * x[i];
    noise += d * d;
  }
  if (noise == 0) return INFINITY;
  return 10.0 * std::log10(signal / noise);
}

}  // namespace

int cmd_quantize(const argv_t& argv) {
  args a(argv, {"format", "granularity", "block", "axis", "scale-rule", "target", "n-guard", "round", "codes", "scales",
          "flatten", "seed"},
         {"quiet"});
  constexpr auto usage =
      "minifloat quantize IN.npy OUT.npy --format F --granularity tensor|channel|token|block|mx [--block RxC] "
      "[--axis 0|1] [--scale-rule max|pow2|none|floor|rceil|ceil|even] [--target T] [--round MODE] "
      "[--codes CODES.npy] [--scales SCALES.npy]";
  a.expect_positional(2, usage);
  const auto fmt_name = a.get("format");
  const auto gran_name = a.get("granularity");
  if (!fmt_name) throw usage_error(std::string("--format is required; usage: ") + usage);
  if (!gran_name) throw usage_error(std::string("--granularity is required; usage: ") + usage);
  const auto fmt = parse_format(*fmt_name);
  if (!fmt) throw usage_error("unknown format '" + *fmt_name + "'; expected one of: " + format_names());
  const auto gran = parse_granularity(*gran_name);
  if (!gran) throw usage_error("unknown granularity '" + *gran_name + "'; expected tensor, channel, token, block or mx");

  quant_scheme s = quant_scheme::make(*fmt, *gran);
  if (auto b = a.get("block")) {
    if (s.gran != granularity::block) throw usage_error("--block applies to --granularity block only");
    std::tie(s.block_rows, s.block_cols) = parse_block(*b);
  } else if (s.gran == granularity::block) {
    s.block_rows = s.block_cols = 128;  // the DeepSeek-V3 weight tile
  }
  if (auto ax = a.get("axis")) {
    if (s.gran != granularity::mx) throw usage_error("--axis applies to --granularity mx only");
    s.axis = parse_integer<int>(*ax, "--axis");
    if (s.axis != 0 && s.axis != 1) throw usage_error("--axis must be 0 or 1, got " + *ax);
  }
  if (auto r = a.get("scale-rule")) {
    const auto rule = parse_scale_rule(*r);
    if (!rule) throw usage_error("unknown --scale-rule '" + *r + "'; expected max, pow2, none, floor, rceil, ceil or even");
    s.rule = *rule;
  }
  if (a.get("target") && a.get("n-guard")) throw usage_error("give --target or --n-guard, not both");
  if (auto t = a.get("target")) s.target = parse_integer<int>(*t, "--target");
  if (auto g = a.get("n-guard")) s.target = pow2_target_from_guard(parse_integer<int>(*g, "--n-guard"));
  if ((a.get("target") || a.get("n-guard")) && s.rule != scale_rule::pow2)
    throw usage_error("--target/--n-guard apply to --scale-rule pow2 only");
  s.round = parse_round_option(a);
  if (auto seed = a.get("seed")) {
    if (s.round != rounding::stochastic) throw usage_error("--seed is only used with --round stochastic");
    s.seed = parse_integer<std::uint64_t>(*seed, "--seed");
  }
  try {
    s.validate();
  } catch (const std::invalid_argument& e) {
    throw usage_error(e.what());
  }

  const std::string& in_path = a.positional()[0];
  const npy_array in = read_npy(in_path);
  const std::vector<float> x = to_float32(in);
  // 1-D is one row; N-D is (prod(leading), last) unless --flatten first asks for (first, prod(rest)).
  const std::string flatten = a.get_or("flatten", "last");
  if (flatten != "last" && flatten != "first") throw usage_error("--flatten must be last or first, got '" + flatten + "'");
  const auto [rows, cols] =
      matrix_shape(in.shape, flatten == "first" ? flatten_mode::first_axis : flatten_mode::last_axis);
  // The one engine on its widest ISA path, both cores (the same bits on every path and split).
  const quantize_options opts{.threads = 0};
  const quantized_tensor q = quantize(x, rows, cols, s, opts);
  const std::vector<float> y = dequantize(q, opts);
  write_npy(a.positional()[1], std::span<const std::size_t>(in.shape), y);

  if (auto codes_path = a.get("codes")) {
    const int bits = visit_format(s.format, [](auto t) { return sizeof_bits<typename decltype(t)::type>; });
    if (bits > 8) {
      std::vector<std::uint16_t> c(rows * cols);
      for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t j = 0; j < cols; ++j) c[r * cols + j] = static_cast<std::uint16_t>(q.code(r, j));
      write_npy(*codes_path, std::span<const std::size_t>(in.shape), c);
    } else if (bits == 4) {
      // float4_e2m1fn_x2: the last dimension holds ceil(cols / 2) bytes, element 2i in the low nibble.
      // Packing runs along matrix rows, so with --flatten first the codes are (rows, bytes).
      std::vector<std::size_t> shape = in.shape.empty() ? std::vector<std::size_t>{1} : in.shape;
      if (flatten == "first" && shape.size() > 2) shape = {rows, cols};
      shape.back() = (cols + 1) / 2;
      write_npy(*codes_path, std::span<const std::size_t>(shape), q.codes());
    } else {
      write_npy(*codes_path, std::span<const std::size_t>(in.shape), q.codes());
    }
  }
  if (auto scales_path = a.get("scales")) {
    const auto v = q.view();
    const std::array<std::size_t, 2> shape{v.scale_grid_rows(), v.scale_grid_cols()};
    if (s.gran == granularity::mx)
      write_npy(*scales_path, std::span<const std::size_t>(shape), q.mx_scales());
    else
      write_npy(*scales_path, std::span<const std::size_t>(shape), q.scales());
  }
  if (!a.flag("quiet")) {
    std::printf("%s: %zux%zu -> %s: SQNR %.2f dB\n", in_path.c_str(), rows, cols, s.describe().c_str(), sqnr_db(x, y));
  }
  return 0;
}

}  // namespace minifloat::cli
