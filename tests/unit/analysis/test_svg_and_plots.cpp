// SVG charts of the CLI (tools/cli/svg.hpp: structure, escaping, non-finite points) and the plot
// data the library computes for them (analysis/plots.hpp). Tensor file handling is tested in
// tests/unit/io/test_tensor_files.cpp.
#include <minifloat/analysis/analysis.hpp>
#include <minifloat/analysis/plots.hpp>

#include "cli/svg.hpp"  // tools/ (the drawing lives with the CLI)

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace {
std::size_t count(const std::string& s, std::string_view what) {
  std::size_t n = 0;
  for (auto p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}
}  // namespace

TEST_CASE("svg: category chart structure", "[analysis][svg]") {
  minifloat::cli::svg::chart c;
  c.title = "SQNR <per> tensor & \"more\"";
  c.y_label = "dB";
  c.categories = {"a", "b<c", "d"};
  const double inf = std::numeric_limits<double>::infinity();
  c.lines.push_back({"s1", {10, inf, 30}, "", false});
  c.lines.push_back({"s2", {12, std::nan(""), 28}, "#000000", true});
  const std::string svg = c.render();
  CHECK(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
  CHECK(svg.ends_with("</svg>\n"));
  CHECK(svg.find("SQNR &lt;per&gt; tensor &amp; &quot;more&quot;") != std::string::npos);
  CHECK(svg.find("b&lt;c") != std::string::npos);
  CHECK(svg.find("<per>") == std::string::npos);
  CHECK(count(svg, "<path ") == 2);  // one per series; s2's NaN starts a second subpath
  CHECK(count(svg, "d=\"M") == 2);
  CHECK(count(svg, " M") == 1);
  CHECK(count(svg, "fill=\"white\" stroke") == 1);  // the +inf point: open marker
  CHECK(svg.find("stroke-dasharray") != std::string::npos);
  CHECK(count(svg, "<svg") == 1);
}

TEST_CASE("svg: step chart with bars and a log axis", "[analysis][svg]") {
  minifloat::cli::svg::chart c;
  c.title = "bits";
  c.x = {-2, -1, 0, 1};
  c.steps = true;
  c.lines.push_back({"f", {1, 2, 4, 3}, "", false});
  c.bars = {0.1, 0.0, 0.5, 0.4};
  c.bar_label = "share";
  const std::string svg = c.render();
  CHECK(count(svg, "<path ") == 1);
  CHECK(count(svg, "<rect ") >= 3 + 2);  // background, frame, 3 non-zero bars, legend swatch
  minifloat::cli::svg::chart l;
  l.categories = {"x", "y"};
  l.log_y = true;
  l.lines.push_back({"z", {0.0, 0.05}, "", false});
  const std::string log_svg = l.render();
  CHECK(log_svg.find(">0</text>") != std::string::npos);  // zero sits on the labelled bottom edge
}

TEST_CASE("plots: the data the charts draw", "[analysis][plots]") {
  using namespace minifloat::analysis;
  // relative exponents: floor(log2 |x|) - floor(log2 amax) of the finite non-zero values
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> x{8.0f, 4.0f, 0.0f, -1.0f, 0.75f, inf, std::nanf("")};
  const auto rel = relative_exponents(x);
  CHECK(rel.count(0) == 1);
  CHECK(rel.count(-1) == 1);
  CHECK(rel.count(-3) == 1);
  CHECK(rel.count(-4) == 1);
  CHECK(rel.total() == 4);
  CHECK(relative_exponents(std::vector<float>{0.0f, inf}).total() == 0);

  const std::vector<minifloat::named_scheme> schemes{minifloat::parse_scheme("hifloat8/tensor"),
                                                     minifloat::parse_scheme("hifloat8/channel"),
                                                     minifloat::parse_scheme("mxfp8_e4m3"),
                                                     minifloat::parse_scheme("float8_e4m3fn/tensor/scale-rule=none")};
  const auto p = significand_bits_plot(schemes, rel);
  REQUIRE(p.lines.size() == 2);  // HiF8 tensor and channel share a curve; scale-rule none has none
  CHECK(p.lines[0].name == "hifloat8/tensor, hifloat8/channel");
  REQUIRE(p.x.size() == p.bars.size());
  REQUIRE(p.lines[0].y.size() == p.x.size());
  double share = 0;
  for (std::size_t i = 0; i < p.x.size(); ++i) share += p.bars[i];
  CHECK(share == Approx(1.0));
  // HiF8 with T = 4: relative exponent 0 is the format's exponent 4, a 2-bit-mantissa binade (3 bits)
  const auto at0 = static_cast<std::size_t>(std::find(p.x.begin(), p.x.end(), 0) - p.x.begin());
  CHECK(p.lines[0].y[at0] == Approx(3.0));
  // E4M3 under MX floor: amax lands in the top binade 8, which holds 7 values (3.81 bits)
  CHECK(p.lines[1].y[at0] == Approx(1.0 + std::log2(7.0)));

  const auto& prof = profile_of(minifloat::format_id::float8_e4m3fn);
  fidelity_stats pooled(prof);
  pooled.add(1.0f, 1.0f, 1.0);     // exponent 0
  pooled.add(1e-30f, 0.0f, 1e-30);  // far below the plot: counted in the first bin
  pooled.add(1e30f, 448.0f, 1e30);  // far above: the last bin
  const auto l = landing_plot(prof, pooled);
  CHECK(l.x.front() == prof.min_binade - 6);
  CHECK(l.x.back() == prof.max_binade + 3);
  CHECK(l.bars.front() == Approx(1.0 / 3));
  CHECK(l.bars.back() == Approx(1.0 / 3));
  CHECK(l.y_max >= 5.0);
}

TEST_CASE("metrics: without a finite input the SQNR is not applicable", "[analysis][metrics]") {
  using namespace minifloat::analysis;
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const auto schemes = default_schemes();
  for (const auto& x : {std::vector<float>{nan, nan, nan, nan}, std::vector<float>{inf, -inf, inf, inf}}) {
    const auto stats = analyze_matrix(x, 2, 2, schemes);
    for (const auto& s : stats) {
      CHECK(std::isnan(s.sqnr_db()));  // "n/a", not "inf" (exact)
      CHECK(s.finite_count == 0);
      CHECK(s.nonfinite_inputs == 4);
    }
  }
  // An empty matrix with a huge row count is measured at once (no loop over its rows).
  const auto empty = analyze_matrix({}, std::size_t{1} << 40, 0, schemes);
  REQUIRE(empty.size() == schemes.size());
  CHECK(std::isnan(empty[0].sqnr_db()));
  CHECK(empty[0].count == 0);
}
