// minifloat analyze: fidelity of real tensors under several quantization schemes, as a table on
// stdout and, on request, JSON (every metric), CSV (one row per tensor and scheme) and SVG plots,
// written all-or-nothing. Metric definitions and the scheme syntax: docs/analysis.md.
// io/ first: npy.hpp's npy_dtype::float16 would otherwise shadow minifloat::float16 (-Wshadow);
// the blank line below keeps include sorters from undoing that.
#include <minifloat/io/error.hpp>
#include <minifloat/io/files.hpp>
#include <minifloat/io/tensor_files.hpp>

#include <minifloat/analysis/analysis.hpp>
#include <minifloat/analysis/plots.hpp>
#include <minifloat/core/version.hpp>
#include <minifloat/quant/scales.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "args.hpp"
#include "commands.hpp"
#include "format_args.hpp"
#include "paths.hpp"
#include "svg.hpp"

namespace minifloat::cli {
namespace {

namespace fs = std::filesystem;
using analysis::fidelity_stats;

struct tensor_result {
  tensor_source source;
  std::vector<std::size_t> shape;
  std::string dtype;
  std::size_t rows = 0, cols = 0;
  float amax = 0;
  analysis::exponent_histogram exponents;           // floor(log2 |x|)
  analysis::exponent_histogram relative_exponents;  // floor(log2 |x|) - floor(log2 amax)
  std::vector<fidelity_stats> stats;                // one per scheme
  std::size_t float32_overflows = 0;  // finite float64 values beyond float32, analysed as +-Inf
};

// --- formatting helpers ----------------------------------------------------------------------

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string shape_string(const std::vector<std::size_t>& shape) {
  if (shape.empty()) return "scalar";
  std::string s;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += 'x';
    s += std::to_string(shape[i]);
  }
  return s;
}

// NaN SQNR: the tensor held no finite value, nothing was measured.
std::string sqnr_cell(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (std::isnan(v)) return "n/a";
  return fmt("%.1f", v);
}

std::string zero_cell(const fidelity_stats& s) {
  if (s.zero_count == 0) return "0";
  const double p = 100.0 * s.zero_rate();
  return p < 0.01 ? "<0.01" : fmt("%.2f", p);
}

std::string pad_left(const std::string& s, std::size_t w) { return s.size() >= w ? s : std::string(w - s.size(), ' ') + s; }
std::string pad_right(const std::string& s, std::size_t w) { return s.size() >= w ? s : s + std::string(w - s.size(), ' '); }

// The JSON report is built as an nlohmann::ordered_json (keys in the order written here, so the
// file is deterministic and reads top-down). Numbers: integers as such, doubles round-trip;
// infinities as the strings "inf", "-inf" (JSON has no such numbers), NaN (not applicable: no
// finite value was measured) as null.
using json = nlohmann::ordered_json;

json json_num(double v) {
  if (std::isnan(v)) return nullptr;
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

std::string csv_field(std::string_view s) {
  if (s.find_first_of(",\"\n") == std::string_view::npos) return std::string(s);
  std::string o = "\"";
  for (const char c : s) o += c == '"' ? std::string("\"\"") : std::string(1, c);
  return o + "\"";
}

json json_histogram(const analysis::exponent_histogram& h) {
  json o = json::object();
  for (const auto& [e, n] : h.bins()) o[std::to_string(e)] = n;
  return o;
}

/// Median of the applicable (non-NaN) values; NaN when there is none.
double median(std::vector<double> v) {
  std::erase_if(v, [](double d) { return std::isnan(d); });
  if (v.empty()) return std::nan("");
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

/// Lowest applicable (non-NaN) value; NaN when there is none.
double worst(const std::vector<double>& v) {
  double w = std::nan("");
  for (const double d : v)
    if (!std::isnan(d) && !(d >= w)) w = d;
  return w;
}

/// Index of the tensor with the lowest applicable SQNR under scheme k (0 if none applies).
template <class Results>
std::size_t worst_tensor(const Results& rs, std::size_t k) {
  std::size_t w = rs.size();
  for (std::size_t i = 0; i < rs.size(); ++i) {
    const double v = rs[i].stats[k].sqnr_db();
    if (std::isnan(v)) continue;
    if (w == rs.size() || v < rs[w].stats[k].sqnr_db()) w = i;
  }
  return w == rs.size() ? 0 : w;
}

std::string file_safe(std::string s) {
  for (char& c : s)
    if (c == '/' || c == '=' || c == ':' || c == ' ') c = '_';
  return s;
}

// --- the work --------------------------------------------------------------------------------

tensor_result analyze_one(const tensor_source& src, const std::vector<named_scheme>& schemes) {
  tensor_result r;
  r.source = src;
  const loaded_tensor t = load_tensor(src);
  r.float32_overflows = t.float32_overflows;  // reported (stderr, JSON), not silently Inf
  r.shape = t.shape, r.dtype = t.dtype, r.rows = t.rows, r.cols = t.cols;
  r.amax = finite_amax(t.values);
  for (const float v : t.values) r.exponents.add(v);
  r.relative_exponents = analysis::relative_exponents(t.values);
  r.stats = analysis::analyze_matrix(t.values, t.rows, t.cols, schemes);
  return r;
}

/// Runs analyze_one over all sources on up to 2 threads; results keep the input order.
std::vector<tensor_result> analyze_all(const std::vector<tensor_source>& sources, const std::vector<named_scheme>& schemes) {
  std::vector<tensor_result> results(sources.size());
  std::vector<std::exception_ptr> errors(sources.size());
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t i = next++; i < sources.size(); i = next++) {
      try {
        results[i] = analyze_one(sources[i], schemes);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  const unsigned hw = std::max(1U, std::min(2U, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (unsigned k = 1; k < hw && k < sources.size(); ++k) pool.emplace_back(worker);
  worker();
  for (auto& th : pool) th.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
  return results;
}

// --- outputs ---------------------------------------------------------------------------------

void print_table(std::ostream& out, const std::vector<tensor_result>& rs, const std::vector<named_scheme>& schemes) {
  // Names come from file names and safetensors headers: control characters print as \xNN.
  std::vector<std::string> names;
  for (const auto& r : rs) names.push_back(terminal_text(r.source.name));
  std::size_t name_w = 6, shape_w = 5;
  for (std::size_t i = 0; i < rs.size(); ++i) {
    name_w = std::max(name_w, std::min<std::size_t>(names[i].size(), 40));
    shape_w = std::max(shape_w, shape_string(rs[i].shape).size());
  }
  constexpr std::size_t sq_w = 6, zr_w = 7, gap = 2;
  const std::size_t group_w = sq_w + zr_w + 1;
  // Two header lines with the scheme name split at its first '/', then the column names.
  std::string h1 = pad_right("", name_w + 1 + shape_w), h2 = h1;
  std::string h3 = pad_right("tensor", name_w) + " " + pad_left("shape", shape_w);
  for (const auto& s : schemes) {
    const auto slash = s.name.find('/');
    const std::string a = s.name.substr(0, slash), b = slash == std::string::npos ? "" : s.name.substr(slash + 1);
    h1 += std::string(gap, ' ') + pad_left(a.substr(0, group_w), group_w);
    h2 += std::string(gap, ' ') + pad_left(b.substr(0, group_w), group_w);
    h3 += std::string(gap, ' ') + pad_left("SQNR", sq_w) + " " + pad_left("zero%", zr_w);
  }
  out << h1 << '\n' << h2 << '\n' << h3 << '\n';
  const std::string rule(h3.size(), '-');
  out << rule << '\n';
  for (std::size_t i = 0; i < rs.size(); ++i) {
    const auto& r = rs[i];
    const std::string name = names[i].size() > 40 ? names[i].substr(0, 39) + "~" : names[i];
    std::string line = pad_right(name, name_w) + " " + pad_left(shape_string(r.shape), shape_w);
    for (const auto& s : r.stats)
      line += std::string(gap, ' ') + pad_left(sqnr_cell(s.sqnr_db()), sq_w) + " " + pad_left(zero_cell(s), zr_w);
    out << line << '\n';
  }
  out << rule << '\n';
  std::string med = pad_right("median", name_w) + " " + pad_left("", shape_w);
  std::string low = pad_right("worst", name_w) + " " + pad_left("", shape_w);
  for (std::size_t k = 0; k < schemes.size(); ++k) {
    std::vector<double> sq, zr;
    for (const auto& r : rs) sq.push_back(r.stats[k].sqnr_db()), zr.push_back(100.0 * r.stats[k].zero_rate());
    const double zmed = median(zr), zmax = zr.empty() ? 0 : *std::max_element(zr.begin(), zr.end());
    auto zcell = [](double p) {
      return std::isnan(p) ? std::string("n/a") : p == 0 ? std::string("0") : p < 0.01 ? std::string("<0.01") : fmt("%.2f", p);
    };
    med += std::string(gap, ' ') + pad_left(sqnr_cell(median(sq)), sq_w) + " " + pad_left(zcell(zmed), zr_w);
    low += std::string(gap, ' ') + pad_left(sqnr_cell(worst(sq)), sq_w) + " " + pad_left(zcell(zmax), zr_w);
  }
  out << med << '\n' << low << '\n';
  std::size_t na = 0;
  for (const auto& r : rs)
    if (!r.stats.empty() && r.stats[0].finite_count == 0) ++na;
  out << "\nSQNR = 10 log10(sum x^2 / sum (x - q)^2) in dB (inf: exact; n/a: no finite value to measure); zero% = "
         "non-zero inputs that quantize to 0.\n";
  if (na != 0)
    out << na << " of " << rs.size() << " tensors hold no finite value (empty, all NaN or all Inf): SQNR n/a, left out "
        << "of median and worst.\n";
  out << "worst = lowest SQNR and highest zero% over the tensors. Lowest SQNR per scheme:\n";
  for (std::size_t k = 0; k < schemes.size() && !rs.empty(); ++k) {
    const std::size_t w = worst_tensor(rs, k);
    out << "  " << pad_right(schemes[k].name, 24) << " " << names[w] << " (" << sqnr_cell(rs[w].stats[k].sqnr_db())
        << (std::isnan(rs[w].stats[k].sqnr_db()) ? ")\n" : " dB)\n");
  }
}

std::string json_report(const std::vector<tensor_result>& rs, const std::vector<named_scheme>& schemes,
                        const std::vector<std::string>& skipped) {
  json o;
  o["tool"] = "minifloat analyze";
  o["version"] = MINIFLOAT_VERSION_STRING;
  o["metrics"] = {
      {"sqnr_db", "10 log10(sum x^2 / sum (x - q)^2) over finite inputs; 'inf' = exact, null = no finite input "
                  "(nothing measured)"},
      {"zero_rate", "zero_count / nonzero_count"},
      {"overflow_count", "|x/s| at or past the overflow threshold (clipped)"},
      {"underflow_count", "non-zero x with |x/s| below the smallest normal"},
      {"classes", "share of non-zero finite inputs per precision class of the format, after scaling"},
      {"exponents", "floor(log2 |x|) -> count"},
      {"scaled_exponents", "floor(log2 |x/s|) -> count"}};
  json& js = o["schemes"] = json::array();
  for (const auto& s : schemes) {
    const auto& p = analysis::profile_of(s.scheme.format);
    json classes = json::array();
    for (const auto& c : p.classes) classes.push_back({{"class", c.label}, {"meaning", c.detail}});
    js.push_back({{"name", s.name},
                  {"scheme", to_scheme_string(s.scheme)},
                  {"quantize_options", to_quantize_options(s.scheme)},
                  {"description", s.scheme.describe()},
                  {"classes", std::move(classes)}});
  }
  json& jt = o["tensors"] = json::array();
  for (const auto& r : rs) {
    json t;
    t["name"] = r.source.name;
    t["file"] = r.source.file.generic_string();
    if (!r.source.tensor.empty()) t["tensor"] = r.source.tensor;
    t["dtype"] = r.dtype;
    t["shape"] = r.shape;
    t["matrix"] = {r.rows, r.cols};
    t["amax"] = json_num(r.amax);
    t["zeros"] = r.exponents.zeros();
    t["nonfinite"] = r.exponents.nonfinite();
    t["float32_overflows"] = r.float32_overflows;
    t["exponents"] = json_histogram(r.exponents);
    json& results = t["results"] = json::object();
    for (std::size_t k = 0; k < schemes.size(); ++k) {
      const auto& s = r.stats[k];
      const auto& p = analysis::profile_of(schemes[k].scheme.format);
      json classes = json::object();
      for (std::size_t c = 0; c < p.classes.size(); ++c)
        classes[p.classes[c].label] = {{"count", s.class_counts[c]}, {"share", json_num(s.class_share(c))}};
      results[schemes[k].name] = {{"sqnr_db", json_num(s.sqnr_db())},
                                  {"mse", json_num(s.mse())},
                                  {"max_abs_error", json_num(s.max_abs_error)},
                                  {"max_rel_error", json_num(s.max_rel_error)},
                                  {"zero_rate", json_num(s.zero_rate())},
                                  {"count", s.count},
                                  {"finite_count", s.finite_count},
                                  {"nonzero_count", s.nonzero_count},
                                  {"zero_count", s.zero_count},
                                  {"overflow_count", s.overflow_count},
                                  {"underflow_count", s.underflow_count},
                                  {"nan_count", s.nan_count},
                                  {"nonfinite_inputs", s.nonfinite_inputs},
                                  {"signal_energy", json_num(s.signal_energy)},
                                  {"noise_energy", json_num(s.noise_energy)},
                                  {"classes", std::move(classes)},
                                  {"scaled_exponents", json_histogram(s.scaled_exponents)}};
    }
    jt.push_back(std::move(t));
  }
  json& summary = o["summary"] = json::object();
  for (std::size_t k = 0; k < schemes.size(); ++k) {
    std::vector<double> sq, zr;
    std::size_t na = 0;
    for (const auto& r : rs) {
      sq.push_back(r.stats[k].sqnr_db()), zr.push_back(r.stats[k].zero_rate());
      if (r.stats[k].finite_count == 0) ++na;
    }
    const std::size_t w = worst_tensor(rs, k);
    fidelity_stats pooled(analysis::profile_of(schemes[k].scheme.format));
    for (const auto& r : rs) pooled.merge(r.stats[k]);
    summary[schemes[k].name] = {{"median_sqnr_db", json_num(median(sq))},
                                {"worst_sqnr_db", json_num(worst(sq))},
                                {"na_tensors", na},
                                {"worst_tensor", rs.empty() ? std::string() : rs[w].source.name},
                                {"median_zero_rate", json_num(median(zr))},
                                {"max_zero_rate", json_num(zr.empty() ? 0 : *std::max_element(zr.begin(), zr.end()))},
                                {"pooled_sqnr_db", json_num(pooled.sqnr_db())},
                                {"pooled_zero_rate", json_num(pooled.zero_rate())},
                                {"overflow_count", pooled.overflow_count},
                                {"underflow_count", pooled.underflow_count}};
  }
  o["skipped"] = skipped;
  // File names and tensor names are bytes from outside: invalid UTF-8 becomes U+FFFD rather than
  // an exception (or an invalid JSON file).
  return o.dump(1, ' ', false, json::error_handler_t::replace) + "\n";
}

std::string csv_report(const std::vector<tensor_result>& rs, const std::vector<named_scheme>& schemes) {
  std::string o =
      "tensor,file,tensor_name,dtype,shape,rows,cols,scheme,scheme_string,count,finite_count,nonzero_count,sqnr_db,mse,"
      "max_abs_error,max_rel_error,zero_count,zero_rate,overflow_count,underflow_count,nan_count,nonfinite_inputs,"
      "class_shares\n";
  for (const auto& r : rs)
    for (std::size_t k = 0; k < schemes.size(); ++k) {
      const auto& s = r.stats[k];
      const auto& p = analysis::profile_of(schemes[k].scheme.format);
      std::string shares;
      for (std::size_t c = 0; c < p.classes.size(); ++c)
        shares += (c ? ";" : "") + p.classes[c].label + "=" + fmt("%.6g", s.class_share(c));
      auto num = [](double v) {
        return std::isnan(v) ? std::string("n/a") : std::isinf(v) ? std::string(v > 0 ? "inf" : "-inf") : fmt("%.17g", v);
      };
      o += csv_field(r.source.name) + "," + csv_field(r.source.file.generic_string()) + "," + csv_field(r.source.tensor) +
           "," + r.dtype + "," + shape_string(r.shape) + "," + std::to_string(r.rows) + "," + std::to_string(r.cols) + "," +
           csv_field(schemes[k].name) + "," + csv_field(to_scheme_string(schemes[k].scheme)) + "," +
           std::to_string(s.count) + "," + std::to_string(s.finite_count) + "," + std::to_string(s.nonzero_count) + "," +
           num(s.sqnr_db()) + "," + num(s.mse()) + "," + num(s.max_abs_error) + "," + num(s.max_rel_error) + "," +
           std::to_string(s.zero_count) + "," + num(s.zero_rate()) + "," + std::to_string(s.overflow_count) + "," +
           std::to_string(s.underflow_count) + "," + std::to_string(s.nan_count) + "," +
           std::to_string(s.nonfinite_inputs) + "," + csv_field(shares) + "\n";
    }
  return o;
}

/// The file names write_svgs produces, in order (known before any data is read, so they can be
/// checked against the inputs).
std::vector<std::string> svg_names(const std::vector<named_scheme>& schemes) {
  std::vector<std::string> v{"sqnr.svg", "zero_rate.svg", "significand_bits.svg"};
  for (const auto& s : schemes) v.push_back("precision_" + file_safe(s.name) + ".svg");
  return v;
}

/// Stages the SVG plots in `dir` (created if needed); returns their file names.
std::vector<std::string> write_svgs(output_batch& out, const fs::path& dir, const std::vector<tensor_result>& rs,
                                    const std::vector<named_scheme>& schemes) {
  out.create_directories(dir);
  const std::vector<std::string> files = svg_names(schemes);
  std::vector<std::string> names;
  for (const auto& r : rs) names.push_back(r.source.name);

  {  // 1. SQNR per tensor
    svg::chart c;
    c.title = "SQNR per tensor";
    c.subtitle = "10 log10(sum x^2 / sum (x - q)^2); higher is better; open markers on the top edge = exact (inf); "
                 "gaps = n/a (no finite value)";
    c.y_label = "SQNR (dB)";
    c.categories = names;
    for (std::size_t k = 0; k < schemes.size(); ++k) {
      svg::series s{schemes[k].name, {}, "", false};
      for (const auto& r : rs) s.y.push_back(r.stats[k].sqnr_db());
      c.lines.push_back(std::move(s));
    }
    out.stage(dir / files[0], c.render());
  }
  {  // 2. zero-rate per tensor (log scale)
    svg::chart c;
    c.title = "Zero-rate per tensor";
    c.subtitle = "share of non-zero inputs that quantize to 0 (log scale; the bottom edge is 0)";
    c.y_label = "zero-rate (%)";
    c.categories = names;
    c.log_y = true;
    double lo = 1e9;
    for (std::size_t k = 0; k < schemes.size(); ++k) {
      svg::series s{schemes[k].name, {}, "", false};
      for (const auto& r : rs) {
        const double z = 100.0 * r.stats[k].zero_rate();
        s.y.push_back(z);
        if (z > 0) lo = std::min(lo, z);
      }
      c.lines.push_back(std::move(s));
    }
    c.y_range = std::pair{std::min(lo, 1e-3), 100.0};
    out.stage(dir / files[1], c.render());
  }
  // 3. and 4.: exponent charts, computed by the library (analysis/plots.hpp)
  auto exponent_chart = [](const analysis::exponent_plot& p, svg::chart& c) {
    c.steps = true;
    for (const int e : p.x) c.x.push_back(e);
    c.bars = p.bars;
    c.bar_label = "share of values";
    for (const auto& l : p.lines) c.lines.push_back({l.name, l.y, "", false});
    c.y_range = std::pair{0.0, p.y_max};
  };
  {  // 3. significand bits vs exponent relative to the amax binade, all formats aligned
    analysis::exponent_histogram rel;
    for (const auto& r : rs) rel.merge(r.relative_exponents);
    svg::chart c;
    c.title = "Effective significand bits vs binary exponent, after scaling";
    c.subtitle = "x = floor(log2 |x|) relative to the scale group's amax binade (0 = where amax lands); "
                 "bars: the analysed values, relative to their tensor's amax";
    c.x_label = "binary exponent relative to amax";
    c.y_label = "significand bits (1 + mantissa bits)";
    exponent_chart(analysis::significand_bits_plot(schemes, rel), c);
    out.stage(dir / files[2], c.render());
  }
  for (std::size_t k = 0; k < schemes.size(); ++k) {  // 4. where the scaled values land, per scheme
    const auto& p = analysis::profile_of(schemes[k].scheme.format);
    fidelity_stats pooled(p);
    for (const auto& r : rs) pooled.merge(r.stats[k]);
    svg::chart c;
    c.title = "Where the values land in " + p.name + " under " + schemes[k].name;
    std::string shares;
    for (std::size_t cl = 0; cl < p.classes.size(); ++cl)
      shares += (cl ? ", " : "") + p.classes[cl].label + " " + fmt("%.2f", 100.0 * pooled.class_share(cl)) + "%";
    c.subtitle = "all tensors pooled: " + shares;
    c.x_label = "binary exponent of x / s (the format's own exponent)";
    c.y_label = "significand bits";
    exponent_chart(analysis::landing_plot(p, pooled), c);
    out.stage(dir / files[3 + k], c.render());
  }
  return files;
}

}  // namespace

analyze_request parse_analyze(const argv_t& argv) {
  args a("minifloat analyze PATH... [--schemes LIST] [--json FILE] [--csv FILE] [--svg DIR] [--quiet]",
         "Fidelity of real tensors under several schemes: a table with SQNR (dB) and zero-rate per tensor and scheme, "
         "median and worst. PATH: .npy (float32/64/16) or .safetensors (F32, F16, BF16, F64, FP8 tensors) files, or "
         "folders (their .npy/.safetensors, by name). Tensors are viewed as matrices: 1-D one row, 4-D (O,I,kh,kw) O x "
         "I*kh*kw, other N-D prod(leading) x last. Metrics: docs/analysis.md.");
  a.option("schemes",
           "comma-separated schemes, each FORMAT/GRANULARITY[/key=value...] with keys block=RxC, axis=0|1, "
           "scale-rule=R, target=T, n-guard=N, round=MODE (the quantize options, same defaults; every rounding but "
           "stochastic), granularity blockN = block/block=NxN, or an alias mxfp8_e4m3, mxfp8_e5m2, mxfp6_e3m2, "
           "mxfp6_e2m3, mxfp4. Default: hifloat8/tensor, hifloat8/channel, float8_e4m3fn/tensor, mxfp8_e4m3, "
           "mxfp8_e5m2, mxfp4, float8_e4m3fn/block128",
           "LIST");
  a.option("json", "every metric per tensor and scheme (deterministic)", "FILE");
  a.option("csv", "one row per tensor and scheme", "FILE");
  a.option("svg", "plots: sqnr.svg, zero_rate.svg, significand_bits.svg and precision_<scheme>.svg", "DIR");
  a.flag("quiet", "no table");
  a.parse(argv);
  if (a.positional().empty()) throw usage_error(std::string("expected at least one PATH; usage: ") + a.usage());
  analyze_request req;
  if (auto list = a.get("schemes")) {
    std::string_view rest = *list;
    while (true) {
      const auto comma = rest.find(',');
      std::string_view item = rest.substr(0, comma);
      while (!item.empty() && item.front() == ' ') item.remove_prefix(1);  // "a, b" is fine too
      while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
      if (item.empty()) throw usage_error("--schemes has an empty entry; expected a comma-separated list of schemes");
      try {
        req.schemes.push_back(parse_scheme(item));
      } catch (const std::invalid_argument& e) {
        throw usage_error(terminal_text(e.what()));
      }
      check_scheme(req.schemes.back().scheme, "scheme '" + terminal_text(item) + "': ");
      if (comma == std::string_view::npos) break;
      rest = rest.substr(comma + 1);
    }
  } else {
    req.schemes = analysis::default_schemes();
  }
  for (std::size_t i = 0; i < req.schemes.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (req.schemes[i].scheme == req.schemes[j].scheme)
        throw usage_error("--schemes lists " + req.schemes[i].name + " twice");
  req.paths = a.positional();
  req.json = a.get("json");
  req.csv = a.get("csv");
  req.svg = a.get("svg");
  for (const auto* o : {&req.json, &req.csv, &req.svg})
    if (*o && o->value().empty()) throw usage_error("an output path is empty; expected --json FILE, --csv FILE, --svg DIR");
  req.quiet = a.flag("quiet");
  return req;
}

int run_analyze(const analyze_request& req) {
  const auto start = std::chrono::steady_clock::now();
  const std::vector<fs::path> files = expand_tensor_paths(req.paths);
  std::vector<role_path> inputs, outputs;
  for (const auto& f : files) inputs.push_back({"the input", f});
  if (req.json) outputs.push_back({"--json", *req.json});
  if (req.csv) outputs.push_back({"--csv", *req.csv});
  if (req.svg)
    for (const auto& n : svg_names(req.schemes)) outputs.push_back({"--svg " + *req.svg, fs::path(*req.svg) / n});
  check_distinct_paths(inputs, outputs);

  std::vector<std::string> skipped;
  const auto sources = list_tensor_sources(files, &skipped);
  if (sources.empty()) {
    std::string why = "no floating-point tensor found in the given paths";
    if (!skipped.empty()) why += " (skipped: " + terminal_text(skipped.front()) + (skipped.size() > 1 ? ", ..." : "") + ")";
    throw io_error(why + "; expected a float32, float64, float16, bfloat16 or FP8 tensor");
  }
  for (const auto& s : skipped)
    std::cerr << "minifloat analyze: skipped " << terminal_text(s) << ": not a floating-point tensor\n";
  const auto results = analyze_all(sources, req.schemes);
  for (const auto& r : results)
    if (r.float32_overflows != 0)
      std::cerr << "minifloat analyze: note: " << terminal_text(r.source.name) << ": " << r.float32_overflows
                << " float64 values lie beyond float32's range; they are analysed as +-Inf (non-finite, "
                   "left out of the sums)\n";
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  output_batch out;
  if (req.json) out.stage(*req.json, json_report(results, req.schemes, skipped));
  if (req.csv) out.stage(*req.csv, csv_report(results, req.schemes));
  std::vector<std::string> svgs;
  if (req.svg) svgs = write_svgs(out, *req.svg, results, req.schemes);
  out.commit();

  if (!req.quiet) {
    std::size_t elements = 0, na = 0;
    for (const auto& r : results) {
      elements += r.rows * r.cols;
      if (!r.stats.empty() && r.stats[0].finite_count == 0) ++na;
    }
    std::string text = "minifloat analyze: " + std::to_string(results.size()) + " tensors (" + std::to_string(elements) +
                       " values) x " + std::to_string(req.schemes.size()) + " schemes in " + fmt("%.2f", seconds) + " s";
    if (na != 0) text += "; " + std::to_string(na) + " without a finite value (SQNR n/a)";
    std::ostringstream table;
    print_table(table, results, req.schemes);
    text += "\n\n" + table.str();
    if (!svgs.empty()) {
      text += "\nSVG plots in " + terminal_text(*req.svg) + ":";
      for (const auto& s : svgs) text += " " + s;
      text += "\n";
    }
    std::cout << text << std::flush;
    if (!std::cout) throw io_error("<stdout>: write failed; expected the table to be written");
  }
  return 0;
}

int cmd_analyze(const argv_t& argv) { return run_analyze(parse_analyze(argv)); }

}  // namespace minifloat::cli
