// Delayed and current scaling: the state machine of recipes/delayed_scaling.hpp step by step
// (first-step current scaling, interval boundaries, history wrap-around, skip + restart with the
// history untouched, skip_step() undo), the guard arithmetic for every default N_guard, the FP8
// rule, overflow counting, and config errors that name expected and actual values.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "support/all_but_attention.hpp"
#include <minifloat/recipes/recipes.hpp>

using namespace minifloat;
using Catch::Matchers::Contains;

namespace {

amax_stats finite_amax_of(float a) { return amax_stats{a, 0, 1}; }
amax_stats with_inf(float a) { return amax_stats{a, 1, 2}; }

delayed_scaling_config small_config(std::size_t interval, std::size_t len = 64,
                                    amax_reduction red = amax_reduction::max) {
  delayed_scaling_config c = delayed_scaling_config::hif8(tensor_role::activation);  // N_guard 10, T = 5
  c.interval = interval;
  c.history_len = len;
  c.reduction = red;
  return c;
}

float pow2(int e) { return std::ldexp(1.0f, e); }

}  // namespace

TEST_CASE("defaults: L 128, I 10, max, N_guard 11 weights, 10 activations and gradients, FP8 hybrid",
          "[recipes][delayed]") {
  const auto w = delayed_scaling_config::hif8(tensor_role::weight);
  const auto a = delayed_scaling_config::hif8(tensor_role::activation);
  const auto g = delayed_scaling_config::hif8(tensor_role::gradient);
  CHECK(w.history_len == 128);
  CHECK(w.interval == 10);
  CHECK(w.reduction == amax_reduction::max);
  CHECK(w.scaling.format == format_id::hifloat8);
  CHECK(w.scaling.rule == scale_rule::pow2);
  CHECK(w.scaling.n_guard == 11);
  CHECK(a.scaling.n_guard == 10);
  CHECK(g.scaling.n_guard == 10);
  CHECK(delayed_scaling_config::fp8(tensor_role::weight).scaling.format == format_id::float8_e4m3fn);
  CHECK(delayed_scaling_config::fp8(tensor_role::activation).scaling.format == format_id::float8_e4m3fn);
  CHECK(delayed_scaling_config::fp8(tensor_role::gradient).scaling.format == format_id::float8_e5m2);
  CHECK(delayed_scaling_config::fp8(tensor_role::gradient).scaling.rule == scale_rule::max);
  CHECK(a.describe() == "L=128 I=10 max hifloat8 pow2 N_guard=10 (T=5)");
  CHECK(parse_tensor_role("gradient") == tensor_role::gradient);
  CHECK(parse_amax_reduction("most_recent") == amax_reduction::most_recent);
  CHECK_FALSE(parse_amax_reduction("mean").has_value());
}

TEST_CASE("N_guard arithmetic: the amax lands in binade 15 - N_guard for every default", "[recipes][guard]") {
  for (const tensor_role role : {tensor_role::weight, tensor_role::activation, tensor_role::gradient}) {
    const int n = default_n_guard(role);
    const amax_scaling rule = amax_scaling::hif8_guard(role);
    const int t = 15 - n;
    CHECK(rule.target() == t);
    CHECK(rule.scheme().target == t);
    CHECK(rule.scheme().rule == scale_rule::pow2);
    // binades left for data: T down to HiF8's smallest denormal binade, -22 (docs/formats/hifloat8.md#recipe-numbers-and-n_guard).
    CHECK(t - (-22) + 1 == 38 - n);
    // every amax over 60 binades, at binade edges and in between
    for (int e = -30; e <= 30; ++e)
      for (const float m : {1.0f, 1.2345f, 1.5f, 1.999999f}) {
        const float amax = std::ldexp(m, e);
        const float s = rule.scale(amax);
        int se = 0;
        CHECK(std::frexp(s, &se) == 0.5f);  // a power of two
        const float y = amax / s;           // exact: s is a power of two
        CHECK(y >= pow2(t));
        CHECK(y < pow2(t + 1));
        CHECK(std::ilogb(y) == t);
        // the binade is in HiF8 class D3 (2-bit mantissa) for N_guard 10 and 11: 2^T and its
        // three successors 2^T * (1 + k/4) are exactly representable, 2^T * (1 + 1/8) is not.
        for (int k = 0; k < 4; ++k) {
          const float v = pow2(t) * (1.0f + static_cast<float>(k) / 4.0f);
          CHECK(static_cast<float>(narrow<hifloat8>(v)) == v);
        }
        CHECK(static_cast<float>(narrow<hifloat8>(pow2(t) * 1.125f)) != pow2(t) * 1.125f);
      }
  }
  // the spec table's other rows, N_guard 9 and 12
  CHECK(std::ilogb(100.0f / amax_scaling::hif8_guard(9).scale(100.0f)) == 6);
  CHECK(std::ilogb(100.0f / amax_scaling::hif8_guard(12).scale(100.0f)) == 3);
  // zero / non-finite amax: scale 1
  CHECK(amax_scaling::hif8_guard(11).scale(0.0f) == 1.0f);
  CHECK(amax_scaling::hif8_guard(11).scale(std::numeric_limits<float>::infinity()) == 1.0f);
}

TEST_CASE("FP8 rule: s = amax * 2^margin / max_finite (TE scale = 1 / s)", "[recipes][fp8]") {
  const auto e4 = amax_scaling::fp8_max(format_id::float8_e4m3fn);
  const auto e5 = amax_scaling::fp8_max(format_id::float8_e5m2, 2);
  CHECK(e4.scale(448.0f) == 1.0f);
  CHECK(e4.scale(3.5f) == 3.5f / 448.0f);
  CHECK(e5.scale(57344.0f) == 4.0f);
  CHECK(e5.scale(7.0f) == std::ldexp(7.0f / 57344.0f, 2));
  // TE: scale = (fp8_max / amax) / 2^margin; ours is its reciprocal
  CHECK(1.0f / e5.scale(7.0f) == Approx((57344.0 / 7.0) / 4.0).epsilon(1e-6));
  const auto ms = amax_scaling::mindspeed_hif8(tensor_role::activation);
  CHECK(ms.scale(30.0f) == 2.0f);
  CHECK(amax_scaling::mindspeed_hif8(tensor_role::gradient).scale(448.0f) == 2.0f);
  CHECK(e4.scheme().format == format_id::float8_e4m3fn);
  CHECK(e4.scheme().rule == scale_rule::max);
  // tiny amax never gives a zero scale
  CHECK(e4.scale(1e-45f) > 0.0f);
}

TEST_CASE("delayed scaling: the first step uses current scaling", "[recipes][delayed]") {
  delayed_scaling d(small_config(5));
  CHECK(d.next_is_current());
  const auto r = d.step(finite_amax_of(3.0f));
  CHECK(r.current);
  CHECK_FALSE(r.skip);
  CHECK_FALSE(r.updated);
  CHECK(r.scale == pow2(1 - 5));  // floor(log2 3) = 1, T = 5
  CHECK(3.0f / r.scale == 48.0f);
  CHECK_FALSE(d.next_is_current());
  CHECK(d.scale() == r.scale);
  CHECK(d.history() == std::vector<float>{3.0f});
  CHECK(d.counters().steps == 1);
  CHECK(d.counters().restarts == 1);
  // the second step uses the held scale, whatever its own amax
  const auto r2 = d.step(finite_amax_of(100.0f));
  CHECK_FALSE(r2.current);
  CHECK(r2.scale == pow2(-4));

  // a first step with amax 0 keeps the initial scale 1
  delayed_scaling z(small_config(5));
  CHECK(z.step(finite_amax_of(0.0f)).scale == 1.0f);
}

TEST_CASE("delayed scaling: interval boundaries", "[recipes][delayed]") {
  for (const std::size_t interval : {std::size_t{5}, std::size_t{10}, std::size_t{20}}) {
    delayed_scaling d(small_config(interval, 128));
    float held = 0.0f;
    for (std::size_t k = 1; k <= 5 * interval; ++k) {
      // amax doubles every step: the update after step k sees 2^(k-1)
      const float amax = pow2(static_cast<int>(k) - 1);
      const auto r = d.step(finite_amax_of(amax));
      INFO("interval " << interval << " step " << k);
      CHECK(r.current == (k == 1));
      if (k == 1) held = r.scale;
      CHECK(r.scale == held);  // every step of an interval uses the scale set before it
      CHECK(r.updated == (k % interval == 0));
      CHECK(d.steps_in_interval() == k % interval);
      if (r.updated) {
        // max over the history = this step's amax, recorded before the update
        CHECK(d.scale() == pow2(static_cast<int>(k) - 1 - 5));
        held = d.scale();
      }
    }
    CHECK(d.counters().updates == 5);
    CHECK(d.counters().steps == 5 * interval);
  }
}

TEST_CASE("delayed scaling: history wrap-around after L records", "[recipes][delayed]") {
  for (const std::size_t len : {std::size_t{64}, std::size_t{128}, std::size_t{256}}) {
    delayed_scaling d(small_config(16, len));  // interval 16 divides every L
    // step 1 records a large amax, the next L - 1 record 1
    d.step(finite_amax_of(1000.0f));
    for (std::size_t k = 2; k <= len; ++k) d.step(finite_amax_of(1.0f));
    auto h = d.history();
    REQUIRE(h.size() == len);
    CHECK(h.front() == 1000.0f);
    CHECK(d.reduced_amax() == 1000.0f);
    CHECK(d.scale() == pow2(9 - 5));  // the update after step L (a multiple of 16) still saw 1000
    // record L + 1 overwrites the oldest slot
    d.step(finite_amax_of(2.0f));
    h = d.history();
    REQUIRE(h.size() == len);
    CHECK(h.front() == 1.0f);
    CHECK(h.back() == 2.0f);
    CHECK(d.reduced_amax() == 2.0f);
    // run to the next update: the scale now follows amax 2
    for (std::size_t k = 0; k < 15; ++k) d.step(finite_amax_of(1.0f));
    CHECK(d.scale() == pow2(1 - 5));
  }
}

TEST_CASE("delayed scaling: most_recent reduction", "[recipes][delayed]") {
  delayed_scaling d(small_config(5, 64, amax_reduction::most_recent));
  for (const float a : {8.0f, 64.0f, 2.0f, 4.0f, 1.0f}) d.step(finite_amax_of(a));
  CHECK(d.reduced_amax() == 1.0f);
  CHECK(d.scale() == pow2(0 - 5));
  delayed_scaling m(small_config(5, 64, amax_reduction::max));
  for (const float a : {8.0f, 64.0f, 2.0f, 4.0f, 1.0f}) m.step(finite_amax_of(a));
  CHECK(m.scale() == pow2(6 - 5));
}

TEST_CASE("delayed scaling: Inf/NaN skips the step, keeps the history and restarts", "[recipes][delayed]") {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (const float bad : {inf, -inf, nan}) {
    delayed_scaling d(small_config(5));
    for (const float a : {1.0f, 2.0f, 4.0f, 8.0f, 16.0f, 0.5f, 0.5f}) d.step(finite_amax_of(a));  // update after step 5
    const auto hist = d.history();
    const float held = d.scale();
    CHECK(held == pow2(4 - 5));
    CHECK(d.steps_in_interval() == 2);

    // the data path: a real tensor with one bad element
    std::vector<float> x = {0.25f, -3.0f, bad, 1.0f};
    const auto r = d.step(std::span<const float>(x));
    CHECK(r.skip);
    CHECK(r.nonfinite == 1);
    CHECK(r.amax == 3.0f);          // the finite amax is reported ...
    CHECK(d.history() == hist);     // ... but not recorded
    CHECK(r.scale == held);         // the held scale is kept
    CHECK(d.scale() == held);
    CHECK_FALSE(r.updated);
    CHECK(d.next_is_current());
    CHECK(d.counters().skips == 1);
    CHECK(d.counters().steps == 8);

    // two bad steps in a row: still skipped, still nothing recorded
    CHECK(d.step(with_inf(5.0f)).skip);
    CHECK(d.history() == hist);
    CHECK(d.counters().skips == 2);

    // restart: current scaling from this step's amax, a new interval starts here
    const auto r2 = d.step(finite_amax_of(0.75f));
    CHECK(r2.current);
    CHECK(r2.scale == pow2(-1 - 5));
    CHECK(d.steps_in_interval() == 1);
    CHECK(d.counters().restarts == 2);
    // the history kept its data: the next update (4 steps on) reduces over all of it
    for (int k = 0; k < 3; ++k) CHECK_FALSE(d.step(finite_amax_of(0.75f)).updated);
    const auto r3 = d.step(finite_amax_of(0.75f));
    CHECK(r3.updated);
    CHECK(d.scale() == pow2(4 - 5));  // amax 16 from before the skip is still in the history
    CHECK(d.history().size() == hist.size() + 5);
  }
}

TEST_CASE("delayed scaling: stats with an Inf, NaN or negative amax are skips, never recorded", "[recipes][delayed]") {
  // The probe's case: amax_stats{.amax = Inf, .nonfinite = 0} used to enter the history and pin
  // the scale at 1 for the whole window.
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (const float bad : {inf, nan, -1.0f, -inf}) {
    delayed_scaling d(small_config(5));
    d.step(finite_amax_of(1.0f));
    const float before = d.scale();
    const auto r = d.step(amax_stats{.amax = bad, .nonfinite = 0, .count = 1});
    CHECK(r.skip);
    CHECK(d.history() == std::vector<float>{1.0f});
    CHECK(d.scale() == before);
    for (int i = 0; i < 40; ++i) d.step(finite_amax_of(1.0f));
    CHECK(d.scale() == before);  // not stuck at 1: 2^(0 - 5)
    for (const float h : d.history()) CHECK((std::isfinite(h) && h >= 0.0f));
  }
}

namespace {

/// An independent model of the delayed-scaling state machine of delayed_scaling.hpp, written
/// from its comment: what history, scale and counters must be after a sequence of amaxes in
/// which the bad ones (Inf, NaN, negative) are skips.
struct delayed_model {
  std::size_t len, interval;
  std::vector<float> hist;  // recorded amaxes, oldest first, at most len
  float scale = 1.0f;
  bool restart = true;
  std::size_t in_interval = 0, steps = 0, skips = 0, updates = 0, restarts = 0;
  float rule(float a) const { return a > 0.0f ? std::ldexp(1.0f, std::ilogb(a) - 5) : scale; }  // N_guard 10
  void step(float a) {
    ++steps;
    if (!(a >= 0.0f) || !std::isfinite(a)) {
      ++skips;
      restart = true;
      return;
    }
    if (restart) {
      if (a > 0.0f) scale = rule(a);
      restart = false;
      in_interval = 0;
      ++restarts;
    }
    hist.push_back(a);
    if (hist.size() > len) hist.erase(hist.begin());
    if (++in_interval == interval) {
      float m = 0.0f;
      for (const float h : hist) m = std::max(m, h);
      if (m > 0.0f) scale = rule(m);
      in_interval = 0;
      ++updates;
    }
  }
};

}  // namespace

TEST_CASE("delayed scaling: random sequences with bad steps match the independent model", "[recipes][delayed][property]") {
  std::mt19937 rng(2024);
  const float specials[] = {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(), -2.0f, 0.0f};
  for (int trial = 0; trial < 300; ++trial) {
    auto cfg = small_config(static_cast<std::size_t>(1 + rng() % 7));
    cfg.history_len = 64;
    delayed_scaling d(cfg);
    delayed_model m{cfg.history_len, cfg.interval, {}};
    const int n = 1 + static_cast<int>(rng() % 200);
    for (int i = 0; i < n; ++i) {
      const auto r = static_cast<std::uint32_t>(rng() % 10);
      const float a = r == 0 ? specials[rng() % 5] : std::ldexp(1.0f + static_cast<float>(rng() % 1000) / 1000.0f,
                                                                static_cast<int>(rng() % 40) - 20);
      const bool as_data = rng() % 2 == 0 && std::isfinite(a) && a >= 0.0f;
      if (as_data) {
        const std::vector<float> x = {a, -a / 2};
        d.step(std::span<const float>(x));
      } else {
        d.step(amax_stats{.amax = a, .nonfinite = 0, .count = 1});
      }
      m.step(a);
      REQUIRE(d.history() == m.hist);
      REQUIRE(d.scale() == m.scale);
      REQUIRE(d.counters().steps == m.steps);
      REQUIRE(d.counters().skips == m.skips);
      REQUIRE(d.counters().updates == m.updates);
      REQUIRE(d.counters().restarts == m.restarts);
      REQUIRE(d.steps_in_interval() == m.in_interval);
    }
  }
}

TEST_CASE("delayed scaling: skip_step() undoes the last step exactly", "[recipes][delayed]") {
  delayed_scaling d(small_config(5));
  for (const float a : {1.0f, 2.0f, 4.0f, 8.0f}) d.step(finite_amax_of(a));
  const auto hist = d.history();
  const float held = d.scale();
  const auto before = d.counters();

  // the 5th step both records 1000 and closes the interval (update): undo both
  const auto r = d.step(finite_amax_of(1000.0f));
  CHECK(r.updated);
  CHECK(d.scale() != held);
  d.skip_step();
  CHECK(d.history() == hist);
  CHECK(d.scale() == held);
  CHECK(d.counters().updates == before.updates);
  CHECK(d.counters().steps == before.steps + 1);
  CHECK(d.counters().skips == before.skips + 1);
  CHECK(d.next_is_current());
  d.skip_step();  // idempotent
  CHECK(d.counters().skips == before.skips + 1);

  // after a step that skipped by itself, skip_step() adds nothing
  delayed_scaling e(small_config(5));
  e.step(finite_amax_of(1.0f));
  CHECK(e.step(with_inf(1.0f)).skip);
  e.skip_step();
  CHECK(e.counters().skips == 1);
  CHECK(e.history() == std::vector<float>{1.0f});

  // wrap-around slot restored: L records, then one that overwrites the oldest, undone
  delayed_scaling w(small_config(8, 64));
  for (int k = 0; k < 64; ++k) w.step(finite_amax_of(static_cast<float>(k + 1)));
  const auto full = w.history();
  w.step(finite_amax_of(0.5f));
  w.skip_step();
  CHECK(w.history() == full);

  // reset() forgets everything
  w.reset();
  CHECK(w.history().empty());
  CHECK(w.counters().steps == 0);
  CHECK(w.next_is_current());
}

TEST_CASE("delayed scaling: overflow count per update", "[recipes][delayed][overflow]") {
  delayed_scaling d(small_config(5));  // HiF8, T = 5
  std::vector<float> ones(8, 1.0f);
  auto r = d.step(std::span<const float>(ones));  // current: s = 2^-5, 1 / s = 32
  CHECK(r.overflow == 0);
  // HiF8 max 2^15; non-saturating conversion overflows from 40960 = 1.25 * 2^15 on
  // (docs/formats/hifloat8.md#overflow), i.e. x >= 1280 at s = 2^-5. 1100 -> 35200 rounds to max: no overflow.
  std::vector<float> x = {1.0f, 1100.0f, -1280.0f, 1300.0f, 5000.0f, -2000.0f, 1024.0f};
  r = d.step(std::span<const float>(x));
  CHECK(r.scale == pow2(-5));
  CHECK(r.overflow == 4);
  CHECK(d.counters().overflow_since_update == 4);
  // the quantized tensor saturates exactly those
  const auto q = dequantize(quantize_step(matrix_view<const float>(x, 1, x.size()), d.scheme(), r));
  CHECK(q[4] == 32768.0f * pow2(-5));
  CHECK(q[5] == -32768.0f * pow2(-5));
  r = d.step(std::span<const float>(x));
  CHECK(r.overflow == 4);
  d.step(std::span<const float>(ones));
  r = d.step(std::span<const float>(ones));  // 5th step: update
  CHECK(r.updated);
  CHECK(d.counters().overflow_last_update == 8);
  CHECK(d.counters().overflow_since_update == 0);
  CHECK(d.counters().overflow_total == 8);
  // the update moved the scale so that 5000 lands in binade 5: no more overflow
  CHECK(d.scale() == pow2(12 - 5));
  CHECK(d.step(std::span<const float>(x)).overflow == 0);

  // E4M3 (no Inf; overflow to NaN from 464 on): delayed with amax 1 held
  delayed_scaling f(delayed_scaling_config::fp8(tensor_role::activation));
  f.step(std::span<const float>(ones));  // s = 1 / 448
  std::vector<float> y = {1.0f, 1.03f, 1.04f, 2.0f};
  // 1.03 * 448 = 461.4 rounds to 448 (not overflow); 1.04 * 448 = 465.9 overflows
  CHECK(f.step(std::span<const float>(y)).overflow == 2);
}

TEST_CASE("current scaling: every step from its own amax, quantize_step equals quantize()", "[recipes][current]") {
  current_scaling cs(amax_scaling::hif8_guard(tensor_role::weight));
  std::vector<float> x = {0.1f, -0.7f, 0.3f, 2.5f, -1e-4f, 0.0f};
  auto r = cs.step(std::span<const float>(x));
  CHECK(r.current);
  CHECK(r.scale == pow2(1 - 4));
  const matrix_view<const float> m(x, 2, 3);
  const auto q = quantize_step(m, cs.scheme(), r);
  const auto ref = quantize(m, quant_scheme::make(format_id::hifloat8, granularity::tensor));  // pow2 T = 4
  REQUIRE(ref.scales()[0] == r.scale);
  for (std::size_t i = 0; i < 2; ++i)
    for (std::size_t j = 0; j < 3; ++j) CHECK(q.code(i, j) == ref.code(i, j));
  CHECK(current_scale(m, cs.rule()) == r.scale);
  const auto fq = fake_quantize_step(m, cs.scheme(), r);
  CHECK(fq == dequantize(ref));

  std::vector<float> big = {1000.0f};
  CHECK(cs.step(std::span<const float>(big)).scale == pow2(9 - 4));
  std::vector<float> bad = {1.0f, std::numeric_limits<float>::quiet_NaN()};
  const auto rb = cs.step(std::span<const float>(bad));
  CHECK(rb.skip);
  CHECK(rb.scale == pow2(0 - 4));
  cs.skip_step();  // already counted
  CHECK(cs.counters().steps == 3);
  CHECK(cs.counters().skips == 1);
  cs.step(std::span<const float>(big));
  cs.skip_step();
  CHECK(cs.counters().skips == 2);
}

TEST_CASE("scan_amax skips Inf/NaN and honours the row stride", "[recipes]") {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> buf = {1.0f, -2.0f, 99.0f, -4.0f, inf, 99.0f, std::nanf(""), 3.0f, 99.0f};
  const matrix_view<const float> m(buf.data(), 3, 2, 3);  // the third column (99) is padding
  const auto s = scan_amax(m);
  CHECK(s.amax == 4.0f);
  CHECK(s.nonfinite == 2);
  CHECK(s.count == 6);
  CHECK_FALSE(s.finite());
}

TEST_CASE("recipe configs reject bad values with messages naming expected and actual", "[recipes][errors]") {
  auto c = delayed_scaling_config::hif8(tensor_role::weight);
  c.history_len = 0;
  CHECK_THROWS_AS(delayed_scaling(c), shape_error);
  CHECK_THROWS_WITH(delayed_scaling(c), Contains("[1, 4096]") && Contains("got 0"));
  c.history_len = 1024;  // TE's FP8 recipe
  CHECK_NOTHROW(delayed_scaling(c));
  c.interval = 0;
  CHECK_THROWS_WITH(delayed_scaling(c), Contains("[1, 4096]") && Contains("got 0"));
  c.interval = 1;  // recompute every step
  CHECK_NOTHROW(delayed_scaling(c));
  c.interval = 5000;
  CHECK_THROWS_AS(delayed_scaling(c), shape_error);
  c.interval = 5;
  c.scaling.n_guard = 0;
  CHECK_THROWS_WITH(delayed_scaling(c), Contains("[1, 37]") && Contains("got 0"));
  CHECK_THROWS_AS(amax_scaling::hif8_guard(38), shape_error);
  amax_scaling bad_fmt = amax_scaling::hif8_guard(11);
  bad_fmt.format = format_id::float8_e4m3fn;
  CHECK_THROWS_AS(bad_fmt.validate(), unsupported_error);
  CHECK_THROWS_WITH(amax_scaling::fp8_max(format_id::float8_e4m3fn, -1), Contains("got -1"));
  CHECK_THROWS_AS(amax_scaling::fp8_max(format_id::float8_e8m0fnu), unsupported_error);
  CHECK_THROWS_WITH(amax_scaling::max_to(format_id::float8_e4m3fn, 500.0f), Contains("448") && Contains("got 500"));
  CHECK_NOTHROW(amax_scaling::max_to(format_id::hifloat8, 224.0f));
}
