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
