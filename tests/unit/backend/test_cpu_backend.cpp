// The CPU backend through backend::backend_interface, for every operation: it speaks the library's
// vocabulary (format_id, rounding, quant_scheme, quantized_view <-> quantized_tensor_view) and the
// bytes it writes equal the library's own functions (quantize, quantize_with_scales, dequantize,
// gemm_reference fp32_blocks); bfloat16 / float16 inputs give the codes of their float32 values;
// supports() and the errors say what is wrong. Layout checks that must hold on every machine: MX
// scales in the library's plain layout (the CANN pairing of the same bytes is the shim's, tested in
// tests/fake_cann), FP4 nibble order, and the CANN doc vector.
#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <minifloat/backend/cpu.hpp>
#include <minifloat/gemm/gemm.hpp>
#include "support/all_but_attention.hpp"

#include "support/schemes.hpp"
#include "support/test_data.hpp"

using namespace minifloat;
namespace be = minifloat::backend;

namespace {

std::vector<float> random_values(std::size_t n, unsigned seed, float spread = 4.0f) {
  return test_support::spread_normal(n, seed, spread);
}

using test_support::from_bf16_bits;
using test_support::mx_scheme;
using test_support::scheme_of;
using test_support::to_bf16_bits;

const format_id element_formats[] = {format_id::hifloat8,      format_id::float8_e4m3fn, format_id::float8_e5m2,
                                     format_id::float6_e3m2fn, format_id::float6_e2m3fn, format_id::float4_e2m1fn};

/// A host quantized tensor of scheme s and codes shape `shape`, with buffers of exactly the sizes
/// the interface expects (filled with a marker byte so unwritten bytes show).
struct host_q {
  std::vector<std::uint8_t> codes, mx;
  std::vector<float> scales;
  be::quantized_view view;
};

host_q make_q(const quant_scheme& s, const std::vector<std::int64_t>& shape) {
  host_q h;
  h.view.scheme = s;
  static const std::uint8_t somewhere = 0;
  const auto shape_only = be::make_tensor(&somewhere, s.format, std::span<const std::int64_t>(shape));
  h.codes.assign(shape_only.byte_extent() + 1, 0xAA);
  h.view.codes = be::make_tensor(h.codes.data(), s.format, std::span<const std::int64_t>(shape));
  const auto l = be::detail::slabs_of(s, h.view.codes);
  if (s.gran == granularity::mx) {
    h.mx.assign(l.count * l.scale_count() + 1, 0xEE);
    h.view.scales = be::make_tensor(h.mx.data(), format_id::float8_e8m0fnu, be::detail::mx_scale_dims(h.view.codes, l));
  } else {
    h.scales.assign(l.scale_count() + 1, -1.0f);
    h.view.scales = be::make_tensor(h.scales.data(), be::float32, {static_cast<std::int64_t>(l.scale_count())});
  }
  return h;
}

std::span<const std::uint8_t> codes_of(const host_q& h) { return {h.codes.data(), h.codes.size() - 1}; }
std::span<const std::uint8_t> mx_of(const host_q& h) { return {h.mx.data(), h.mx.size() - 1}; }
std::span<const float> scales_of(const host_q& h) { return {h.scales.data(), h.scales.size() - 1}; }

template <class A, class B>
bool same(const A& a, const B& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end());
}
bool same_bits(std::span<const float> a, std::span<const float> b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](float x, float y) { return std::bit_cast<std::uint32_t>(x) == std::bit_cast<std::uint32_t>(y); });
}

}  // namespace

TEST_CASE("backend tensor views: element types contiguous strides FP4 rows on byte boundaries", "[backend]") {
  CHECK(be::to_string(be::element_type(format_id::float4_e2m1fn)) == "float4_e2m1fn");
  CHECK(be::to_string(be::float32) == "float32");
  CHECK(be::to_string(be::int64) == "int64");
  CHECK(be::storage_bits(format_id::float4_e2m1fn) == 4);
  CHECK(be::storage_bits(format_id::float6_e2m3fn) == 6);
  CHECK(be::storage_bits(format_id::bfloat16) == 16);
  CHECK(be::storage_bits(be::int64) == 64);
  CHECK(be::element_type(format_id::hifloat8) == format_id::hifloat8);
  CHECK(be::element_type(format_id::hifloat8) != format_id::float8_e4m3fn);
  CHECK(be::float32 != be::int64);
  CHECK(be::float32.format() == std::nullopt);
  CHECK(be::element_type(format_id::float16).format() == format_id::float16);
  CHECK(be::is_float_input(format_id::bfloat16));
  CHECK_FALSE(be::is_float_input(format_id::hifloat8));

  std::vector<std::uint8_t> buf(64);
  const auto v = be::make_tensor(buf.data(), format_id::float4_e2m1fn, {3, 5});
  CHECK(v.strides[0] == 6);  // odd width: each row starts on a byte
  CHECK(v.strides[1] == 1);
  CHECK(v.byte_extent() == 9);  // 3 rows x ceil(5 / 2) bytes, as the library stores FP4
  CHECK(v.is_contiguous());
  CHECK(be::make_tensor(buf.data(), format_id::float6_e3m2fn, {7}).byte_extent() == 7);  // FP6: one code a byte
  const auto e = be::make_tensor(buf.data(), format_id::float8_e4m3fn, {2, 3, 4});
  CHECK(e.rows() == 6);
  CHECK(e.cols() == 4);
  CHECK(e.reshaped({6, 4}).dim(0) == 6);
  CHECK_THROWS_AS(e.reshaped({5, 4}), shape_error);
  CHECK(be::tensor_view{}.is_none());
  CHECK(be::make_tensor(buf.data(), be::float32, {3, 0}).rows() == 3);  // an empty last dim: no division by it
  // sizes from a caller are checked
  CHECK_THROWS_AS(be::make_tensor(buf.data(), be::float32, {1LL << 40, 1LL << 40}), shape_error);
}

TEST_CASE("backend quantized_view is the library's quantized_tensor_view on tensor views (no copy either way)", "[backend]") {
  const auto x = random_values(6 * 70, 2);
  for (const auto& s : {scheme_of(format_id::float8_e4m3fn, granularity::block, 2, 32, rounding::nearest, scale_rule::max),
                        mx_scheme(format_id::float4_e2m1fn, 1), mx_scheme(format_id::float8_e5m2, 0)}) {
    CAPTURE(s.describe());
    const auto q = quantize(matrix_view<const float>(x, 6, 70), s);
    const be::quantized_view v = be::from_library(q.view());
    CHECK(v.scheme == s);
    CHECK(v.codes.type == s.format);
    CHECK(v.codes.data == q.codes().data());
    CHECK(v.codes.byte_extent() == q.codes().size());
    CHECK(v.scales.dim(0) == static_cast<std::int64_t>(q.view().scale_grid_rows()));
    CHECK(v.scales.dim(1) == static_cast<std::int64_t>(q.view().scale_grid_cols()));
    const quantized_tensor_view back = be::to_library(v);
    CHECK_NOTHROW(back.validate());
    CHECK(back.codes.data() == q.codes().data());
    CHECK(same(back.scales, q.scales()));
    CHECK(same(back.mx_scales, q.mx_scales()));
  }
}

TEST_CASE("backend cpu quantize_with_scales equals the library for every format granularity and rounding", "[backend]") {
  be::cpu_backend cpu;
  be::backend_interface& b = cpu;
  const std::int64_t rows = 5, cols = 37;
  const auto x = random_values(static_cast<std::size_t>(rows * cols), 11);
  for (const auto f : element_formats) {
    for (const auto g : {granularity::tensor, granularity::token, granularity::channel, granularity::block}) {
      for (const auto r : {rounding::nearest, rounding::nearest_away, rounding::toward_zero, rounding::stochastic}) {
        CAPTURE(to_string(f), to_string(g), to_string(r));
        auto s = scheme_of(f, g, 2, 16, r);
        s.seed = 99;
        auto y = make_q(s, {rows, cols});
        const auto l = be::detail::slabs_of(s, y.view.codes);
        for (std::size_t i = 0; i < l.scale_count(); ++i) y.scales[i] = 0.01f * static_cast<float>(i + 3);
        b.quantize_with_scales(be::make_tensor(x.data(), be::float32, {rows, cols}), y.view);
        const auto ref = quantize_with_scales(matrix_view<const float>(x, 5, 37), s, scales_of(y));
        CHECK(same(codes_of(y), ref.codes()));
        CHECK(y.codes.back() == 0xAA);  // nothing written past the codes
      }
    }
  }
}

TEST_CASE("backend cpu quantize: bfloat16 and float16 inputs give the codes of their float32 values", "[backend]") {
  be::cpu_backend b;
  const auto x32 = from_bf16_bits(to_bf16_bits(random_values(64, 3)));
  const auto x16 = to_bf16_bits(x32);
  const auto s = scheme_of(format_id::hifloat8, granularity::tensor);
  auto y32 = make_q(s, {4, 16}), y16 = make_q(s, {4, 16});
  y32.scales[0] = y16.scales[0] = 0.125f;
  b.quantize_with_scales(be::make_tensor(x32.data(), be::float32, {4, 16}), y32.view);
  b.quantize_with_scales(be::make_tensor(x16.data(), format_id::bfloat16, {4, 16}), y16.view);
  CHECK(y32.codes == y16.codes);
  // dynamic MX scales of bf16 input: the same as of its float32 values
  auto m32 = make_q(mx_scheme(format_id::float8_e4m3fn, 1), {4, 16}), m16 = make_q(mx_scheme(format_id::float8_e4m3fn, 1), {4, 16});
  b.quantize(be::make_tensor(x32.data(), be::float32, {4, 16}), m32.view);
  b.quantize(be::make_tensor(x16.data(), format_id::bfloat16, {4, 16}), m16.view);
  CHECK(m32.codes == m16.codes);
  CHECK(m32.mx == m16.mx);
  // float16: values that float16 holds exactly
  std::mt19937 rng(7);
  std::vector<std::uint16_t> h(64);
  std::vector<float> xh(64);
  for (std::size_t i = 0; i < h.size(); ++i) {
    h[i] = static_cast<std::uint16_t>(0x2000U + rng() % 0x3800U) | static_cast<std::uint16_t>((rng() & 1U) << 15);
    xh[i] = static_cast<float>(float16::from_bits(h[i]));
  }
  const auto s5 = scheme_of(format_id::float8_e5m2, granularity::tensor);
  auto yh32 = make_q(s5, {64}), yh16 = make_q(s5, {64});
  yh32.scales[0] = yh16.scales[0] = 0.125f;
  b.quantize_with_scales(be::make_tensor(xh.data(), be::float32, {64}), yh32.view);
  b.quantize_with_scales(be::make_tensor(h.data(), format_id::float16, {64}), yh16.view);
  CHECK(yh32.codes == yh16.codes);
}

TEST_CASE("backend cpu quantize (fp32 scales) equals minifloat::quantize for every rule and amax / dst_max for hifloat8",
          "[backend]") {
  be::cpu_backend b;
  const std::int64_t rows = 6, cols = 40;
  auto x = random_values(static_cast<std::size_t>(rows * cols), 5);
  x[7] = std::numeric_limits<float>::infinity();  // skipped by the amax, saturates
  for (const auto f : {format_id::hifloat8, format_id::float8_e4m3fn, format_id::float8_e5m2, format_id::float4_e2m1fn}) {
    for (const auto g : {granularity::tensor, granularity::token, granularity::block}) {
      for (const auto rule : {scale_rule::max, scale_rule::pow2, scale_rule::none}) {
        CAPTURE(to_string(f), to_string(g), to_string(rule));
        auto s = scheme_of(f, g, 4, 16, rounding::nearest, rule);
        s.target = std::min(s.target, format_binades(f).second);  // pow2: FP4's binades end at 2^2
        auto y = make_q(s, {rows, cols});
        b.quantize(be::make_tensor(x.data(), be::float32, {rows, cols}), y.view);
        const auto ref = quantize(matrix_view<const float>(x, 6, 40), s);
        CHECK(same(codes_of(y), ref.codes()));
        CHECK(same(scales_of(y), ref.scales()));
      }
    }
  }
  // A scheme string names the same thing on the backend as in the library.
  const auto named = parse_scheme("hifloat8/token/n-guard=10").scheme;
  auto yn = make_q(named, {rows, cols});
  b.quantize(be::make_tensor(x.data(), be::float32, {rows, cols}), yn.view);
  CHECK(same(codes_of(yn), quantize(matrix_view<const float>(x, 6, 40), named).codes()));
  // MindSpeed's HiF8 target: amax lands on 15.
  const auto s = scheme_of(format_id::hifloat8, granularity::token, 1, 128, rounding::nearest, scale_rule::max);
  auto y = make_q(s, {rows, cols});
  b.quantize(be::make_tensor(x.data(), be::float32, {rows, cols}), y.view, {.dst_max = 15.0f});
  for (std::int64_t r = 0; r < rows; ++r) {
    const auto row = std::span<const float>(x).subspan(static_cast<std::size_t>(r * cols), static_cast<std::size_t>(cols));
    CHECK(y.scales[static_cast<std::size_t>(r)] == finite_amax(row) / 15.0f);
  }
  const auto ref = quantize_with_scales(matrix_view<const float>(x, 6, 40), s, scales_of(y));
  CHECK(same(codes_of(y), ref.codes()));
  // dst_max is a HiF8 knob of rule max only (aclnnDynamicQuantV4 ignores it otherwise).
  auto e4 = s;
  e4.format = format_id::float8_e4m3fn;
  const be::request r = be::request::for_quantize(be::float32, e4, {.dst_max = 15.0f});
  CHECK_FALSE(b.supports(r));
  CHECK_THAT(b.supports(r).reason, Catch::Contains("hifloat8 only"));
  auto pow2 = s;
  pow2.rule = scale_rule::pow2;
  CHECK_THAT(b.supports(be::request::for_quantize(be::float32, pow2, {.dst_max = 15.0f})).reason, Catch::Contains("rule max"));
}

TEST_CASE("backend cpu quantize_with_amax: static codes and the finite amax", "[backend]") {
  be::cpu_backend b;
  for (const auto f : element_formats) {
    for (const std::int64_t cols : {std::int64_t{33}, std::int64_t{32}}) {
      CAPTURE(to_string(f), cols);
      const std::int64_t rows = 3;
      auto x = random_values(static_cast<std::size_t>(rows * cols), 9);
      x[4] = std::numeric_limits<float>::quiet_NaN();
      x[9] = -1e30f;  // finite: counts for the amax, saturates in the codes
      float amax = -1.0f;
      const auto s = scheme_of(f, granularity::tensor);
      auto y = make_q(s, {rows, cols});
      y.scales[0] = 0.5f;
      b.quantize_with_amax(be::make_tensor(x.data(), be::float32, {rows, cols}), y.view, be::make_tensor(&amax, be::float32, {1}));
      const auto ref = quantize_with_scales(matrix_view<const float>(x, 3, static_cast<std::size_t>(cols)), s, std::vector<float>{0.5f});
      CHECK(same(codes_of(y), ref.codes()));
      CHECK(amax == 1e30f);
    }
  }
  // amax comes back in x's element type (aclnnQuantMax).
  const auto xb = to_bf16_bits({1.0f, -3.5f, 2.0f, 0.25f});
  std::uint16_t amax_bits = 0;
  auto y = make_q(scheme_of(format_id::float8_e4m3fn, granularity::tensor), {4});
  y.scales[0] = 1.0f;
  b.quantize_with_amax(be::make_tensor(xb.data(), format_id::bfloat16, {4}), y.view,
                       be::make_tensor(&amax_bits, format_id::bfloat16, {1}));
  CHECK(static_cast<float>(bfloat16::from_bits(amax_bits)) == 3.5f);
  float wrong = 0.0f;
  CHECK_THROWS_AS(b.quantize_with_amax(be::make_tensor(xb.data(), format_id::bfloat16, {4}), y.view,
                                       be::make_tensor(&wrong, be::float32, {1})),
                  shape_error);
  CHECK_FALSE(b.supports(be::request::for_quantize_with_amax(be::float32, scheme_of(format_id::hifloat8, granularity::token))));
}

TEST_CASE("backend cpu quantize mx: the library's codes and plain scales (axis 1 and 0 floor and rceil)", "[backend]") {
  be::cpu_backend b;
  const std::int64_t rows = 35, cols = 70;  // 3 blocks along a row (odd), 2 down a column
  const auto x = random_values(static_cast<std::size_t>(rows * cols), 21);
  for (const auto f : {format_id::float8_e4m3fn, format_id::float8_e5m2, format_id::float6_e2m3fn, format_id::float4_e2m1fn}) {
    for (const int axis : {1, 0}) {
      for (const auto rule : {scale_rule::floor, scale_rule::rceil, scale_rule::even}) {
        const auto s = mx_scheme(f, axis, rule);
        CAPTURE(s.describe());
        auto y = make_q(s, {rows, cols});
        CHECK(y.view.scales.dims()[0] == (axis == 1 ? rows : 2));
        CHECK(y.view.scales.dims()[1] == (axis == 1 ? 3 : cols));
        b.quantize(be::make_tensor(x.data(), be::float32, {rows, cols}), y.view);
        const auto ref = quantize(matrix_view<const float>(x, 35, 70), s);
        CHECK(same(codes_of(y), ref.codes()));
        CHECK(same(mx_of(y), ref.mx_scales()));
        CHECK(y.mx.back() == 0xEE);
      }
    }
  }
  // scheme strings: mxfp8_e4m3 through the backend is the library's mxfp8_e4m3
  const auto s = parse_scheme("mxfp8_e4m3").scheme;
  auto y = make_q(s, {rows, cols});
  b.quantize(be::make_tensor(x.data(), be::float32, {rows, cols}), y.view);
  CHECK(same(mx_of(y), quantize(matrix_view<const float>(x, 35, 70), s).mx_scales()));
}

TEST_CASE("backend cpu quantize mx: a batch of matrices blocked down their columns", "[backend]") {
  be::cpu_backend b;
  const auto x = random_values(2 * 40 * 6, 4);
  const auto s = mx_scheme(format_id::float8_e4m3fn, 0);
  auto y = make_q(s, {2, 40, 6});
  CHECK(y.view.scales.dims().size() == 3);
  CHECK(y.view.scales.dim(1) == 2);  // ceil(40 / 32) block rows per matrix, never across matrices
  b.quantize(be::make_tensor(x.data(), be::float32, {2, 40, 6}), y.view);
  std::vector<float> back(x.size());
  b.dequantize(y.view, be::make_tensor(back.data(), be::float32, {2, 40, 6}));
  for (std::size_t m = 0; m < 2; ++m) {
    const auto ref = mx_quantize<float8_e4m3fn>(std::span<const float>(x).subspan(m * 240, 240), 40, 6, 0);
    CHECK(std::equal(ref.codes().begin(), ref.codes().end(), y.codes.begin() + static_cast<std::ptrdiff_t>(m * 240)));
    CHECK(std::equal(ref.scales().begin(), ref.scales().end(), y.mx.begin() + static_cast<std::ptrdiff_t>(m * 12)));
    const auto ref_values = ref.dequantize();
    CHECK(same_bits(ref_values, std::span<const float>(back).subspan(m * 240, 240)));
  }
  // blocks down columns need a second dimension
  auto flat = make_q(scheme_of(format_id::float8_e4m3fn, granularity::tensor), {6});
  flat.view.scheme = s;
  CHECK_THROWS_WITH(b.quantize(be::make_tensor(x.data(), be::float32, {6}), flat.view), Catch::Contains("rank 2"));
}

TEST_CASE("backend layout: the CANN doc vector plain scales and FP4 nibble order", "[backend][layout]") {
  be::cpu_backend b;
  // aclnnDynamicMxQuant doc example (docs/formats/ascend.md#mx-scale-layout): bf16 [0, 8, 64, 512], axis -1, E4M3, rint.
  const std::vector<std::uint16_t> x = {0x0000, 0x4100, 0x4280, 0x4400};
  CHECK(from_bf16_bits(x) == std::vector<float>{0.0f, 8.0f, 64.0f, 512.0f});
  auto y = make_q(parse_scheme("mxfp8_e4m3").scheme, {1, 4});
  b.quantize(be::make_tensor(x.data(), format_id::bfloat16, {1, 4}), y.view);
  CHECK(same(codes_of(y), std::vector<std::uint8_t>{0, 72, 96, 120}));
  CHECK(same(mx_of(y), std::vector<std::uint8_t>{128}));
  // the doc's mxscale [128, 0] is the CANN pairing of the same plain scale (the shim's job)
  CHECK(mx_scales_to_cann(mx_of(y), 1, 4, 1) == std::vector<std::uint8_t>{128, 0});

  // Plain layout down columns: scale (band, column) at band * cols + column. Three 32-row bands with
  // per-band magnitudes 2^0, 2^4, 2^8 -> E4M3 scale codes 119, 123, 127 (+1 for column 1).
  std::vector<float> v(96 * 2);
  for (std::size_t r = 0; r < 96; ++r)
    for (std::size_t c = 0; c < 2; ++c) v[r * 2 + c] = std::ldexp(1.0f + static_cast<float>(c), 4 * static_cast<int>(r / 32));
  auto yv = make_q(mx_scheme(format_id::float8_e4m3fn, 0), {96, 2});
  b.quantize(be::make_tensor(v.data(), be::float32, {96, 2}), yv.view);
  CHECK(same(mx_of(yv), std::vector<std::uint8_t>{119, 120, 123, 124, 127, 128}));
  CHECK(mx_scales_to_cann(mx_of(yv), 96, 2, 0) == std::vector<std::uint8_t>{119, 123, 120, 124, 127, 0, 128, 0});

  // FP4: element 2i in the low nibble. 0.5, 1, 1.5, 2, 3 with scale 1 -> codes 1, 2, 3, 4, 5.
  const std::vector<float> f = {0.5f, 1.0f, 1.5f, 2.0f, 3.0f, -0.5f};
  const auto s = scheme_of(format_id::float4_e2m1fn, granularity::tensor);
  auto p = make_q(s, {6});
  p.scales[0] = 1.0f;
  b.quantize_with_scales(be::make_tensor(f.data(), be::float32, {6}), p.view);
  CHECK(same(codes_of(p), std::vector<std::uint8_t>{0x21, 0x43, 0x95}));
  // An odd row length pads the last byte's high nibble with 0 and the next row starts on a byte.
  auto q = make_q(s, {2, 3});
  q.scales[0] = 1.0f;
  b.quantize_with_scales(be::make_tensor(f.data(), be::float32, {2, 3}), q.view);
  CHECK(same(codes_of(q), std::vector<std::uint8_t>{0x21, 0x03, 0x54, 0x09}));
}

TEST_CASE("backend cpu dequantize equals the library for fp32 scales and plain MX scales", "[backend]") {
  be::cpu_backend b;
  const std::int64_t rows = 4, cols = 50;
  const auto x = random_values(static_cast<std::size_t>(rows * cols), 8);
  for (const auto f : element_formats) {
    for (const auto g : {granularity::tensor, granularity::token, granularity::block}) {
      CAPTURE(to_string(f), to_string(g));
      const auto q = quantize(matrix_view<const float>(x, 4, 50), scheme_of(f, g, 2, 8, rounding::nearest, scale_rule::max));
      std::vector<float> out(static_cast<std::size_t>(rows * cols));
      b.dequantize(be::from_library(q.view()), be::make_tensor(out.data(), be::float32, {rows, cols}));
      CHECK(same_bits(out, minifloat::dequantize(q)));
    }
  }
  for (const int axis : {1, 0}) {
    CAPTURE(axis);
    // MX round trip through the backend's own buffers.
    auto y = make_q(mx_scheme(format_id::float8_e5m2, axis), {rows, cols});
    b.quantize(be::make_tensor(x.data(), be::float32, {rows, cols}), y.view);
    std::vector<float> out(static_cast<std::size_t>(rows * cols));
    b.dequantize(y.view, be::make_tensor(out.data(), be::float32, {rows, cols}));
    CHECK(out == mx_quantize<float8_e5m2>(x, 4, 50, axis).dequantize());
  }
}

namespace {

/// A GEMM operand quantized by the library (scheme s, rows x cols), as a host quantized_view.
struct operand_data {
  quantized_tensor lib;
  be::quantized_view op;
};

operand_data make_operand(const std::vector<float>& x, std::int64_t rows, std::int64_t cols, const quant_scheme& s) {
  operand_data d;
  d.lib = quantize(matrix_view<const float>(x, static_cast<std::size_t>(rows), static_cast<std::size_t>(cols)), s);
  d.op = be::from_library(d.lib.view());
  return d;
}

/// B (k x n values) as stored for `layout`.
std::vector<float> stored(const std::vector<float>& xb, std::int64_t k, std::int64_t n, gemm_layout layout) {
  std::vector<float> bt(xb.size());
  for (std::int64_t i = 0; i < k; ++i)
    for (std::int64_t j = 0; j < n; ++j)
      bt[static_cast<std::size_t>(layout == gemm_layout::kn ? i * n + j : j * k + i)] = xb[static_cast<std::size_t>(i * n + j)];
  return bt;
}

}  // namespace

TEST_CASE("backend cpu gemm equals gemm_reference (fp32_blocks) for the aclnnQuantMatmulV5 modes and mixed scales",
          "[backend]") {
  be::cpu_backend cpu;
  be::backend_interface& b = cpu;
  const std::int64_t m = 5, k = 96, n = 7;
  const auto xa = random_values(static_cast<std::size_t>(m * k), 1);
  const auto xb = random_values(static_cast<std::size_t>(k * n), 2);
  struct mode {
    const char* name;
    quant_scheme a, b_nk, b_kn;
  };
  const auto max_rule = [](quant_scheme s) {
    if (s.gran != granularity::mx) s.rule = scale_rule::max;
    return s;
  };
  const auto e4 = format_id::float8_e4m3fn, e5 = format_id::float8_e5m2, h8 = format_id::hifloat8, f4 = format_id::float4_e2m1fn;
  const mode modes[] = {
      {"T-T hif8", scheme_of(h8, granularity::tensor), scheme_of(h8, granularity::tensor), scheme_of(h8, granularity::tensor)},
      // per output channel: rows of an (n, k) B, one K x 1 block per column of a (k, n) B
      {"K-C e4m3 x e5m2", scheme_of(e4, granularity::token), scheme_of(e5, granularity::channel),
       scheme_of(e5, granularity::block, static_cast<std::size_t>(k), 1)},
      {"G-B e4m3", scheme_of(e4, granularity::block, 1, 32), scheme_of(e4, granularity::block, 32, 32),
       scheme_of(e4, granularity::block, 32, 32)},
      {"mx e4m3", mx_scheme(e4, 1), mx_scheme(e4, 1), mx_scheme(e4, 0)},
      {"mx fp4", mx_scheme(f4, 1), mx_scheme(f4, 1), mx_scheme(f4, 0)},
      {"mx A x per-channel B (mixed)", mx_scheme(e4, 1), scheme_of(e4, granularity::channel),
       scheme_of(e4, granularity::block, static_cast<std::size_t>(k), 1)},
  };
  for (const auto& md : modes) {
    for (const auto layout : {gemm_layout::kn, gemm_layout::nk}) {
      for (const auto out_t : {be::float32, be::element_type(format_id::bfloat16)}) {
        CAPTURE(md.name, to_string(layout), be::to_string(out_t));
        const bool kn = layout == gemm_layout::kn;
        auto a = make_operand(xa, m, k, max_rule(md.a));
        auto bo = make_operand(stored(xb, k, n, layout), kn ? k : n, kn ? n : k, max_rule(kn ? md.b_kn : md.b_nk));
        const std::vector<float> bias = random_values(static_cast<std::size_t>(n), 77);
        std::vector<std::uint8_t> out(static_cast<std::size_t>(m * n) * (out_t == be::float32 ? 4 : 2));
        REQUIRE(b.supports(be::request::for_gemm(a.op.scheme, bo.op.scheme, out_t, layout, be::bias_term::present)));
        b.gemm(a.op, bo.op, be::make_tensor(bias.data(), be::float32, {n}), be::make_tensor(out.data(), out_t, {m, n}), layout);
        std::vector<float> ref(static_cast<std::size_t>(m * n));
        gemm_reference(a.lib.view(), bo.lib.view(), layout, bias, ref, gemm_accumulation::fp32_blocks);
        for (std::size_t i = 0; i < ref.size(); ++i) {
          if (out_t == be::float32) {
            float v;
            std::memcpy(&v, out.data() + 4 * i, 4);
            CHECK(std::bit_cast<std::uint32_t>(v) == std::bit_cast<std::uint32_t>(ref[i]));
          } else {
            std::uint16_t v;
            std::memcpy(&v, out.data() + 2 * i, 2);
            CHECK(v == narrow<bfloat16>(ref[i]).bits());
          }
        }
      }
    }
  }
}

TEST_CASE("backend cpu grouped_gemm equals one GEMM per group (per-group tensor scales tokens MX)", "[backend]") {
  be::cpu_backend b;
  const std::int64_t m = 9, k = 64, n = 5, g = 3;
  const std::vector<std::int64_t> sizes = {4, 0, 5};
  const auto xa = random_values(static_cast<std::size_t>(m * k), 31);
  const auto e4 = format_id::float8_e4m3fn;
  for (const auto ga : {granularity::tensor, granularity::token, granularity::mx}) {
    CAPTURE(to_string(ga));
    const bool mx = ga == granularity::mx;
    // A: per-group tensor scales are (g,); everything else is A's own scales.
    auto a = make_operand(xa, m, k, mx ? mx_scheme(e4, 1) : scheme_of(e4, granularity::token, 1, 128, rounding::nearest, scale_rule::max));
    std::vector<float> a_group_scales = {0.5f, 1.0f, 0.25f};
    be::quantized_view av = a.op;
    if (ga == granularity::tensor) {
      av.scheme.gran = granularity::tensor;
      av.scales = be::make_tensor(a_group_scales.data(), be::float32, {g});
    }
    // B: g weights stored (N, K), stacked.
    const auto bs = mx ? mx_scheme(e4, 1) : scheme_of(e4, granularity::channel, 1, 128, rounding::nearest, scale_rule::max);
    std::vector<std::uint8_t> bcodes, bscales_mx;
    std::vector<float> bscales;
    std::vector<operand_data> parts;
    for (std::int64_t e = 0; e < g; ++e) {
      parts.push_back(make_operand(random_values(static_cast<std::size_t>(n * k), 40 + static_cast<unsigned>(e)), n, k, bs));
      const auto& q = parts.back().lib;
      bcodes.insert(bcodes.end(), q.codes().begin(), q.codes().end());
      bscales.insert(bscales.end(), q.scales().begin(), q.scales().end());
      bscales_mx.insert(bscales_mx.end(), q.mx_scales().begin(), q.mx_scales().end());
    }
    be::quantized_view bo;
    bo.scheme = bs;
    bo.codes = be::make_tensor(bcodes.data(), e4, {g, n, k});
    bo.scales = mx ? be::make_tensor(bscales_mx.data(), format_id::float8_e8m0fnu, {g, n, 2})
                   : be::make_tensor(bscales.data(), be::float32, {g, n});
    std::vector<float> out(static_cast<std::size_t>(m * n), -1.0f);
    b.grouped_gemm(av, bo, be::make_tensor(sizes.data(), be::int64, {g}), {}, be::make_tensor(out.data(), be::float32, {m, n}),
                   gemm_layout::nk);
    // Per group through the backend's own gemm on row slices of A.
    std::int64_t r0 = 0;
    for (std::int64_t e = 0; e < g; r0 += sizes[static_cast<std::size_t>(e)], ++e) {
      const std::int64_t rows = sizes[static_cast<std::size_t>(e)];
      if (rows == 0) continue;
      be::quantized_view ae = av;
      ae.codes = be::make_tensor(static_cast<const std::uint8_t*>(a.op.codes.data) + r0 * k, e4, {rows, k});
      if (ga == granularity::tensor) ae.scales = be::make_tensor(&a_group_scales[static_cast<std::size_t>(e)], be::float32, {1});
      else if (mx) ae.scales = be::make_tensor(static_cast<const std::uint8_t*>(a.op.scales.data) + r0 * 2, format_id::float8_e8m0fnu, {rows, 2});
      else ae.scales = be::make_tensor(static_cast<const float*>(a.op.scales.data) + r0, be::float32, {rows});
      std::vector<float> ref(static_cast<std::size_t>(rows * n));
      b.gemm(ae, parts[static_cast<std::size_t>(e)].op, {}, be::make_tensor(ref.data(), be::float32, {rows, n}), gemm_layout::nk);
      CHECK(std::equal(ref.begin(), ref.end(), out.begin() + r0 * n));
    }
  }
}

TEST_CASE("backend cpu supports() is the library's verdict - refusals throw its reason", "[backend]") {
  be::cpu_backend b;
  // The library's own rules, in the library's words.
  CHECK_THAT(b.supports(be::request::for_quantize(be::float32, scheme_of(format_id::hifloat8, granularity::mx))).reason,
             Catch::Contains("MX element format"));
  CHECK_THAT(b.supports(be::request::for_quantize(be::float32, scheme_of(format_id::float8_e8m0fnu, granularity::tensor))).reason,
             Catch::Contains("scale format"));
  auto mx_away = mx_scheme(format_id::float8_e4m3fn, 1);
  mx_away.round = rounding::nearest_away;
  CHECK_THAT(b.supports(be::request::for_quantize(be::float32, mx_away)).reason, Catch::Contains("nearest even"));
  CHECK_FALSE(b.supports(be::request::for_quantize_with_scales(be::float32, mx_scheme(format_id::float8_e4m3fn, 1))));
  CHECK_FALSE(b.supports(be::request::for_quantize(format_id::hifloat8, scheme_of(format_id::hifloat8, granularity::tensor))));
  CHECK(b.supports(be::request::for_quantize(format_id::bfloat16, scheme_of(format_id::float4_e2m1fn, granularity::block))));
  // stochastic rounding is the library's (seeded) one here; MX refuses it
  auto st = scheme_of(format_id::hifloat8, granularity::tensor, 1, 128, rounding::stochastic, scale_rule::max);
  CHECK(b.supports(be::request::for_quantize(be::float32, st)));
  mx_away.round = rounding::stochastic;
  CHECK_FALSE(b.supports(be::request::for_quantize(be::float32, mx_away)));
  // The GEMM's: a (k, n) B with per-k scales, a 16-bit element, an MX block along M.
  const auto e4c = scheme_of(format_id::float8_e4m3fn, granularity::channel);
  CHECK_THAT(b.supports(be::request::for_gemm(e4c, e4c, be::float32, gemm_layout::kn)).reason,
             Catch::Contains("block") && Catch::Contains("x1"));
  CHECK_FALSE(b.supports(be::request::for_gemm(scheme_of(format_id::bfloat16, granularity::tensor), e4c, be::float32, gemm_layout::nk)));
  CHECK_THAT(b.supports(be::request::for_gemm(mx_scheme(format_id::float8_e4m3fn, 0), e4c, be::float32, gemm_layout::nk)).reason,
             Catch::Contains("along K"));
  CHECK_FALSE(b.supports(be::request::for_gemm(e4c, e4c, format_id::float16, gemm_layout::nk)));

  std::vector<float> x(8, 1.0f);
  auto y = make_q(mx_away, {8});
  try {
    b.quantize(be::make_tensor(x.data(), be::float32, {8}), y.view);
    FAIL("expected unsupported_error");
  } catch (const unsupported_error& e) {
    CHECK_THAT(e.what(), Catch::Contains("cpu quantize") && Catch::Contains("stochastic"));
  }
}

TEST_CASE("backend cpu rejects tensors that do not fit saying what was expected", "[backend]") {
  be::cpu_backend b;
  std::vector<float> x(12, 1.0f), s(4, 1.0f);
  std::vector<std::uint8_t> codes(12);
  const auto xv = be::make_tensor(x.data(), be::float32, {3, 4});
  const auto token = scheme_of(format_id::float8_e4m3fn, granularity::token);
  const auto tensor = scheme_of(format_id::float8_e4m3fn, granularity::tensor);
  const auto cv = be::make_tensor(codes.data(), format_id::float8_e4m3fn, {3, 4});
  // token scales: one per row (3), not 4
  CHECK_THROWS_WITH(b.quantize_with_scales(xv, {token, cv, be::make_tensor(s.data(), be::float32, {4})}),
                    Catch::Contains("must hold 3 values"));
  // the codes must have x's shape, and the scheme's format
  CHECK_THROWS_WITH(b.quantize_with_scales(xv, {tensor, be::make_tensor(codes.data(), format_id::float8_e4m3fn, {4, 3}),
                                                be::make_tensor(s.data(), be::float32, {1})}),
                    Catch::Contains("shape of x"));
  CHECK_THROWS_WITH(b.quantize_with_scales(xv, {tensor, be::make_tensor(codes.data(), format_id::hifloat8, {3, 4}),
                                                be::make_tensor(s.data(), be::float32, {1})}),
                    Catch::Contains("must be float8_e4m3fn"));
  // a device tensor on the CPU backend
  CHECK_THROWS_WITH(b.quantize_with_scales(be::make_tensor(x.data(), be::float32, {3, 4}, be::ascend_device(0)),
                                           {tensor, cv, be::make_tensor(s.data(), be::float32, {1})}),
                    Catch::Contains("must live on host"));
  // a strided (non-contiguous) view
  auto strided = xv;
  strided.strides[0] = 5;
  CHECK_THROWS_WITH(b.quantize_with_scales(strided, {tensor, cv, be::make_tensor(s.data(), be::float32, {1})}),
                    Catch::Contains("contiguous"));
  // static scales must be positive (the library's check, the library's exception)
  s[0] = 0.0f;
  CHECK_THROWS_AS(b.quantize_with_scales(xv, {tensor, cv, be::make_tensor(s.data(), be::float32, {1})}), std::invalid_argument);
  // a scheme that means nothing: shape_error from the library's validate, with the caller's name
  auto zero_block = scheme_of(format_id::float8_e4m3fn, granularity::block, 0, 4);
  CHECK_THROWS_WITH(b.quantize(xv, {zero_block, cv, be::make_tensor(s.data(), be::float32, {1})}),
                    Catch::Contains("cpu quantize: y scheme") && Catch::Contains("at least 1x1"));
  // MX scales in the CANN paired shape instead of the plain one
  std::vector<float> big(64, 1.0f);
  std::vector<std::uint8_t> yb(64), sb(4);
  const be::quantized_view paired{mx_scheme(format_id::float8_e4m3fn, 1), be::make_tensor(yb.data(), format_id::float8_e4m3fn, {1, 64}),
                                  be::make_tensor(sb.data(), format_id::float8_e8m0fnu, {1, 1, 2})};
  CHECK_THROWS_WITH(b.quantize(be::make_tensor(big.data(), be::float32, {1, 64}), paired), Catch::Contains("(1, 2)"));
}
