// Attention backward: the double-precision reference against finite differences, and the fp32
// fast backward against the reference for quantized recipes.
#include <catch2/catch.hpp>

#include "attention_support.hpp"

using namespace attention_test;

TEST_CASE("attention backward reference: finite differences in double", "[attention]") {
  for (const bool causal : {false, true}) {
    const attention_shape s{1, 4, 2, 5, 7, 6, 5};
    const auto qf = gaussian(s.q_size(), 41), kf = gaussian(s.k_size(), 42), vf = gaussian(s.v_size(), 43);
    const auto wf = gaussian(s.out_size(), 44);
    std::vector<double> q(qf.begin(), qf.end()), k(kf.begin(), kf.end()), v(vf.begin(), vf.end()), w(wf.begin(), wf.end());
    const double scale = 1.0 / std::sqrt(6.0);
    const mask_kind mask = causal ? mask_kind::causal : mask_kind::none;
    auto loss = [&]() {
      std::vector<double> o, m, l;
      ad::forward_double(q.data(), k.data(), v.data(), s, {}, scale, mask, o, m, l);
      double sum = 0;
      for (std::size_t i = 0; i < o.size(); ++i) sum += o[i] * w[i];
      return sum;
    };
    const auto g = ad::backward_double(q.data(), k.data(), v.data(), w.data(), s, {}, {}, scale, mask);
    double worst = 0;
    for (auto [x, gx] : {std::pair{&q, &g.dq}, std::pair{&k, &g.dk}, std::pair{&v, &g.dv}})
      for (std::size_t i = 0; i < x->size(); ++i) {
        const double h = 1e-6, x0 = (*x)[i];
        (*x)[i] = x0 + h;
        const double up = loss();
        (*x)[i] = x0 - h;
        const double dn = loss();
        (*x)[i] = x0;
        const double fd = (up - dn) / (2 * h);
        worst = std::max(worst, std::fabs(fd - (*gx)[i]) / (1 + std::fabs(fd)));
        CHECK(std::fabs(fd - (*gx)[i]) <= 1e-7 * (1 + std::fabs(fd)));
      }
    WARN("largest relative difference to finite differences" << (causal ? " (causal)" : "") << ": " << worst);
  }
}

TEST_CASE("attention backward: the fp32 path against the double reference", "[attention]") {
  struct bw_case {
    recipe_case f;
    std::string d_out, d_s;
    float ds_scale;
    double tol;  // relative Frobenius error
  };
  const std::vector<bw_case> cases = {
      {{"fp32", "fp32", "fp32", "fp32"}, "fp32", "fp32", 1.0f, 1e-5},
      {{"hifloat8/tensor", "hifloat8/tensor", "hifloat8/tensor", "fp32"}, "hifloat8/tensor", "fp32", 1.0f, 1e-5},
      {{"float8_e4m3fn/tensor", "float8_e4m3fn/tensor", "float8_e4m3fn/tensor", "float8_e4m3fn"}, "float8_e5m2/tensor", "fp32", 1.0f, 1e-5},
      {{"mxfp8_e4m3", "mxfp8_e4m3", "mxfp8_e4m3/axis=0", "fp32"}, "mxfp8_e5m2", "fp32", 1.0f, 1e-5},
      // dS quantized: a few elements may round the other way in fp32 than in double
      {{"hifloat8/tensor", "hifloat8/tensor", "hifloat8/tensor", "hifloat8"}, "hifloat8/tensor", "hifloat8", 1.0f / 64, 2e-2},
      {{"float8_e4m3fn/tensor", "float8_e4m3fn/tensor", "float8_e4m3fn/tensor", "float8_e4m3fn"}, "float8_e5m2/tensor", "float8_e5m2", 1.0f / 1024, 2e-2},
  };
  const attention_shape s{2, 4, 2, 9, 37, 32, 24};
  const auto q = gaussian(s.q_size(), 51), k = gaussian(s.k_size(), 52), v = gaussian(s.v_size(), 53);
  const auto dout = gaussian(s.out_size(), 54, 0.1f);
  for (const auto& c : cases)
    for (const bool causal : {false, true}) {
      INFO(c.f.q << " dO " << c.d_out << " dS " << c.d_s << (causal ? " causal" : ""));
      attention_recipe r = make_recipe(c.f);
      r.d_out = parse_operand_scheme(c.d_out, "dO");
      r.d_s.format = parse_static_format(c.d_s, "dS"), r.d_s.scale = c.ds_scale;
      attention_options opt;
      opt.mask = causal ? mask_kind::causal : mask_kind::none;
      opt.threads = 2;
      const auto ref = attention_backward_reference(q, k, v, dout, s, r, opt);
      const auto fwd = attention_forward(q, k, v, s, r, opt);
      const auto fast = attention_backward(q, k, v, dout, fwd, s, r, opt);
      for (auto [a, b] : {std::pair{&fast.dq, &ref.dq}, std::pair{&fast.dk, &ref.dk}, std::pair{&fast.dv, &ref.dv}}) {
        double num = 0, den = 0;
        for (std::size_t i = 0; i < a->size(); ++i) {
          const double e = static_cast<double>((*a)[i]) - (*b)[i];
          num += e * e, den += static_cast<double>((*b)[i]) * (*b)[i];
        }
        CHECK(std::sqrt(num / den) <= c.tol);
      }
      CHECK(fast.ds_amax == Approx(ref.ds_amax).epsilon(1e-3));
    }
}

TEST_CASE("attention backward: bad calls", "[attention]") {
  const attention_shape s{1, 2, 1, 3, 4, 8, 8};
  const auto q = gaussian(s.q_size(), 1), k = gaussian(s.k_size(), 2), v = gaussian(s.v_size(), 3);
  const auto fwd = attention_reference(q, k, v, s, {});
  CHECK_THROWS_AS(attention_backward(q, k, v, std::vector<float>(5), fwd, s, {}), shape_error);
  CHECK_THROWS_AS(attention_backward_reference(q, k, v, std::vector<float>(5), s, {}), shape_error);
  attention_result short_fwd = fwd;
  short_fwd.row_sum.pop_back();
  CHECK_THROWS_AS(attention_backward(q, k, v, std::vector<float>(s.out_size()), short_fwd, s, {}), shape_error);
}
