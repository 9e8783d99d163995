// minifloat quantize: scaled quantization of a .npy tensor; writes the fake-quantized floats and,
// on request, the codes and scales: all of them or (on any error) none.
#include <minifloat/io/files.hpp>
#include <minifloat/io/npy.hpp>
#include <minifloat/io/tensor_files.hpp>

#include <minifloat/formats/format_list.hpp>
#include <minifloat/quant/quantized_tensor.hpp>
#include <minifloat/quant/scales.hpp>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "format_args.hpp"
#include "paths.hpp"
#include "readers.hpp"

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

/// SQNR in dB over the finite inputs whose outputs are finite (the others lie in MX blocks that
/// hold a NaN or Inf and are NaN by definition; check_finite_outputs has refused any other);
/// NaN when there is none (printed "n/a"). `nan_block_values` counts the finite inputs left out.
double sqnr_db(std::span<const float> x, std::span<const float> y, std::size_t& nan_block_values) {
  double signal = 0, noise = 0;
  std::size_t finite = 0;
  nan_block_values = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (!std::isfinite(x[i])) continue;
    if (!std::isfinite(y[i])) {
      ++nan_block_values;
      continue;
    }
    ++finite;
    const double d = static_cast<double>(x[i]) - static_cast<double>(y[i]);
    signal += static_cast<double>(x[i]) * x[i];
    noise += d * d;
  }
  if (finite == 0) return NAN;
  if (noise == 0) return INFINITY;
  if (signal == 0) return -INFINITY;
  return 10.0 * std::log10(signal / noise);
}

/// MX blocks (tiles) whose inputs include a NaN or Inf get the NaN scale and NaN values by
/// definition (docs/formats/mx.md): such blocks are exempt. fp32-scale groups are not: their
/// scales come from the finite amax, so a non-finite neighbour never excuses an Inf.
void check_finite_outputs(std::span<const float> x, std::span<const float> y, const quantized_tensor& q,
                          const std::string& in_path) {
  const auto [tr, tc] = minifloat::detail::scale_tile(q.scheme(), q.rows(), q.cols());
  const std::size_t grid_cols = q.cols() == 0 ? 0 : (q.cols() + tc - 1) / tc;
  std::vector<char> nan_block;  // per MX block: holds a non-finite input (built on first need)
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (!std::isfinite(x[i]) || std::isfinite(y[i])) continue;
    const std::size_t r = q.cols() == 0 ? 0 : i / q.cols(), c = q.cols() == 0 ? 0 : i % q.cols();
    if (q.scheme().gran == granularity::mx) {
      if (nan_block.empty()) {
        nan_block.assign(((q.rows() + tr - 1) / tr) * grid_cols, 0);
        for (std::size_t k = 0; k < x.size(); ++k)
          if (!std::isfinite(x[k])) nan_block[(k / q.cols() / tr) * grid_cols + (k % q.cols()) / tc] = 1;
      }
      if (nan_block[(r / tr) * grid_cols + c / tc] != 0) continue;
    }
    std::string scale;
    if (q.scheme().gran != granularity::mx) {
      const auto v = q.view();
      scale = ", scale " + brief(static_cast<double>(q.scales()[(r / tr) * v.scale_grid_cols() + c / tc]));
    }
    throw io_error(terminal_text(in_path) + ": the finite input " + brief(static_cast<double>(x[i])) +
                   " at element (" + std::to_string(r) + ", " + std::to_string(c) + ") (amax " +
                   brief(static_cast<double>(finite_amax(x))) + scale + ") dequantizes to " +
                   brief(static_cast<double>(y[i])) + " under " + q.scheme().describe() +
                   ": code times scale overflows float32; expected finite outputs" +
                   (q.scheme().gran == granularity::mx ? std::string()
                                                       : std::string(" (use --scale-rule max, or a lower --target / higher --n-guard)")));
  }
}

}  // namespace

quantize_request parse_quantize(const argv_t& argv) {
  args a("minifloat quantize IN.npy OUT.npy --format F --granularity tensor|channel|token|block|mx [--block RxC] "
         "[--axis 0|1] [--scale-rule max|pow2|none|floor|rceil|ceil|even] [--target T | --n-guard N] [--round MODE] "
         "[--seed N] [--codes CODES.npy] [--scales SCALES.npy] [--flatten last|first] [--quiet]",
         "Scaled quantization of a .npy tensor: OUT = the dequantized float32 values, IN's shape. IN may be 1-D "
         "(one row) or N-D (flattened as --flatten says).");
  a.option("format", "element format (see `minifloat formats`)", "F");
  a.option("granularity",
           "tensor | channel (one scale per row) | token (same, for activations) | block | mx (E8M0 scale per 32 "
           "along --axis, or per 32x32 tile with --block 32x32)",
           "G");
  a.option("block", "block: tile RxC (default 128x128); mx: 32x32 for 2-D tiles", "RxC");
  a.option("axis", "mx: 1-D blocks run along axis 1 (rows, default) or axis 0", "0|1");
  a.option("scale-rule", "max | pow2 | none (fp32 scales); floor | rceil | ceil | even (mx). Defaults: mx floor; "
           "hifloat8 pow2; others max", "R");
  a.option("target", "pow2: the amax lands in [2^T, 2^(T+1)) (default T=4); T must lie in the format's binades", "T")
      ->check(integer_in<int>("--target"));
  a.option("n-guard", "pow2: T = 15 - N (hifloat8: N 0 to 37)", "N")->check(integer_in<int>("--n-guard"));
  add_round_option(a, "element rounding: nearest (default: the format's own)");
  a.option("seed", "random stream for --round stochastic (element (r,c) draws random_bits(N, r * cols + c))", "N")
      ->check(integer_in<std::uint64_t>("--seed"));
  a.option("codes", "also write the codes (uint8; FP4 packed two per byte along the last axis, element 2i in the low "
           "nibble; uint16 for 16-bit formats)", "CODES.npy");
  a.option("scales", "also write the scales: float32 grid, or uint8 E8M0 codes for mx (one byte per block or tile, "
           "row-major over them)", "SCALES.npy");
  a.option("flatten", "N-D IN as prod(leading) x last (default) or first x prod(rest) (conv weights)", "last|first");
  a.flag("quiet", "no summary line");
  a.parse(argv);
  const std::string usage = a.usage();
  a.expect_positional(2);
  const auto fmt_name = a.get("format");
  const auto gran_name = a.get("granularity");
  if (!fmt_name) throw usage_error(std::string("--format is required; usage: ") + usage);
  if (!gran_name) throw usage_error(std::string("--granularity is required; usage: ") + usage);
  const format_id fmt = parse_format_name(*fmt_name);
  const auto gran = parse_granularity(*gran_name);
  if (!gran)
    throw usage_error("unknown granularity '" + *gran_name + "'; expected tensor, channel, token, block or mx");

  quantize_request req;
  quant_scheme& s = req.scheme;
  s = quant_scheme::make(fmt, *gran);
  if (auto b = a.get("block")) {
    if (s.gran != granularity::block && s.gran != granularity::mx)
      throw usage_error("--block applies to --granularity block or mx (32x32 tiles) only, got --granularity " + *gran_name);
    const auto [br, bc] = parse_block(*b);
    if (s.gran == granularity::mx) {
      // Which RxC is which MX tile is the scheme strings' block= key (quant/scheme_string.hpp):
      // its parser reads it, on an MX scheme any format can stand in for, so the two spellings
      // cannot drift apart. The CLI's message names its own option (a contract).
      quant_scheme tile;
      try {
        tile = parse_scheme("mxfp8_e4m3/block=" + std::to_string(br) + "x" + std::to_string(bc)).scheme;
      } catch (const std::invalid_argument&) {
        throw usage_error("--block " + *b + " with --granularity mx: expected 32x32 (one E8M0 scale per 32x32 tile), "
                          "1x32 or 32x1 (blocks of 32 along axis 1 or 0)");
      }
      if (a.get("axis")) throw usage_error("give --block or --axis with --granularity mx, not both (both set the MX tile)");
      s.block_rows = tile.block_rows, s.block_cols = tile.block_cols, s.axis = tile.axis;
    } else {
      s.block_rows = br, s.block_cols = bc;
    }
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
  if (auto g = a.get("n-guard")) {
    const int n = parse_integer<int>(*g, "--n-guard");
    if (n < -1000 || n > 1000)
      throw usage_error("--n-guard " + *g + " is outside every format's range; expected a guard such as 11 (hifloat8: 0 to 37)");
    s.target = pow2_target_from_guard(n);
  }
  if ((a.get("target") || a.get("n-guard")) && s.rule != scale_rule::pow2)
    throw usage_error("--target/--n-guard apply to --scale-rule pow2 only");
  s.round = parse_round_option(a);
  if (auto seed = a.get("seed")) {
    if (s.round != rounding::stochastic) throw usage_error("--seed is only used with --round stochastic");
    s.seed = parse_integer<std::uint64_t>(*seed, "--seed");
  }
  check_scheme(s, "");

  const std::string flatten = a.get_or("flatten", "last");
  if (flatten != "last" && flatten != "first") throw usage_error("--flatten must be last or first, got '" + flatten + "'");
  req.flatten = flatten == "first" ? flatten_choice::first : flatten_choice::last;
  req.in = a.positional()[0];
  req.out = a.positional()[1];
  req.codes = a.get("codes");
  req.scales = a.get("scales");
  req.quiet = a.flag("quiet");
  return req;
}

int run_quantize(const quantize_request& req) {
  const quant_scheme& s = req.scheme;
  std::vector<role_path> outputs{{"OUT", req.out}};
  if (req.codes) outputs.push_back({"--codes", *req.codes});
  if (req.scales) outputs.push_back({"--scales", *req.scales});
  check_distinct_paths({{"IN", req.in}}, outputs);

  const float_tensor in = read_float_tensor(req.in);
  const std::vector<float>& x = in.values;
  // 1-D is one row; N-D is (prod(leading), last) unless --flatten first asks for (first, prod(rest)).
  const auto [rows, cols] = matrix_shape(
      in.shape, req.flatten == flatten_choice::first ? flatten_mode::first_axis : flatten_mode::last_axis);
  // An empty tensor (a zero extent, however large the others) quantizes to empty codes and an
  // empty scale grid at once: no loop runs over its rows.
  // The one engine on its widest ISA path, both cores (the same bits on every path and split).
  const quantize_options opts{.threads = 0};
  const quantized_tensor q = x.empty() ? quantized_tensor::from_parts(s, rows, cols, {}, {}, {})
                                       : quantize(std::span<const float>(x), rows, cols, s, opts);
  const std::vector<float> y = x.empty() ? std::vector<float>{} : dequantize(q, opts);
  check_finite_outputs(x, y, q, req.in);

  output_batch out;
  write_npy(out, req.out, std::span<const std::size_t>(in.shape), y);
  if (req.codes) {
    const int bits = visit_format(s.format, [](auto t) { return sizeof_bits<typename decltype(t)::type>; });
    if (bits > 8) {
      std::vector<std::uint16_t> c(rows * cols);
      for (std::size_t r = 0; r < rows && cols != 0; ++r)
        for (std::size_t j = 0; j < cols; ++j) c[r * cols + j] = static_cast<std::uint16_t>(q.code(r, j));
      write_npy(out, *req.codes, std::span<const std::size_t>(in.shape), c);
    } else if (bits == 4) {
      // float4_e2m1fn_x2: the last dimension holds ceil(cols / 2) bytes, element 2i in the low nibble.
      // Packing runs along matrix rows, so with --flatten first the codes are (rows, bytes).
      std::vector<std::size_t> shape = in.shape.empty() ? std::vector<std::size_t>{1} : in.shape;
      if (req.flatten == flatten_choice::first && shape.size() > 2) shape = {rows, cols};
      shape.back() = (cols + 1) / 2;
      write_npy(out, *req.codes, std::span<const std::size_t>(shape), q.codes());
    } else {
      write_npy(out, *req.codes, std::span<const std::size_t>(in.shape), q.codes());
    }
  }
  if (req.scales) {
    const auto v = q.view();
    const std::array<std::size_t, 2> shape{v.scale_grid_rows(), v.scale_grid_cols()};
    if (s.gran == granularity::mx)
      write_npy(out, *req.scales, std::span<const std::size_t>(shape), q.mx_scales());
    else
      write_npy(out, *req.scales, std::span<const std::size_t>(shape), q.scales());
  }
  out.commit();
  if (!req.quiet) {
    std::size_t in_nan_blocks = 0;
    const double db = sqnr_db(x, y, in_nan_blocks);
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f dB", db);
    std::string cell = std::isnan(db) ? std::string("n/a (no finite value)") : std::isinf(db) ? (db > 0 ? "inf dB" : "-inf dB") : buf;
    if (in_nan_blocks != 0)
      cell += " (" + std::to_string(in_nan_blocks) + " finite values in MX blocks holding NaN/Inf are NaN, left out)";
    std::printf("%s: %zux%zu -> %s: SQNR %s\n", terminal_text(req.in).c_str(), rows, cols, s.describe().c_str(),
                cell.c_str());
  }
  return 0;
}

int cmd_quantize(const argv_t& argv) { return run_quantize(parse_quantize(argv)); }

}  // namespace minifloat::cli
