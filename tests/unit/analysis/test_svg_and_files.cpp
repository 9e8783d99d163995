// SVG charts of the CLI (tools/cli/svg.hpp: structure, escaping, non-finite points), the plot
// data the library computes for them (analysis/plots.hpp), and tensor file handling (directory
// expansion, matrix views, dispatch by extension).
#include <minifloat/io/npy.hpp>
#include <minifloat/io/tensor_files.hpp>
// (io first: npy.hpp's npy_dtype::float16 would shadow minifloat::float16 under -Wshadow)

#include <minifloat/analysis/analysis.hpp>
#include <minifloat/analysis/plots.hpp>

#include "cli/svg.hpp"  // tools/ (the drawing lives with the CLI)

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#ifndef MINIFLOAT_TEST_DATA_DIR
#define MINIFLOAT_TEST_DATA_DIR "tests/data"
#endif

namespace {
namespace fs = std::filesystem;
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

TEST_CASE("tensor files: matrix views of shapes", "[analysis][files]") {
  using minifloat::matrix_shape;
  using v = std::vector<std::size_t>;
  CHECK(matrix_shape(v{}) == std::pair<std::size_t, std::size_t>{1, 1});
  CHECK(matrix_shape(v{7}) == std::pair<std::size_t, std::size_t>{1, 7});
  CHECK(matrix_shape(v{3, 5}) == std::pair<std::size_t, std::size_t>{3, 5});
  CHECK(matrix_shape(v{8, 86, 15}) == std::pair<std::size_t, std::size_t>{688, 15});
  CHECK(matrix_shape(v{60, 240, 1, 1}) == std::pair<std::size_t, std::size_t>{60, 240});  // conv: O x I*kh*kw
  CHECK(matrix_shape(v{60, 960, 1, 3}) == std::pair<std::size_t, std::size_t>{60, 2880});
  CHECK(matrix_shape(v{2, 3, 4, 5, 6}) == std::pair<std::size_t, std::size_t>{120, 6});
}

TEST_CASE("tensor files: directories, extensions and loading", "[analysis][files]") {
  const fs::path dir = fs::temp_directory_path() / "minifloat_test_tensor_files";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::vector<std::size_t> shape{2, 3};
  const std::vector<float> values{1, 2, 3, 4, 5, 6};
  minifloat::write_npy(dir / "b.npy", std::span<const std::size_t>(shape), values);
  minifloat::write_npy(dir / "a.npy", std::span<const std::size_t>(shape), values);
  std::vector<std::byte> f32(6 * 4), ids(2 * 8);
  std::memcpy(f32.data(), values.data(), f32.size());
  minifloat::write_safetensors(dir / "c.safetensors", {{"w2", minifloat::safetensors_dtype::F32, {3, 2}, f32},
                                                       {"w1", minifloat::safetensors_dtype::F32, {6}, f32},
                                                       {"ids", minifloat::safetensors_dtype::I64, {2}, ids}});
  std::ofstream(dir / "notes.txt") << "ignored";
  fs::create_directories(dir / "sub");
  minifloat::write_npy(dir / "sub" / "a.npy", std::span<const std::size_t>(shape), values);

  const auto files = minifloat::expand_tensor_paths({dir.string(), (dir / "sub" / "a.npy").string()});
  REQUIRE(files.size() == 4);  // a.npy, b.npy, c.safetensors (sorted; not recursive), then sub/a.npy
  CHECK(files[0].filename() == "a.npy");
  CHECK(files[1].filename() == "b.npy");
  CHECK(files[2].filename() == "c.safetensors");

  std::vector<std::string> skipped;
  const auto sources = minifloat::list_tensor_sources(files, &skipped);
  REQUIRE(sources.size() == 5);
  REQUIRE(skipped.size() == 1);
  CHECK_THAT(skipped[0], Catch::Contains("ids (I64)"));
  CHECK(sources[0].name == (fs::path(dir.filename()) / "a").string());  // two a.npy: prefixed by folder
  CHECK(sources[1].name == "b");
  CHECK(sources[2].name == "w1");  // tensors of a .safetensors in name order
  CHECK(sources[3].name == "w2");
  CHECK(sources[4].name == "sub/a");

  const auto t = minifloat::load_tensor(sources[3]);
  CHECK(t.values == values);
  CHECK(t.rows == 3);
  CHECK(t.cols == 2);
  CHECK(t.dtype == "F32");
  const auto n = minifloat::load_tensor(sources[1]);
  CHECK(n.shape == shape);
  CHECK(n.dtype == "float32");

  CHECK_THROWS_AS(minifloat::expand_tensor_paths({(dir / "missing.npy").string()}), minifloat::io_error);
  CHECK_THROWS_AS(minifloat::expand_tensor_paths({(dir / "notes.txt").string()}), minifloat::io_error);
  fs::create_directories(dir / "empty");
  CHECK_THROWS_AS(minifloat::expand_tensor_paths({(dir / "empty").string()}), minifloat::io_error);
  fs::remove_all(dir);
}

TEST_CASE("tensor files: malformed inputs are io_errors", "[analysis][files]") {
  const fs::path data = MINIFLOAT_TEST_DATA_DIR;
  CHECK_THROWS_AS(minifloat::list_tensor_sources({data / "safetensors" / "bad_overlap.safetensors"}), minifloat::io_error);
  const auto s = minifloat::list_tensor_sources({data / "npy" / "bad_truncated_f4.npy", data / "npy" / "good_v1_i1_4.npy"});
  REQUIRE(s.size() == 2);
  CHECK_THROWS_AS(minifloat::load_tensor(s[0]), minifloat::io_error);
  CHECK_THROWS_WITH(minifloat::load_tensor(s[1]), Catch::Contains("not floating point"));
}

TEST_CASE("tensor files: matrix views that do not fit are shape errors", "[analysis][files]") {
  using v = std::vector<std::size_t>;
  const std::size_t big = std::size_t{1} << 40;
  // (2^40, 0): an empty tensor with a huge extent is a valid 2^40 x 0 matrix
  CHECK(minifloat::matrix_shape(v{big, 0}) == std::pair<std::size_t, std::size_t>{big, 0});
  // (2^40, 2^40, 0): its rows would be 2^80
  CHECK_THROWS_AS(minifloat::matrix_shape(v{big, big, 0}), minifloat::shape_error);
  CHECK_THROWS_WITH(minifloat::matrix_shape(v{0, big, big}, minifloat::flatten_mode::first_axis),
                    Catch::Contains("does not fit in a 64-bit size"));
}

TEST_CASE("tensor files: FP8 safetensors tensors are decoded by the library's types", "[analysis][files]") {
  const fs::path dir = fs::temp_directory_path() / "minifloat_test_fp8_safetensors";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::vector<std::byte> e4(256), e5(256);
  for (std::size_t i = 0; i < 256; ++i) e4[i] = e5[i] = static_cast<std::byte>(i);
  minifloat::write_safetensors(dir / "f8.safetensors", {{"e4", minifloat::safetensors_dtype::F8_E4M3, {16, 16}, e4},
                                                        {"e5", minifloat::safetensors_dtype::F8_E5M2, {256}, e5}});
  const auto sources = minifloat::list_tensor_sources({dir / "f8.safetensors"});
  REQUIRE(sources.size() == 2);  // both count as floating point now
  const auto t4 = minifloat::load_tensor(sources[0]);
  const auto t5 = minifloat::load_tensor(sources[1]);
  REQUIRE(t4.values.size() == 256);
  REQUIRE(t5.values.size() == 256);
  CHECK(t4.dtype == "F8_E4M3");
  for (std::size_t i = 0; i < 256; ++i) {
    const float a = static_cast<float>(minifloat::float8_e4m3fn::from_bits(static_cast<std::uint8_t>(i)));
    const float b = static_cast<float>(minifloat::float8_e5m2::from_bits(static_cast<std::uint8_t>(i)));
    if (std::isnan(a)) CHECK(std::isnan(t4.values[i]));
    else CHECK(t4.values[i] == a);
    if (std::isnan(b)) CHECK(std::isnan(t5.values[i]));
    else CHECK(t5.values[i] == b);
  }
  CHECK(t4.values[0x7E] == 448.0f);
  CHECK(t5.values[0x7B] == 57344.0f);
  fs::remove_all(dir);
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
