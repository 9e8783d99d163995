// Attention forward: the reference against an independent double-precision computation, the
// fast path (AMX and scalar twin) within the documented bound of the reference, non-finite
// inputs, and bad calls.
#include <catch2/catch.hpp>

#include "attention_support.hpp"

using namespace attention_test;

namespace {

struct shape_case {
  attention_shape s;
  bool causal;
};

std::vector<shape_case> shapes(bool allow_odd_d) {
  std::vector<shape_case> v = {
      {{1, 4, 2, 5, 13, 32, 32}, false},   // GQA 2, Tq != Tk
      {{2, 4, 1, 7, 70, 64, 40}, true},    // batch, GQA 4, chunk edge, dv != d
      {{1, 2, 2, 9, 3, 32, 32}, true},     // Tq > Tk: some queries see no key
      {{1, 2, 1, 1, 1, 32, 16}, false},    // single-token cache
      {{1, 2, 1, 3, 0, 32, 16}, false},    // empty cache
      {{1, 3, 3, 66, 130, 64, 64}, true},  // MHA, more than 64 rows and two chunks
  };
  if (allow_odd_d) v.push_back({{1, 4, 2, 6, 40, 20, 12}, true});  // d not a multiple of 32
  return v;
}

std::string name_of(const recipe_case& c) { return c.q + " " + c.k + " " + c.v + " P=" + c.p; }

}  // namespace

TEST_CASE("attention reference: equals an independent double computation for every recipe", "[attention]") {
  auto recipes = fast_recipes();
  recipes.push_back({"float8_e4m3fn/token", "float8_e4m3fn/channel", "mxfp8_e4m3", "hifloat8"});  // reference only
  for (const auto& rc : recipes)
    for (const auto& [s, causal] : shapes(rc.k.find("mx") == std::string::npos || true)) {
      INFO(name_of(rc) << " " << s.describe() << (causal ? " causal" : ""));
      const auto q = gaussian(s.q_size(), 1), k = gaussian(s.k_size(), 2), v = gaussian(s.v_size(), 3);
      const auto r = make_recipe(rc);
      attention_options opt;
      opt.mask = causal ? mask_kind::causal : mask_kind::none;
      const auto ref = attention_reference(q, k, v, s, r, opt);
      const auto op = dequantize_operands(q, k, v, s, r);
      const auto indep = naive_attention(op.q, op.k, op.v, s, r.p, 1.0 / std::sqrt(static_cast<double>(s.head_dim)), causal);
      REQUIRE(ref.out.size() == indep.size());
      for (std::size_t i = 0; i < indep.size(); ++i) {
        const double tol = 1e-12 * std::max(1.0, std::fabs(indep[i])) + std::fabs(indep[i]) * 0x1p-24;
        if (std::fabs(ref.out[i] - indep[i]) > tol) FAIL_CHECK("element " << i << ": " << ref.out[i] << " vs " << indep[i]);
      }
      // a query without visible keys: 0 out, m = -inf, l = 0
      for (std::size_t row = 0; row < s.rows(); ++row)
        if (visible_keys(row % s.q_len, s.q_len, s.kv_len, opt.mask) == 0) {
          CHECK(ref.row_sum[row] == 0.0f);
          CHECK(std::isinf(ref.row_max[row]));
        }
    }
}

TEST_CASE("attention reference: hand-computed values", "[attention]") {
  // one query, two keys, softmax scale 1: S = (0, ln 3) -> P = (1/4, 3/4)
  const attention_shape s{1, 1, 1, 1, 2, 1, 2};
  const std::vector<float> q{1.0f}, k{0.0f, static_cast<float>(std::log(3.0))}, v{4.0f, 0.0f, 0.0f, 8.0f};
  attention_options opt;
  opt.softmax_scale = 1.0;
  const auto r = attention_reference(q, k, v, s, {}, opt);
  CHECK(r.out[0] == Approx(1.0).epsilon(1e-6));
  CHECK(r.out[1] == Approx(6.0).epsilon(1e-6));
  CHECK(r.row_max[0] == Approx(std::log(3.0)));
  CHECK(r.row_sum[0] == Approx(4.0 / 3.0));
  // P in E4M3 with scale 1: P~ = (1/3, 1) -> (0.3125 ... rounds to 0.328125, 1)
  attention_recipe pr;
  pr.p.format = format_id::float8_e4m3fn;
  const auto rp = attention_reference(q, k, v, s, pr, opt);
  const double p0 = static_cast<double>(static_cast<float>(narrow<float8_e4m3fn>(1.0f / 3.0f, saturating)));
  CHECK(rp.out[0] == Approx(p0 * 4.0 / (4.0 / 3.0)).epsilon(1e-6));
}

TEST_CASE("attention fast path: within the documented bound of the reference", "[attention]") {
  double worst = 0;
  for (const auto& rc : fast_recipes())
    for (const auto& [s, causal] : shapes(true))
      for (const auto& [isa, kernel] : kernels()) {
        INFO(name_of(rc) << " " << s.describe() << (causal ? " causal" : "") << " isa " << simd::to_string(isa) << " kernel "
                         << static_cast<int>(kernel));
        auto k = gaussian(s.k_size(), 12, 1.5f);
        add_outlier_channels(k, s.head_dim, {3}, 20.0f);
        const auto q = gaussian(s.q_size(), 11), v = gaussian(s.v_size(), 13);
        const auto r = make_recipe(rc);
        attention_options opt;
        opt.mask = causal ? mask_kind::causal : mask_kind::none;
        opt.isa = isa;
        opt.kernel = kernel;
        const auto ref = attention_reference(q, k, v, s, r, opt);
        const auto fast = attention_forward(q, k, v, s, r, opt);
        const auto op = dequantize_operands(q, k, v, s, r);
        const auto bound = fast_bound(op, s, r.p, 1.0 / std::sqrt(static_cast<double>(s.head_dim)), causal, ref.out);
        const double ratio = bound_ratio(fast.out, ref.out, bound);
        CHECK(ratio < 1.0);
        worst = std::max(worst, ratio);
        for (std::size_t i = 0; i < ref.row_max.size(); ++i) {
          CHECK(fast.row_max[i] == Approx(ref.row_max[i]).margin(1e-4));
          CHECK(fast.row_sum[i] == Approx(ref.row_sum[i]).epsilon(1e-4));
        }
      }
  WARN("largest |fast - reference| / bound: " << worst);
}

TEST_CASE("attention fast path: threads and the AMX path against the scalar twin", "[attention]") {
  const attention_shape s{2, 8, 2, 33, 200, 128, 128};
  const auto q = gaussian(s.q_size(), 21), k = gaussian(s.k_size(), 22), v = gaussian(s.v_size(), 23);
  const auto r = make_recipe({"hifloat8/tensor", "hifloat8/tensor", "hifloat8/tensor", "hifloat8"});
  attention_options o1;
  o1.mask = mask_kind::causal;
  attention_options o2 = o1;
  o2.threads = 2;
  const auto a = attention_forward(q, k, v, s, r, o1), b = attention_forward(q, k, v, s, r, o2);
  CHECK(a.out == b.out);  // each block is one task: the split does not change any result
  o1.isa = simd::isa::scalar;
  const auto c = attention_forward(q, k, v, s, r, o1);
  const auto ref = attention_reference(q, k, v, s, r, o1);
  const auto op = dequantize_operands(q, k, v, s, r);
  const auto bound = fast_bound(op, s, r.p, 1.0 / std::sqrt(128.0), true, ref.out);
  CHECK(bound_ratio(a.out, ref.out, bound) < 1.0);
  CHECK(bound_ratio(c.out, ref.out, bound) < 1.0);
}

TEST_CASE("attention: NaN and Inf inputs follow the reference", "[attention]") {
  const attention_shape s{1, 2, 1, 4, 8, 32, 32};
  auto q = gaussian(s.q_size(), 31), k = gaussian(s.k_size(), 32), v = gaussian(s.v_size(), 33);
  q[5] = std::numeric_limits<float>::quiet_NaN();  // query row 0 of head 0
  v[3 * 32 + 7] = std::numeric_limits<float>::infinity();
  attention_options opt;
  opt.mask = mask_kind::causal;
  for (const auto& rc : fast_recipes()) {
    INFO(name_of(rc));
    const auto r = make_recipe(rc);
    const auto ref = attention_reference(q, k, v, s, r, opt);
    const auto fast = attention_forward(q, k, v, s, r, opt);
    for (std::size_t i = 0; i < ref.out.size(); ++i) {
      if (std::isnan(ref.out[i])) CHECK(std::isnan(fast.out[i]));
      else CHECK(fast.out[i] == ref.out[i]);  // non-finite operands: the fast path returns the reference
    }
    for (std::size_t c = 0; c < 32; ++c) CHECK(std::isnan(ref.out[c]));  // the NaN query's row
    // V in fp32 keeps the Inf; the saturating per-tensor quantizers turn it into max; an MX block
    // holding an Inf gets a NaN scale (OCP MX), so its elements are NaN.
    const float o = ref.out[(1 * 4 + 3) * 32 + 7];
    if (!r.v) CHECK(std::isinf(o));
    else if (r.v->gran == granularity::mx) CHECK(std::isnan(o));
    else CHECK(std::isfinite(o));
  }
}

TEST_CASE("attention: bad calls name the operand and the expected shape", "[attention]") {
  const attention_shape s{1, 4, 2, 3, 5, 32, 16};
  const auto q = gaussian(s.q_size(), 1), k = gaussian(s.k_size(), 2), v = gaussian(s.v_size(), 3);
  auto msg = [](auto&& f) {
    try {
      f();
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::vector<float> k_short(k.begin(), k.end() - 1);
  CHECK_THROWS_AS(attention_reference(q, k_short, v, s, {}), shape_error);
  CHECK_THAT(msg([&] { (void)attention_forward(q, k_short, v, s, {}); }), Catch::Contains("K has") && Catch::Contains("(B, Hkv, Tk, d) = (1, 2, 5, 32)"));
  CHECK_THAT(msg([&] { (void)attention_forward(q, k, std::vector<float>(7), s, {}); }), Catch::Contains("V has 7 values"));
  attention_shape bad = s;
  bad.kv_heads = 3;
  CHECK_THAT(msg([&] { (void)attention_reference(q, k, v, bad, {}); }), Catch::Contains("not a multiple of Hkv = 3"));
  attention_recipe r;
  r.v = parse_operand_scheme("mxfp8_e4m3", "V");  // blocks along dv: P V needs them along T
  CHECK_THROWS_AS(attention_forward(q, k, v, s, r), unsupported_error);
  CHECK_THAT(msg([&] { (void)attention_forward(q, k, v, s, r); }), Catch::Contains("V scheme mxfp8_e4m3") && Catch::Contains("along T"));
  CHECK_NOTHROW(attention_reference(q, k, v, s, r));  // the reference defines every scheme
  r = {};
  r.k = parse_operand_scheme("mxfp8_e4m3/axis=0", "K");
  CHECK_THAT(msg([&] { (void)attention_forward(q, k, v, s, r); }), Catch::Contains("K scheme") && Catch::Contains("along d"));
  r = {};
  r.k = parse_operand_scheme("float8_e4m3fn/channel", "K");
  CHECK_THROWS_AS(attention_forward(q, k, v, s, r), unsupported_error);
  CHECK_THROWS_AS(parse_operand_scheme("float9/tensor", "K"), unsupported_error);
  CHECK_THROWS_AS(parse_static_format("float8_e8m0fnu", "P"), unsupported_error);
  r = {};
  r.p.format = format_id::float8_e4m3fn, r.p.scale = 0.0f;
  CHECK_THROWS_AS(attention_reference(q, k, v, s, r), std::invalid_argument);
}

TEST_CASE("attention: the vector P rounding and exp agree with the scalar definitions, AVX2 and AVX-512 bit for bit", "[attention]") {
#if MINIFLOAT_ATTENTION_X86
  REQUIRE(simd::isa_available(simd::isa::avx2));  // every x86 CI machine has it; the kernels need it
  const bool avx512 = ad::use_avx512(simd::isa::automatic);
  std::mt19937 g(5);
  std::vector<float> x;
  for (int e = -40; e <= 20; ++e)
    for (int i = 0; i < 512; ++i) x.push_back(std::ldexp(1.0f + static_cast<float>(i) / 512.0f, e));  // ties and midpoints
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  for (int i = 0; i < 100000; ++i) x.push_back(u(g) * std::exp2(-30.0f * u(g)));
  x.push_back(0.0f), x.push_back(40960.0f), x.push_back(448.0f), x.push_back(464.0f), x.push_back(65520.0f);
  // just below half of HiF8's smallest denormal (y + 1/2 rounds up to 1 there), fp32's largest,
  // between bfloat16's largest and fp32's
  x.push_back(std::nextafter(0x1p-23f, 0.0f)), x.push_back(0x1p-23f), x.push_back(std::numeric_limits<float>::max());
  x.push_back(3.3960e38f), x.push_back(ad::x86::bf16_max);
  while (x.size() % 16) x.push_back(1.0f);
  std::vector<float> y2(x.size()), y5(x.size());
  for (const format_id f : {format_id::hifloat8, format_id::float8_e4m3fn, format_id::float8_e5m2, format_id::bfloat16, format_id::float16}) {
    INFO(to_string(f));
    const static_format p{f, 1.0f};
    ad::x86::round_p_array_avx2(x.data(), y2.data(), x.size(), p);
    std::size_t bad = 0, differ = 0;
    for (std::size_t i = 0; i < x.size(); ++i)
      if (y2[i] != round_to_format(x[i], f)) ++bad;
    CHECK(bad == 0);
    if (avx512) {
      ad::x86::round_p_array(x.data(), y5.data(), x.size(), p);
      for (std::size_t i = 0; i < x.size(); ++i)
        if (std::bit_cast<std::uint32_t>(y5[i]) != std::bit_cast<std::uint32_t>(y2[i])) ++differ;
      CHECK(differ == 0);
      // the softmax's forms for x in [0, 256] (p_scale >= 2^-8)
      const ad::x86::p_round le = ad::x86::p_round_for(p);
      CHECK((le != ad::x86::p_round_of(p)) == (f == format_id::hifloat8 || f == format_id::float8_e4m3fn || f == format_id::float8_e5m2));
      ad::x86::round_p_array(x.data(), y5.data(), x.size(), p, le);
      std::size_t in_range = 0, differ_le = 0;
      for (std::size_t i = 0; i < x.size(); ++i)
        if (x[i] <= 256.0f) ++in_range, differ_le += std::bit_cast<std::uint32_t>(y5[i]) != std::bit_cast<std::uint32_t>(y2[i]);
      CHECK(in_range > 100000);
      CHECK(differ_le == 0);
    }
  }
  CHECK(ad::x86::p_round_for(static_format{format_id::hifloat8, 0x1p-9f}) == ad::x86::p_round::hifloat8);
  CHECK(ad::x86::p_round_for(static_format{format_id::hifloat8, 0x1p-8f}) == ad::x86::p_round::hifloat8_le256);
  std::vector<float> t;
  for (int i = 0; i < 200000; ++i) t.push_back(-90.0f * u(g));
  std::vector<float> e2(t.size()), e5(t.size());
  ad::x86::exp_array_avx2(t.data(), e2.data(), t.size());
  double worst = 0;
  for (std::size_t i = 0; i < t.size(); ++i) {
    const double want = std::exp(static_cast<double>(t[i]));
    if (t[i] >= -87.0f) worst = std::max(worst, std::fabs(e2[i] - want) / want);
    else CHECK(e2[i] == 0.0f);
  }
  CHECK(worst < 0x1p-21);
  if (avx512) {
    ad::x86::exp_array(t.data(), e5.data(), t.size());
    std::size_t differ = 0;
    for (std::size_t i = 0; i < t.size(); ++i) differ += std::bit_cast<std::uint32_t>(e5[i]) != std::bit_cast<std::uint32_t>(e2[i]);
    CHECK(differ == 0);
    // the softmax's form: the same bits where visible (x <= 0 here), 0 elsewhere
    std::vector<float> ev(t.size());
    ad::x86::exp_visible_array(t.data(), ev.data(), t.size(), 0xB5A7);
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < t.size(); ++i) {
      const bool visible = ((0xB5A7U >> (i % 16)) & 1U) != 0;
      wrong += std::bit_cast<std::uint32_t>(ev[i]) != (visible ? std::bit_cast<std::uint32_t>(e5[i]) : 0U);
    }
    CHECK(wrong == 0);
  }
#else
  // the vector kernels exist only on x86; the scalar twin rounds with round_to_format itself
  CHECK(round_to_format(0.3f, format_id::float8_e4m3fn) == 0.3125f);
#endif
}

TEST_CASE("attention: the Hadamard rotation of Q and K cancels in Q K^T", "[attention]") {
  const attention_shape s{1, 4, 2, 6, 50, 64, 32};
  auto k = gaussian(s.k_size(), 61);
  add_outlier_channels(k, s.head_dim, {5, 40}, 30.0f);
  const auto q = gaussian(s.q_size(), 62), v = gaussian(s.v_size(), 63);
  attention_options opt;
  opt.mask = mask_kind::causal;
  attention_recipe plain;
  attention_recipe rot = plain;
  rot.rotation = qk_rotation::hadamard, rot.rotation_seed = 9;
  const auto a = attention_reference(q, k, v, s, plain, opt), b = attention_reference(q, k, v, s, rot, opt);
  for (std::size_t i = 0; i < a.out.size(); ++i) CHECK(b.out[i] == Approx(a.out[i]).margin(1e-5));
  // with 8-bit Q and K the rotation changes what is quantized; the fast path follows the reference
  for (const char* sch : {"float8_e4m3fn/tensor", "hifloat8/tensor", "mxfp8_e4m3"}) {
    INFO(sch);
    attention_recipe r = make_recipe({sch, sch, "fp32", "fp32"});
    r.rotation = qk_rotation::hadamard, r.rotation_seed = 3;
    const auto ref = attention_reference(q, k, v, s, r, opt), fast = attention_forward(q, k, v, s, r, opt);
    const auto op = dequantize_operands(q, k, v, s, r);
    CHECK(bound_ratio(fast.out, ref.out, fast_bound(op, s, r.p, 1.0 / 8.0, true, ref.out)) < 1.0);
    const auto dout = gaussian(s.out_size(), 64);
    const auto gr = attention_backward_reference(q, k, v, dout, s, r, opt);
    const auto gf = attention_backward(q, k, v, dout, fast, s, r, opt);
    for (std::size_t i = 0; i < gr.dq.size(); ++i) CHECK(gf.dq[i] == Approx(gr.dq[i]).margin(1e-4));
    for (std::size_t i = 0; i < gr.dk.size(); ++i) CHECK(gf.dk[i] == Approx(gr.dk[i]).margin(1e-4));
  }
  // unquantized: the rotated gradients rotate back to the plain ones
  const auto dout = gaussian(s.out_size(), 65);
  const auto g0 = attention_backward_reference(q, k, v, dout, s, plain, opt), g1 = attention_backward_reference(q, k, v, dout, s, rot, opt);
  for (std::size_t i = 0; i < g0.dq.size(); ++i) CHECK(g1.dq[i] == Approx(g0.dq[i]).margin(1e-5));
  attention_shape odd = s;
  odd.head_dim = 48;
  CHECK_THROWS_AS(attention_reference(gaussian(odd.q_size(), 1), gaussian(odd.k_size(), 2), v, odd, rot, opt), shape_error);
}

TEST_CASE("attention: MX scales outside bfloat16's normal range take the scalar twin", "[attention]") {
  const attention_shape s{1, 2, 1, 4, 40, 32, 32};
  auto k = gaussian(s.k_size(), 71);
  for (auto& x : k) x *= 1e-36f;  // E8M0 scales near 2^-120: E4M3 subnormals x scale leave bfloat16's normal range
  const auto q = gaussian(s.q_size(), 72), v = gaussian(s.v_size(), 73);
  const auto r = make_recipe({"fp32", "mxfp8_e4m3", "mxfp8_e4m3/axis=0", "fp32"});
  attention_options opt;
  opt.softmax_scale = 1e36;
  const auto kq = quantize(k, 40, 32, *r.k);
  const auto view = ad::make_view(k, &kq, 0, 40, 32);
  CHECK_FALSE(view.mx_bf16_exact);
  const auto ref = attention_reference(q, k, v, s, r, opt), fast = attention_forward(q, k, v, s, r, opt);
  const auto op = dequantize_operands(q, k, v, s, r);
  CHECK(bound_ratio(fast.out, ref.out, fast_bound(op, s, r.p, 1e36, false, ref.out)) < 1.0);
}

TEST_CASE("attention prefill: the panel kernel's bfloat16-pairs form gives its FMA form's bits", "[attention]") {
  // The two forms of x86/avx512_panels.hpp (docs/attention.md#prefill-kernel): the same sums in
  // the same order. Blocks of more than 8 rows take the panel kernel; the shapes have full and
  // partial blocks and chunks, odd d and dv, and queries with no visible key. Where the CPU lacks
  // AVX-512 both requests fall back to the same kernel and the comparison still runs.
  const std::vector<shape_case> prefill = {
      {{1, 8, 2, 37, 37, 128, 128}, true},   // GQA 4: 148 rows per group, blocks of 64, 64, 20
      {{2, 4, 1, 20, 130, 72, 40}, false},   // batch, 80 rows: 64 + 16, three chunks
      {{1, 3, 1, 11, 70, 21, 13}, true},     // odd d and dv, 33 rows
      {{1, 2, 2, 30, 9, 40, 24}, true},      // Tq > Tk: the first rows see nothing
  };
  const std::vector<shape_case> prefill_mx = {
      {{1, 8, 2, 37, 37, 128, 128}, true},
      {{2, 4, 1, 20, 130, 64, 32}, false},
  };
  std::size_t cases = 0;
  for (const recipe_case& rc : std::vector<recipe_case>{{"hifloat8/tensor", "hifloat8/tensor", "hifloat8/tensor", "hifloat8"},
                                                        {"float8_e4m3fn/tensor", "float8_e4m3fn/tensor", "float8_e4m3fn/tensor", "float8_e4m3fn"},
                                                        {"float8_e5m2/tensor", "float8_e5m2/tensor", "float8_e5m2/tensor", "float8_e5m2"},
                                                        {"bf16", "bf16", "bf16", "bf16"},
                                                        {"mxfp8_e4m3", "mxfp8_e4m3", "mxfp8_e4m3/axis=0", "float8_e4m3fn"},
                                                        {"mxfp8_e5m2", "mxfp8_e5m2", "mxfp8_e5m2/axis=0", "hifloat8"}})
    for (const auto& [s, causal] : rc.k.find("mx") == std::string::npos ? prefill : prefill_mx) {
      INFO(name_of(rc) << " " << s.describe() << (causal ? " causal" : ""));
      const auto r = make_recipe(rc);
      const auto q = gaussian(s.q_size(), 81), k = gaussian(s.k_size(), 82, 1.5f), v = gaussian(s.v_size(), 83);
      attention_options o;
      o.mask = causal ? mask_kind::causal : mask_kind::none;
      o.kernel = block_kernel::avx512;
      const auto fma = attention_forward(q, k, v, s, r, o);
      o.kernel = block_kernel::avx512_bf16;
      const auto pairs = attention_forward(q, k, v, s, r, o);
      REQUIRE(fma.out.size() == pairs.out.size());
      std::size_t differ = 0;
      for (std::size_t i = 0; i < fma.out.size(); ++i) differ += std::bit_cast<std::uint32_t>(fma.out[i]) != std::bit_cast<std::uint32_t>(pairs.out[i]);
      CHECK(differ == 0);
      const auto ref = attention_reference(q, k, v, s, r, o);
      const auto bound = fast_bound(dequantize_operands(q, k, v, s, r), s, r.p, 1.0 / std::sqrt(static_cast<double>(s.head_dim)), causal, ref.out);
      CHECK(bound_ratio(fma.out, ref.out, bound) < 1.0);
      ++cases;
    }
  CHECK(cases == 20);
  // which kernel a prefill block takes: AMX where the CPU has it, else the AVX-512 kernels (the
  // panel kernel for blocks of more than 8 rows), their pairs form where pairs beat FMAs
  using minifloat::attention::detail::kernel_for;
  if (ad::use_avx512(simd::isa::automatic)) {
    const block_kernel want = ad::use_amx(simd::isa::automatic) ? block_kernel::amx
                              : simd::avx512::bf16_pairs_beat_fma() ? block_kernel::avx512_bf16
                                                                    : block_kernel::avx512;
    CHECK(kernel_for(64, true, true, simd::isa::automatic, block_kernel::automatic) == want);
    CHECK(kernel_for(64, true, false, simd::isa::automatic, block_kernel::automatic) ==
          (ad::use_amx(simd::isa::automatic) ? block_kernel::amx : block_kernel::avx512));
  }
}

TEST_CASE("attention prefill: which blocks the panel kernel's pairs form takes", "[attention]") {
  // panel_pairs_apply: pairs_apply, or 8-bit MX K and V with an 8-bit P where the grids of q, K,
  // V and P keep every product and partial sum 0 or normal (x86/avx512_panels.hpp)
  const std::size_t rows = 16, tk = 64, d = 64;
  const auto make = [&](float k_gain, float v_gain, float q_value, std::optional<format_id> p) {
    struct block {
      quantized_tensor kq, vq;
      std::vector<float> q;
      std::vector<std::size_t> limit;
      std::vector<float> out, m, l;
      block_args a;
    };
    auto k = gaussian(tk * d, 101), v = gaussian(tk * d, 102);
    for (auto& x : k) x *= k_gain;
    for (auto& x : v) x *= v_gain;
    auto b = std::make_unique<block>(block{quantize(k, tk, d, *parse_operand_scheme("mxfp8_e4m3", "K")),
                                           quantize(v, tk, d, *parse_operand_scheme("mxfp8_e4m3/axis=0", "V")),
                                           std::vector<float>(rows * d, q_value), std::vector<std::size_t>(rows, tk),
                                           std::vector<float>(rows * d), std::vector<float>(rows), std::vector<float>(rows), {}});
    b->a.k = ad::make_view({}, &b->kq, 0, tk, d), b->a.v = ad::make_view({}, &b->vq, 0, tk, d);
    b->a.rows = rows, b->a.q = b->q.data(), b->a.q_stride = d, b->a.limit = b->limit.data();
    b->a.out = b->out.data(), b->a.out_stride = d, b->a.m = b->m.data(), b->a.l = b->l.data();
    b->a.p.format = p;
    return b;
  };
  CHECK_FALSE(ad::x86::pairs_apply(make(1.0f, 1.0f, 0.5f, format_id::float8_e4m3fn)->a));  // MX: not the register kernel's
  CHECK(ad::x86::panel_pairs_apply(make(1.0f, 1.0f, 0.5f, format_id::float8_e4m3fn)->a));
  CHECK(ad::x86::panel_pairs_apply(make(1.0f, 1.0f, 0x1p-60f, format_id::hifloat8)->a));
  CHECK_FALSE(ad::x86::panel_pairs_apply(make(1.0f, 1.0f, 0.5f, std::nullopt)->a));       // fp32 P
  CHECK_FALSE(ad::x86::panel_pairs_apply(make(1.0f, 1.0f, 0.5f, format_id::bfloat16)->a));  // not on a grid
  CHECK_FALSE(ad::x86::panel_pairs_apply(make(1.0f, 1.0f, 0.1f, format_id::float8_e4m3fn)->a));  // q not a bfloat16
  CHECK_FALSE(ad::x86::panel_pairs_apply(make(1.0f, 1.0f, 0x1p-110f, format_id::float8_e4m3fn)->a));  // q x K's grid < 2^-126
  CHECK_FALSE(ad::x86::panel_pairs_apply(make(0x1p-108f, 1.0f, 0.5f, format_id::float8_e4m3fn)->a));  // K's grid too fine
  CHECK_FALSE(ad::x86::panel_pairs_apply(make(1.0f, 0x1p-100f, 0.5f, format_id::hifloat8)->a));  // P x V's grid < 2^-126
  CHECK(ad::x86::panel_pairs_apply(make(1.0f, 0x1p-80f, 0.5f, format_id::float8_e4m3fn)->a));    // 2^-9 x V's grid is enough
}

TEST_CASE("attention: the AVX-512 row and pair decoders hold kv_view's values", "[attention]") {
#if MINIFLOAT_ATTENTION_X86
  if (!ad::use_avx512(simd::isa::automatic)) {
    WARN("no AVX-512 on this CPU: the decoders are not run");
    CHECK_FALSE(simd::isa_available(simd::isa::avx512));
    return;
  }
  std::size_t checked = 0;
  for (const char* sch : {"hifloat8/tensor", "float8_e5m2/tensor", "bf16", "fp32", "mxfp8_e4m3", "mxfp8_e4m3/axis=0"})
    for (const std::size_t cols : {std::size_t{40}, std::size_t{128}})
      for (const std::size_t n : {std::size_t{64}, std::size_t{37}}) {
        INFO(sch << " cols " << cols << " n " << n);
        const std::size_t rows = 96, width = (cols + 31) / 32 * 32;
        const auto x = gaussian(rows * cols, 91 + cols, 3.0f);
        const auto scheme = parse_operand_scheme(sch, "K");
        std::optional<quantized_tensor> qt;
        if (scheme) qt = quantize(x, rows, cols, *scheme);
        const kv_view view = ad::make_view(x, qt ? &*qt : nullptr, 0, rows, cols);
        const unsigned planes = ad::x86::planes_of(view.kind);
        const auto sum_planes = [&](const std::vector<std::uint16_t>& w, std::size_t at, std::size_t stride) {
          float v = 0.0f;
          for (unsigned pl = 0; pl < planes; ++pl) v += ad::bf16_value(w[at + pl * stride]);
          return v;
        };
        ad::x86::line_prefetcher pf;
        const std::size_t r0 = 32;  // a whole MX block along T before the chunk
        if (view.mx == nullptr || view.mx_axis == 1) {
          std::vector<std::uint16_t> w(planes * 64 * width, 0xFFFF);
          ad::x86::decode_rows(view, r0, n, 64, width, w.data(), 64 * width, pf);
          std::size_t bad = 0;
          for (std::size_t r = 0; r < 64; ++r)
            for (std::size_t c = 0; c < width; ++c) {
              const float want = r < n && c < cols ? view.value(r0 + r, c) : 0.0f;
              bad += sum_planes(w, r * width + c, 64 * width) != want;
            }
          CHECK(bad == 0);
          checked += 64 * width;
        }
        if (view.mx == nullptr || view.mx_axis == 0)
          for (const bool first_high : {false, true}) {
            std::vector<std::uint16_t> w(planes * 64 * width, 0xFFFF);
            ad::x86::decode_pairs(view, r0, n, 32, width, w.data(), 64 * width, pf, first_high);
            std::size_t bad = 0;
            for (std::size_t p = 0; p < 32; ++p)
              for (std::size_t c = 0; c < width; ++c)
                for (std::size_t h = 0; h < 2; ++h) {  // h: the word's half of its 32-bit pair (1 = high)
                  const std::size_t r = 2 * p + (first_high ? 1 - h : h);
                  const float want = r < n && c < cols ? view.value(r0 + r, c) : 0.0f;
                  bad += sum_planes(w, (p * width + c) * 2 + h, 64 * width) != want;
                }
            CHECK(bad == 0);
            checked += 64 * width;
          }
      }
  CHECK(checked == 368640);
#else
  CHECK_FALSE(MINIFLOAT_ATTENTION_X86);
#endif
}
