// The CPU backend through backend::backend_interface, for every operation: the bytes it writes equal the
// library's scalar reference (quantize_with_scales, quantize, mx_quantize + CANN paired scales,
// dequantize, gemm_reference fp32_blocks); bfloat16 inputs give the codes of their float32 values;
// supports() and the errors say what is wrong. Layout checks that must hold on every machine:
// MX scales in the CANN paired layout and FP4 nibble order, byte for byte, and the CANN doc vector.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <minifloat/backend/cpu.hpp>
#include <minifloat/gemm/gemm.hpp>
#include <minifloat/all.hpp>

#include "support/test_data.hpp"

using namespace minifloat;
namespace be = minifloat::backend;

namespace {

std::vector<float> random_values(std::size_t n, unsigned seed, float spread = 4.0f) {
  return test_support::spread_normal(n, seed, spread);
}

using test_support::from_bf16_bits;
using test_support::to_bf16_bits;

/// Bytes of a contiguous rows x cols tensor of dtype t.
std::size_t code_bytes(be::dtype t, std::int64_t rows, std::int64_t cols) {
  return static_cast<std::size_t>(rows) * static_cast<std::size_t>(be::storage_bits(t) == 4 ? (cols + 1) / 2 : cols);
}

quant_scheme scheme_of(be::dtype t, granularity g, std::size_t br = 1, std::size_t bc = 128,
                       rounding r = rounding::nearest, scale_rule rule = scale_rule::none) {
  quant_scheme s;
  s.format = *be::format_of(t);
  s.gran = g;
  s.block_rows = br, s.block_cols = bc;
  s.rule = rule;
  s.round = r;
  return s;
}

const be::dtype element_dtypes[] = {be::dtype::hifloat8, be::dtype::float8_e4m3fn, be::dtype::float8_e5m2,
                                    be::dtype::float6_e3m2fn, be::dtype::float6_e2m3fn, be::dtype::float4_e2m1fn_x2};

}  // namespace

TEST_CASE("backend tensor views: dtypes contiguous strides FP4 rows on byte boundaries", "[backend]") {
  CHECK(be::to_string(be::dtype::float4_e2m1fn_x2) == "float4_e2m1fn_x2");
  CHECK(be::parse_dtype("hifloat8") == be::dtype::hifloat8);
  CHECK(be::storage_bits(be::dtype::float4_e2m1fn_x2) == 4);
  CHECK(be::format_of(be::dtype::float4_e2m1fn_x2) == format_id::float4_e2m1fn);
  for (const auto t : be::all_dtypes)
    if (const auto f = be::format_of(t)) CHECK(be::dtype_of(*f) == t);

  std::vector<std::uint8_t> buf(64);
  const auto v = be::make_tensor(buf.data(), be::dtype::float4_e2m1fn_x2, {3, 5});
  CHECK(v.strides[0] == 6);  // odd width: each row starts on a byte
  CHECK(v.strides[1] == 1);
  CHECK(v.byte_extent() == 9);  // 3 rows x ceil(5 / 2) bytes, as the library stores FP4
  CHECK(v.is_contiguous());
  const auto e = be::make_tensor(buf.data(), be::dtype::float8_e4m3fn, {2, 3, 4});
  CHECK(e.rows() == 6);
  CHECK(e.cols() == 4);
  CHECK(e.reshaped({6, 4}).dim(0) == 6);
  CHECK_THROWS_AS(e.reshaped({5, 4}), shape_error);
  CHECK(be::tensor_view{}.is_none());
}

TEST_CASE("backend cpu quantize (static scale) equals quantize_with_scales for every format and granularity",
          "[backend]") {
  be::cpu_backend cpu;
  be::backend_interface& b = cpu;
  const std::int64_t rows = 5, cols = 37;
  const auto x = random_values(static_cast<std::size_t>(rows * cols), 11);
  for (const auto t : element_dtypes) {
    for (const auto g : {granularity::tensor, granularity::token, granularity::channel, granularity::block}) {
      for (const auto r : {be::round_mode::nearest, be::round_mode::nearest_away, be::round_mode::toward_zero}) {
        CAPTURE(be::to_string(t), to_string(g), be::to_string(r));
        be::quantize_options o;
        o.gran = g, o.block_rows = 2, o.block_cols = 16, o.round = r;
        const auto [gr, gc] = be::detail::scale_grid(g, rows, cols, 2, 16);
        std::vector<float> scales(static_cast<std::size_t>(gr * gc));
        for (std::size_t i = 0; i < scales.size(); ++i) scales[i] = 0.01f * static_cast<float>(i + 3);
        std::vector<std::uint8_t> y(code_bytes(t, rows, cols), 0xAA);
        b.quantize(be::make_tensor(x.data(), be::dtype::float32, {rows, cols}),
                   be::make_tensor(scales.data(), be::dtype::float32, {static_cast<std::int64_t>(scales.size())}),
                   be::make_tensor(y.data(), t, {rows, cols}), o);
        const auto ref = quantize_with_scales(matrix_view<const float>(x, 5, 37),
                                              scheme_of(t, g, 2, 16, *be::to_rounding(r)), scales);
        CHECK(std::equal(y.begin(), y.end(), ref.codes().begin(), ref.codes().end()));
      }
    }
  }
}

TEST_CASE("backend cpu quantize: bfloat16 and float16 inputs give the codes of their float32 values", "[backend]") {
  be::cpu_backend b;
  const auto x32 = from_bf16_bits(to_bf16_bits(random_values(64, 3)));
  const auto x16 = to_bf16_bits(x32);
  float s = 0.125f;
  std::vector<std::uint8_t> y32(64), y16(64);
  b.quantize(be::make_tensor(x32.data(), be::dtype::float32, {4, 16}), be::make_tensor(&s, be::dtype::float32, {1}),
             be::make_tensor(y32.data(), be::dtype::hifloat8, {4, 16}), {});
  b.quantize(be::make_tensor(x16.data(), be::dtype::bfloat16, {4, 16}), be::make_tensor(&s, be::dtype::float32, {1}),
             be::make_tensor(y16.data(), be::dtype::hifloat8, {4, 16}), {});
  CHECK(y32 == y16);
  // float16: values that float16 holds exactly
  std::mt19937 rng(7);
  std::vector<std::uint16_t> h(64);
  std::vector<float> xh(64);
  for (std::size_t i = 0; i < h.size(); ++i) {
    h[i] = static_cast<std::uint16_t>(0x2000U + rng() % 0x3800U) | static_cast<std::uint16_t>((rng() & 1U) << 15);
    xh[i] = static_cast<float>(float16::from_bits(h[i]));
  }
  std::vector<std::uint8_t> yh32(64), yh16(64);
  b.quantize(be::make_tensor(xh.data(), be::dtype::float32, {64}), be::make_tensor(&s, be::dtype::float32, {1}),
             be::make_tensor(yh32.data(), be::dtype::float8_e5m2, {64}), {});
  b.quantize(be::make_tensor(h.data(), be::dtype::float16, {64}), be::make_tensor(&s, be::dtype::float32, {1}),
             be::make_tensor(yh16.data(), be::dtype::float8_e5m2, {64}), {});
  CHECK(yh32 == yh16);
}

TEST_CASE("backend cpu dynamic_quantize: amax / format max or amax / dst_max for hifloat8", "[backend]") {
  be::cpu_backend b;
  const std::int64_t rows = 6, cols = 40;
  auto x = random_values(static_cast<std::size_t>(rows * cols), 5);
  x[7] = std::numeric_limits<float>::infinity();  // skipped by the amax, saturates
  for (const auto t : {be::dtype::hifloat8, be::dtype::float8_e4m3fn, be::dtype::float8_e5m2, be::dtype::float4_e2m1fn_x2}) {
    for (const auto g : {granularity::tensor, granularity::token}) {
      CAPTURE(be::to_string(t), to_string(g));
      std::vector<std::uint8_t> y(code_bytes(t, rows, cols));
      std::vector<float> s(g == granularity::tensor ? 1 : static_cast<std::size_t>(rows));
      be::dynamic_quantize_options o;
      o.gran = g;
      b.dynamic_quantize(be::make_tensor(x.data(), be::dtype::float32, {rows, cols}), be::make_tensor(y.data(), t, {rows, cols}),
                         be::make_tensor(s.data(), be::dtype::float32, {static_cast<std::int64_t>(s.size())}), o);
      const auto ref = quantize(matrix_view<const float>(x, 6, 40), scheme_of(t, g, 1, 128, rounding::nearest, scale_rule::max));
      CHECK(std::equal(y.begin(), y.end(), ref.codes().begin(), ref.codes().end()));
      CHECK(std::equal(s.begin(), s.end(), ref.scales().begin(), ref.scales().end()));
    }
  }
  // MindSpeed's HiF8 target: amax lands on 15.
  std::vector<std::uint8_t> y(static_cast<std::size_t>(rows * cols));
  std::vector<float> s(static_cast<std::size_t>(rows));
  be::dynamic_quantize_options o;
  o.gran = granularity::token, o.dst_max = 15.0f;
  b.dynamic_quantize(be::make_tensor(x.data(), be::dtype::float32, {rows, cols}),
                     be::make_tensor(y.data(), be::dtype::hifloat8, {rows, cols}),
                     be::make_tensor(s.data(), be::dtype::float32, {rows}), o);
  for (std::int64_t r = 0; r < rows; ++r) {
    const auto row = std::span<const float>(x).subspan(static_cast<std::size_t>(r * cols), static_cast<std::size_t>(cols));
    CHECK(s[static_cast<std::size_t>(r)] == finite_amax(row) / 15.0f);
  }
  const auto ref = quantize_with_scales(matrix_view<const float>(x, 6, 40), scheme_of(be::dtype::hifloat8, granularity::token), s);
  CHECK(std::equal(y.begin(), y.end(), ref.codes().begin(), ref.codes().end()));
  // dst_max is a HiF8 knob only (aclnnDynamicQuantV4 ignores it otherwise).
  be::request r = be::request::for_dynamic_quantize(be::dtype::float32, be::dtype::float8_e4m3fn, o);
  CHECK_FALSE(b.supports(r));
  CHECK_THAT(b.supports(r).reason, Catch::Contains("hifloat8 only"));
}

TEST_CASE("backend cpu quantize_with_amax: static codes and the finite amax in one pass", "[backend]") {
  be::cpu_backend b;
  for (const auto t : element_dtypes) {
    for (const std::int64_t cols : {std::int64_t{33}, std::int64_t{32}}) {
      CAPTURE(be::to_string(t), cols);
      const std::int64_t rows = 3;
      auto x = random_values(static_cast<std::size_t>(rows * cols), 9);
      x[4] = std::numeric_limits<float>::quiet_NaN();
      x[9] = -1e30f;  // finite: counts for the amax, saturates in the codes
      float s = 0.5f, amax = -1.0f;
      std::vector<std::uint8_t> y(code_bytes(t, rows, cols));
      b.quantize_with_amax(be::make_tensor(x.data(), be::dtype::float32, {rows, cols}), be::make_tensor(&s, be::dtype::float32, {1}),
                           be::make_tensor(y.data(), t, {rows, cols}), be::make_tensor(&amax, be::dtype::float32, {1}), {});
      const auto ref = quantize_with_scales(matrix_view<const float>(x, 3, static_cast<std::size_t>(cols)),
                                            scheme_of(t, granularity::tensor), std::vector<float>{s});
      CHECK(std::equal(y.begin(), y.end(), ref.codes().begin(), ref.codes().end()));
      CHECK(amax == 1e30f);
    }
  }
  // amax comes back in x's dtype (aclnnQuantMax).
  const auto xb = to_bf16_bits({1.0f, -3.5f, 2.0f, 0.25f});
  float s = 1.0f;
  std::uint16_t amax_bits = 0;
  std::vector<std::uint8_t> y(4);
  b.quantize_with_amax(be::make_tensor(xb.data(), be::dtype::bfloat16, {4}), be::make_tensor(&s, be::dtype::float32, {1}),
                       be::make_tensor(y.data(), be::dtype::float8_e4m3fn, {4}),
                       be::make_tensor(&amax_bits, be::dtype::bfloat16, {1}), {});
  CHECK(static_cast<float>(bfloat16::from_bits(amax_bits)) == 3.5f);
  CHECK_THROWS_AS(b.quantize_with_amax(be::make_tensor(xb.data(), be::dtype::bfloat16, {4}), be::make_tensor(&s, be::dtype::float32, {1}),
                                       be::make_tensor(y.data(), be::dtype::float8_e4m3fn, {4}),
                                       be::make_tensor(&s, be::dtype::float32, {1}), {}),
                  shape_error);
}

TEST_CASE("backend cpu mx_quantize: library codes scales in the CANN paired layout (axis -1 and -2)", "[backend]") {
  be::cpu_backend b;
  const std::int64_t rows = 35, cols = 70;  // 3 blocks along a row (odd: padded), 2 down a column
  const auto x = random_values(static_cast<std::size_t>(rows * cols), 21);
  for (const auto t : {be::dtype::float8_e4m3fn, be::dtype::float8_e5m2, be::dtype::float6_e2m3fn, be::dtype::float4_e2m1fn_x2}) {
    for (const int axis : {-1, -2}) {
      for (const auto rule : {mx_scale_rule::floor, mx_scale_rule::rceil}) {
        CAPTURE(be::to_string(t), axis, to_string(rule));
        const int lib_axis = axis == -1 ? 1 : 0;
        const auto cs = mx_cann_scale_shape(35, 70, lib_axis);
        std::vector<std::uint8_t> y(code_bytes(t, rows, cols)), sc(cs[0] * cs[1] * cs[2], 0xEE);
        be::mx_quantize_options o;
        o.axis = axis, o.rule = rule;
        const auto sshape = axis == -1 ? std::vector<std::int64_t>{rows, 2, 2} : std::vector<std::int64_t>{1, cols, 2};
        b.mx_quantize(be::make_tensor(x.data(), be::dtype::float32, {rows, cols}), be::make_tensor(y.data(), t, {rows, cols}),
                      be::make_tensor(sc.data(), be::dtype::float8_e8m0fnu, sshape), o);
        visit_format(*be::format_of(t), [&](auto tag) {
          using Elem = typename decltype(tag)::type;
          if constexpr (mx_element<Elem>) {
            const auto ref = mx_quantize<Elem>(x, 35, 70, lib_axis, rule);
            CHECK(std::equal(y.begin(), y.end(), ref.codes().begin(), ref.codes().end()));
            CHECK(sc == ref.cann_scales());
          }
        });
      }
    }
  }
}

TEST_CASE("backend cpu mx_quantize: a batch of matrices blocked along axis -2", "[backend]") {
  be::cpu_backend b;
  const auto x = random_values(2 * 40 * 6, 4);
  std::vector<std::uint8_t> y(2 * 40 * 6), sc(2 * 1 * 6 * 2);
  b.mx_quantize(be::make_tensor(x.data(), be::dtype::float32, {2, 40, 6}), be::make_tensor(y.data(), be::dtype::float8_e4m3fn, {2, 40, 6}),
                be::make_tensor(sc.data(), be::dtype::float8_e8m0fnu, {2, 1, 6, 2}), {.axis = -2});
  for (std::size_t m = 0; m < 2; ++m) {
    const auto ref = mx_quantize<float8_e4m3fn>(std::span<const float>(x).subspan(m * 240, 240), 40, 6, 0);
    CHECK(std::equal(ref.codes().begin(), ref.codes().end(), y.begin() + static_cast<std::ptrdiff_t>(m * 240)));
    const auto cann = ref.cann_scales();
    CHECK(std::equal(cann.begin(), cann.end(), sc.begin() + static_cast<std::ptrdiff_t>(m * 12)));
  }
}

TEST_CASE("backend layout: the CANN doc vector paired scale interleave and FP4 nibble order", "[backend][layout]") {
  be::cpu_backend b;
  // aclnnDynamicMxQuant doc example (docs/formats/ascend.md#mx-scale-layout): bf16 [0, 8, 64, 512], axis -1, E4M3, rint.
  const std::vector<std::uint16_t> x = {0x0000, 0x4100, 0x4280, 0x4400};
  CHECK(from_bf16_bits(x) == std::vector<float>{0.0f, 8.0f, 64.0f, 512.0f});
  std::vector<std::uint8_t> y(4), sc(2, 0xEE);
  b.mx_quantize(be::make_tensor(x.data(), be::dtype::bfloat16, {1, 4}), be::make_tensor(y.data(), be::dtype::float8_e4m3fn, {1, 4}),
                be::make_tensor(sc.data(), be::dtype::float8_e8m0fnu, {1, 1, 2}), {});
  CHECK(y == std::vector<std::uint8_t>{0, 72, 96, 120});
  CHECK(sc == std::vector<std::uint8_t>{128, 0});

  // Axis -2 pairs blocks 2p and 2p+1 of the same column: byte ((p * cols) + c) * 2 + (b % 2).
  // Three 32-row bands with per-band magnitudes 2^0, 2^4, 2^8 -> E4M3 scale codes 119, 123, 127.
  std::vector<float> v(96 * 2);
  for (std::size_t r = 0; r < 96; ++r)
    for (std::size_t c = 0; c < 2; ++c) v[r * 2 + c] = std::ldexp(1.0f + static_cast<float>(c), 4 * static_cast<int>(r / 32));
  std::vector<std::uint8_t> yv(96 * 2), sv(2 * 2 * 2, 0xEE);
  b.mx_quantize(be::make_tensor(v.data(), be::dtype::float32, {96, 2}), be::make_tensor(yv.data(), be::dtype::float8_e4m3fn, {96, 2}),
                be::make_tensor(sv.data(), be::dtype::float8_e8m0fnu, {2, 2, 2}), {.axis = -2});
  // column 0 amax 2^(4b) -> code 127 + 4b - 8; column 1 amax 2^(4b+1) -> one more.
  CHECK(sv == std::vector<std::uint8_t>{119, 123, 120, 124, 127, 0, 128, 0});

  // FP4: element 2i in the low nibble. 0.5, 1, 1.5, 2, 3 with scale 1 -> codes 1, 2, 3, 4, 5.
  const std::vector<float> f = {0.5f, 1.0f, 1.5f, 2.0f, 3.0f, -0.5f};
  float one = 1.0f;
  std::vector<std::uint8_t> p(3);
  b.quantize(be::make_tensor(f.data(), be::dtype::float32, {6}), be::make_tensor(&one, be::dtype::float32, {1}),
             be::make_tensor(p.data(), be::dtype::float4_e2m1fn_x2, {6}), {});
  CHECK(p == std::vector<std::uint8_t>{0x21, 0x43, 0x95});
  // An odd row length pads the last byte's high nibble with 0 and the next row starts on a byte.
  std::vector<std::uint8_t> q(4, 0xFF);
  b.quantize(be::make_tensor(f.data(), be::dtype::float32, {2, 3}), be::make_tensor(&one, be::dtype::float32, {1}),
             be::make_tensor(q.data(), be::dtype::float4_e2m1fn_x2, {2, 3}), {});
  CHECK(q == std::vector<std::uint8_t>{0x21, 0x03, 0x54, 0x09});
}

TEST_CASE("backend cpu dequantize equals the library for fp32 scales and paired MX scales", "[backend]") {
  be::cpu_backend b;
  const std::int64_t rows = 4, cols = 50;
  const auto x = random_values(static_cast<std::size_t>(rows * cols), 8);
  for (const auto t : element_dtypes) {
    for (const auto g : {granularity::tensor, granularity::token, granularity::block}) {
      CAPTURE(be::to_string(t), to_string(g));
      auto s = scheme_of(t, g, 2, 8, rounding::nearest, scale_rule::max);
      const auto q = quantize(matrix_view<const float>(x, 4, 50), s);
      std::vector<float> out(static_cast<std::size_t>(rows * cols));
      be::dequantize_options o;
      o.gran = g, o.block_rows = 2, o.block_cols = 8;
      b.dequantize(be::make_tensor(q.codes().data(), t, {rows, cols}),
                   be::make_tensor(q.scales().data(), be::dtype::float32, {static_cast<std::int64_t>(q.scales().size())}),
                   be::make_tensor(out.data(), be::dtype::float32, {rows, cols}), o);
      const auto ref = minifloat::dequantize(q);
      CHECK(std::equal(out.begin(), out.end(), ref.begin(), ref.end(),
                       [](float a, float c) { return std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(c); }));
    }
  }
  // MX round trip through the backend's own paired buffers.
  std::vector<std::uint8_t> y(static_cast<std::size_t>(rows * cols)), sc(static_cast<std::size_t>(rows * 2 * 2));
  b.mx_quantize(be::make_tensor(x.data(), be::dtype::float32, {rows, cols}), be::make_tensor(y.data(), be::dtype::float8_e5m2, {rows, cols}),
                be::make_tensor(sc.data(), be::dtype::float8_e8m0fnu, {rows, 1, 2}), {});
  std::vector<float> out(static_cast<std::size_t>(rows * cols));
  b.dequantize(be::make_tensor(y.data(), be::dtype::float8_e5m2, {rows, cols}), be::make_tensor(sc.data(), be::dtype::float8_e8m0fnu, {rows, 1, 2}),
               be::make_tensor(out.data(), be::dtype::float32, {rows, cols}), {.gran = granularity::mx});
  CHECK(out == mx_quantize<float8_e5m2>(x, 4, 50).dequantize());
}

namespace {

/// A GEMM operand quantized by the backend itself, plus the library view of the same bytes.
struct operand_data {
  std::vector<std::uint8_t> codes, mx_scales;
  std::vector<float> scales;
  be::gemm_operand op;
  quantized_tensor lib;
};

operand_data make_operand(be::backend_interface& b, const std::vector<float>& x, std::int64_t rows, std::int64_t cols, be::dtype t,
                          granularity g, std::size_t br, std::size_t bc, int mx_axis) {
  operand_data d;
  d.codes.resize(code_bytes(t, rows, cols));
  d.op.gran = g, d.op.block_rows = br, d.op.block_cols = bc;
  const auto xv = be::make_tensor(x.data(), be::dtype::float32, {rows, cols});
  d.op.data = be::make_tensor(d.codes.data(), t, {rows, cols});
  if (g == granularity::mx) {
    const auto shape = be::detail::mx_paired_scale_shape(xv, mx_axis);
    d.mx_scales.resize(static_cast<std::size_t>(shape[0] * shape[1] * shape[2]));
    d.op.scale = be::make_tensor(d.mx_scales.data(), be::dtype::float8_e8m0fnu, shape);
    b.mx_quantize(xv, d.op.data, d.op.scale, {.axis = mx_axis});
    return d;
  }
  const auto s = scheme_of(t, g, br, bc, rounding::nearest, scale_rule::max);
  d.lib = quantize(matrix_view<const float>(x, static_cast<std::size_t>(rows), static_cast<std::size_t>(cols)), s);
  d.codes.assign(d.lib.codes().begin(), d.lib.codes().end());
  d.scales.assign(d.lib.scales().begin(), d.lib.scales().end());
  d.op.data = be::make_tensor(d.codes.data(), t, {rows, cols});
  if (g == granularity::block)
    d.op.scale = be::make_tensor(d.scales.data(), be::dtype::float32,
                                 {static_cast<std::int64_t>(d.lib.view().scale_grid_rows()),
                                  static_cast<std::int64_t>(d.lib.view().scale_grid_cols())});
  else
    d.op.scale = be::make_tensor(d.scales.data(), be::dtype::float32, {static_cast<std::int64_t>(d.scales.size())});
  return d;
}

}  // namespace

TEST_CASE("backend cpu gemm equals gemm_reference (fp32_blocks) for the aclnnQuantMatmulV5 modes", "[backend]") {
  be::cpu_backend cpu;
  be::backend_interface& b = cpu;
  const std::int64_t m = 5, k = 96, n = 7;
  const auto xa = random_values(static_cast<std::size_t>(m * k), 1);
  const auto xb = random_values(static_cast<std::size_t>(k * n), 2);
  struct mode {
    const char* name;
    be::dtype ta, tb;
    granularity ga, gb;
    std::size_t abr, abc, bbr, bbc;
  };
  const mode modes[] = {
      {"T-T hif8", be::dtype::hifloat8, be::dtype::hifloat8, granularity::tensor, granularity::tensor, 1, 1, 1, 1},
      {"K-C e4m3 x e5m2", be::dtype::float8_e4m3fn, be::dtype::float8_e5m2, granularity::token, granularity::channel, 1, 1, 1, 1},
      {"G-B e4m3", be::dtype::float8_e4m3fn, be::dtype::float8_e4m3fn, granularity::block, granularity::block, 1, 32, 32, 32},
      {"mx e4m3", be::dtype::float8_e4m3fn, be::dtype::float8_e4m3fn, granularity::mx, granularity::mx, 1, 32, 1, 32},
      {"mx fp4", be::dtype::float4_e2m1fn_x2, be::dtype::float4_e2m1fn_x2, granularity::mx, granularity::mx, 1, 32, 1, 32},
  };
  for (const auto& md : modes) {
    for (const auto layout : {gemm_layout::kn, gemm_layout::nk}) {
      for (const auto out_t : {be::dtype::float32, be::dtype::bfloat16}) {
        CAPTURE(md.name, to_string(layout), be::to_string(out_t));
        const bool kn = layout == gemm_layout::kn;
        std::vector<float> bt(xb.size());  // B as stored
        for (std::int64_t i = 0; i < k; ++i)
          for (std::int64_t j = 0; j < n; ++j)
            bt[static_cast<std::size_t>(kn ? i * n + j : j * k + i)] = xb[static_cast<std::size_t>(i * n + j)];
        auto a = make_operand(b, xa, m, k, md.ta, md.ga, md.abr, md.abc, -1);
        // per-channel B stored (k, n) is the K x 1 block grid; store its scales as the library makes them
        operand_data bo;
        if (md.gb == granularity::channel && kn) {
          bo = make_operand(b, bt, k, n, md.tb, granularity::block, static_cast<std::size_t>(k), 1, -2);
          bo.op.gran = granularity::channel;
        } else {
          bo = make_operand(b, bt, kn ? k : n, kn ? n : k, md.tb, md.gb, md.bbr, md.bbc, kn ? -2 : -1);
        }
        const std::vector<float> bias = random_values(static_cast<std::size_t>(n), 77);
        std::vector<std::uint8_t> out(static_cast<std::size_t>(m * n) * (out_t == be::dtype::float32 ? 4 : 2));
        b.gemm(a.op, bo.op, be::make_tensor(bias.data(), be::dtype::float32, {n}),
               be::make_tensor(out.data(), out_t, {m, n}), {.layout = layout});
        // Reference: the library on the same bytes (plain MX scales from the paired buffers).
        const auto view_of = [&](const operand_data& d, std::int64_t r, std::int64_t c, int axis) {
          quantized_tensor_view v;
          v.rows = static_cast<std::size_t>(r), v.cols = static_cast<std::size_t>(c);
          v.codes = d.codes;
          return std::pair{v, axis};
        };
        auto [va, axa] = view_of(a, m, k, 1);
        auto [vb, axb] = view_of(bo, kn ? k : n, kn ? n : k, kn ? 0 : 1);
        std::vector<std::uint8_t> pa, pb;
        if (md.ga == granularity::mx) {
          va.scheme = quant_scheme::make(*be::format_of(md.ta), granularity::mx);
          vb.scheme = quant_scheme::make(*be::format_of(md.tb), granularity::mx);
          vb.scheme.axis = axb;
          pa = mx_scales_from_cann(a.mx_scales, va.rows, va.cols, axa);
          pb = mx_scales_from_cann(bo.mx_scales, vb.rows, vb.cols, axb);
          va.mx_scales = pa, vb.mx_scales = pb;
        } else {
          va.scheme = a.lib.scheme(), vb.scheme = bo.lib.scheme();
          va.scales = a.scales, vb.scales = bo.scales;
        }
        std::vector<float> ref(static_cast<std::size_t>(m * n));
        gemm_reference(va, vb, layout, bias, ref, gemm_accumulation::fp32_blocks);
        for (std::size_t i = 0; i < ref.size(); ++i) {
          if (out_t == be::dtype::float32) {
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
  for (const auto ga : {granularity::tensor, granularity::token, granularity::mx}) {
    CAPTURE(to_string(ga));
    const bool mx = ga == granularity::mx;
    const be::dtype t = be::dtype::float8_e4m3fn;
    // A: per-group tensor scales are (g,); everything else is A's own scales.
    auto a = make_operand(b, xa, m, k, t, mx ? granularity::mx : granularity::token, 1, 32, -1);
    std::vector<float> a_group_scales = {0.5f, 1.0f, 0.25f};
    if (ga == granularity::tensor) {
      a.op.gran = granularity::tensor;
      a.op.scale = be::make_tensor(a_group_scales.data(), be::dtype::float32, {g});
    }
    // B: g weights stored (N, K), stacked.
    std::vector<std::uint8_t> bcodes, bscales_mx;
    std::vector<float> bscales;
    std::vector<operand_data> parts;
    for (std::int64_t e = 0; e < g; ++e) {
      parts.push_back(make_operand(b, random_values(static_cast<std::size_t>(n * k), 40 + static_cast<unsigned>(e)), n, k, t,
                                   mx ? granularity::mx : granularity::channel, 1, 32, -1));
      bcodes.insert(bcodes.end(), parts.back().codes.begin(), parts.back().codes.end());
      bscales.insert(bscales.end(), parts.back().scales.begin(), parts.back().scales.end());
      bscales_mx.insert(bscales_mx.end(), parts.back().mx_scales.begin(), parts.back().mx_scales.end());
    }
    be::gemm_operand bo;
    bo.data = be::make_tensor(bcodes.data(), t, {g, n, k});
    bo.gran = mx ? granularity::mx : granularity::channel;
    bo.scale = mx ? be::make_tensor(bscales_mx.data(), be::dtype::float8_e8m0fnu, {g, n, 1, 2})
                  : be::make_tensor(bscales.data(), be::dtype::float32, {g, n});
    std::vector<float> out(static_cast<std::size_t>(m * n), -1.0f);
    b.grouped_gemm(a.op, bo, be::make_tensor(sizes.data(), be::dtype::int64, {g}), {},
                   be::make_tensor(out.data(), be::dtype::float32, {m, n}), {.layout = gemm_layout::nk});
    // Per group through the backend's own gemm on row slices of A.
    std::int64_t r0 = 0;
    for (std::int64_t e = 0; e < g; r0 += sizes[static_cast<std::size_t>(e)], ++e) {
      const std::int64_t rows = sizes[static_cast<std::size_t>(e)];
      if (rows == 0) continue;
      be::gemm_operand ae = a.op;
      ae.data = be::make_tensor(a.codes.data() + r0 * k, t, {rows, k});
      if (ga == granularity::tensor) ae.scale = be::make_tensor(&a_group_scales[static_cast<std::size_t>(e)], be::dtype::float32, {1});
      else if (mx) ae.scale = be::make_tensor(a.mx_scales.data() + r0 * 2, be::dtype::float8_e8m0fnu, {rows, 1, 2});
      else ae.scale = be::make_tensor(a.scales.data() + r0, be::dtype::float32, {rows});
      std::vector<float> ref(static_cast<std::size_t>(rows * n));
      b.gemm(ae, parts[static_cast<std::size_t>(e)].op, {}, be::make_tensor(ref.data(), be::dtype::float32, {rows, n}),
             {.layout = gemm_layout::nk});
      CHECK(std::equal(ref.begin(), ref.end(), out.begin() + r0 * n));
    }
  }
}

TEST_CASE("backend cpu supports() answers per format granularity and rounding - refusals throw its reason", "[backend]") {
  be::cpu_backend b;
  auto r = be::request::for_quantize(be::dtype::float32, be::dtype::hifloat8, {.round = be::round_mode::hybrid});
  CHECK_FALSE(b.supports(r));
  CHECK_THAT(b.supports(r).reason, Catch::Contains("hybrid"));
  CHECK(b.supports(be::request::for_quantize(be::dtype::bfloat16, be::dtype::float4_e2m1fn_x2, {.gran = granularity::block})));
  CHECK_FALSE(b.supports(be::request::for_mx_quantize(be::dtype::float32, be::dtype::float8_e4m3fn,
                                                     {.round = be::round_mode::nearest_away})));
  CHECK_FALSE(b.supports(be::request::for_mx_quantize(be::dtype::float32, be::dtype::hifloat8, {})));
  CHECK_FALSE(b.supports(be::request::for_quantize_with_amax(be::dtype::float32, be::dtype::hifloat8, {.gran = granularity::token})));
  be::gemm_operand a, w;
  a.data.type = be::dtype::float8_e4m3fn, a.gran = granularity::mx;
  w.data.type = be::dtype::float8_e4m3fn, w.gran = granularity::channel;
  CHECK_THAT(b.supports(be::request::for_gemm(a, w, be::dtype::float32, be::bias_term::none, {})).reason,
             Catch::Contains("both operands"));

  std::vector<float> x(8, 1.0f);
  float s = 1.0f;
  std::vector<std::uint8_t> y(8);
  try {
    b.quantize(be::make_tensor(x.data(), be::dtype::float32, {8}), be::make_tensor(&s, be::dtype::float32, {1}),
               be::make_tensor(y.data(), be::dtype::hifloat8, {8}), {.round = be::round_mode::hybrid});
    FAIL("expected unsupported_error");
  } catch (const unsupported_error& e) {
    CHECK_THAT(e.what(), Catch::Contains("cpu backend") && Catch::Contains("hybrid"));
  }
}

TEST_CASE("backend cpu rejects tensors that do not fit saying what was expected", "[backend]") {
  be::cpu_backend b;
  std::vector<float> x(12, 1.0f), s(4, 1.0f);
  std::vector<std::uint8_t> y(12);
  const auto xv = be::make_tensor(x.data(), be::dtype::float32, {3, 4});
  const auto yv = be::make_tensor(y.data(), be::dtype::float8_e4m3fn, {3, 4});
  // token scales: one per row (3), not 4
  CHECK_THROWS_WITH(b.quantize(xv, be::make_tensor(s.data(), be::dtype::float32, {4}), yv, {.gran = granularity::token}),
                    Catch::Contains("must hold 3 values"));
  // y must have x's shape
  CHECK_THROWS_WITH(b.quantize(xv, be::make_tensor(s.data(), be::dtype::float32, {1}),
                               be::make_tensor(y.data(), be::dtype::float8_e4m3fn, {4, 3}), {}),
                    Catch::Contains("shape of x"));
  // a device tensor on the CPU backend
  CHECK_THROWS_WITH(b.quantize(be::make_tensor(x.data(), be::dtype::float32, {3, 4}, be::ascend_device(0)),
                               be::make_tensor(s.data(), be::dtype::float32, {1}), yv, {}),
                    Catch::Contains("must live on host"));
  // a strided (non-contiguous) view
  auto strided = xv;
  strided.strides[0] = 5;
  CHECK_THROWS_WITH(b.quantize(strided, be::make_tensor(s.data(), be::dtype::float32, {1}), yv, {}),
                    Catch::Contains("contiguous"));
  // static scales must be positive
  s[0] = 0.0f;
  CHECK_THROWS_AS(b.quantize(xv, be::make_tensor(s.data(), be::dtype::float32, {1}), yv, {}), std::invalid_argument);
  // MX scale_out in the plain (unpaired) shape
  std::vector<float> big(64, 1.0f);
  std::vector<std::uint8_t> yb(64), sb(4);
  CHECK_THROWS_WITH(b.mx_quantize(be::make_tensor(big.data(), be::dtype::float32, {1, 64}),
                                  be::make_tensor(yb.data(), be::dtype::float8_e4m3fn, {1, 64}),
                                  be::make_tensor(sb.data(), be::dtype::float8_e8m0fnu, {1, 2}), {}),
                    Catch::Contains("(1, 1, 2)"));
}
