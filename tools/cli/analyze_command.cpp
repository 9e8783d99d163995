// minifloat analyze: fidelity of real tensors under several quantization schemes, as a table on
// stdout and, on request, JSON (every metric), CSV (one row per tensor and scheme) and SVG plots.
// Metric definitions and the scheme syntax: docs/analysis.md.
// io/ first: npy.hpp's npy_dtype::float16 would otherwise shadow minifloat::float16 (-Wshadow);
// the blank line below keeps include sorters from undoing that.
#include <minifloat/io/error.hpp>
#include <minifloat/io/tensor_files.hpp>

#include <minifloat/analysis/analysis.hpp>
#include <minifloat/analysis/svg.hpp>
#include <minifloat/core/version.hpp>

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
#include <string>
#include <thread>
#include <vector>

#include "args.hpp"
#include "commands.hpp"

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

std::string sqnr_cell(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (std::isnan(v)) return "nan";
  return fmt("%.1f", v);
}

std::string zero_cell(const fidelity_stats& s) {
  if (s.zero_count == 0) return "0";
  const double p = 100.0 * s.zero_rate();
  return p < 0.01 ? "<0.01" : fmt("%.2f", p);
}

std::string pad_left(const std::string& s, std::size_t w) { return s.size() >= w ? s : std::string(w - s.size(), ' ') + s; }
std::string pad_right(const std::string& s, std::size_t w) { return s.size() >= w ? s : s + std::string(w - s.size(), ' '); }

// Deterministic JSON numbers: integers as such, doubles with 17 significant digits (round-trip),
// non-finite as the strings "inf", "-inf", "nan" (JSON has no such numbers).
std::string json_num(double v) {
  if (std::isnan(v)) return "\"nan\"";
  if (std::isinf(v)) return v > 0 ? "\"inf\"" : "\"-inf\"";
  return fmt("%.17g", v);
}

std::string json_str(std::string_view s) {
  std::string o = "\"";
  for (const char c : s) {
    const auto b = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      o += '\\';
      o += c;
    } else if (b < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(b));
      o += buf;
    } else {
      o += c;
    }
  }
  return o + "\"";
}

std::string csv_field(std::string_view s) {
  if (s.find_first_of(",\"\n") == std::string_view::npos) return std::string(s);
  std::string o = "\"";
  for (const char c : s) o += c == '"' ? std::string("\"\"") : std::string(1, c);
  return o + "\"";
}

std::string json_histogram(const analysis::exponent_histogram& h) {
  std::string o = "{";
  bool first = true;
  for (const auto& [e, n] : h.bins()) {
    o += (first ? "\"" : ", \"") + std::to_string(e) + "\": " + std::to_string(n);
    first = false;
  }
  return o + "}";
}

double median(std::vector<double> v) {
  if (v.empty()) return std::nan("");
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
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
  r.shape = t.shape, r.dtype = t.dtype, r.rows = t.rows, r.cols = t.cols;
  r.amax = finite_amax(t.values);
  const int amax_e = r.amax > 0 ? std::ilogb(r.amax) : 0;
  for (const float v : t.values) {
    r.exponents.add(v);
    if (std::isfinite(v) && v != 0) r.relative_exponents.add(std::ldexp(1.0, std::ilogb(v) - amax_e));
  }
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
  std::size_t name_w = 6, shape_w = 5;
  for (const auto& r : rs) {
    name_w = std::max(name_w, std::min<std::size_t>(r.source.name.size(), 40));
    shape_w = std::max(shape_w, shape_string(r.shape).size());
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
  for (const auto& r : rs) {
    std::string name = r.source.name.size() > 40 ? r.source.name.substr(0, 39) + "~" : r.source.name;
    std::string line = pad_right(name, name_w) + " " + pad_left(shape_string(r.shape), shape_w);
    for (const auto& s : r.stats)
      line += std::string(gap, ' ') + pad_left(sqnr_cell(s.sqnr_db()), sq_w) + " " + pad_left(zero_cell(s), zr_w);
    out << line << '\n';
  }
  out << rule << '\n';
  std::string med = pad_right("median", name_w) + " " + pad_left("", shape_w);
  std::string worst = pad_right("worst", name_w) + " " + pad_left("", shape_w);
  for (std::size_t k = 0; k < schemes.size(); ++k) {
    std::vector<double> sq, zr;
    for (const auto& r : rs) sq.push_back(r.stats[k].sqnr_db()), zr.push_back(100.0 * r.stats[k].zero_rate());
    const double zmed = median(zr), zmax = zr.empty() ? 0 : *std::max_element(zr.begin(), zr.end());
    auto zcell = [](double p) { return p == 0 ? std::string("0") : p < 0.01 ? std::string("<0.01") : fmt("%.2f", p); };
    med += std::string(gap, ' ') + pad_left(sqnr_cell(median(sq)), sq_w) + " " + pad_left(zcell(zmed), zr_w);
    worst += std::string(gap, ' ') + pad_left(sqnr_cell(sq.empty() ? std::nan("") : *std::min_element(sq.begin(), sq.end())), sq_w) +
             " " + pad_left(zcell(zmax), zr_w);
  }
  out << med << '\n' << worst << '\n';
  out << "\nSQNR = 10 log10(sum x^2 / sum (x - q)^2) in dB (inf: exact); zero% = non-zero inputs that quantize to 0.\n";
  out << "worst = lowest SQNR and highest zero% over the tensors. Lowest SQNR per scheme:\n";
  for (std::size_t k = 0; k < schemes.size() && !rs.empty(); ++k) {
    std::size_t w = 0;
    for (std::size_t i = 1; i < rs.size(); ++i)
      if (rs[i].stats[k].sqnr_db() < rs[w].stats[k].sqnr_db()) w = i;
    out << "  " << pad_right(schemes[k].name, 24) << " " << rs[w].source.name << " (" << sqnr_cell(rs[w].stats[k].sqnr_db())
        << " dB)\n";
  }
}

void write_json(const fs::path& path, const std::vector<tensor_result>& rs, const std::vector<named_scheme>& schemes,
                const std::vector<std::string>& skipped) {
  std::string o = "{\n  \"tool\": \"minifloat analyze\",\n  \"version\": \"" MINIFLOAT_VERSION_STRING "\",\n";
  o += "  \"metrics\": {\"sqnr_db\": \"10 log10(sum x^2 / sum (x - q)^2) over finite inputs; 'inf' = exact\", "
       "\"zero_rate\": \"zero_count / nonzero_count\", \"overflow_count\": \"|x/s| at or past the overflow threshold "
       "(clipped)\", \"underflow_count\": \"non-zero x with |x/s| below the smallest normal\", \"classes\": \"share of "
       "non-zero finite inputs per precision class of the format, after scaling\", \"exponents\": \"floor(log2 |x|) -> "
       "count\", \"scaled_exponents\": \"floor(log2 |x/s|) -> count\"},\n";
  o += "  \"schemes\": [\n";
  for (std::size_t k = 0; k < schemes.size(); ++k) {
    const auto& s = schemes[k];
    const auto& p = analysis::profile_of(s.scheme.format);
    o += "    {\"name\": " + json_str(s.name) + ", \"scheme\": " + json_str(to_scheme_string(s.scheme)) +
         ", \"quantize_options\": " + json_str(to_quantize_options(s.scheme)) + ", \"description\": " +
         json_str(s.scheme.describe()) + ", \"classes\": [";
    for (std::size_t c = 0; c < p.classes.size(); ++c)
      o += (c ? ", " : "") + std::string("{\"class\": ") + json_str(p.classes[c].label) + ", \"meaning\": " +
           json_str(p.classes[c].detail) + "}";
    o += "]}" + std::string(k + 1 < schemes.size() ? "," : "") + "\n";
  }
  o += "  ],\n  \"tensors\": [\n";
  for (std::size_t i = 0; i < rs.size(); ++i) {
    const auto& r = rs[i];
    o += "    {\"name\": " + json_str(r.source.name) + ", \"file\": " + json_str(r.source.file.generic_string());
    if (!r.source.tensor.empty()) o += ", \"tensor\": " + json_str(r.source.tensor);
    o += ", \"dtype\": " + json_str(r.dtype) + ", \"shape\": [";
    for (std::size_t d = 0; d < r.shape.size(); ++d) {
      if (d) o += ", ";
      o += std::to_string(r.shape[d]);
    }
    o += "], \"matrix\": [" + std::to_string(r.rows) + ", " + std::to_string(r.cols) + "], \"amax\": " + json_num(r.amax) +
         ", \"zeros\": " + std::to_string(r.exponents.zeros()) + ", \"nonfinite\": " +
         std::to_string(r.exponents.nonfinite()) + ",\n     \"exponents\": " + json_histogram(r.exponents) +
         ",\n     \"results\": {\n";
    for (std::size_t k = 0; k < schemes.size(); ++k) {
      const auto& s = r.stats[k];
      const auto& p = analysis::profile_of(schemes[k].scheme.format);
      o += "       " + json_str(schemes[k].name) + ": {\"sqnr_db\": " + json_num(s.sqnr_db()) + ", \"mse\": " +
           json_num(s.mse()) + ", \"max_abs_error\": " + json_num(s.max_abs_error) + ", \"max_rel_error\": " +
           json_num(s.max_rel_error) + ", \"zero_rate\": " + json_num(s.zero_rate()) +
           ", \"count\": " + std::to_string(s.count) + ", \"finite_count\": " + std::to_string(s.finite_count) +
           ", \"nonzero_count\": " + std::to_string(s.nonzero_count) + ", \"zero_count\": " + std::to_string(s.zero_count) +
           ", \"overflow_count\": " + std::to_string(s.overflow_count) + ", \"underflow_count\": " +
           std::to_string(s.underflow_count) + ", \"nan_count\": " + std::to_string(s.nan_count) +
           ", \"nonfinite_inputs\": " + std::to_string(s.nonfinite_inputs) + ", \"signal_energy\": " +
           json_num(s.signal_energy) + ", \"noise_energy\": " + json_num(s.noise_energy) + ",\n         \"classes\": {";
      for (std::size_t c = 0; c < p.classes.size(); ++c)
        o += (c ? ", " : "") + json_str(p.classes[c].label) + ": {\"count\": " + std::to_string(s.class_counts[c]) +
             ", \"share\": " + json_num(s.class_share(c)) + "}";
      o += "},\n         \"scaled_exponents\": " + json_histogram(s.scaled_exponents) + "}" +
           (k + 1 < schemes.size() ? "," : "") + "\n";
    }
    o += "     }}" + std::string(i + 1 < rs.size() ? "," : "") + "\n";
  }
  o += "  ],\n  \"summary\": {\n";
  for (std::size_t k = 0; k < schemes.size(); ++k) {
    std::vector<double> sq, zr;
    std::size_t w = 0;
    for (std::size_t i = 0; i < rs.size(); ++i) {
      sq.push_back(rs[i].stats[k].sqnr_db()), zr.push_back(rs[i].stats[k].zero_rate());
      if (rs[i].stats[k].sqnr_db() < rs[w].stats[k].sqnr_db()) w = i;
    }
    fidelity_stats pooled(analysis::profile_of(schemes[k].scheme.format));
    for (const auto& r : rs) pooled.merge(r.stats[k]);
    o += "    " + json_str(schemes[k].name) + ": {\"median_sqnr_db\": " + json_num(median(sq)) +
         ", \"worst_sqnr_db\": " + json_num(sq.empty() ? std::nan("") : *std::min_element(sq.begin(), sq.end())) +
         ", \"worst_tensor\": " + json_str(rs.empty() ? "" : rs[w].source.name) + ", \"median_zero_rate\": " +
         json_num(median(zr)) + ", \"max_zero_rate\": " + json_num(zr.empty() ? 0 : *std::max_element(zr.begin(), zr.end())) +
         ", \"pooled_sqnr_db\": " + json_num(pooled.sqnr_db()) + ", \"pooled_zero_rate\": " + json_num(pooled.zero_rate()) +
         ", \"overflow_count\": " + std::to_string(pooled.overflow_count) + ", \"underflow_count\": " +
         std::to_string(pooled.underflow_count) + "}" + (k + 1 < schemes.size() ? "," : "") + "\n";
  }
  o += "  },\n  \"skipped\": [";
  for (std::size_t i = 0; i < skipped.size(); ++i) {
    if (i) o += ", ";
    o += json_str(skipped[i]);
  }
  o += "]\n}\n";
  std::ofstream f(path, std::ios::binary);
  f << o;
  if (!f) throw io_error(path.string() + ": cannot write the JSON report");
}

void write_csv(const fs::path& path, const std::vector<tensor_result>& rs, const std::vector<named_scheme>& schemes) {
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
      auto num = [](double v) { return std::isinf(v) ? std::string(v > 0 ? "inf" : "-inf") : fmt("%.17g", v); };
      o += csv_field(r.source.name) + "," + csv_field(r.source.file.generic_string()) + "," + csv_field(r.source.tensor) +
           "," + r.dtype + "," + shape_string(r.shape) + "," + std::to_string(r.rows) + "," + std::to_string(r.cols) + "," +
           csv_field(schemes[k].name) + "," + csv_field(to_scheme_string(schemes[k].scheme)) + "," +
           std::to_string(s.count) + "," + std::to_string(s.finite_count) + "," + std::to_string(s.nonzero_count) + "," +
           num(s.sqnr_db()) + "," + num(s.mse()) + "," + num(s.max_abs_error) + "," + num(s.max_rel_error) + "," +
           std::to_string(s.zero_count) + "," + num(s.zero_rate()) + "," + std::to_string(s.overflow_count) + "," +
           std::to_string(s.underflow_count) + "," + std::to_string(s.nan_count) + "," +
           std::to_string(s.nonfinite_inputs) + "," + csv_field(shares) + "\n";
    }
  std::ofstream f(path, std::ios::binary);
  f << o;
  if (!f) throw io_error(path.string() + ": cannot write the CSV report");
}

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  if (!f) throw io_error(path.string() + ": cannot write");
}

std::vector<std::string> write_svgs(const fs::path& dir, const std::vector<tensor_result>& rs,
                                    const std::vector<named_scheme>& schemes) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw io_error(dir.string() + ": cannot create the SVG folder (" + ec.message() + ")");
  std::vector<std::string> written;
  std::vector<std::string> names;
  for (const auto& r : rs) names.push_back(r.source.name);

  {  // 1. SQNR per tensor
    analysis::svg::chart c;
    c.title = "SQNR per tensor";
    c.subtitle = "10 log10(sum x^2 / sum (x - q)^2); higher is better; open markers on the top edge = exact (inf)";
    c.y_label = "SQNR (dB)";
    c.categories = names;
    for (std::size_t k = 0; k < schemes.size(); ++k) {
      analysis::svg::series s{schemes[k].name, {}, "", false};
      for (const auto& r : rs) s.y.push_back(r.stats[k].sqnr_db());
      c.lines.push_back(std::move(s));
    }
    write_text(dir / "sqnr.svg", c.render());
    written.push_back("sqnr.svg");
  }
  {  // 2. zero-rate per tensor (log scale)
    analysis::svg::chart c;
    c.title = "Zero-rate per tensor";
    c.subtitle = "share of non-zero inputs that quantize to 0 (log scale; the bottom edge is 0)";
    c.y_label = "zero-rate (%)";
    c.categories = names;
    c.log_y = true;
    double lo = 1e9;
    for (std::size_t k = 0; k < schemes.size(); ++k) {
      analysis::svg::series s{schemes[k].name, {}, "", false};
      for (const auto& r : rs) {
        const double z = 100.0 * r.stats[k].zero_rate();
        s.y.push_back(z);
        if (z > 0) lo = std::min(lo, z);
      }
      c.lines.push_back(std::move(s));
    }
    c.y_range = std::pair{std::min(lo, 1e-3), 100.0};
    write_text(dir / "zero_rate.svg", c.render());
    written.push_back("zero_rate.svg");
  }
  {  // 3. significand bits vs exponent relative to the amax binade, all formats aligned
    analysis::svg::chart c;
    c.title = "Effective significand bits vs binary exponent, after scaling";
    c.subtitle = "x = floor(log2 |x|) relative to the scale group's amax binade (0 = where amax lands); "
                 "bars: the analysed values, relative to their tensor's amax";
    c.x_label = "binary exponent relative to amax";
    c.y_label = "significand bits (1 + mantissa bits)";
    c.steps = true;
    struct curve {
      format_id format;
      int align;
      std::string label;
    };
    std::vector<curve> curves;
    for (const auto& s : schemes) {
      const auto align = analysis::amax_binade_after_scaling(s.scheme);
      if (!align) continue;
      auto it = std::find_if(curves.begin(), curves.end(),
                             [&](const curve& cv) { return cv.format == s.scheme.format && cv.align == *align; });
      if (it == curves.end()) curves.push_back({s.scheme.format, *align, s.name});
      else it->label += ", " + s.name;
    }
    int lo = 0, hi = 0;
    for (const auto& cv : curves) {
      const auto& p = analysis::profile_of(cv.format);
      lo = std::min(lo, p.min_binade - cv.align - 1), hi = std::max(hi, p.max_binade - cv.align + 1);
    }
    lo = std::max(lo, -40);
    for (int e = lo; e <= hi; ++e) c.x.push_back(e);
    {
      analysis::exponent_histogram rel;
      for (const auto& r : rs) rel.merge(r.relative_exponents);
      const double total = static_cast<double>(rel.total());
      for (int e = lo; e <= hi; ++e) c.bars.push_back(total > 0 ? static_cast<double>(rel.count(e)) / total : 0.0);
      c.bar_label = "share of values";
    }
    for (const auto& cv : curves) {
      const auto& p = analysis::profile_of(cv.format);
      analysis::svg::series s{cv.label, {}, "", false};
      for (int e = lo; e <= hi; ++e) s.y.push_back(p.bits_at(e + cv.align));
      c.lines.push_back(std::move(s));
    }
    c.y_range = std::pair{0.0, 5.0};
    write_text(dir / "significand_bits.svg", c.render());
    written.push_back("significand_bits.svg");
  }
  // 4. one chart per scheme: the format's bits over its own exponents, and where the scaled values fall
  for (std::size_t k = 0; k < schemes.size(); ++k) {
    const auto& p = analysis::profile_of(schemes[k].scheme.format);
    fidelity_stats pooled(p);
    for (const auto& r : rs) pooled.merge(r.stats[k]);
    analysis::svg::chart c;
    c.title = "Where the values land in " + p.name + " under " + schemes[k].name;
    std::string shares;
    for (std::size_t cl = 0; cl < p.classes.size(); ++cl)
      shares += (cl ? ", " : "") + p.classes[cl].label + " " + fmt("%.2f", 100.0 * pooled.class_share(cl)) + "%";
    c.subtitle = "all tensors pooled: " + shares;
    c.x_label = "binary exponent of x / s (the format's own exponent)";
    c.y_label = "significand bits";
    c.steps = true;
    const int lo = std::max(p.min_binade - 6, -60), hi = p.max_binade + 3;
    for (int e = lo; e <= hi; ++e) c.x.push_back(e);
    const double total = static_cast<double>(pooled.scaled_exponents.total());
    for (int e = lo; e <= hi; ++e) {
      // The end bins also hold what lies beyond the plotted range.
      std::uint64_t n = pooled.scaled_exponents.count(e);
      if (e == lo)
        for (int f = analysis::exponent_histogram::min_exponent; f < lo; ++f) n += pooled.scaled_exponents.count(f);
      if (e == hi)
        for (int f = hi + 1; f <= analysis::exponent_histogram::max_exponent; ++f) n += pooled.scaled_exponents.count(f);
      c.bars.push_back(total > 0 ? static_cast<double>(n) / total : 0.0);
    }
    c.bar_label = "share of values";
    analysis::svg::series s{p.name + " significand bits", {}, "", false};
    for (int e = lo; e <= hi; ++e) s.y.push_back(p.bits_at(e));
    c.lines.push_back(std::move(s));
    c.y_range = std::pair{0.0, std::max(5.0, std::ceil(*std::max_element(p.significand_bits.begin(), p.significand_bits.end())) + 1)};
    const std::string file = "precision_" + file_safe(schemes[k].name) + ".svg";
    write_text(dir / file, c.render());
    written.push_back(file);
  }
  return written;
}

}  // namespace

int cmd_analyze(const argv_t& argv) {
  args a(argv, {"schemes", "json", "csv", "svg"}, {"quiet"});
  constexpr auto usage = "minifloat analyze PATH... [--schemes LIST] [--json FILE] [--csv FILE] [--svg DIR] [--quiet]";
  if (a.positional().empty()) throw usage_error(std::string("expected at least one PATH; usage: ") + usage);

  std::vector<named_scheme> schemes;
  if (auto list = a.get("schemes")) {
    std::string_view rest = *list;
    while (true) {
      const auto comma = rest.find(',');
      std::string_view item = rest.substr(0, comma);
      while (!item.empty() && item.front() == ' ') item.remove_prefix(1);  // "a, b" is fine too
      while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
      if (item.empty()) throw usage_error("--schemes has an empty entry; expected a comma-separated list of schemes");
      try {
        schemes.push_back(parse_scheme(item));
      } catch (const std::invalid_argument& e) {
        throw usage_error(e.what());
      }
      if (comma == std::string_view::npos) break;
      rest = rest.substr(comma + 1);
    }
  } else {
    schemes = analysis::default_schemes();
  }
  for (std::size_t i = 0; i < schemes.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (schemes[i].scheme == schemes[j].scheme)
        throw usage_error("--schemes lists " + schemes[i].name + " twice");

  const auto start = std::chrono::steady_clock::now();
  std::vector<std::string> skipped;
  const auto sources = list_tensor_sources(expand_tensor_paths(a.positional()), &skipped);
  for (const auto& s : skipped) std::cerr << "minifloat analyze: skipped " << s << ": not a floating-point tensor\n";
  if (sources.empty()) throw io_error("no floating-point tensor found in the given paths");
  const auto results = analyze_all(sources, schemes);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  if (auto j = a.get("json")) write_json(*j, results, schemes, skipped);
  if (auto c = a.get("csv")) write_csv(*c, results, schemes);
  std::vector<std::string> svgs;
  if (auto d = a.get("svg")) svgs = write_svgs(*d, results, schemes);

  if (!a.flag("quiet")) {
    std::size_t elements = 0;
    for (const auto& r : results) elements += r.rows * r.cols;
    std::cout << "minifloat analyze: " << results.size() << " tensors (" << elements << " values) x " << schemes.size()
              << " schemes in " << fmt("%.2f", seconds) << " s\n\n";
    print_table(std::cout, results, schemes);
    if (!svgs.empty()) {
      std::cout << "\nSVG plots in " << *a.get("svg") << ":";
      for (const auto& s : svgs) std::cout << ' ' << s;
      std::cout << '\n';
    }
  }
  return 0;
}

}  // namespace minifloat::cli
