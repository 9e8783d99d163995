// Fidelity metrics against hand-computed cases, format profiles against the spec numbers, and
// measure() against dequantize() for every default scheme.
#include <minifloat/analysis/analysis.hpp>

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace {

using namespace minifloat;
using analysis::fidelity_stats;
using analysis::profile_of;

constexpr double inf = std::numeric_limits<double>::infinity();

fidelity_stats measure_scheme(const std::vector<float>& x, std::size_t rows, std::size_t cols, std::string_view scheme) {
  const auto s = parse_scheme(scheme).scheme;
  return analysis::measure(matrix_view<const float>(std::span<const float>(x), rows, cols), s, profile_of(s.format));
}

std::size_t class_index(const analysis::format_profile& p, std::string_view label) {
  for (std::size_t i = 0; i < p.classes.size(); ++i)
    if (p.classes[i].label == label) return i;
  FAIL("no class " << label);
  return 0;
}

}  // namespace

TEST_CASE("metrics: single known errors, computed by hand", "[analysis][metrics]") {
  fidelity_stats s;
  const float x[] = {1, 2, 3, 4}, q[] = {1, 2, 3, 5};
  for (int i = 0; i < 4; ++i) s.add(x[i], q[i]);
  CHECK(s.signal_energy == 30.0);
  CHECK(s.noise_energy == 1.0);
  CHECK(s.sqnr_db() == Approx(10.0 * std::log10(30.0)));  // 14.771 dB
  CHECK(s.mse() == 0.25);
  CHECK(s.max_abs_error == 1.0);
  CHECK(s.max_rel_error == 0.25);
  CHECK(s.zero_rate() == 0.0);

  // One value of 1024 off by 1: SQNR = 10 log10(1024^2) = 60.206 dB.
  fidelity_stats t;
  t.add(1024.0f, 1023.0f);
  CHECK(t.sqnr_db() == Approx(20.0 * std::log10(1024.0)));
  CHECK(t.max_rel_error == 1.0 / 1024.0);

  // analysis::sqnr_db on doubles agrees.
  const std::vector<double> a{1, 2, 3, 4}, b{1, 2, 3, 5};
  CHECK(analysis::sqnr_db(a, b) == Approx(10.0 * std::log10(30.0)));
  CHECK(analysis::sqnr_db(a, a) == inf);
}

TEST_CASE("metrics: exact quantization gives SQNR +inf", "[analysis][metrics]") {
  // E4M3 values with amax 448: the max rule's scale is exactly 1, every value is representable.
  const std::vector<float> x{448, -224, 1.75f, 0.015625f, 0, -0.001953125f, 3.5f, -448};
  const auto s = measure_scheme(x, 2, 4, "float8_e4m3fn/tensor");
  CHECK(s.sqnr_db() == inf);
  CHECK(s.mse() == 0);
  CHECK(s.max_abs_error == 0);
  CHECK(s.zero_rate() == 0);
  CHECK(s.nonzero_count == 7);
  CHECK(s.overflow_count == 0);
  // 2^-9 (E = -9) is E4M3's smallest subnormal: one underflow, in the subnormal class.
  CHECK(s.underflow_count == 1);
  const auto& p = profile_of(format_id::float8_e4m3fn);
  CHECK(s.class_counts[class_index(p, "subnormal")] == 1);
  CHECK(s.class_counts[class_index(p, "normal")] == 6);

  // Powers of two with a pow2 scale are exact in HiF8 too; an all-zero tensor is exact as well.
  CHECK(measure_scheme({1, 0.5f, -0.25f, 0.125f}, 1, 4, "hifloat8/tensor").sqnr_db() == inf);
  const auto z = measure_scheme({0, 0, 0}, 1, 3, "hifloat8/tensor");
  CHECK(z.sqnr_db() == inf);
  CHECK(z.zero_rate() == 0);
  CHECK(z.nonzero_count == 0);
}

TEST_CASE("metrics: zero-rate, underflow and classes on constructed inputs", "[analysis][metrics]") {
  // hifloat8/tensor: amax 1 -> s = 2^(0 - 4) = 1/16. Scaled: 16 (E = 4, 2-bit), 8 (E = 3, 3-bit),
  // 1.6e-8 and 3.2e-8 (< 2^-23: below range, round to 0), and an exact zero (not counted).
  const std::vector<float> x{1.0f, 0.5f, 1e-9f, -2e-9f, 0.0f};
  const auto s = measure_scheme(x, 1, 5, "hifloat8/tensor");
  CHECK(s.nonzero_count == 4);
  CHECK(s.zero_count == 2);
  CHECK(s.zero_rate() == 0.5);
  CHECK(s.underflow_count == 2);
  CHECK(s.overflow_count == 0);
  const auto& p = profile_of(format_id::hifloat8);
  CHECK(s.class_counts[class_index(p, "2-bit")] == 1);
  CHECK(s.class_counts[class_index(p, "3-bit")] == 1);
  CHECK(s.class_counts[class_index(p, "below range")] == 2);
  CHECK(s.class_share(class_index(p, "below range")) == 0.5);
  CHECK(s.scaled_exponents.count(4) == 1);
  CHECK(s.scaled_exponents.count(3) == 1);
  // Errors: the two flushed values, so noise = 1e-18 + 4e-18 (as floats) and max rel error = 1.
  CHECK(s.max_rel_error == 1.0);
  const double e1 = 1e-9f, e2 = 2e-9f;
  CHECK(s.noise_energy == Approx(e1 * e1 + e2 * e2));

  // 2^-26 * 16 = 2^-22 is HiF8's smallest denormal: kept (non-zero) but counted as underflow.
  const auto d = measure_scheme({1.0f, std::ldexp(1.0f, -26)}, 1, 2, "hifloat8/tensor");
  CHECK(d.zero_count == 0);
  CHECK(d.underflow_count == 1);
  CHECK(d.class_counts[class_index(p, "denormal")] == 1);
}

TEST_CASE("metrics: overflow (saturation) and NaN counts", "[analysis][metrics]") {
  // A direct cast (scale 1) to E4M3: 464 is the tie that rounds down to 448, so it is kept; 464.5,
  // 1000 and -600 are past the threshold and clipped to +-448.
  const std::vector<float> x{500, 464, 463, 1000, -600, 464.5f};
  const auto s = measure_scheme(x, 1, 6, "float8_e4m3fn/tensor/scale-rule=none");
  CHECK(s.overflow_count == 4);
  CHECK(s.max_abs_error == 1000.0 - 448.0);
  CHECK(s.class_counts[class_index(profile_of(format_id::float8_e4m3fn), "overflow")] == 4);

  // NaN input: E4M3 keeps it NaN. It is counted, and stays out of the sums (amax 448: scale 1, exact).
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const auto n = measure_scheme({448.0f, nan, 224.0f}, 1, 3, "float8_e4m3fn/tensor");
  CHECK(n.nonfinite_inputs == 1);
  CHECK(n.nan_count == 1);
  CHECK(n.finite_count == 2);
  CHECK(n.sqnr_db() == inf);

  // A NaN output for a finite input is an infinite error.
  fidelity_stats bad;
  bad.add(1.0f, nan);
  CHECK(bad.nan_count == 1);
  CHECK(bad.sqnr_db() == -inf);  // noise is infinite
}

TEST_CASE("metrics: format profiles match the specs", "[analysis][metrics]") {
  const auto& h = profile_of(format_id::hifloat8);
  CHECK(h.overflow_threshold == 40960.0f);  // 1.25 * 2^15, ties away from zero overflow
  CHECK(h.max_finite == 32768.0);
  CHECK(h.min_normal == std::ldexp(1.0, -15));
  CHECK(h.min_binade == -22);
  CHECK(h.max_binade == 15);
  CHECK(h.bits_at(0) == 4);
  CHECK(h.bits_at(-3) == 4);
  CHECK(h.bits_at(4) == 3);
  CHECK(h.bits_at(-7) == 3);
  CHECK(h.bits_at(8) == 2);
  CHECK(h.bits_at(-15) == 2);
  CHECK(h.bits_at(15) == 1);  // 2^15 alone: its neighbour code is Inf
  CHECK(h.bits_at(-16) == 1);
  CHECK(h.bits_at(-23) == 0);
  CHECK(h.classes[h.class_of(1.0)].label == "3-bit");
  CHECK(h.classes[h.class_of(16.0)].label == "2-bit");
  CHECK(h.classes[h.class_of(40959.0)].label == "1-bit");
  CHECK(h.class_of(40960.0) == h.overflow_class);
  CHECK(h.class_of(std::ldexp(1.0, -23)) == h.below_class);

  const auto& e4 = profile_of(format_id::float8_e4m3fn);
  CHECK(e4.overflow_threshold == std::nextafter(464.0f, 1000.0f));  // the tie 464 rounds to 448 (even)
  CHECK(e4.bits_at(8) == Approx(1 + std::log2(7.0)));               // 0x7F is NaN
  CHECK(e4.bits_at(0) == 4);
  CHECK(e4.bits_at(-7) == 3);
  CHECK(e4.bits_at(-9) == 1);
  CHECK(profile_of(format_id::float8_e5m2).overflow_threshold == 61440.0f);  // the tie 61440 overflows
  CHECK(profile_of(format_id::float4_e2m1fn).overflow_threshold == 7.0f);    // 6 = 1.1b * 2^2: the tie goes up
  CHECK(profile_of(format_id::float6_e2m3fn).overflow_threshold == 7.75f);  // 7.5 = 1.111b * 2^2, step 0.5
  CHECK(profile_of(format_id::float16).overflow_threshold == 65520.0f);
}

TEST_CASE("metrics: the quant layer's binades (the pow2 target check) equal the profiles'", "[analysis][metrics]") {
  for_each_format([](auto t) {
    const format_id f = format_id_of<typename decltype(t)::type>;
    INFO(to_string(f));
    const auto [lo, hi] = format_binades(f);
    CHECK(lo == profile_of(f).min_binade);
    CHECK(hi == profile_of(f).max_binade);
  });
}

TEST_CASE("metrics: measure() sees exactly what dequantize() returns", "[analysis][metrics]") {
  std::mt19937 gen(7);
  std::normal_distribution<float> n(0.0f, 1.0f);
  const std::size_t rows = 37, cols = 70;
  std::vector<float> x(rows * cols);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = n(gen) * (i % 11 == 0 ? 40.0f : 1.0f) * (i % 97 == 0 ? 1e-6f : 1.0f);
  x[5] = 0.0f;
  std::vector<named_scheme> schemes = analysis::default_schemes();
  for (auto extra : {"mxfp8_e4m3/axis=0", "mxfp6_e2m3", "float8_e5m2/channel", "bfloat16/tensor/scale-rule=none",
                     "float8_e4m3fn/block/block=8x16", "hifloat8/token/n-guard=9",
                     // 2-D MX tiles: measure() once indexed their scales as 1x32 blocks (out of bounds)
                     "float8_e4m3fn/mx/block=32x32", "mxfp4/block=32x32"})
    schemes.push_back(parse_scheme(extra));
  const matrix_view<const float> m(std::span<const float>(x), rows, cols);
  for (const auto& s : schemes) {
    INFO(s.name);
    const auto q = quantize(m, s.scheme);
    const auto deq = dequantize(q);
    const auto via_codes = analysis::measure(m, q.view(), profile_of(s.scheme.format));
    const auto via_values = analysis::measure_error(x, deq);
    CHECK(via_codes.signal_energy == via_values.signal_energy);
    CHECK(via_codes.noise_energy == via_values.noise_energy);
    CHECK(via_codes.max_abs_error == via_values.max_abs_error);
    CHECK(via_codes.zero_count == via_values.zero_count);
    CHECK(via_codes.nan_count == via_values.nan_count);
    std::uint64_t classes = 0;
    for (auto c : via_codes.class_counts) classes += c;
    CHECK(classes == via_codes.nonzero_count);
  }
}

TEST_CASE("metrics: merge pools two tensors", "[analysis][metrics]") {
  const auto& p = profile_of(format_id::hifloat8);
  fidelity_stats a(p), b(p), ab(p);
  a.add(1.0f, 1.0f, 16.0), ab.add(1.0f, 1.0f, 16.0);
  b.add(3.0f, 2.0f, 3.0), ab.add(3.0f, 2.0f, 3.0);
  a.merge(b);
  CHECK(a.signal_energy == ab.signal_energy);
  CHECK(a.noise_energy == ab.noise_energy);
  CHECK(a.class_counts == ab.class_counts);
  CHECK(a.scaled_exponents == ab.scaled_exponents);
  fidelity_stats other(profile_of(format_id::float8_e4m3fn));
  CHECK_THROWS_AS(a.merge(other), shape_error);
}

TEST_CASE("metrics: exponent histogram", "[analysis][metrics]") {
  analysis::exponent_histogram h;
  for (double v : {1.0, 1.5, -2.0, 0.75, 0.0, std::ldexp(1.0, -149), inf})
    h.add(v);
  CHECK(h.count(0) == 2);
  CHECK(h.count(1) == 1);
  CHECK(h.count(-1) == 1);
  CHECK(h.count(-149) == 1);
  CHECK(h.zeros() == 1);
  CHECK(h.nonfinite() == 1);
  CHECK(h.total() == 5);
  CHECK(h.bins().size() == 4);
}

TEST_CASE("metrics: amax alignment used by the significand-bits chart", "[analysis][metrics]") {
  CHECK(analysis::amax_binade_after_scaling(parse_scheme("hifloat8/tensor").scheme) == 4);
  CHECK(analysis::amax_binade_after_scaling(parse_scheme("hifloat8/tensor/n-guard=9").scheme) == 6);
  CHECK(analysis::amax_binade_after_scaling(parse_scheme("float8_e4m3fn/tensor").scheme) == 8);
  CHECK(analysis::amax_binade_after_scaling(parse_scheme("mxfp8_e5m2").scheme) == 15);
  CHECK(analysis::amax_binade_after_scaling(parse_scheme("mxfp4").scheme) == 2);
  CHECK_FALSE(analysis::amax_binade_after_scaling(parse_scheme("float8_e4m3fn/tensor/scale-rule=none").scheme));
}
