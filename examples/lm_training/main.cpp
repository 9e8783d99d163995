// lm_training: a byte-level decoder-only transformer trained on the King James Bible with every
// GEMM and attention product in 8 bits (or bf16, or fp32), one run per recipe, same data order
// and seed; then the inference recipes on the fp32 model. README.md has the model, the recipes,
// the measured figures and how to reproduce them.
//
//   lm_training                          the CI smoke run (= --smoke)
//   lm_training --smoke                  shipped slice, tiny model, every recipe, faults injected;
//                                        exits 1 unless the loss falls for every recipe and every
//                                        injected fault was skipped and retried
//   lm_training --grad-check             fp64 gradients of the whole model vs central differences,
//                                        and the attention backward vs attention::attention_backward
//   lm_training --determinism            two runs with the same seed and threads: same losses bit for bit
//   lm_training --text FILE [options]    a training run (see --help)
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <minifloat/recipes/recipes.hpp>

#include "../common/args.hpp"
#include "options_check.hpp"
#include "trainer.hpp"

namespace {

using namespace lm;
using minifloat_examples::arg_cursor;
using minifloat_examples::check_output_folder;
using minifloat_examples::parse_list;
using minifloat_examples::quote_arg;
using minifloat_examples::usage_error;
namespace fs = std::filesystem;

struct options {
  std::string mode = "smoke";
  std::string text = LM_TRAINING_DEFAULT_TEXT;
  std::vector<recipe> recipes;
  train_config tc;
  std::size_t seeds = 1;            ///< fp32 with this many seeds (the noise floor)
  std::string out;                  ///< output directory ("" = <temp>/minifloat-lm_training)
  bool infer = false;               ///< inference recipes on the fp32 model
  std::size_t val_windows = 0;      ///< validation windows (0 = all)
  std::size_t calib_batches = 4;
  std::string ablate;               ///< "", "guard", "interval", "history", "all"
  std::string replot_note;          ///< --replot: the chart's subtitle
};

constexpr const char* usage_text =
    "usage: lm_training [--smoke | --grad-check | --determinism | --text FILE] [options]\n"
    "  --recipes LIST     comma list of fp32,bf16,hif8_delayed,hif8_current,fp8_delayed,mxfp8,mxfp8_32x32 or all\n"
    "  --steps N --batch B --lr X --warmup N --seed S --threads N\n"
    "  --layers L --d-model D --heads H --d-ff F --context T\n"
    "  --seeds N          fp32 also with seeds S+1 .. S+N-1 (the run-to-run noise floor)\n"
    "  --inject-inf STEP  an Inf in one gradient at STEP; --inject-nan STEP a NaN in one activation\n"
    "  --n-guard W,A,G --interval I --history L   HiF8 knobs\n"
    "  --ablate guard|interval|history|all        HiF8 delayed ablation runs (after the recipes)\n"
    "  --infer            inference recipes (HiF8, FP8 E4M3 static per tensor; amax, percentile, mse;\n"
    "                     MXFP8) on the trained fp32 model, with text samples\n"
    "  --val-windows N    validation windows of T bytes (0 = the whole last 5 %)\n"
    "  --eval-every N     periodic fp32 validation on 64 windows\n"
    "  --out DIR          results.csv, curves.csv, curves.svg, table.md (default <temp>/minifloat-lm_training)\n"
    "  --replot DIR [--note TEXT]   curves.svg again from DIR/curves.csv\n"
    "  --quiet\n";

std::vector<std::string> split(std::string_view s, char c) {
  std::vector<std::string> out;
  std::size_t b = 0;
  for (std::size_t i = 0; i <= s.size(); ++i)
    if (i == s.size() || s[i] == c) out.emplace_back(s.substr(b, i - b)), b = i + 1;
  return out;
}

/// The first --help or -h anywhere on the line answers it, whatever else is there.
bool wants_help(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::string_view(argv[i]) == "--help" || std::string_view(argv[i]) == "-h") return true;
  return false;
}

options parse(int argc, char** argv) {
  options o;
  std::string recipe_list = "all";
  std::optional<std::array<int, 3>> guard;
  std::optional<std::size_t> interval, history;
  for (arg_cursor arg(argc, argv); arg.next();) {
    const std::string_view a = arg.name();
    if (a == "--smoke") o.mode = "smoke";
    else if (a == "--grad-check") o.mode = "grad-check";
    else if (a == "--determinism") o.mode = "determinism";
    else if (a == "--replot") o.out = std::string(arg.value()), o.mode = "replot";
    else if (a == "--note") o.replot_note = std::string(arg.value());
    else if (a == "--text") o.text = std::string(arg.value()), o.mode = "train";
    else if (a == "--recipes") recipe_list = std::string(arg.value());
    else if (a == "--steps") o.tc.steps = arg.integer<std::size_t>(1, limits::steps);
    else if (a == "--batch") o.tc.batch = arg.integer<std::size_t>(1, 4096);
    else if (a == "--lr") o.tc.opt.lr = arg.real(0.0, 1.0, true);
    else if (a == "--warmup") o.tc.opt.warmup = arg.integer<std::size_t>(0, limits::steps);
    else if (a == "--seed") o.tc.seed = arg.integer<std::uint64_t>(0, std::numeric_limits<std::uint64_t>::max());
    else if (a == "--threads") o.tc.threads = arg.integer<unsigned>(1, 256);
    else if (a == "--layers") o.tc.model.layers = arg.integer<std::size_t>(1, 64);
    else if (a == "--d-model") o.tc.model.d_model = arg.integer<std::size_t>(1, 4096);
    else if (a == "--heads") o.tc.model.heads = arg.integer<std::size_t>(1, 256);
    else if (a == "--d-ff") o.tc.model.d_ff = arg.integer<std::size_t>(1, 16384);
    else if (a == "--context") o.tc.model.context = arg.integer<std::size_t>(1, 4096);
    else if (a == "--seeds") o.seeds = arg.integer<std::size_t>(1, 64);
    else if (a == "--inject-inf") o.tc.inject_inf_step = arg.integer<std::size_t>(0, limits::steps);
    else if (a == "--inject-nan") o.tc.inject_nan_step = arg.integer<std::size_t>(0, limits::steps);
    else if (a == "--eval-every") o.tc.eval_every = arg.integer<std::size_t>(0, limits::steps);
    else if (a == "--log-every") o.tc.log_every = arg.integer<std::size_t>(0, limits::steps);
    else if (a == "--val-windows") o.val_windows = arg.integer<std::size_t>(0, std::size_t{1} << 32);
    else if (a == "--interval") interval = arg.integer<std::size_t>(1, limits::steps);
    else if (a == "--history") history = arg.integer<std::size_t>(1, 1 << 20);
    else if (a == "--n-guard") {
      // the HiF8 guard rule's range (recipes/scaling_rule.hpp): amax binade 15 - N_guard inside HiF8
      const auto g = arg.integer_list<int>(1, 37);
      if (g.size() != 3)
        throw usage_error("--n-guard expects three integers W,A,G in [1, 37] (e.g. 11,10,10), got " + std::to_string(g.size()));
      guard = std::array<int, 3>{g[0], g[1], g[2]};
    } else if (a == "--ablate") {
      o.ablate = std::string(arg.value());
      if (o.ablate != "guard" && o.ablate != "interval" && o.ablate != "history" && o.ablate != "all")
        throw usage_error("--ablate expects guard, interval, history or all, got " + quote_arg(o.ablate));
    } else if (a == "--infer") o.infer = true;
    else if (a == "--out") o.out = std::string(arg.value());
    else if (a == "--quiet") o.tc.quiet = true;
    else arg.unknown();
  }
  for (const std::string& k : recipe_list == "all" ? std::vector<std::string>{"fp32", "bf16", "hif8_delayed", "hif8_current",
                                                                              "fp8_delayed", "mxfp8", "mxfp8_32x32"}
                                                   : parse_list(recipe_list, "--recipes", "training recipes")) {
    const auto kind = parse_recipe_kind(k);
    if (!kind || recipe{*kind}.inference())
      throw usage_error("--recipes: unknown training recipe " + quote_arg(k) +
                        "; expected fp32, bf16, hif8_delayed, hif8_current, fp8_delayed, mxfp8, mxfp8_32x32 or all");
    recipe r{*kind};
    if (guard) r.n_guard_weight = (*guard)[0], r.n_guard_activation = (*guard)[1], r.n_guard_gradient = (*guard)[2];
    if (interval) r.interval = *interval;
    if (history) r.history = *history;
    o.recipes.push_back(r);
  }
  if (o.mode == "train") check_training_options(o.tc, "");
  if (o.infer && std::none_of(o.recipes.begin(), o.recipes.end(), [](const recipe& r) { return r.kind == recipe_kind::fp32; }))
    throw usage_error("--infer needs the fp32 recipe in --recipes (the inference recipes run on the trained fp32 model)");
  if (o.mode == "train") {
    for (const recipe& r : o.recipes)
      if (r.mx() && o.tc.model.context % 32 != 0)
        throw usage_error("MX recipes need a --context that is a multiple of 32 (the per-head MX blocks of P^T, dS^T and V run "
                          "along T), got " + std::to_string(o.tc.model.context));
    if (!o.out.empty()) check_output_folder(o.out, "--out");
  }
  if (o.mode == "replot") check_output_folder(o.out, "--replot");
  return o;
}

// ---------------------------------------------------------------------------------------------
// output

std::string fmt(double v, int prec = 4) {
  if (std::isnan(v)) return "-";
  std::ostringstream s;
  s << std::fixed << std::setprecision(prec) << v;
  return s.str();
}

struct summary_row {
  std::string name, label;
  run_result r;
};

double gap_pct(double x, double ref) { return 100.0 * (x - ref) / ref; }

std::string table(const std::vector<summary_row>& rows, const model_config& mc, const train_config& tc,
                  std::optional<double> fp32_val, std::optional<double> spread) {
  std::ostringstream o;
  o << "| recipe | train loss (last 10 %) | val loss (fp32 fwd) | val loss (recipe fwd) | gap to fp32 (val) | "
       "skipped | retried ok | tokens/s | wall s |\n|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& row : rows) {
    const run_result& r = row.r;
    o << "| " << row.label << " | " << fmt(r.train_loss_tail) << " | " << fmt(r.val_fp32) << " | " << fmt(r.val_recipe)
      << " | " << (fp32_val ? fmt(gap_pct(r.val_fp32, *fp32_val), 2) + " %" : "-") << " | " << r.skipped << " | "
      << r.skipped - r.given_up << " | " << fmt(static_cast<double>(r.tokens) / r.wall_s, 0) << " | " << fmt(r.wall_s, 1)
      << " |\n";
  }
  o << "\nmodel: " << mc.describe() << "; " << tc.steps << " steps of " << tc.batch << " x " << mc.context
    << " bytes; AdamW lr " << tc.opt.lr << ", warm-up " << tc.opt.warmup << ", cosine to " << tc.opt.min_lr_ratio
    << "x, clip " << tc.opt.clip << "; seed " << tc.seed << ", " << tc.threads << " threads\n";
  if (spread) o << "fp32 seed spread (max - min of the validation loss): " << fmt(*spread) << "\n";
  return o.str();
}

std::string results_csv(const std::vector<summary_row>& rows, std::optional<double> fp32_val) {
  std::ostringstream o;
  o << "recipe,label,first_loss,train_loss_tail,val_fp32,val_recipe,gap_pct,skipped,given_up,overflow,restarts,tokens,"
       "wall_s,cpu_s,tokens_per_s\n";
  for (const auto& row : rows) {
    const run_result& r = row.r;
    o << row.name << ",\"" << row.label << "\"," << std::setprecision(9) << r.first_loss << "," << r.train_loss_tail << ","
      << r.val_fp32 << "," << r.val_recipe << "," << (fp32_val ? gap_pct(r.val_fp32, *fp32_val) : NAN) << "," << r.skipped
      << "," << r.given_up << "," << r.counters.overflow << "," << r.counters.restarts << "," << r.tokens << "," << r.wall_s
      << "," << r.cpu_s << "," << static_cast<double>(r.tokens) / r.wall_s << "\n";
  }
  return o.str();
}

std::string curves_csv(const std::vector<summary_row>& rows) {
  std::ostringstream o;
  o << "step";
  for (const auto& row : rows) o << "," << row.name;
  o << "\n" << std::setprecision(7);
  const std::size_t n = rows.empty() ? 0 : rows.front().r.steps.size();
  for (std::size_t s = 0; s < n; ++s) {
    o << s;
    for (const auto& row : rows) {
      o << ",";
      if (s < row.r.steps.size() && std::isfinite(row.r.steps[s].loss)) o << row.r.steps[s].loss;
    }
    o << "\n";
  }
  return o.str();
}

/// Moving average (window w) of the per-step losses; NaN where a step has no loss.
std::vector<double> smooth(const run_result& r, std::size_t w) {
  std::vector<double> out(r.steps.size(), NAN);
  double sum = 0.0;
  std::size_t cnt = 0;
  std::vector<double> win;
  for (std::size_t s = 0; s < r.steps.size(); ++s) {
    const double v = r.steps[s].loss;
    win.push_back(v);
    if (std::isfinite(v)) sum += v, ++cnt;
    if (win.size() > w) {
      if (std::isfinite(win.front())) sum -= win.front(), --cnt;
      win.erase(win.begin());
    }
    if (cnt > 0) out[s] = sum / static_cast<double>(cnt);
  }
  return out;
}

/// A self-contained SVG line chart of the moving-average loss of every run (no scripts, no
/// external fonts or styles). The y range skips the first 10 % of steps (the fall from ln 256).
std::string curves_svg(const std::vector<summary_row>& rows, const std::string& subtitle) {
  static constexpr const char* colors[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                           "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
  const double W = 1000, H = 560, left = 70, right = 250, top = 50, bottom = 50;
  const std::size_t n = rows.empty() ? 0 : rows.front().r.steps.size();
  const std::size_t w = std::max<std::size_t>(1, n / 50);
  std::vector<std::vector<double>> ys;
  double lo = INFINITY, hi = -INFINITY;
  for (const auto& row : rows) {
    ys.push_back(smooth(row.r, w));
    for (std::size_t s = n / 10; s < ys.back().size(); ++s)
      if (std::isfinite(ys.back()[s])) lo = std::min(lo, ys.back()[s]), hi = std::max(hi, ys.back()[s]);
  }
  if (!(lo < hi)) lo = 0, hi = 1;
  const double pad = 0.05 * (hi - lo);
  lo -= pad, hi += pad;
  const double pw = W - left - right, ph = H - top - bottom;
  const auto px = [&](double s) { return left + pw * s / static_cast<double>(std::max<std::size_t>(n - 1, 1)); };
  const auto py = [&](double v) { return top + ph * (1.0 - (std::clamp(v, lo, hi) - lo) / (hi - lo)); };
  std::ostringstream o;
  o << std::fixed << std::setprecision(1);
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H << "\" viewBox=\"0 0 " << W << " "
    << H << "\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  o << "<text x=\"" << left << "\" y=\"22\" font-size=\"16\">Training loss (moving average over " << w
    << " steps) per recipe</text>\n<text x=\"" << left << "\" y=\"40\" fill=\"#555\">" << subtitle << "</text>\n";
  o << "<rect x=\"" << left << "\" y=\"" << top << "\" width=\"" << pw << "\" height=\"" << ph
    << "\" fill=\"none\" stroke=\"#999\"/>\n";
  for (int i = 0; i <= 5; ++i) {
    const double v = lo + (hi - lo) * i / 5.0, y = py(v);
    o << "<line x1=\"" << left << "\" x2=\"" << left + pw << "\" y1=\"" << y << "\" y2=\"" << y
      << "\" stroke=\"#eee\"/><text x=\"" << left - 6 << "\" y=\"" << y + 4 << "\" text-anchor=\"end\">"
      << std::setprecision(3) << v << std::setprecision(1) << "</text>\n";
  }
  for (int i = 0; i <= 10; ++i) {
    const double s = static_cast<double>(n > 0 ? n - 1 : 0) * i / 10.0;
    o << "<text x=\"" << px(s) << "\" y=\"" << top + ph + 16 << "\" text-anchor=\"middle\">" << std::setprecision(0) << s
      << std::setprecision(1) << "</text>\n";
  }
  o << "<text x=\"" << left + pw / 2 << "\" y=\"" << H - 10 << "\" text-anchor=\"middle\">step</text>\n"
    << "<text transform=\"translate(16," << top + ph / 2 << ") rotate(-90)\" text-anchor=\"middle\">cross-entropy "
       "(nats per byte)</text>\n";
  for (std::size_t k = 0; k < rows.size(); ++k) {
    const char* c = colors[k % 10];
    const bool dashed = rows[k].name.rfind("fp32_seed", 0) == 0;
    o << "<polyline fill=\"none\" stroke=\"" << c << "\" stroke-width=\"1.5\"" << (dashed ? " stroke-dasharray=\"5,3\"" : "")
      << " points=\"";
    for (std::size_t s = 0; s < ys[k].size(); ++s)
      if (std::isfinite(ys[k][s])) o << px(static_cast<double>(s)) << "," << py(ys[k][s]) << " ";
    o << "\"/>\n";
    const double ly = top + 10 + 18.0 * static_cast<double>(k);
    o << "<line x1=\"" << left + pw + 12 << "\" x2=\"" << left + pw + 36 << "\" y1=\"" << ly << "\" y2=\"" << ly
      << "\" stroke=\"" << c << "\" stroke-width=\"2\"" << (dashed ? " stroke-dasharray=\"5,3\"" : "") << "/><text x=\""
      << left + pw + 42 << "\" y=\"" << ly + 4 << "\">" << rows[k].name << "</text>\n";
  }
  o << "</svg>\n";
  return o.str();
}

// ---------------------------------------------------------------------------------------------
// inference

/// Calibrates every static slot of an inference model on `batches` training batches: the fp32
/// forward records each slot's tensors, mf::calibrate turns them into one scale per slot.
void calibrate_inference(transformer<float>& m, const corpus& c, const train_config& tc, const recipe& rc,
                         std::size_t batches) {
  set_slot_mode(m, slot_mode::calibrate);
  for (std::size_t i = 0; i < batches; ++i) (void)m.forward(training_batch(c, tc.batch, m.cfg.context, tc.seed + 7777, i), {}, false);
  mf::calibration_config cfg;
  const mf::format_id f = rc.infer_format();
  switch (rc.calib) {
    case mf::calibration_method::amax: cfg = mf::calibration_config::amax(f); break;
    case mf::calibration_method::percentile: cfg = mf::calibration_config::percentile_of(f, mf::granularity::tensor, 99.0); break;
    case mf::calibration_method::mse: cfg = mf::calibration_config::mse(f); break;
  }
  m.for_each_slot([&](quant_slot<float>& s) {
    if (!s.spec().calibrate || s.recorded().empty()) return;
    std::vector<mf::matrix_view<const float>> set;
    for (std::size_t k = 0; k < s.recorded().size(); ++k)
      set.emplace_back(s.recorded()[k].data(), s.recorded_rows()[k], s.cols(), s.cols());
    const mf::calibration_result r = mf::calibrate(std::span<const mf::matrix_view<const float>>(set), cfg);
    s.set_fixed_scale(r.scales.at(0));
    s.clear_recorded();
  });
  set_slot_mode(m, slot_mode::eval);
}

/// Sampling at temperature 0.8 from the model's next-byte distribution, seeded.
std::string sample(transformer<float>& m, const std::string& prompt, std::size_t n, std::uint64_t seed) {
  std::vector<std::uint8_t> ctx(prompt.begin(), prompt.end());
  rng r(seed);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t t = std::min(ctx.size(), m.cfg.context);
    batch b;
    b.b = 1, b.t = t;
    b.inputs.assign(ctx.end() - static_cast<std::ptrdiff_t>(t), ctx.end());
    b.targets.assign(t, 0);
    (void)m.forward(b, {}, false);
    const float* z = m.logits.row(t - 1);
    double mx = -INFINITY;
    for (std::size_t v = 0; v < vocab_size; ++v) mx = std::max(mx, static_cast<double>(z[v]) / 0.8);
    std::vector<double> p(vocab_size);
    double sum = 0.0;
    for (std::size_t v = 0; v < vocab_size; ++v) sum += (p[v] = std::exp(static_cast<double>(z[v]) / 0.8 - mx));
    double u = r.uniform() * sum;
    std::size_t pick = vocab_size - 1;
    for (std::size_t v = 0; v < vocab_size; ++v)
      if ((u -= p[v]) <= 0.0) {
        pick = v;
        break;
      }
    ctx.push_back(static_cast<std::uint8_t>(pick));
  }
  std::string text;  // printable ASCII and newlines as they are, any other byte as '?'
  for (const std::uint8_t c : ctx) text += (c >= 32 && c < 127) || c == '\n' ? static_cast<char>(c) : '?';
  return text;
}

// ---------------------------------------------------------------------------------------------
// modes

/// Text from a file or the command line as SVG text: it must not carry markup into the chart.
std::string xml_text(std::string_view text) {
  std::string out;
  for (const char c : text) out += c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '&' ? "&amp;" : std::string(1, c);
  return out;
}

/// --replot DIR: curves.svg again from DIR/curves.csv (a run's per-step losses).
int run_replot(const options& o) {
  const fs::path csv = fs::path(o.out) / "curves.csv";
  mf::require_regular_file(csv, "the curves.csv of an earlier run");  // a FIFO would block the read
  std::ifstream f(csv, std::ios::binary);
  if (!f) throw mf::io_error(mf::detail::path_text(csv) + ": cannot open; expected a readable curves.csv");
  std::string line;
  if (!std::getline(f, line) || line.rfind("step,", 0) != 0)
    throw mf::io_error(mf::detail::path_text(csv) + ": the first line is not a header 'step,RUN,...'; expected the curves.csv "
                       "that lm_training writes");
  const auto head = split(line, ',');
  std::vector<summary_row> rows(head.size() - 1);
  for (std::size_t k = 0; k < rows.size(); ++k) rows[k].name = xml_text(head[k + 1]);
  for (std::size_t number = 2; std::getline(f, line); ++number) {
    const auto cells = split(line, ',');
    for (std::size_t k = 0; k < rows.size(); ++k) {
      step_record r;
      if (k + 1 < cells.size() && !cells[k + 1].empty()) {
        const std::string& c = cells[k + 1];
        const auto [p, ec] = std::from_chars(c.data(), c.data() + c.size(), r.loss);
        if (ec != std::errc() || p != c.data() + c.size() || !std::isfinite(r.loss))
          throw mf::io_error(mf::detail::path_text(csv) + " line " + std::to_string(number) + ": " + quote_arg(c) +
                             " is not a finite loss; expected a number or an empty cell");
      }
      rows[k].r.steps.push_back(r);
    }
  }
  if (f.bad()) throw mf::io_error(mf::detail::path_text(csv) + ": read error; expected a readable file");
  const std::size_t n = rows.empty() ? 0 : rows.front().r.steps.size();
  const std::string svg = curves_svg(rows, xml_text(o.replot_note.empty() ? std::to_string(n) + " steps" : o.replot_note));
  mf::write_file_atomically(fs::path(o.out) / "curves.svg", {std::as_bytes(std::span<const char>(svg.data(), svg.size()))});
  std::cout << "wrote " << (fs::path(o.out) / "curves.svg").string() << "\n";
  return 0;
}

int run_training(options& o) {
  const corpus data = load_corpus(o.text, o.tc.model.context);
  // the folder is made only when every output is written (output_batch below)
  const fs::path out = o.out.empty() ? fs::temp_directory_path() / "minifloat-lm_training" : fs::path(o.out);
  std::cout << "text: " << o.text << " (" << data.train.size() << " training bytes, " << data.valid.size()
            << " validation bytes)\nmodel: " << o.tc.model.describe() << "\n";
  std::vector<recipe> runs = o.recipes;
  if (!o.ablate.empty()) {
    const bool all = o.ablate == "all";
    if (all || o.ablate == "guard")
      for (int g : {9, 10, 11, 12}) {
        recipe r{recipe_kind::hif8_delayed};
        r.n_guard_weight = r.n_guard_activation = r.n_guard_gradient = g;
        runs.push_back(r);
      }
    if (all || o.ablate == "interval")
      for (const std::size_t i : {std::size_t{1}, std::size_t{5}, std::size_t{20}}) {
        recipe r{recipe_kind::hif8_delayed};
        r.interval = i;
        runs.push_back(r);
      }
    if (all || o.ablate == "history")
      for (const std::size_t h : {std::size_t{64}, std::size_t{256}}) {
        recipe r{recipe_kind::hif8_delayed};
        r.history = h;
        runs.push_back(r);
      }
  }
  std::vector<summary_row> rows;
  std::optional<transformer<float>> fp32_model;
  for (const recipe& rc : runs) {
    trainer tr(o.tc, rc, data);
    std::cout << "== " << rc.label() << "\n" << std::flush;
    run_result r = tr.run();
    tr.evaluate(r, o.val_windows);
    std::cout << "   train " << fmt(r.train_loss_tail) << "  val " << fmt(r.val_fp32) << " (recipe fwd " << fmt(r.val_recipe)
              << ")  skipped " << r.skipped << "  " << fmt(r.wall_s, 1) << " s\n";
    rows.push_back({rc.name(), rc.label(), std::move(r)});
    if (rc.kind == recipe_kind::fp32 && !fp32_model) {
      fp32_model.emplace(o.tc.model, recipe{}, o.tc.seed, o.tc.threads);
      copy_weights(tr.model(), *fp32_model);
    }
  }
  std::optional<double> fp32_val, spread;
  for (const auto& row : rows)
    if (row.r.rc.kind == recipe_kind::fp32) {
      fp32_val = row.r.val_fp32;
      break;
    }
  if (o.seeds > 1) {
    double lo = fp32_val.value_or(INFINITY), hi = fp32_val.value_or(-INFINITY);
    for (std::size_t k = 1; k < o.seeds; ++k) {
      train_config c = o.tc;
      c.seed = o.tc.seed + k;
      c.inject_inf_step.reset(), c.inject_nan_step.reset();
      trainer tr(c, recipe{}, data);
      std::cout << "== fp32, seed " << c.seed << "\n" << std::flush;
      run_result r = tr.run();
      tr.evaluate(r, o.val_windows);
      lo = std::min(lo, r.val_fp32), hi = std::max(hi, r.val_fp32);
      rows.push_back({"fp32_seed" + std::to_string(c.seed), "fp32 (seed " + std::to_string(c.seed) + ")", std::move(r)});
    }
    spread = hi - lo;
  }
  const std::string tab = table(rows, o.tc.model, o.tc, fp32_val, spread);
  std::cout << "\n" << tab;
  std::string infer_tab;
  if (o.infer) {
    if (!fp32_model) throw usage_error("--infer needs the fp32 recipe in --recipes");  // parse() checks it first
    std::ostringstream it;
    const double base = validation_loss(*fp32_model, data, o.tc.batch, o.val_windows);
    it << "\n| inference recipe (on the fp32 model) | val loss | perplexity | gap to fp32 |\n|---|---|---|---|\n"
       << "| fp32 | " << fmt(base) << " | " << fmt(std::exp(base), 3) << " | - |\n";
    std::vector<recipe> inf;
    for (const recipe_kind k : {recipe_kind::infer_hif8, recipe_kind::infer_fp8})
      for (const auto m : {mf::calibration_method::amax, mf::calibration_method::percentile, mf::calibration_method::mse}) {
        recipe r{k};
        r.calib = m;
        inf.push_back(r);
      }
    inf.push_back(recipe{recipe_kind::infer_mxfp8});
    std::string samples;
    const std::string prompt = "Ge3:1 Now the serpent";
    samples += "fp32:\n" + sample(*fp32_model, prompt, 160, 5) + "\n\n";
    for (const recipe& rc : inf) {
      transformer<float> m(o.tc.model, rc, o.tc.seed, o.tc.threads);
      copy_weights(*fp32_model, m);
      if (rc.calibrated()) calibrate_inference(m, data, o.tc, rc, o.calib_batches);
      else set_slot_mode(m, slot_mode::eval);
      const double v = validation_loss(m, data, o.tc.batch, o.val_windows);
      it << "| " << rc.label() << " | " << fmt(v) << " | " << fmt(std::exp(v), 3) << " | " << fmt(gap_pct(v, base), 2)
         << " % |\n";
      if (rc.kind == recipe_kind::infer_hif8 && rc.calib == mf::calibration_method::mse)
        samples += rc.label() + ":\n" + sample(m, prompt, 160, 5) + "\n\n";
    }
    infer_tab = it.str() + "\nsamples (temperature 0.8, seed 5):\n\n" + samples;
    std::cout << infer_tab << std::flush;
  }
  mf::output_batch outputs;  // all four files or none; the folder only if they are all written
  outputs.create_directories(out);
  outputs.stage(out / "table.md", tab + infer_tab);
  outputs.stage(out / "results.csv", results_csv(rows, fp32_val));
  outputs.stage(out / "curves.csv", curves_csv(rows));
  outputs.stage(out / "curves.svg", curves_svg(rows, o.tc.model.describe() + ", " + std::to_string(o.tc.steps) + " steps of " +
                                                         std::to_string(o.tc.batch) + " sequences"));
  outputs.commit();
  std::cout << "wrote table.md, results.csv, curves.csv, curves.svg into " << out.string() << "\n";
  return 0;
}

int run_smoke(const options& o) {
  const train_config c = smoke_config();
  const corpus data = load_corpus(o.text, c.model.context);
  std::cout << "smoke: " << o.text << ", " << c.model.describe() << ", " << c.steps << " steps of " << c.batch
            << "; Inf gradient at step " << *c.inject_inf_step << ", NaN activation at step " << *c.inject_nan_step << "\n";
  int failures = 0;
  for (const recipe_kind k : all_recipe_kinds) {
    const recipe rc{k};
    trainer tr(c, rc, data);
    const run_result r = tr.run();
    const std::size_t n = r.steps.size(), w = 10;
    double head = 0.0, tail = 0.0;
    for (std::size_t i = 0; i < w; ++i) head += r.steps[i].loss, tail += r.steps[n - w + i].loss;
    head /= w, tail /= w;
    const step_record& inf = r.steps[*c.inject_inf_step];
    const step_record& nan = r.steps[*c.inject_nan_step];
    const bool falls = tail < head - 0.3;
    const bool faults = r.skipped == 2 && r.given_up == 0 && inf.attempts == 2 && nan.attempts == 2 &&
                        std::isfinite(inf.loss) && std::isfinite(nan.loss) && r.steps.size() == c.steps;
    bool others_once = true;
    for (const auto& s : r.steps)
      if (s.step != *c.inject_inf_step && s.step != *c.inject_nan_step) others_once = others_once && s.attempts == 1;
    const bool ok = falls && faults && others_once && std::isfinite(tail);
    failures += ok ? 0 : 1;
    std::cout << "  " << std::left << std::setw(13) << key(k) << " loss " << fmt(head, 3) << " -> " << fmt(tail, 3)
              << (falls ? " (falls)" : " (DOES NOT FALL)") << "  skipped " << r.skipped << ", retried: Inf step "
              << (inf.attempts == 2 ? "ok" : "NO") << ", NaN step " << (nan.attempts == 2 ? "ok" : "NO")
              << (ok ? "" : "  FAIL") << "\n";
    if (k == recipe_kind::hif8_delayed)
      std::cout << "                log: step " << inf.step << ": " << inf.event << "\n                log: step " << nan.step
                << ": " << nan.event << "\n";
  }
  std::cout << (failures == 0 ? "smoke: every recipe trains and every injected fault was skipped and retried\n"
                              : "smoke: FAILED\n");
  return failures == 0 ? 0 : 1;
}

/// Central differences of the fp64 model vs its backward, on a tiny configuration.
int run_grad_check(const options& o) {
  const model_config mc{.layers = 2, .d_model = 8, .heads = 2, .d_ff = 16, .context = 6};
  const corpus data = load_corpus(o.text, mc.context);
  const batch bt = training_batch(data, 2, mc.context, 3, 0);
  transformer<double> m(mc, recipe{}, 11, 1);
  // a non-trivial point: perturb the norm gains away from 1
  rng r(99);
  for (auto& p : m.parameters())
    if (p.name.find("norm") != std::string::npos)
      for (double& x : p.value->v) x = 1.0 + 0.3 * r.normal();
  (void)m.forward(bt);
  m.backward();
  std::vector<std::vector<double>> analytic;
  for (auto& p : m.parameters()) analytic.push_back(p.grad->v);
  double worst = 0.0;
  std::size_t checked = 0;
  const double h = 1e-5;
  auto params = m.parameters();
  for (std::size_t pi = 0; pi < params.size(); ++pi) {
    std::vector<double>& w = params[pi].value->v;
    // every element of small tensors; for the embeddings the rows the batch touches
    std::vector<std::size_t> idx;
    if (params[pi].name == "emb.tok") {
      for (const std::uint8_t id : bt.inputs)
        for (std::size_t c = 0; c < mc.d_model; ++c) idx.push_back(std::size_t{id} * mc.d_model + c);
      std::sort(idx.begin(), idx.end());
      idx.erase(std::unique(idx.begin(), idx.end()), idx.end());
      for (std::size_t c = 0; c < mc.d_model; ++c) idx.push_back(c);  // byte 0: never seen, gradient 0
    } else if (params[pi].name == "head") {
      for (std::size_t i = 0; i < w.size(); i += 7) idx.push_back(i);
    } else {
      for (std::size_t i = 0; i < w.size(); ++i) idx.push_back(i);
    }
    double worst_p = 0.0;
    for (const std::size_t i : idx) {
      const double x0 = w[i];
      w[i] = x0 + h;
      const double lp = m.forward(bt, {}, false);
      w[i] = x0 - h;
      const double lm_ = m.forward(bt, {}, false);
      w[i] = x0;
      const double fd = (lp - lm_) / (2 * h), an = analytic[pi][i];
      const double err = std::fabs(fd - an) / std::max(1e-3, std::fabs(fd) + std::fabs(an));
      worst_p = std::max(worst_p, err);
      ++checked;
    }
    worst = std::max(worst, worst_p);
    std::cout << "  " << std::left << std::setw(18) << params[pi].name << " " << std::setw(5) << idx.size()
              << " entries, max relative error " << std::scientific << std::setprecision(2) << worst_p << std::defaultfloat
              << "\n";
  }
  const bool grads_ok = worst < 1e-6;
  std::cout << "grad-check: " << checked << " entries, max relative error " << std::scientific << worst << std::defaultfloat
            << (grads_ok ? " (< 1e-6: ok)" : " (FAIL: >= 1e-6)") << "\n";

  // The model's attention backward (GEMM products, attention.hpp) against the library's
  // attention_backward, fp32, on the same forward.
  namespace at = mf::attention;
  const std::size_t b = 2, heads = 2, t = 64, dh = 32;
  attention_core<float> core(heads, dh, recipe{}, 2);
  rng g(5);
  const std::size_t n = b * heads * t * dh;
  core.q.resize(b * heads * t, dh), core.k.resize(b * heads * t, dh), core.v.resize(b * heads * t, dh);
  tensor<float> d_out(b * heads * t, dh), dq, dk, dv;
  for (std::size_t i = 0; i < n; ++i)
    core.q.v[i] = static_cast<float>(g.normal()), core.k.v[i] = static_cast<float>(g.normal()),
    core.v.v[i] = static_cast<float>(g.normal()), d_out.v[i] = static_cast<float>(g.normal());
  core.forward(b, t, 2);
  core.backward(d_out, dq, dk, dv, 2);
  const at::attention_shape s{.batch = b, .q_heads = heads, .kv_heads = heads, .q_len = t, .kv_len = t, .head_dim = dh, .v_dim = dh};
  const at::attention_recipe rr;
  at::attention_options ao;
  ao.mask = at::mask_kind::causal, ao.threads = 2;
  const at::attention_result fwd = at::attention_forward(core.q.v, core.k.v, core.v.v, s, rr, ao);
  const at::attention_grads lib = at::attention_backward(core.q.v, core.k.v, core.v.v, d_out.v, fwd, s, rr, ao);
  double aw = 0.0;
  for (const auto& [mine, ref] : {std::pair{&dq.v, &lib.dq}, std::pair{&dk.v, &lib.dk}, std::pair{&dv.v, &lib.dv}}) {
    double num = 0.0, den = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      const double d = static_cast<double>((*mine)[i]) - static_cast<double>((*ref)[i]);
      num += d * d, den += static_cast<double>((*ref)[i]) * static_cast<double>((*ref)[i]);
    }
    aw = std::max(aw, std::sqrt(num / den));
  }
  const bool attn_ok = aw < 1e-5;
  std::cout << "attention backward vs attention::attention_backward (fp32, B 2, H 2, T 64, d 32, causal): relative "
               "error "
            << std::scientific << aw << std::defaultfloat << (attn_ok ? " (< 1e-5: ok)" : " (FAIL)") << "\n";
  return grads_ok && attn_ok ? 0 : 1;
}

int run_determinism(const options& o) {
  train_config c = smoke_config();
  c.steps = 24, c.inject_inf_step = 8, c.inject_nan_step = 14;
  const corpus data = load_corpus(o.text, c.model.context);
  int failures = 0;
  for (const recipe_kind k : {recipe_kind::fp32, recipe_kind::hif8_delayed, recipe_kind::fp8_delayed, recipe_kind::mxfp8,
                              recipe_kind::mxfp8_32x32, recipe_kind::bf16}) {
    std::vector<std::vector<double>> losses;
    std::vector<std::vector<float>> weights;
    for (int rep = 0; rep < 2; ++rep) {
      trainer tr(c, recipe{k}, data);
      const run_result r = tr.run();
      std::vector<double> l;
      for (const auto& s : r.steps) l.push_back(s.loss);
      losses.push_back(std::move(l));
      std::vector<float> w;
      for (const auto& p : tr.model().parameters()) w.insert(w.end(), p.value->v.begin(), p.value->v.end());
      weights.push_back(std::move(w));
    }
    const bool same = std::memcmp(losses[0].data(), losses[1].data(), losses[0].size() * sizeof(double)) == 0 &&
                      std::memcmp(weights[0].data(), weights[1].data(), weights[0].size() * sizeof(float)) == 0;
    failures += same ? 0 : 1;
    std::cout << "  " << std::left << std::setw(13) << key(k) << (same ? " identical losses and weights (bit for bit)" : " DIFFERENT")
              << "\n";
  }
  std::cout << (failures == 0 ? "determinism: ok\n" : "determinism: FAILED\n");
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  openblas_set_num_threads(1);  // the example splits its products over its own threads (matmul.hpp)
  if (wants_help(argc, argv)) {
    std::cout << usage_text;
    return 0;
  }
  return minifloat_examples::guarded_main("lm_training", [&] {
    options o = parse(argc, argv);
    if (o.mode == "smoke") return run_smoke(o);
    if (o.mode == "grad-check") return run_grad_check(o);
    if (o.mode == "determinism") return run_determinism(o);
    if (o.mode == "replot") return run_replot(o);
    return run_training(o);
  });
}
