// The MPI-free parts of comm/: recipes, shards and message sizes, the SIMD wire codec against
// quantize()/dequantize(), buckets, and the in-process reference of every collective.
#include <catch2/catch.hpp>

#include <optional>

#include <minifloat/comm/bucket.hpp>
#include <minifloat/comm/codec.hpp>
#include <minifloat/comm/recipe.hpp>
#include <minifloat/comm/reference.hpp>

#include "unit/comm/comm_data.hpp"

namespace mf = minifloat;
namespace mc = minifloat::comm;

namespace {

std::vector<std::span<const float>> views(const std::vector<std::vector<float>>& xs) {
  return {xs.begin(), xs.end()};
}

std::vector<float> fast_round_trip(std::span<const float> x, const mc::recipe& r, bool& nonfinite) {
  std::vector<std::uint8_t> body(mc::flat_body_bytes(x.size(), r));
  nonfinite = mc::encode_flat(x, r, body);
  std::vector<float> out(x.size());
  mc::decode_flat(body, r, out);
  return out;
}

}  // namespace

TEST_CASE("comm recipe: names, validation, schemes", "[comm]") {
  for (const auto f : mc::all_wire_formats) {
    CHECK(mc::parse_wire_format(mc::to_string(f)) == f);
    const auto r = mc::recipe::of(f);
    CHECK_NOTHROW(r.validate());
    CHECK_NOTHROW(r.flat_scheme().validate());
    CHECK_NOTHROW(r.row_scheme().validate());
  }
  CHECK_FALSE(mc::parse_wire_format("fp8").has_value());
  CHECK_THROWS_AS(mc::recipe::of(mc::wire_format::hif8, 0).validate(), mf::shape_error);
  CHECK_THROWS_AS(mc::recipe::of(mc::wire_format::hif8, 48).validate(), mf::shape_error);
  auto r = mc::recipe::of(mc::wire_format::hif8);
  r.hif8_target = 15;
  CHECK_THROWS_AS(r.validate(), mf::shape_error);
  CHECK(mc::recipe::of(mc::wire_format::hif8).flat_scheme().rule == mf::scale_rule::pow2);
  CHECK(mc::recipe::of(mc::wire_format::e4m3).flat_scheme().rule == mf::scale_rule::max);
  CHECK(mc::recipe::of(mc::wire_format::mxfp8_e5m2).row_scheme().gran == mf::granularity::mx);
  CHECK(mc::recipe::of(mc::wire_format::hif8).describe() == "hif8 chunk=1024 T=3");
}

TEST_CASE("comm shards: whole chunks, contiguous, cover the vector, balanced", "[comm]") {
  for (const std::size_t chunk : {std::size_t{32}, std::size_t{1024}})
    for (const std::size_t n : comm_test::sizes())
      for (std::size_t p = 1; p <= 5; ++p) {
        std::size_t at = 0, lo = SIZE_MAX, hi = 0;
        for (std::size_t k = 0; k < p; ++k) {
          const auto s = mc::shard_range(n, p, chunk, k);
          CHECK(s.begin == at);
          CHECK((s.begin % chunk == 0 || s.begin == n));
          at = s.end;
          const std::size_t chunks = mc::chunk_count(s.size(), chunk);
          lo = std::min(lo, chunks), hi = std::max(hi, chunks);
        }
        CHECK(at == n);
        CHECK(hi - lo <= 1);
      }
  CHECK_THROWS_AS(mc::shard_range(10, 2, 32, 2), mf::shape_error);
}

TEST_CASE("comm message sizes: 8-bit payloads are <= 0.27x fp32 and <= 0.52x bf16, scales included", "[comm]") {
  const std::size_t n = std::size_t{1} << 20;
  for (const std::size_t p : {std::size_t{2}, std::size_t{4}})
    for (const auto f : {mc::wire_format::hif8, mc::wire_format::e4m3, mc::wire_format::e5m2, mc::wire_format::mxfp8_e4m3,
                         mc::wire_format::mxfp8_e5m2}) {
      const auto r = mc::recipe::of(f);
      const double sent = static_cast<double>(mc::all_reduce_bytes_sent(n, p, 0, r));
      INFO(mc::to_string(f) << " P=" << p << " bytes " << sent);
      CHECK(sent / mc::plain_all_reduce_bytes(n, p, 4) <= 0.27);
      CHECK(sent / mc::plain_all_reduce_bytes(n, p, 2) <= 0.52);
    }
  // exact layout: header + one fp32 scale per chunk + one byte per element
  const auto h = mc::recipe::of(mc::wire_format::hif8, 1024);
  CHECK(mc::flat_message_bytes(2049, h) == 8 + 3 * 4 + 2049);
  CHECK(mc::flat_message_bytes(0, h) == 8);
  CHECK(mc::flat_message_bytes(33, mc::recipe::of(mc::wire_format::mxfp8_e4m3)) == 8 + 2 + 33);
  CHECK(mc::flat_message_bytes(33, mc::recipe::of(mc::wire_format::bf16)) == 8 + 66);
  CHECK(mc::row_message_bytes(3, 33, mc::recipe::of(mc::wire_format::mxfp8_e4m3)) == 8 + 3 * (2 + 33));
  CHECK(mc::row_message_bytes(3, 33, mc::recipe::of(mc::wire_format::e4m3)) == 8 + 3 * (4 + 33));
  CHECK(mc::all_reduce_bytes_sent(4096, 1, 0, h) == 0);
}

TEST_CASE("comm codec: the bulk-kernel wire codec gives quantize()/dequantize()'s bits", "[comm]") {
  for (const auto f : mc::all_wire_formats)
    for (const std::size_t chunk : {std::size_t{32}, std::size_t{1024}})
      for (const std::size_t n : comm_test::sizes())
        for (const bool plant : {false, true}) {
          const auto r = mc::recipe::of(f, chunk);
          auto x = comm_test::contribution(3, n, static_cast<unsigned>(chunk));
          if (plant) x = comm_test::with_nonfinite(x);
          INFO(r.describe() << " n=" << n << (plant ? " with Inf/NaN" : ""));
          bool bad = false;
          const auto fast = fast_round_trip(x, r, bad);
          const auto ref = mc::reference::detail::fake_flat(x, r);
          CHECK(comm_test::describe_difference(fast, ref) == "identical");
          CHECK(bad == (plant && n > 0));
          // accumulate = one fp32 add per element onto what is there
          std::vector<std::uint8_t> body(mc::flat_body_bytes(n, r));
          (void)mc::encode_flat(x, r, body);
          std::vector<float> acc(n, 1.5f), want(n);
          for (std::size_t i = 0; i < n; ++i) want[i] = 1.5f + ref[i];
          mc::accumulate_flat(body, r, acc);
          CHECK(comm_test::describe_difference(acc, want) == "identical");
        }
}

TEST_CASE("comm codec: the fused sum-and-requantize is accumulate_flat then encode_flat, bit for bit", "[comm]") {
  std::size_t cases = 0;
  for (const auto f : mc::all_wire_formats)
    for (const std::optional<mc::wire_format> gather : {std::optional<mc::wire_format>{}, std::optional{mc::wire_format::bf16}})
      for (const std::size_t chunk : {std::size_t{32}, std::size_t{1024}})
        for (const std::size_t n : comm_test::sizes())
          for (const std::size_t parts : {std::size_t{1}, std::size_t{3}})
            for (const bool plant : {false, true}) {
              auto r = mc::recipe::of(f, chunk);
              r.gather = gather;
              const mc::recipe rg = r.gather_recipe();
              INFO(r.describe() << " n=" << n << " parts=" << parts << (plant ? " with Inf/NaN" : ""));
              std::vector<std::vector<std::uint8_t>> bodies;
              for (std::size_t k = 0; k < parts; ++k) {
                auto x = comm_test::contribution(static_cast<unsigned>(11 + k), n, static_cast<unsigned>(chunk));
                if (plant && k == parts - 1) x = comm_test::with_nonfinite(x);
                bodies.emplace_back(mc::flat_body_bytes(n, r));
                (void)mc::encode_flat(x, r, bodies.back());
              }
              std::vector<float> acc(n, 0.0f);
              for (const auto& b : bodies) mc::accumulate_flat(b, r, acc);
              std::vector<std::uint8_t> want(mc::flat_body_bytes(n, rg)), got(want.size(), 0xA5);
              const bool want_bad = mc::encode_flat(acc, rg, want);
              const std::vector<std::span<const std::uint8_t>> views(bodies.begin(), bodies.end());
              CHECK(mc::reduce_encode_flat(views, n, r, rg, got) == want_bad);
              CHECK(got == want);
              ++cases;
            }
  CHECK(cases > 0);
  const auto r = mc::recipe::of(mc::wire_format::hif8);
  std::vector<std::uint8_t> body(mc::flat_body_bytes(10, r)), small(3);
  const std::vector<std::span<const std::uint8_t>> one{body};
  CHECK_THROWS_AS(mc::reduce_encode_flat(one, 10, r, r, small), mf::shape_error);
  CHECK_THROWS_AS(mc::reduce_encode_flat(one, 11, r, r, body), mf::shape_error);
}

TEST_CASE("comm codec: a streamed decode writes the same values as a cached one", "[comm]") {
  std::size_t cases = 0;
  for (const auto f : mc::all_wire_formats)
    for (const std::size_t n : comm_test::sizes())
      for (const std::size_t offset : {std::size_t{0}, std::size_t{1}, std::size_t{3}}) {  // unaligned destinations
        const auto r = mc::recipe::of(f, 1024);
        INFO(r.describe() << " n=" << n << " offset=" << offset);
        const auto x = comm_test::contribution(2, n);
        std::vector<std::uint8_t> body(mc::flat_body_bytes(n, r));
        (void)mc::encode_flat(x, r, body);
        std::vector<float> want(n), got(n + offset, -7.0f);
        mc::decode_flat(body, r, want);
        mc::decode_flat(body, r, std::span<float>(got).subspan(offset), true);
        mf::simd::stream_fence();
        CHECK(comm_test::describe_difference(std::span<const float>(got).subspan(offset), want) == "identical");
        for (std::size_t i = 0; i < offset; ++i) CHECK(got[i] == -7.0f);
        ++cases;
      }
  CHECK(cases > 0);
  CHECK_FALSE(mc::streams_output(mc::recipe::of(mc::wire_format::hif8), mc::stream_output_elements - 1));
  CHECK(mc::streams_output(mc::recipe::of(mc::wire_format::hif8), mc::stream_output_elements));
  CHECK_FALSE(mc::streams_output(mc::recipe::of(mc::wire_format::fp32), mc::stream_output_elements));
}

TEST_CASE("comm codec: rows with a scale group each match quantize() with token / mx scales", "[comm]") {
  for (const auto f : mc::all_wire_formats)
    for (const std::size_t cols : {std::size_t{1}, std::size_t{33}, std::size_t{64}, std::size_t{100}})
      for (const std::size_t rows : {std::size_t{0}, std::size_t{1}, std::size_t{7}}) {
        const auto r = mc::recipe::of(f);
        auto x = comm_test::contribution(1, rows * cols);
        INFO(r.describe() << " " << rows << "x" << cols);
        std::vector<std::uint8_t> body(mc::row_body_bytes(rows, cols, r));
        CHECK_FALSE(mc::encode_rows(x, rows, cols, r, body));
        std::vector<float> out(rows * cols);
        mc::decode_rows(body, rows, cols, r, out);
        CHECK(comm_test::describe_difference(out, mc::reference::detail::fake_rows(x, rows, cols, r)) == "identical");
      }
  const auto r = mc::recipe::of(mc::wire_format::hif8);
  std::vector<float> x(10);
  std::vector<std::uint8_t> small(3);
  CHECK_THROWS_AS(mc::encode_rows(x, 2, 5, r, small), mf::shape_error);
  CHECK_THROWS_AS(mc::encode_flat(x, r, small), mf::shape_error);
}

TEST_CASE("comm scan: the bit-pattern amax is finite_amax and Inf/NaN are flagged", "[comm]") {
  for (const std::size_t n : comm_test::sizes()) {
    auto x = comm_test::contribution(2, n);
    auto s = mc::detail::scan_group(x);
    CHECK(s.amax == mf::finite_amax(x));
    CHECK_FALSE(s.nonfinite);
    x = comm_test::with_nonfinite(x);
    s = mc::detail::scan_group(x);
    CHECK(s.amax == mf::finite_amax(x));
    CHECK(s.nonfinite == (n > 0));
  }
}

TEST_CASE("comm reference all_reduce: rank-order fp32 sum, one re-quantization, verdict", "[comm]") {
  const std::size_t n = 5000;
  std::vector<std::vector<float>> xs;
  for (std::size_t k = 0; k < 3; ++k) xs.push_back(comm_test::contribution(k, n));
  const auto v = views(xs);
  // fp32: exactly ((0 + x0) + x1) + x2
  const auto f = mc::reference::all_reduce(v, mc::recipe::of(mc::wire_format::fp32));
  std::vector<float> want(n);
  for (std::size_t i = 0; i < n; ++i) want[i] = ((0.0f + xs[0][i]) + xs[1][i]) + xs[2][i];
  CHECK(comm_test::describe_difference(f.values, want) == "identical");
  CHECK(f.verdict == mc::step_verdict::apply);
  // quantized: D(Q(sum D(Q(x_k)))) and close to the exact sum
  for (const auto fmt : {mc::wire_format::hif8, mc::wire_format::e4m3, mc::wire_format::mxfp8_e4m3, mc::wire_format::bf16}) {
    const auto r = mc::recipe::of(fmt);
    const auto q = mc::reference::all_reduce(v, r);
    std::vector<float> s(n, 0.0f);
    for (const auto& x : xs) {
      const auto d = mc::reference::detail::fake_flat(x, r);
      for (std::size_t i = 0; i < n; ++i) s[i] += d[i];
    }
    CHECK(comm_test::describe_difference(q.values, mc::reference::detail::fake_flat(s, r)) == "identical");
    double err = 0, sig = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const double e = static_cast<double>(xs[0][i]) + xs[1][i] + xs[2][i];
      err += (q.values[i] - e) * (q.values[i] - e), sig += e * e;
    }
    INFO(mc::to_string(fmt) << " SQNR " << 10 * std::log10(sig / err));
    CHECK(10 * std::log10(sig / err) > (fmt == mc::wire_format::bf16 ? 45.0 : 20.0));
  }
  // one rank's NaN: skip, for every format
  xs[1] = comm_test::with_nonfinite(xs[1]);
  for (const auto fmt : mc::all_wire_formats) CHECK(mc::reference::all_reduce(views(xs), mc::recipe::of(fmt)).verdict == mc::step_verdict::skip);
  // a finite overflow of the fp32 sum skips too
  std::vector<std::vector<float>> big(2, std::vector<float>(64, 3e38f));
  CHECK(mc::reference::all_reduce(views(big), mc::recipe::of(mc::wire_format::fp32)).verdict == mc::step_verdict::skip);
  // ranks disagreeing on the count
  std::vector<std::vector<float>> odd = {std::vector<float>(10), std::vector<float>(11)};
  CHECK_THROWS_AS(mc::reference::all_reduce(views(odd), mc::recipe::of(mc::wire_format::hif8)), mc::mismatch_error);
  CHECK_THROWS_AS(mc::reference::all_reduce({}, mc::recipe::of(mc::wire_format::hif8)), mf::shape_error);
}

TEST_CASE("comm reference all_reduce with another gather format: the sum is rounded in that format", "[comm]") {
  std::vector<std::vector<float>> xs;
  for (std::size_t k = 0; k < 2; ++k) xs.push_back(comm_test::contribution(k, 3000));
  auto r = mc::recipe::of(mc::wire_format::hif8, 256);
  r.gather = mc::wire_format::bf16;
  CHECK(r.describe() == "hif8 chunk=256 T=3 gather=bf16");
  CHECK(r.gather_recipe() == mc::recipe::of(mc::wire_format::bf16, 256));
  const auto q = mc::reference::all_reduce(views(xs), r);
  std::vector<float> s(3000, 0.0f);
  for (const auto& x : xs) {
    const auto d = mc::reference::detail::fake_flat(x, mc::recipe::of(mc::wire_format::hif8, 256));
    for (std::size_t i = 0; i < s.size(); ++i) s[i] += d[i];
  }
  CHECK(comm_test::describe_difference(q.values, mc::reference::detail::fake_flat(s, r.gather_recipe())) == "identical");
  // bytes: 1 + 2 bytes an element over the two halves
  const std::size_t n = std::size_t{1} << 20;
  const double ratio = static_cast<double>(mc::all_reduce_bytes_sent(n, 2, 0, r)) / mc::plain_all_reduce_bytes(n, 2, 4);
  CHECK(ratio > 0.37);
  CHECK(ratio < 0.38);
}

TEST_CASE("comm reference: one rank, empty vectors, the quantization of a contribution does not depend on P", "[comm]") {
  const auto r = mc::recipe::of(mc::wire_format::hif8, 256);
  const auto x = comm_test::contribution(0, 3000);
  std::vector<std::vector<float>> one = {x};
  const auto d = mc::reference::detail::fake_flat(x, r);
  CHECK(comm_test::describe_difference(mc::reference::all_reduce(views(one), r).values, mc::reference::detail::fake_flat(d, r)) ==
        "identical");
  std::vector<std::vector<float>> empty(4);
  CHECK(mc::reference::all_reduce(views(empty), r).values.empty());
  // reduce_scatter shards concatenate to the pre-requantization sum, for every P
  for (std::size_t p = 1; p <= 4; ++p) {
    std::vector<std::vector<float>> xs;
    for (std::size_t k = 0; k < p; ++k) xs.push_back(comm_test::contribution(k, 3000));
    const auto shards = mc::reference::reduce_scatter(views(xs), r);
    std::vector<float> cat;
    for (const auto& s : shards) cat.insert(cat.end(), s.values.begin(), s.values.end());
    std::vector<float> s(3000, 0.0f);
    for (const auto& xk : xs) {
      const auto dk = mc::reference::detail::fake_flat(xk, r);
      for (std::size_t i = 0; i < s.size(); ++i) s[i] += dk[i];
    }
    CHECK(comm_test::describe_difference(cat, s) == "identical");
  }
}

TEST_CASE("comm reference all_gather and all_to_all", "[comm]") {
  const auto r = mc::recipe::of(mc::wire_format::e4m3, 64);
  std::vector<std::vector<float>> xs = {comm_test::contribution(0, 100), {}, comm_test::contribution(2, 65)};
  const auto g = mc::reference::all_gather(views(xs), r);
  CHECK(g.counts == std::vector<std::size_t>{100, 0, 65});
  REQUIRE(g.values.size() == 165);
  CHECK(comm_test::describe_difference(std::span<const float>(g.values).subspan(100), mc::reference::detail::fake_flat(xs[2], r)) ==
        "identical");

  const std::size_t cols = 40;
  for (const auto fmt : {mc::wire_format::hif8, mc::wire_format::mxfp8_e4m3, mc::wire_format::bf16}) {
    const auto rr = mc::recipe::of(fmt);
    std::vector<std::vector<float>> rows;
    std::vector<mc::reference::a2a_send> sends;
    const std::vector<std::vector<std::size_t>> counts = {{1, 0, 2}, {0, 0, 0}, {3, 1, 0}};
    for (std::size_t k = 0; k < 3; ++k) {
      std::size_t total = 0;
      for (const auto c : counts[k]) total += c;
      rows.push_back(comm_test::contribution(k, total * cols));
    }
    for (std::size_t k = 0; k < 3; ++k) sends.push_back({rows[k], counts[k]});
    const auto out = mc::reference::all_to_all(sends, cols, rr);
    const auto q = mc::reference::all_to_all_quantized(sends, cols, rr);
    for (std::size_t j = 0; j < 3; ++j) {
      CHECK(out[j].recv_counts == std::vector<std::size_t>{counts[0][j], counts[1][j], counts[2][j]});
      CHECK(q[j].rows() == out[j].rows.size() / cols);
      CHECK(comm_test::describe_difference(mf::dequantize(q[j]), out[j].rows) == "identical");
    }
    // rank 2's first row goes to rank 0, after rank 0's own row
    CHECK(comm_test::describe_difference(std::span<const float>(out[0].rows).subspan(cols, cols),
                                         std::span<const float>(mc::reference::detail::fake_rows(rows[2], 4, cols, rr)).first(cols)) ==
          "identical");
  }
  std::vector<mc::reference::a2a_send> bad = {{{}, {2}}};  // 2 rows promised, none given
  CHECK_THROWS_AS(mc::reference::all_to_all(bad, 4, mc::recipe::of(mc::wire_format::fp32)), mf::shape_error);
  std::vector<mc::reference::a2a_send> one = {{{}, {0}}};
  CHECK_THROWS_AS(mc::reference::all_to_all_quantized(one, 4, mc::recipe::of(mc::wire_format::fp32)), mf::unsupported_error);
}

TEST_CASE("comm buckets: tensors start on scale-group boundaries, pack/unpack round trip", "[comm]") {
  const auto h = mc::recipe::of(mc::wire_format::hif8, 256);
  const std::vector<std::size_t> sizes = {300, 8, 0, 256};
  const auto b = mc::make_bucket(sizes, h);
  CHECK(b.offsets == std::vector<std::size_t>{0, 512, 768, 768});
  CHECK(b.total == 1024);
  CHECK(mc::make_bucket(sizes, mc::recipe::of(mc::wire_format::mxfp8_e4m3, 256)).total == 320 + 32 + 0 + 256);
  std::vector<std::vector<float>> t;
  for (const auto n : sizes) t.push_back(comm_test::contribution(n, n));
  std::vector<std::span<const float>> cv(t.begin(), t.end());
  std::vector<float> flat(b.total, 7.0f);
  mc::pack(std::span<const std::span<const float>>(cv), b, std::span<float>(flat));
  CHECK(flat[300] == 0.0f);
  std::vector<std::vector<float>> back;
  for (const auto n : sizes) back.emplace_back(n);
  std::vector<std::span<float>> bv(back.begin(), back.end());
  mc::unpack(flat, b, bv);
  CHECK(back == t);
  std::vector<float> wrong(10);
  CHECK_THROWS_AS(mc::unpack(wrong, b, bv), mf::shape_error);
  // the reference gradient all-reduce is the bucket's all_reduce, mean divides by P
  std::vector<std::vector<std::span<const float>>> grads = {cv, cv};
  const auto sum = mc::reference::gradient_all_reduce(grads, h);
  const auto mean = mc::reference::gradient_all_reduce(grads, h, mc::reduction::mean);
  for (std::size_t i = 0; i < sum.values.size(); ++i) CHECK(mean.values[i] == sum.values[i] / 2.0f);
}

TEST_CASE("comm reference reduce_amax: max of amax, sums of counts", "[comm]") {
  std::vector<std::vector<mf::amax_stats>> per = {{{1.0f, 0, 10}, {4.0f, 1, 5}}, {{2.0f, 2, 10}, {3.0f, 0, 5}}};
  const auto r = mc::reference::reduce_amax(per);
  CHECK(r[0].amax == 2.0f);
  CHECK(r[0].nonfinite == 2);
  CHECK(r[1].amax == 4.0f);
  CHECK(r[1].count == 10);
  per[1].pop_back();
  CHECK_THROWS_AS(mc::reference::reduce_amax(per), mc::mismatch_error);
}
