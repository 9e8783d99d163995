// The Ascend shim's whole call path against the test-only fake CANN (fake_cann.hpp). No NPU and no
// CANN toolkit are involved: these tests prove that the shim maps the library's vocabulary
// (format_id, rounding, quant_scheme, quantized_view) onto the documented aclnn calls with the
// documented arguments (dtype ids, shapes, strides, round strings, groupSize, 1 / scale, the CANN
// paired MX scale layout, workspace sizes, the two-phase order, stream ordering, RAII) and that,
// where the fake can compute the documented result with the CPU backend, buffers written by one
// backend read back identically through the other. They cannot prove the hardware matches the
// documentation (docs/backends.md).
#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <minifloat/backend/ascend/ascend.hpp>
#include <minifloat/backend/cpu.hpp>
#include "support/all_but_attention.hpp"

#include "fake_cann.hpp"
#include "support/schemes.hpp"
#include "support/test_data.hpp"

using namespace minifloat;
namespace be = minifloat::backend;
namespace asc = minifloat::backend::ascend;

namespace {

std::vector<float> random_values(std::size_t n, unsigned seed, float spread = 4.0f) {
  return test_support::spread_normal(n, seed, spread);
}

using test_support::to_bf16_bits;
using dims = std::vector<std::int64_t>;

std::size_t bytes_of(be::element_type t, const dims& shape) {
  static const std::uint8_t somewhere = 0;
  return be::make_tensor(&somewhere, t, shape).byte_extent();
}

/// A device tensor: aclrtMalloc'd memory plus its view (tagged ascend:0).
struct dev_tensor {
  asc::device_buffer buf;
  be::tensor_view view;

  template <class T>
  [[nodiscard]] std::vector<T> get() const {
    std::vector<T> out(buf.size() / sizeof(T));
    buf.download(out.data(), out.size() * sizeof(T));
    return out;
  }
};

dev_tensor dev_alloc(be::element_type t, const dims& shape) {
  dev_tensor d{asc::device_buffer(std::max<std::size_t>(bytes_of(t, shape), 1)), {}};
  d.view = be::make_tensor(d.buf.data(), t, shape, be::ascend_device(0));
  return d;
}

template <class T>
dev_tensor dev_upload(const std::vector<T>& host, be::element_type t, const dims& shape) {
  dev_tensor d = dev_alloc(t, shape);
  REQUIRE(host.size() * sizeof(T) == bytes_of(t, shape));
  d.buf.upload(host.data(), host.size() * sizeof(T));
  return d;
}

using test_support::mx_scheme;
using test_support::scheme_of;

/// The interface's shape of the scales of codes `shape` under s: the plain MX layout, or the fp32 grid's count.
dims scale_dims(const quant_scheme& s, const dims& shape) {
  static const std::uint8_t somewhere = 0;
  const auto codes = be::make_tensor(&somewhere, s.format, shape);
  const auto l = be::detail::slabs_of(s, codes);
  if (s.gran == granularity::mx) return be::detail::mx_scale_dims(codes, l);
  return {static_cast<std::int64_t>(l.count * l.scale_count())};
}
be::element_type scale_type(const quant_scheme& s) {
  return s.gran == granularity::mx ? be::element_type(format_id::float8_e8m0fnu) : be::float32;
}

/// A quantized tensor on the device and on the host (same scheme), sized for codes `shape`.
struct q_pair {
  dev_tensor codes, scales;
  std::vector<std::uint8_t> host_codes, host_mx;
  std::vector<float> host_scales;
  be::quantized_view device, host;
};

q_pair make_q_pair(const quant_scheme& s, const dims& shape) {
  q_pair q;
  const dims sd = scale_dims(s, shape);
  q.codes = dev_alloc(s.format, shape);
  q.scales = dev_alloc(scale_type(s), sd);
  q.host_codes.assign(bytes_of(s.format, shape), 0xAA);
  q.device = {s, q.codes.view, q.scales.view};
  q.host = {s, be::make_tensor(q.host_codes.data(), s.format, shape), {}};
  if (s.gran == granularity::mx) {
    q.host_mx.assign(bytes_of(format_id::float8_e8m0fnu, sd), 0xEE);
    q.host.scales = be::make_tensor(q.host_mx.data(), format_id::float8_e8m0fnu, sd);
  } else {
    q.host_scales.assign(static_cast<std::size_t>(sd[0]), -1.0f);
    q.host.scales = be::make_tensor(q.host_scales.data(), be::float32, sd);
  }
  return q;
}

/// Process setup for one test: a clean journal. On scope exit the fake must report no protocol
/// violation, no leaked tensor / list / executor / buffer / stream, and balanced device and init
/// references.
struct fixture {
  fixture() {
    fake_cann::reset();
    baseline = fake_cann::state();
  }
  fake_cann::counters baseline;
};

void check_clean(const fake_cann::counters& before) {
  const auto now = fake_cann::state();
  for (const auto& v : fake_cann::violations()) UNSCOPED_INFO(v);
  CHECK(fake_cann::violations().empty());
  CHECK(now.live_tensors == before.live_tensors);
  CHECK(now.live_lists == before.live_lists);
  CHECK(now.pending_executors == before.pending_executors);
  CHECK(now.queued_ops == 0);
  CHECK(now.live_buffers == before.live_buffers);
  CHECK(now.live_streams == before.live_streams);
  CHECK(now.device_refs == before.device_refs);
  CHECK(now.init_refs == before.init_refs);
}

/// The phase-1 / phase-2 pair of `op`: phase 1 succeeded and made executor E; phase 2 ran E once,
/// with phase 1's workspace size, after phase 1; returns phase 1's record.
fake_cann::call check_two_phase(const std::string& op, std::size_t nth = 0) {
  const auto p1 = fake_cann::calls_named(op + "GetWorkspaceSize");
  const auto p2 = fake_cann::calls_named(op);
  REQUIRE(p1.size() > nth);
  REQUIRE(p2.size() > nth);
  CHECK(p1[nth].status == 0);
  CHECK(p2[nth].status == 0);
  CHECK(p1[nth].executor >= 0);
  CHECK(p2[nth].executor == p1[nth].executor);
  CHECK(p2[nth].workspace_size == p1[nth].workspace_size);
  CHECK((p1[nth].workspace_size == 0) == (p2[nth].workspace == 0));
  CHECK(p2[nth].stream >= 0);
  CHECK(fake_cann::first_index(op + "GetWorkspaceSize") < fake_cann::first_index(op));
  return p1[nth];
}

template <class T>
T read_device(std::uintptr_t address, std::size_t index = 0) {
  T v;
  std::memcpy(&v, reinterpret_cast<const unsigned char*>(address) + index * sizeof(T), sizeof(T));  // fake device memory is host memory
  return v;
}
std::vector<std::uint8_t> read_bytes(std::uintptr_t address, std::size_t n) {
  const auto* p = reinterpret_cast<const std::uint8_t*>(address);
  return {p, p + n};
}

/// The CANN pairing of `slabs` slabs of plain scales, by the library (the independent reference
/// for the shim's strided copies).
std::vector<std::uint8_t> library_pairing(std::span<const std::uint8_t> plain, std::size_t slabs, std::size_t rows,
                                          std::size_t cols, int axis) {
  const std::size_t per = plain.size() / std::max<std::size_t>(slabs, 1);
  std::vector<std::uint8_t> out;
  for (std::size_t b = 0; b < slabs; ++b) {
    const auto p = mx_scales_to_cann(plain.subspan(b * per, per), rows, cols, axis);
    out.insert(out.end(), p.begin(), p.end());
  }
  return out;
}

}  // namespace

TEST_CASE("ascend tables: aclDataType ids round-mode names groupSize packing scaleAlg", "[ascend-fake]") {
  STATIC_REQUIRE(asc::acl_dtype_number(format_id::hifloat8) == 34);
  STATIC_REQUIRE(asc::acl_dtype_number(format_id::float8_e5m2) == 35);
  STATIC_REQUIRE(asc::acl_dtype_number(format_id::float8_e4m3fn) == 36);
  STATIC_REQUIRE(asc::acl_dtype_number(format_id::float8_e8m0fnu) == 37);
  STATIC_REQUIRE(asc::acl_dtype_number(format_id::float4_e2m1fn) == 40);
  STATIC_REQUIRE(asc::acl_dtype_number(format_id::bfloat16) == 27);
  STATIC_REQUIRE(asc::acl_dtype_number(be::float32) == 0);
  STATIC_REQUIRE(asc::acl_dtype_number(be::int64) == 9);
  STATIC_REQUIRE(asc::pack_group_size(1, 1, 32) == 4295032864);
  // every library format CANN has has exactly one id, and no two share one; the ml_dtypes float8
  // variants (fnuz, IEEE-like E3M4/E4M3) have no aclDataType
  std::vector<int> ids;
  for_each_format([&](auto t) {
    using T = typename decltype(t)::type;
    const int id = asc::acl_dtype_number(format_id_of<T>);
    const bool ml_dtypes_variant = format_id_of<T> >= format_id::float8_e4m3fnuz;
    CHECK((id == -1) == ml_dtypes_variant);
    if (id != -1) ids.push_back(id);
  });
  CHECK(ids.size() == 9);
  std::sort(ids.begin(), ids.end());
  CHECK(std::adjacent_find(ids.begin(), ids.end()) == ids.end());
  // the library's rounding -> the aclnn strings
  CHECK(asc::round_name(rounding::nearest, format_id::hifloat8) == "round");
  CHECK(asc::round_name(rounding::nearest, format_id::float8_e4m3fn) == "rint");
  CHECK(asc::round_name(rounding::nearest_away, format_id::float8_e4m3fn) == "round");
  CHECK(asc::round_name(rounding::stochastic, format_id::hifloat8) == "hybrid");
  CHECK_FALSE(asc::round_name(rounding::stochastic, format_id::float8_e4m3fn));
  CHECK(asc::round_name(rounding::downward, format_id::float4_e2m1fn) == "floor");
  CHECK(asc::round_name(rounding::toward_zero, format_id::float4_e2m1fn) == "trunc");
  CHECK_FALSE(asc::round_documented(asc::rounding_op::ascend_quant_v3, format_id::float8_e4m3fn, "rint"));
  CHECK(asc::round_documented(asc::rounding_op::quant_max, format_id::float8_e4m3fn, "rint"));
  CHECK(asc::scale_alg(scale_rule::rceil, format_id::float8_e4m3fn) == 1);
  CHECK(asc::scale_alg(scale_rule::floor, format_id::float4_e2m1fn) == 0);
  CHECK_FALSE(asc::scale_alg(scale_rule::rceil, format_id::float4_e2m1fn));
  CHECK_FALSE(asc::scale_alg(scale_rule::even, format_id::float8_e4m3fn));
  CHECK(asc::soc_is_950("Ascend950PR_9599"));
  CHECK_FALSE(asc::soc_is_950("Ascend910B1"));
  // the paired shapes: rank + 1, blocked dim d -> ceil(ceil(d / 32) / 2), last 2
  CHECK(asc::paired_scale_dims(dims{4}, 1) == dims{1, 2});
  CHECK(asc::paired_scale_dims(dims{5, 96}, 1) == dims{5, 2, 2});
  CHECK(asc::paired_scale_dims(dims{2, 3, 70, 8}, 0) == dims{2, 3, 2, 8, 2});
}

TEST_CASE("ascend paired MX layout: the shim's strided byte copies reproduce mx_scales_to_cann", "[ascend-fake][layout]") {
  // Host execution of mx_pairing_of's copies against the library's conversion, both directions,
  // for even / odd block counts, short blocks and batches of slabs.
  std::size_t checked = 0;
  for (const std::size_t slabs : {std::size_t{1}, std::size_t{3}})
    for (const std::size_t rows : {1U, 31U, 32U, 33U, 64U, 96U, 130U})
      for (const std::size_t cols : {1U, 2U, 32U, 33U, 64U, 96U, 200U})
        for (const int axis : {1, 0}) {
          CAPTURE(slabs, rows, cols, axis);
          const auto grid = mx_scale_shape(rows, cols, axis);
          std::vector<std::uint8_t> plain(slabs * grid[0] * grid[1]);
          for (std::size_t i = 0; i < plain.size(); ++i) plain[i] = static_cast<std::uint8_t>(1 + i % 250);
          const auto p = asc::mx_pairing_of(slabs, rows, cols, axis);
          REQUIRE(p.plain_bytes == plain.size());
          const auto want = library_pairing(plain, slabs, rows, cols, axis);
          REQUIRE(p.paired_bytes == want.size());
          std::vector<std::uint8_t> paired = p.copies.empty() ? plain : std::vector<std::uint8_t>(p.paired_bytes, 0);
          std::vector<std::uint8_t> back(plain.size(), 0);
          std::size_t covered = 0;
          for (const auto& c : p.copies) {
            std::vector<std::int64_t> idx(c.dims.size(), 0);
            const std::int64_t count = std::accumulate(c.dims.begin(), c.dims.end(), std::int64_t{1}, std::multiplies<>());
            for (std::int64_t i = 0; i < count; ++i) {
              std::int64_t po = c.plain_offset, qo = c.paired_offset;
              for (std::size_t d = 0; d < idx.size(); ++d) po += idx[d] * c.plain_strides[d], qo += idx[d] * c.paired_strides[d];
              paired[static_cast<std::size_t>(qo)] = plain[static_cast<std::size_t>(po)];
              back[static_cast<std::size_t>(po)] = paired[static_cast<std::size_t>(qo)];
              ++covered;
              for (std::size_t d = idx.size(); d-- > 0;) {
                if (++idx[d] < c.dims[d]) break;
                idx[d] = 0;
              }
            }
          }
          CHECK(paired == want);
          if (!p.copies.empty()) {
            CHECK(covered == plain.size());  // every plain byte exactly once
            CHECK(back == plain);
          }
          CHECK(p.pad == (want.size() != plain.size()));
          ++checked;
        }
  CHECK(checked == 2 * 7 * 7 * 2);
}

TEST_CASE("ascend quantize_with_scales -> aclnnAscendQuantV3: 1/s in x's dtype dstType round axis - bytes equal the CPU",
          "[ascend-fake]") {
  fixture f;
  {
    asc::acl_session session;
    asc::ascend_backend npu;
    be::cpu_backend cpu;
    const std::int64_t rows = 4, cols = 40;
    const auto x = random_values(static_cast<std::size_t>(rows * cols), 3);
    struct variant {
      be::element_type x_type;
      format_id y_format;
      granularity gran;
      rounding round;
      int dst;
      const char* mode;
    };
    const variant variants[] = {
        {be::float32, format_id::hifloat8, granularity::tensor, rounding::nearest, 34, "round"},
        {be::float32, format_id::float8_e4m3fn, granularity::token, rounding::nearest_away, 36, "round"},
        {format_id::bfloat16, format_id::float8_e5m2, granularity::channel, rounding::nearest_away, 35, "round"},
        {format_id::bfloat16, format_id::hifloat8, granularity::token, rounding::nearest_away, 34, "round"},
    };
    std::size_t nth = 0;
    for (const auto& v : variants) {
      CAPTURE(be::to_string(v.x_type), to_string(v.y_format), to_string(v.gran));
      const auto s = scheme_of(v.y_format, v.gran, 1, 128, v.round);
      // power-of-two scales: x * (1 / s) and x / s round the same exact value (bit-exact backends)
      std::vector<float> scales(v.gran == granularity::tensor ? 1 : static_cast<std::size_t>(rows));
      for (std::size_t i = 0; i < scales.size(); ++i) scales[i] = std::ldexp(1.0f, static_cast<int>(i) - 3);
      const auto xb = to_bf16_bits(x);
      std::vector<float> x_host = x;
      if (v.x_type == format_id::bfloat16)
        for (std::size_t i = 0; i < x.size(); ++i) x_host[i] = static_cast<float>(bfloat16::from_bits(xb[i]));
      dev_tensor xd = v.x_type == be::float32 ? dev_upload(x, v.x_type, {rows, cols}) : dev_upload(xb, v.x_type, {rows, cols});
      dev_tensor yd = dev_alloc(v.y_format, {rows, cols});
      const auto sv = be::make_tensor(scales.data(), be::float32, {static_cast<std::int64_t>(scales.size())});  // host
      npu.quantize_with_scales(xd.view, {s, yd.view, sv});
      npu.synchronize();
      std::vector<std::uint8_t> ref(static_cast<std::size_t>(rows * cols));
      cpu.quantize_with_scales(be::make_tensor(x_host.data(), be::float32, {rows, cols}),
                               {s, be::make_tensor(ref.data(), v.y_format, {rows, cols}), sv});
      CHECK(yd.get<std::uint8_t>() == ref);

      const auto p1 = check_two_phase("aclnnAscendQuantV3", nth++);
      CHECK(p1.ints.at("dstType") == v.dst);
      CHECK(p1.strings.at("roundMode") == v.mode);
      CHECK(p1.ints.at("sqrtMode") == 0);
      CHECK(p1.ints.at("axis") == (v.gran == granularity::tensor ? -1 : -2));
      CHECK(p1.tensors.at("x").dims == dims{rows, cols});
      CHECK(p1.tensors.at("x").dtype == (v.x_type == be::float32 ? 0 : 27));
      CHECK(p1.tensors.at("y").dtype == v.dst);
      CHECK(p1.tensors.at("x").format == 2);  // ND
      CHECK_FALSE(p1.tensors.at("offset").present);
      const auto& st = p1.tensors.at("scale");
      CHECK(st.dtype == p1.tensors.at("x").dtype);  // the op wants the scale in x's dtype
      CHECK(st.dims == dims{static_cast<std::int64_t>(scales.size())});
      for (std::size_t i = 0; i < scales.size(); ++i) {  // the op MULTIPLIES: it must get 1 / s
        const float passed = v.x_type == be::float32
                                 ? read_device<float>(st.data, i)
                                 : static_cast<float>(bfloat16::from_bits(read_device<std::uint16_t>(st.data, i)));
        CHECK(passed == 1.0f / scales[i]);
      }
    }
    // The library's own scale check runs before anything reaches the device.
    std::vector<float> bad = {0.0f};
    dev_tensor xd = dev_upload(x, be::float32, {rows, cols});
    dev_tensor yd = dev_alloc(format_id::hifloat8, {rows, cols});
    const auto before = fake_cann::calls().size();
    CHECK_THROWS_WITH(npu.quantize_with_scales(xd.view, {scheme_of(format_id::hifloat8, granularity::tensor), yd.view,
                                                         be::make_tensor(bad.data(), be::float32, {1})}),
                      Catch::Contains("finite and positive"));
    CHECK(fake_cann::calls().size() == before);
  }
  check_clean(f.baseline);
}

TEST_CASE("ascend quantize_with_scales: FP8 round-to-even is refused HiF8 stochastic goes out as hybrid", "[ascend-fake]") {
  fixture f;
  {
    asc::acl_session session;
    asc::ascend_backend npu;
    // FP8 with AscendQuantV3 on the 950: only "round" (ties away).
    const auto r = be::request::for_quantize_with_scales(be::float32, scheme_of(format_id::float8_e4m3fn, granularity::tensor));
    CHECK_FALSE(npu.supports(r));
    CHECK_THAT(npu.supports(r).reason, Catch::Contains("only \"round\""));
    CHECK(be::cpu_backend().supports(r));  // the CPU backend has RNE
    // FP8 has no stochastic mode on the 950.
    CHECK_THAT(npu.supports(be::request::for_quantize_with_scales(
                               be::float32, scheme_of(format_id::float8_e4m3fn, granularity::tensor, 1, 128, rounding::stochastic)))
                   .reason,
               Catch::Contains("not expressible"));
    // HiF8 stochastic = the 950's "hybrid": recorded by the fake, not emulated, so the error surfaces
    // at synchronize() with the runtime's own message.
    std::vector<float> x(64, 3.0f);
    float s = 1.0f;
    dev_tensor xd = dev_upload(x, be::float32, {2, 32});
    dev_tensor yd = dev_alloc(format_id::hifloat8, {2, 32});
    const auto hybrid = scheme_of(format_id::hifloat8, granularity::tensor, 1, 128, rounding::stochastic);
    npu.quantize_with_scales(xd.view, {hybrid, yd.view, be::make_tensor(&s, be::float32, {1})});
    CHECK(fake_cann::calls_named("aclnnAscendQuantV3GetWorkspaceSize").at(0).strings.at("roundMode") == "hybrid");
    try {
      npu.synchronize();
      FAIL("expected backend_error");
    } catch (const be::backend_error& e) {
      CHECK(e.api() == "aclrtSynchronizeStream");
      CHECK_THAT(e.what(), Catch::Contains("hybrid") && Catch::Contains("not emulated"));
    }
    // The backend stays usable after an asynchronous failure.
    npu.quantize_with_scales(xd.view, {scheme_of(format_id::hifloat8, granularity::tensor), yd.view,
                                       be::make_tensor(&s, be::float32, {1})});
    npu.synchronize();
    CHECK(yd.get<std::uint8_t>() == std::vector<std::uint8_t>(64, narrow<hifloat8>(3.0f).bits()));
  }
  check_clean(f.baseline);
}

TEST_CASE("ascend quantize (rule max) -> aclnnDynamicQuantV4: quantMode dstTypeMax scale shapes", "[ascend-fake]") {
  fixture f;
  {
    asc::acl_session session;
    asc::ascend_backend npu;
    be::cpu_backend cpu;
    const std::int64_t rows = 3, cols = 48;
    const auto xb = to_bf16_bits(random_values(static_cast<std::size_t>(rows * cols), 8));
    struct variant {
      format_id y;
      granularity gran;
      float dst_max;
      const char* mode;
    };
    const variant variants[] = {{format_id::hifloat8, granularity::token, 15.0f, "pertoken"},
                                {format_id::float8_e4m3fn, granularity::tensor, 0.0f, "pertensor"},
                                {format_id::float8_e5m2, granularity::token, 0.0f, "pertoken"}};
    std::size_t nth = 0;
    for (const auto& v : variants) {
      CAPTURE(to_string(v.y), v.mode);
      const auto s = scheme_of(v.y, v.gran, 1, 128, rounding::nearest, scale_rule::max);
      dev_tensor xd = dev_upload(xb, format_id::bfloat16, {rows, cols});
      auto q = make_q_pair(s, {rows, cols});
      npu.quantize(xd.view, q.device, {.dst_max = v.dst_max});
      npu.synchronize();
      cpu.quantize(be::make_tensor(xb.data(), format_id::bfloat16, {rows, cols}), q.host, {.dst_max = v.dst_max});
      CHECK(q.codes.get<std::uint8_t>() == q.host_codes);
      CHECK(q.scales.get<float>() == q.host_scales);
      const auto p1 = check_two_phase("aclnnDynamicQuantV4", nth++);
      CHECK(p1.strings.at("quantMode") == v.mode);
      CHECK(p1.reals.at("dstTypeMax") == v.dst_max);
      CHECK(p1.ints.at("dstType") == asc::acl_dtype_number(v.y));
      CHECK(p1.ints.at("isSymmetrical") == 1);
      CHECK(p1.tensors.at("scaleOut").dims == dims{v.gran == granularity::tensor ? 1 : rows});
      CHECK(p1.tensors.at("scaleOut").dtype == 0);
      CHECK_FALSE(p1.tensors.at("smoothScalesOptional").present);
      CHECK_FALSE(p1.tensors.at("offsetOut").present);
    }
    // float32 x is not an aclnnDynamicQuantV4 input; its amax / max is the library's rule max only.
    const auto hmax = scheme_of(format_id::hifloat8, granularity::token, 1, 128, rounding::nearest, scale_rule::max);
    CHECK_THAT(npu.supports(be::request::for_quantize(be::float32, hmax)).reason, Catch::Contains("FLOAT16 or BFLOAT16"));
    auto pow2 = hmax;
    pow2.rule = scale_rule::pow2;
    CHECK_THAT(npu.supports(be::request::for_quantize(format_id::bfloat16, pow2)).reason, Catch::Contains("rule max"));
    CHECK(cpu.supports(be::request::for_quantize(format_id::bfloat16, pow2)));
    auto away = hmax;
    away.format = format_id::float8_e4m3fn, away.round = rounding::nearest_away;
    CHECK_THAT(npu.supports(be::request::for_quantize(format_id::bfloat16, away)).reason, Catch::Contains("no round-mode"));
  }
  check_clean(f.baseline);
}

TEST_CASE("ascend quantize_with_amax -> aclnnQuantMax: 1/s round strings per dstType amax in x's dtype", "[ascend-fake]") {
  fixture f;
  {
    asc::acl_session session;
    asc::ascend_backend npu;
    be::cpu_backend cpu;
    const std::int64_t n = 96;
    auto x = random_values(static_cast<std::size_t>(n), 12);
    x[5] = -700.0f;
    std::size_t nth = 0;
    for (const auto y_format : {format_id::hifloat8, format_id::float8_e5m2, format_id::float8_e4m3fn}) {
      for (const auto x_type : {be::float32, be::element_type(format_id::bfloat16)}) {
        CAPTURE(to_string(y_format), be::to_string(x_type));
        float s = 0.0625f;
        const auto scheme = scheme_of(y_format, granularity::tensor);
        const auto xb = to_bf16_bits(x);
        dev_tensor xd = x_type == be::float32 ? dev_upload(x, x_type, {2, n / 2}) : dev_upload(xb, x_type, {2, n / 2});
        dev_tensor yd = dev_alloc(y_format, {2, n / 2});
        dev_tensor ad = dev_alloc(x_type, {1});
        npu.quantize_with_amax(xd.view, {scheme, yd.view, be::make_tensor(&s, be::float32, {1})}, ad.view);
        npu.synchronize();
        std::vector<std::uint8_t> ref(static_cast<std::size_t>(n));
        std::vector<std::uint8_t> ref_amax(4);
        const void* xh = x_type == be::float32 ? static_cast<const void*>(x.data()) : static_cast<const void*>(xb.data());
        cpu.quantize_with_amax(be::make_tensor(xh, x_type, {2, n / 2}),
                               {scheme, be::make_tensor(ref.data(), y_format, {2, n / 2}), be::make_tensor(&s, be::float32, {1})},
                               be::make_tensor(ref_amax.data(), x_type, {1}));
        CHECK(yd.get<std::uint8_t>() == ref);
        const auto amax = ad.get<std::uint8_t>();
        CHECK(std::equal(amax.begin(), amax.begin() + (x_type == be::float32 ? 4 : 2), ref_amax.begin()));
        const auto p1 = check_two_phase("aclnnQuantMax", nth++);
        CHECK(p1.strings.at("roundMode") == (y_format == format_id::hifloat8 ? "round" : "rint"));
        CHECK(p1.ints.at("dstType") == asc::acl_dtype_number(y_format));
        CHECK(p1.tensors.at("scale").dtype == 0);
        CHECK(p1.tensors.at("scale").dims == dims{1});
        CHECK(read_device<float>(p1.tensors.at("scale").data) == 16.0f);  // 1 / 0.0625
        CHECK(p1.tensors.at("amax").dtype == asc::acl_dtype_number(x_type));
      }
    }
  }
  check_clean(f.baseline);
}

TEST_CASE("ascend quantize mx -> aclnnDynamicMxQuantV3: the CANN doc vector through both backends", "[ascend-fake][layout]") {
  fixture f;
  {
    asc::acl_session session;
    asc::ascend_backend npu;
    be::cpu_backend cpu;
    // bf16 [0, 8, 64, 512], axis -1, FLOAT8_E4M3FN, "rint", block 32 -> y [0, 72, 96, 120], mxscale [128, 0].
    const std::vector<std::uint16_t> x = {0x0000, 0x4100, 0x4280, 0x4400};
    const auto s = parse_scheme("mxfp8_e4m3").scheme;
    dev_tensor xd = dev_upload(x, format_id::bfloat16, {1, 4});
    auto q = make_q_pair(s, {1, 4});
    npu.quantize(xd.view, q.device);
    npu.synchronize();
    CHECK(q.codes.get<std::uint8_t>() == std::vector<std::uint8_t>{0, 72, 96, 120});
    CHECK(q.scales.get<std::uint8_t>() == std::vector<std::uint8_t>{128});  // the interface's plain layout
    cpu.quantize(be::make_tensor(x.data(), format_id::bfloat16, {1, 4}), q.host);
    CHECK(q.host_codes == std::vector<std::uint8_t>{0, 72, 96, 120});
    CHECK(q.host_mx == std::vector<std::uint8_t>{128});
    const auto p1 = check_two_phase("aclnnDynamicMxQuantV3");
    CHECK(p1.tensors.at("x").dtype == 27);
    CHECK(p1.ints.at("axis") == -1);
    CHECK(p1.ints.at("dstType") == 36);
    CHECK(p1.ints.at("blocksize") == 32);
    CHECK(p1.ints.at("scaleAlg") == 0);
    CHECK(p1.strings.at("roundMode") == "rint");
    CHECK(p1.reals.at("dstTypeMax") == 0.0);
    CHECK(p1.reals.at("maxLowBound") == 0.0);
    const auto& ms = p1.tensors.at("mxscaleOut");
    CHECK(ms.dtype == 37);
    CHECK(ms.dims == dims{1, 1, 2});
    CHECK(read_bytes(ms.data, 2) == std::vector<std::uint8_t>{128, 0});  // what the op wrote: the doc's mxscale
    // one block: odd count, so the op wrote a paired temporary and one strided copy moved it
    CHECK(ms.data != reinterpret_cast<std::uintptr_t>(q.scales.buf.data()));
    const auto copy = check_two_phase("aclnnInplaceCopy");
    CHECK(copy.tensors.at("selfRef").dtype == 4);  // UINT8 (FLOAT8_E8M0 is not in aclnnInplaceCopy's list)
    CHECK(copy.tensors.at("selfRef").data == reinterpret_cast<std::uintptr_t>(q.scales.buf.data()));
    CHECK(copy.tensors.at("src").data == ms.data);
    CHECK(copy.tensors.at("src").strides == dims{2, 1});
    CHECK(fake_cann::last_index("aclnnInplaceCopy") > fake_cann::last_index("aclnnDynamicMxQuantV3"));
  }
  check_clean(f.baseline);
}

TEST_CASE("ascend quantize mx: axis 1 / 0 FP8 / FP4 floor / rceil -> scaleAlg 0 / 1 - paired on the device, plain out, "
          "equal to the CPU",
          "[ascend-fake][layout]") {
  fixture f;
  {
    asc::acl_session session;
    asc::ascend_backend npu;
    be::cpu_backend cpu;
    struct shape_case {
      dims shape;
    };
    // (66, 96): 3 blocks along a row and down a column (odd: pad, copies); (64, 128): 4 along a row
    // (even: the op writes the caller's buffer directly), 2 down a column (interleave, no pad);
    // (3, 40, 64): a batch of matrices.
    const shape_case shapes[] = {{{66, 96}}, {{64, 128}}, {{3, 40, 64}}};
    std::size_t nth = 0, copies_seen = 0;
    for (const auto& sc : shapes) {
      const std::int64_t count = std::accumulate(sc.shape.begin(), sc.shape.end(), std::int64_t{1}, std::multiplies<>());
      const auto x = random_values(static_cast<std::size_t>(count), 17);
      for (const auto fmt : {format_id::float8_e4m3fn, format_id::float8_e5m2, format_id::float4_e2m1fn}) {
        for (const int axis : {1, 0}) {
          for (const auto rule : {scale_rule::floor, scale_rule::rceil}) {
            const auto s = mx_scheme(fmt, axis, rule);
            CAPTURE(be::detail::dims_string(sc.shape), s.describe());
            if (rule == scale_rule::rceil && fmt == format_id::float4_e2m1fn) {
              CHECK_FALSE(npu.supports(be::request::for_quantize(be::float32, s)));
              continue;
            }
            dev_tensor xd = dev_upload(x, be::float32, sc.shape);
            auto q = make_q_pair(s, sc.shape);
            const auto copies_before = fake_cann::calls_named("aclnnInplaceCopy").size();
            npu.quantize(xd.view, q.device);
            npu.synchronize();
            cpu.quantize(be::make_tensor(x.data(), be::float32, sc.shape), q.host);
            CHECK(q.codes.get<std::uint8_t>() == q.host_codes);
            CHECK(q.scales.get<std::uint8_t>() == q.host_mx);
            const auto p1 = check_two_phase("aclnnDynamicMxQuantV3", nth++);
            CHECK(p1.ints.at("axis") == (axis == 1 ? -1 : -2));
            CHECK(p1.ints.at("dstType") == asc::acl_dtype_number(fmt));
            CHECK(p1.ints.at("scaleAlg") == (rule == scale_rule::floor ? 0 : 1));
            CHECK(p1.tensors.at("yOut").dims == sc.shape);  // FP4 in element units
            const auto& ms = p1.tensors.at("mxscaleOut");
            CHECK(ms.dims == asc::paired_scale_dims(sc.shape, axis));
            // what the op wrote is the library's pairing of the CPU's plain scales
            const auto l = be::detail::slabs_of(s, q.host.codes);
            const auto want = library_pairing(q.host_mx, l.count, l.rows, l.cols, axis);
            CHECK(read_bytes(ms.data, want.size()) == want);
            const bool same_bytes = asc::mx_pairing_of(l.count, l.rows, l.cols, axis).copies.empty();
            CHECK(same_bytes == (ms.data == reinterpret_cast<std::uintptr_t>(q.scales.buf.data())));
            const auto copies = fake_cann::calls_named("aclnnInplaceCopy").size() - copies_before;
            CHECK((copies == 0) == same_bytes);
            copies_seen += copies;
          }
        }
      }
    }
    CHECK(copies_seen > 0);
    // FP4 rounding "floor" exists on the 950, but an MX scheme that does not round to nearest even
    // is not a valid quant_scheme (validate(), OCP MX 6.3): both backends refuse it with that reason.
    auto fp4_floor = mx_scheme(format_id::float4_e2m1fn, 1);
    fp4_floor.round = rounding::downward;
    CHECK_FALSE(npu.supports(be::request::for_quantize(be::float32, fp4_floor)));
    CHECK_THAT(npu.supports(be::request::for_quantize(be::float32, fp4_floor)).reason, Catch::Contains("nearest even"));
    CHECK_FALSE(cpu.supports(be::request::for_quantize(be::float32, fp4_floor)));
    // FLOAT x with a quantized axis shorter than 32 is outside the op's documented range.
    std::vector<float> small(16, 1.0f);
    dev_tensor sd = dev_upload(small, be::float32, {1, 16});
    auto q = make_q_pair(mx_scheme(format_id::float8_e4m3fn, 1), {1, 16});
    CHECK_THROWS_WITH(npu.quantize(sd.view, q.device), Catch::Contains("at least 32"));
  }
  check_clean(f.baseline);
}

TEST_CASE("ascend dequantize -> aclnnCast (to FLOAT) + aclnnMul (broadcast scale) - MX refused", "[ascend-fake]") {
  fixture f;
  {
    asc::acl_session session;
    asc::ascend_backend npu;
    be::cpu_backend cpu;
    const std::int64_t rows = 5, cols = 34;
    const auto x = random_values(static_cast<std::size_t>(rows * cols), 23);
    std::size_t nth = 0;
    for (const auto fmt : {format_id::hifloat8, format_id::float8_e4m3fn, format_id::float4_e2m1fn}) {
      for (const auto g : {granularity::tensor, granularity::token}) {
        CAPTURE(to_string(fmt), to_string(g));
        // codes + scales made by the CPU backend, read back through the NPU path
        const auto s = scheme_of(fmt, g, 1, 128, rounding::nearest, scale_rule::max);
        auto q = make_q_pair(s, {rows, cols});
        cpu.quantize(be::make_tensor(x.data(), be::float32, {rows, cols}), q.host);
        q.codes.buf.upload(q.host_codes.data(), q.host_codes.size());
        q.scales.buf.upload(q.host_scales.data(), q.host_scales.size() * sizeof(float));
        dev_tensor od = dev_alloc(be::float32, {rows, cols});
        npu.dequantize(q.device, od.view);
        npu.synchronize();
        std::vector<float> ref(static_cast<std::size_t>(rows * cols));
        cpu.dequantize(q.host, be::make_tensor(ref.data(), be::float32, {rows, cols}));
        const auto got = od.get<float>();
        CHECK(std::equal(got.begin(), got.end(), ref.begin(), ref.end(),
                         [](float a, float b) { return std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b); }));
        const auto cast = check_two_phase("aclnnCast", nth);
        const auto mul = check_two_phase("aclnnMul", nth);
        ++nth;
        CHECK(cast.ints.at("dtype") == 0);
        CHECK(cast.tensors.at("self").dtype == asc::acl_dtype_number(fmt));
        CHECK(cast.tensors.at("out").dims == dims{rows, cols});
        CHECK(cast.workspace_size == 0);
        CHECK(mul.tensors.at("self").data == cast.tensors.at("out").data);  // Mul reads Cast's output
        CHECK(mul.tensors.at("other").dims == (g == granularity::tensor ? dims{1} : dims{rows, 1}));
        CHECK(mul.tensors.at("out").data == reinterpret_cast<std::uintptr_t>(od.buf.data()));
      }
    }
    CHECK_THAT(npu.supports(be::request::for_dequantize(mx_scheme(format_id::float8_e4m3fn, 1))).reason,
               Catch::Contains("AntiQuant"));
  }
  check_clean(f.baseline);
}

namespace {

/// A GEMM operand quantized by the library on the host, the same bytes on the device.
struct operand_pair {
  quantized_tensor lib;
  be::quantized_view host, device;
  dev_tensor dcodes, dscale;
};

operand_pair make_pair_operand(const std::vector<float>& x, std::int64_t rows, std::int64_t cols, const quant_scheme& s) {
  operand_pair o;
  o.lib = quantize(matrix_view<const float>(x, static_cast<std::size_t>(rows), static_cast<std::size_t>(cols)), s);
  o.host = be::from_library(o.lib.view());
  o.dcodes = dev_upload(std::vector<std::uint8_t>(o.lib.codes().begin(), o.lib.codes().end()), s.format, {rows, cols});
  const dims sd(o.host.scales.dims().begin(), o.host.scales.dims().end());
  o.dscale.buf = asc::device_buffer(std::max<std::size_t>(o.host.scales.byte_extent(), 1));
  o.dscale.buf.upload(o.host.scales.data, o.host.scales.byte_extent());
  o.dscale.view = be::make_tensor(o.dscale.buf.data(), o.host.scales.type, sd, be::ascend_device(0));
  o.device = {s, o.dcodes.view, o.dscale.view};
  return o;
}

std::vector<float> stored(const std::vector<float>& xb, std::int64_t k, std::int64_t n, gemm_layout layout) {
  std::vector<float> bt(xb.size());
  for (std::int64_t i = 0; i < k; ++i)
    for (std::int64_t j = 0; j < n; ++j)
      bt[static_cast<std::size_t>(layout == gemm_layout::kn ? i * n + j : j * k + i)] = xb[static_cast<std::size_t>(i * n + j)];
  return bt;
}

quant_scheme with_max(quant_scheme s) {
  if (s.gran != granularity::mx) s.rule = scale_rule::max;
  return s;
}

}  // namespace

TEST_CASE("ascend gemm -> aclnnQuantMatmulV5: scale shapes transposeX2 groupSize per mode, paired MX - equals the CPU",
          "[ascend-fake]") {
  fixture f;
  {
    asc::acl_session session;
    asc::ascend_backend npu;
    be::cpu_backend cpu;
    const auto e4 = format_id::float8_e4m3fn, e5 = format_id::float8_e5m2, h8 = format_id::hifloat8, f4 = format_id::float4_e2m1fn;
    struct mode {
      const char* name;
      quant_scheme a, b;
      gemm_layout layout;
      std::int64_t k, group_size;
      bool bias;
    };
    const std::int64_t m = 3, n = 18;
    const mode modes[] = {
        {"T-T hif8", scheme_of(h8, granularity::tensor), scheme_of(h8, granularity::tensor), gemm_layout::kn, 256, 0, true},
        {"K-C e4m3 x e5m2 nk", scheme_of(e4, granularity::token), scheme_of(e5, granularity::channel), gemm_layout::nk, 256, 0, true},
        {"K-C hif8 kn (K x 1 blocks)", scheme_of(h8, granularity::token), scheme_of(h8, granularity::block, 256, 1), gemm_layout::kn,
         256, 0, false},
        {"G-B e4m3 nk", scheme_of(e4, granularity::block, 1, 128), scheme_of(e4, granularity::block, 128, 128), gemm_layout::nk, 256,
         4303356032, false},
        {"B-B hif8 kn", scheme_of(h8, granularity::block, 128, 128), scheme_of(h8, granularity::block, 128, 128), gemm_layout::kn, 256,
         549764202624, false},
        {"mx e4m3 kn", mx_scheme(e4, 1), mx_scheme(e4, 0), gemm_layout::kn, 256, 4295032864, true},
        {"mx e5m2 nk", mx_scheme(e5, 1), mx_scheme(e4, 1), gemm_layout::nk, 256, 4295032864, false},
        {"mx fp4 nk", mx_scheme(f4, 1), mx_scheme(f4, 1), gemm_layout::nk, 256, 4295032864, true},
        // 3 blocks along K: an odd count, so A's (and B's) scales are paired into zero-padded temporaries
        {"mx e4m3 nk k=96", mx_scheme(e4, 1), mx_scheme(e4, 1), gemm_layout::nk, 96, 4295032864, false},
        {"mx e4m3 kn k=96", mx_scheme(e4, 1), mx_scheme(e5, 0), gemm_layout::kn, 96, 4295032864, true},
    };
    std::size_t nth = 0;
    for (const auto& md : modes) {
      const std::int64_t k = md.k;
      const auto xa = random_values(static_cast<std::size_t>(m * k), 5);
      const auto xb = random_values(static_cast<std::size_t>(k * n), 6);
      for (const auto out_t : {be::float32, be::element_type(format_id::bfloat16)}) {
        CAPTURE(md.name, be::to_string(out_t));
        const bool kn = md.layout == gemm_layout::kn;
        auto a = make_pair_operand(xa, m, k, with_max(md.a));
        auto b = make_pair_operand(stored(xb, k, n, md.layout), kn ? k : n, kn ? n : k, with_max(md.b));
        std::vector<float> bias = random_values(static_cast<std::size_t>(n), 9);
        dev_tensor bias_d = dev_upload(bias, be::float32, {n});
        const std::size_t ob = out_t == be::float32 ? 4 : 2;
        dev_tensor od = dev_alloc(out_t, {m, n});
        npu.gemm(a.device, b.device, md.bias ? bias_d.view : be::tensor_view{}, od.view, md.layout);
        npu.synchronize();
        std::vector<std::uint8_t> ref(static_cast<std::size_t>(m * n) * ob);
        cpu.gemm(a.host, b.host, md.bias ? be::make_tensor(bias.data(), be::float32, {n}) : be::tensor_view{},
                 be::make_tensor(ref.data(), out_t, {m, n}), md.layout);
        CHECK(od.get<std::uint8_t>() == ref);
        const auto p1 = check_two_phase("aclnnQuantMatmulV5", nth++);
        CHECK(p1.ints.at("groupSize") == md.group_size);
        CHECK(p1.ints.at("transposeX1") == 0);
        CHECK(p1.ints.at("transposeX2") == (kn ? 0 : 1));
        CHECK(p1.tensors.at("x1").dims == dims{m, k});
        CHECK(p1.tensors.at("x2").dims == (kn ? dims{k, n} : dims{n, k}));
        CHECK(p1.tensors.at("x1").dtype == asc::acl_dtype_number(md.a.format));
        CHECK(p1.tensors.at("x2").dtype == asc::acl_dtype_number(md.b.format));
        CHECK(p1.tensors.at("out").dtype == asc::acl_dtype_number(out_t));
        CHECK(p1.tensors.at("bias").present == md.bias);
        CHECK_FALSE(p1.tensors.at("yScale").present);
        const std::int64_t kb = (k + 31) / 32, kb2 = (kb + 1) / 2;
        const auto& s1 = p1.tensors.at("x1Scale");
        const auto& s2 = p1.tensors.at("x2Scale");
        if (md.a.gran == granularity::mx) {
          CHECK(s1.dtype == 37);
          CHECK(s1.dims == dims{m, kb2, 2});
          CHECK(s2.dims == (kn ? dims{kb2, n, 2} : dims{n, kb2, 2}));
          // the bytes the op read are the library's pairing of the plain scales
          CHECK(read_bytes(s1.data, a.lib.mx_scales().size() + (kb % 2 ? static_cast<std::size_t>(m) : 0)) ==
                library_pairing(a.lib.mx_scales(), 1, static_cast<std::size_t>(m), static_cast<std::size_t>(k), 1));
          const auto want2 = kn ? library_pairing(b.lib.mx_scales(), 1, static_cast<std::size_t>(k), static_cast<std::size_t>(n), 0)
                                : library_pairing(b.lib.mx_scales(), 1, static_cast<std::size_t>(n), static_cast<std::size_t>(k), 1);
          CHECK(read_bytes(s2.data, want2.size()) == want2);
          // an even block count along the rows needs no copy: the op reads the caller's buffer
          CHECK((s1.data == reinterpret_cast<std::uintptr_t>(a.dscale.buf.data())) == (kb % 2 == 0));
          CHECK((s2.data == reinterpret_cast<std::uintptr_t>(b.dscale.buf.data())) == (!kn && kb % 2 == 0));
        } else if (md.a.gran == granularity::block) {
          CHECK(s1.dims == (md.a.block_rows == 1 ? dims{m, 2} : dims{1, 2}));
          CHECK(s2.dims == (kn ? dims{2, 1} : dims{1, 2}));
        } else {
          CHECK(s1.dims == (md.a.gran == granularity::tensor ? dims{1} : dims{m}));
          CHECK(s2.dims == (md.b.gran == granularity::tensor ? dims{1} : dims{n}));
          CHECK(s1.dtype == 0);
        }
      }
    }
    // the zero pad of an odd block count is written in stream order before the copies
    CHECK(!fake_cann::calls_named("aclrtMemsetAsync").empty());
    CHECK(fake_cann::calls_named("aclrtMemsetAsync").at(0).ints.at("value") == 0);
    // Documented refusals.
    const auto e4t = scheme_of(e4, granularity::tensor), e4c = scheme_of(e4, granularity::channel);
    CHECK_THAT(npu.supports(be::request::for_gemm(e4t, e4c, be::float32, gemm_layout::nk, be::bias_term::present)).reason,
               Catch::Contains("T-C"));
    CHECK_THAT(npu.supports(be::request::for_gemm(mx_scheme(f4, 1), mx_scheme(f4, 0), be::float32, gemm_layout::kn)).reason,
               Catch::Contains("transposeX2"));
    // mixed MX x fp32 is the library's (the CPU computes it); the 950 has no such mode
    CHECK(cpu.supports(be::request::for_gemm(mx_scheme(e4, 1), e4c, be::float32, gemm_layout::nk)));
    CHECK_THAT(npu.supports(be::request::for_gemm(mx_scheme(e4, 1), e4c, be::float32, gemm_layout::nk)).reason,
               Catch::Contains("both operands"));
    // a (k, n) B with per-k scales means nothing to the library, so to neither backend
    CHECK_THAT(npu.supports(be::request::for_gemm(e4t, e4c, be::float32, gemm_layout::kn)).reason, Catch::Contains("x1"));
    // per output channel of a (k, n) B must be one K x 1 block per column
    auto a_op = make_pair_operand(random_values(3 * 64, 1), 3, 64, with_max(scheme_of(e4, granularity::token)));
    auto b_op = make_pair_operand(random_values(64 * 8, 2), 64, 8, with_max(scheme_of(e4, granularity::block, 32, 1)));
    dev_tensor od = dev_alloc(be::float32, {3, 8});
    CHECK_THROWS_WITH(npu.gemm(a_op.device, b_op.device, {}, od.view, gemm_layout::kn), Catch::Contains("block_rows >= k"));
  }
  check_clean(f.baseline);
}

TEST_CASE("ascend grouped_gemm -> aclnnGroupedMatmulV4: lists groupList counts transposed weight view - equals the CPU",
          "[ascend-fake]") {
  fixture f;
  {
    asc::acl_session session;
    asc::ascend_backend npu;
    be::cpu_backend cpu;
    const std::int64_t m = 10, k = 128, n = 6, g = 3;
    const std::vector<std::int64_t> sizes = {4, 0, 6};
    const auto xa = random_values(static_cast<std::size_t>(m * k), 51);
    const auto e4 = format_id::float8_e4m3fn, e5 = format_id::float8_e5m2, h8 = format_id::hifloat8;
    struct mode {
      const char* name;
      quant_scheme a, b;
      gemm_layout layout;
    };
    const mode modes[] = {
        {"mx e4m3 nk", mx_scheme(e4, 1), mx_scheme(e4, 1), gemm_layout::nk},
        {"mx e5m2 kn", mx_scheme(e5, 1), mx_scheme(e5, 0), gemm_layout::kn},
        {"K-C hif8 kn", scheme_of(h8, granularity::token), scheme_of(h8, granularity::block, static_cast<std::size_t>(k), 1),
         gemm_layout::kn},
        {"T-T e4m3 nk (per-group A scale)", scheme_of(e4, granularity::tensor), scheme_of(e4, granularity::tensor), gemm_layout::nk},
    };
    std::size_t nth = 0;
    for (const auto& md : modes) {
      CAPTURE(md.name);
      const bool kn = md.layout == gemm_layout::kn, mx = md.a.gran == granularity::mx;
      auto a = make_pair_operand(xa, m, k, with_max(mx ? md.a : scheme_of(md.a.format, granularity::token)));
      std::vector<float> a_group = {0.5f, 2.0f, 0.125f};
      dev_tensor a_group_d = dev_upload(a_group, be::float32, {g});
      if (md.a.gran == granularity::tensor) {
        a.host.scheme = a.device.scheme = md.a;
        a.host.scales = be::make_tensor(a_group.data(), be::float32, {g});
        a.device.scales = a_group_d.view;
      }
      // B: g experts, stacked.
      std::vector<std::uint8_t> bcodes, bmx;
      std::vector<float> bscales;
      for (std::int64_t e = 0; e < g; ++e) {
        const auto w = random_values(static_cast<std::size_t>(k * n), 60 + static_cast<unsigned>(e));
        const auto q = quantize(matrix_view<const float>(w, static_cast<std::size_t>(kn ? k : n), static_cast<std::size_t>(kn ? n : k)),
                                with_max(md.b));
        bcodes.insert(bcodes.end(), q.codes().begin(), q.codes().end());
        bmx.insert(bmx.end(), q.mx_scales().begin(), q.mx_scales().end());
        bscales.insert(bscales.end(), q.scales().begin(), q.scales().end());
      }
      const std::int64_t kb2 = (k / 32 + 1) / 2;
      const dims bdims = kn ? dims{g, k, n} : dims{g, n, k};
      const dims sdims = mx ? (kn ? dims{g, k / 32, n} : dims{g, n, k / 32}) : dims{static_cast<std::int64_t>(bscales.size())};
      be::quantized_view bh{with_max(md.b), be::make_tensor(bcodes.data(), md.b.format, bdims),
                            mx ? be::make_tensor(bmx.data(), format_id::float8_e8m0fnu, sdims)
                               : be::make_tensor(bscales.data(), be::float32, sdims)};
      dev_tensor bcd = dev_upload(bcodes, md.b.format, bdims);
      dev_tensor bsd = mx ? dev_upload(bmx, format_id::float8_e8m0fnu, sdims) : dev_upload(bscales, be::float32, sdims);
      const be::quantized_view bd{bh.scheme, bcd.view, bsd.view};
      dev_tensor od = dev_alloc(be::float32, {m, n});
      // group sizes from the host: the shim checks and uploads them
      npu.grouped_gemm(a.device, bd, be::make_tensor(sizes.data(), be::int64, {g}), {}, od.view, md.layout);
      npu.synchronize();
      std::vector<float> ref(static_cast<std::size_t>(m * n));
      cpu.grouped_gemm(a.host, bh, be::make_tensor(sizes.data(), be::int64, {g}), {}, be::make_tensor(ref.data(), be::float32, {m, n}),
                       md.layout);
      CHECK(od.get<float>() == ref);
      const auto p1 = check_two_phase("aclnnGroupedMatmulV4", nth++);
      CHECK(p1.ints.at("groupType") == 0);
      CHECK(p1.ints.at("groupListType") == 1);
      CHECK(p1.ints.at("splitItem") == 3);
      CHECK(p1.ints.at("actType") == 0);
      CHECK(p1.ints.at("transposed") == (kn ? 0 : 1));
      const auto& w = p1.lists.at("weight").at(0);
      CHECK(w.dims == dims{g, k, n});  // always the (g, K, N) view; (g, N, K) storage is a transposed view
      CHECK(w.strides == (kn ? dims{k * n, n, 1} : dims{n * k, 1, k}));
      CHECK(w.storage_dims == (kn ? dims{g, k, n} : dims{g, n, k}));
      const auto& sc = p1.lists.at("scaleOptional").at(0);
      CHECK(sc.dims == (mx ? (kn ? dims{g, kb2, n, 2} : dims{g, n, kb2, 2}) : md.b.gran == granularity::tensor ? dims{g} : dims{g, n}));
      if (mx) {  // every expert's scales paired, as the library pairs them
        const auto want = kn ? library_pairing(bmx, 3, static_cast<std::size_t>(k), static_cast<std::size_t>(n), 0)
                             : library_pairing(bmx, 3, static_cast<std::size_t>(n), static_cast<std::size_t>(k), 1);
        CHECK(read_bytes(sc.data, want.size()) == want);
      }
      CHECK(p1.lists.at("perTokenScaleOptional").at(0).dims ==
            (mx ? dims{m, kb2, 2} : md.a.gran == granularity::tensor ? dims{g} : dims{m}));
      const auto& gl = p1.tensors.at("groupListOptional");
      CHECK(gl.dtype == 9);
      CHECK(gl.dims == dims{g});
      CHECK(read_device<std::int64_t>(gl.data, 2) == 6);  // the uploaded counts
      CHECK(p1.lists.at("biasOptional").empty());
    }
  }
  check_clean(f.baseline);
}

TEST_CASE("ascend workspaces are stream-ordered: reused across operators outgrown ones freed only after synchronize",
          "[ascend-fake]") {
  fixture f;
  {
    asc::acl_session session;
    asc::ascend_backend npu;
    std::vector<float> x(64, 1.5f);
    float s = 1.0f;
    dev_tensor xd = dev_upload(x, be::float32, {2, 32});
    dev_tensor yd = dev_alloc(format_id::hifloat8, {2, 32});
    dev_tensor ad = dev_alloc(be::float32, {1});
    auto mx = make_q_pair(mx_scheme(format_id::float8_e4m3fn, 1), {2, 32});
    const be::quantized_view y{scheme_of(format_id::hifloat8, granularity::tensor), yd.view, be::make_tensor(&s, be::float32, {1})};
    fake_cann::reset();
    // QuantMax (256-byte workspace) twice: one workspace allocation, reused.
    npu.quantize_with_amax(xd.view, y, ad.view);
    npu.quantize_with_amax(xd.view, y, ad.view);
    const auto q = fake_cann::calls_named("aclnnQuantMax");
    REQUIRE(q.size() == 2);
    CHECK(q[0].workspace == q[1].workspace);
    // DynamicMxQuant wants 2048 bytes: the 256-byte buffer is retired, not freed, while queued.
    npu.quantize(xd.view, mx.device);
    CHECK(fake_cann::calls_named("aclnnDynamicMxQuantV3").at(0).workspace != q[0].workspace);
    CHECK(fake_cann::state().queued_ops == 4);  // 2 QuantMax, DynamicMxQuant, the scale copy
    const long frees_before_sync = static_cast<long>(fake_cann::calls_named("aclrtFree").size());
    npu.synchronize();
    CHECK(fake_cann::state().queued_ops == 0);
    // the retired workspace, the two uploaded 1/s temporaries and the paired scale temporary are
    // freed after the synchronize
    CHECK(frees_before_sync == 0);
    CHECK(fake_cann::last_index("aclrtFree") > fake_cann::last_index("aclrtSynchronizeStream"));
    CHECK(fake_cann::calls_named("aclrtFree").size() == 4);
  }
  check_clean(f.baseline);
}

TEST_CASE("ascend errors become backend_error with the API the status and aclGetRecentErrMsg - nothing leaks",
          "[ascend-fake]") {
  fixture f;
  {
    asc::acl_session session;
    asc::ascend_backend npu;
    std::vector<float> x(64, 1.0f);
    float s = 1.0f;
    dev_tensor xd = dev_upload(x, be::float32, {2, 32});
    dev_tensor yd = dev_alloc(format_id::float8_e4m3fn, {2, 32});
    dev_tensor ad = dev_alloc(be::float32, {1});
    const be::quantized_view y{scheme_of(format_id::float8_e4m3fn, granularity::tensor), yd.view, be::make_tensor(&s, be::float32, {1})};
    for (const std::string api : {"aclnnQuantMaxGetWorkspaceSize", "aclnnQuantMax"}) {
      CAPTURE(api);
      fake_cann::fail_next(api, 161002, "injected by the test");
      try {
        npu.quantize_with_amax(xd.view, y, ad.view);
        FAIL("expected backend_error");
      } catch (const be::backend_error& e) {
        CHECK(e.api() == api);
        CHECK(e.code() == 161002);
        CHECK_THAT(e.what(), Catch::Contains("injected by the test"));
      }
    }
    // A failing aclrtMalloc and a failing aclrtMemsetAsync surface the same way.
    fake_cann::fail_next("aclrtMalloc", 207001, "out of device memory");
    CHECK_THROWS_WITH(asc::device_buffer(1 << 20), Catch::Contains("aclrtMalloc") && Catch::Contains("out of device memory"));
    {
      auto a = make_pair_operand(random_values(2 * 96, 3), 2, 96, mx_scheme(format_id::float8_e4m3fn, 1));
      auto b = make_pair_operand(random_values(4 * 96, 4), 4, 96, mx_scheme(format_id::float8_e4m3fn, 1));
      dev_tensor od = dev_alloc(be::float32, {2, 4});
      fake_cann::fail_next("aclrtMemsetAsync", 207000, "memset refused");
      CHECK_THROWS_WITH(npu.gemm(a.device, b.device, {}, od.view, gemm_layout::nk),
                        Catch::Contains("aclrtMemsetAsync") && Catch::Contains("memset refused"));
      npu.synchronize();
    }
    // The shim checks 32-byte alignment before aclCreateTensor.
    asc::device_buffer raw(256);
    const auto misaligned = be::make_tensor(static_cast<unsigned char*>(raw.data()) + 8, be::float32, {2, 32}, be::ascend_device(0));
    CHECK_THROWS_WITH(npu.quantize_with_amax(misaligned, y, ad.view), Catch::Contains("32-byte aligned"));
    // Host tensors are refused before any aclnn call.
    const auto calls_before = fake_cann::calls().size();
    CHECK_THROWS_WITH(npu.quantize_with_amax(be::make_tensor(x.data(), be::float32, {2, 32}), y, ad.view),
                      Catch::Contains("must live on ascend:0"));
    CHECK(fake_cann::calls().size() == calls_before);
    npu.synchronize();
  }
  check_clean(f.baseline);
}

TEST_CASE("ascend refuses the low-precision dtypes on a SoC other than the 950 before calling aclnn", "[ascend-fake]") {
  fixture f;
  {
    asc::acl_session session;
    fake_cann::set_soc_name("Ascend910B1");
    asc::ascend_backend npu;
    fake_cann::set_soc_name("Ascend950PR_fake");
    CHECK(npu.soc_name() == "Ascend910B1");
    const auto s = mx_scheme(format_id::float8_e4m3fn, 1);
    const auto r = be::request::for_quantize(format_id::bfloat16, s);
    CHECK_FALSE(npu.supports(r));
    CHECK_THAT(npu.supports(r).reason, Catch::Contains("Ascend910B1") && Catch::Contains("33..41"));
    std::vector<float> x(64, 1.0f);
    dev_tensor xd = dev_upload(x, be::float32, {2, 32});
    auto q = make_q_pair(s, {2, 32});
    fake_cann::reset();
    CHECK_THROWS_AS(npu.quantize(xd.view, q.device), unsupported_error);
    CHECK(fake_cann::calls().empty());
  }
  check_clean(f.baseline);
}

// --- the fake itself catches the mistakes the shim must not make -----------------------------------

namespace {

/// A raw aclTensor over a fresh device buffer (for calling the fake directly).
struct raw_tensor {
  asc::device_buffer buf;
  asc::acl_tensor t;
  raw_tensor(aclDataType type, std::vector<std::int64_t> d, std::vector<std::int64_t> strides = {},
             std::vector<std::int64_t> storage = {})
      : buf(1024) {
    if (strides.empty()) {
      strides.assign(d.size(), 1);
      for (std::size_t i = d.size(); i-- > 1;) strides[i - 1] = strides[i] * d[i];
    }
    t = asc::make_acl_tensor(buf.data(), type, d, strides, storage.empty() ? d : storage);
  }
  raw_tensor(be::element_type type, std::vector<std::int64_t> d) : buf(1024) {
    t = asc::make_acl_tensor(buf.data(), type, d);
  }
};

}  // namespace

TEST_CASE("fake CANN rejects a skipped phase 1 a reused executor and a wrong workspace size", "[ascend-fake][fake]") {
  fixture f;
  {
    asc::acl_session session;
    aclrtStream stream = nullptr;
    REQUIRE(aclrtSetDevice(0) == 0);
    REQUIRE(aclrtCreateStream(&stream) == 0);
    raw_tensor x(be::float32, {4}), s(be::float32, {1}), y(format_id::hifloat8, {4}), a(be::float32, {1});
    char mode[] = "round";
    // phase 2 without phase 1
    auto* bogus = reinterpret_cast<aclOpExecutor*>(static_cast<std::uintptr_t>(0x1000));
    CHECK(aclnnQuantMax(nullptr, 0, bogus, stream) == 161002);
    CHECK_THAT(fake_cann::take_violations().at(0), Catch::Contains("phase 1 skipped"));
    // a proper pair, then the same executor again
    std::uint64_t ws = 0;
    aclOpExecutor* ex = nullptr;
    REQUIRE(aclnnQuantMaxGetWorkspaceSize(x.t.get(), s.t.get(), mode, 34, y.t.get(), a.t.get(), &ws, &ex) == 0);
    CHECK(ws > 0);
    asc::device_buffer wbuf(static_cast<std::size_t>(ws));
    CHECK(aclnnQuantMax(wbuf.data(), ws + 1, ex, stream) == 161002);  // wrong size
    CHECK_THAT(fake_cann::take_violations().at(0), Catch::Contains("differs from phase 1"));
    CHECK(aclnnQuantMax(wbuf.data(), ws, ex, stream) == 0);
    CHECK(aclnnQuantMax(wbuf.data(), ws, ex, stream) == 161002);  // reuse
    CHECK_THAT(fake_cann::take_violations().at(0), Catch::Contains("run a second time"));
    // an executor of another operator
    std::uint64_t ws2 = 0;
    aclOpExecutor* ex2 = nullptr;
    REQUIRE(aclnnQuantMaxGetWorkspaceSize(x.t.get(), s.t.get(), mode, 34, y.t.get(), a.t.get(), &ws2, &ex2) == 0);
    CHECK(aclnnAscendQuantV3(wbuf.data(), ws2, ex2, stream) == 161002);
    CHECK_THAT(fake_cann::take_violations().at(0), Catch::Contains("was made for aclnnQuantMax"));
    CHECK(aclnnQuantMax(wbuf.data(), ws2, ex2, stream) == 0);
    // freeing the workspace while queued work uses it
    asc::device_buffer doomed(static_cast<std::size_t>(ws));
    std::uint64_t ws3 = 0;
    aclOpExecutor* ex3 = nullptr;
    REQUIRE(aclnnQuantMaxGetWorkspaceSize(x.t.get(), s.t.get(), mode, 34, y.t.get(), a.t.get(), &ws3, &ex3) == 0);
    CHECK(aclnnQuantMax(doomed.data(), ws3, ex3, stream) == 0);
    doomed = asc::device_buffer();
    CHECK_THAT(fake_cann::take_violations().at(0), Catch::Contains("still uses"));
    CHECK(aclrtSynchronizeStream(stream) == 0);
    CHECK_THAT(fake_cann::take_violations().at(0), Catch::Contains("freed"));
    // a memset is queued in stream order: it runs at the synchronize, after what came before it
    asc::device_buffer target(64);
    std::vector<std::uint8_t> ones(64, 1);
    target.upload(ones.data(), ones.size());
    CHECK(aclrtMemsetAsync(target.data(), 64, 0, 65, stream) == 161002);  // count > maxCount
    REQUIRE(aclrtMemsetAsync(target.data(), 64, 0, 64, stream) == 0);
    CHECK(fake_cann::state().queued_ops == 1);
    CHECK(aclrtSynchronizeStream(stream) == 0);
    std::vector<std::uint8_t> got(64, 9);
    target.download(got.data(), got.size());
    CHECK(got == std::vector<std::uint8_t>(64, 0));
    REQUIRE(aclrtDestroyStream(stream) == 0);
    REQUIRE(aclrtResetDevice(0) == 0);
  }
  check_clean(f.baseline);
}

TEST_CASE("fake CANN rejects wrong dtype ids round strings groupSize packing transposed or unpadded MX scale layouts",
          "[ascend-fake][fake]") {
  fixture f;
  {
    asc::acl_session session;
    std::uint64_t ws = 0;
    aclOpExecutor* ex = nullptr;
    raw_tensor x(be::float32, {2, 64}), s(be::float32, {1});
    raw_tensor y36(format_id::float8_e4m3fn, {2, 64}), y34(format_id::hifloat8, {2, 64});
    // dstType 35 (E5M2) for an E4M3FN y
    CHECK(aclnnAscendQuantV3GetWorkspaceSize(x.t.get(), s.t.get(), nullptr, false, "round", 35, -1, y36.t.get(), &ws, &ex) == 161002);
    CHECK_THAT(aclGetRecentErrMsg(), Catch::Contains("dstType is 35"));
    // "rint" is not a HIFLOAT8 round mode; "hybrid" is not an FP8 one
    CHECK(aclnnAscendQuantV3GetWorkspaceSize(x.t.get(), s.t.get(), nullptr, false, "rint", 34, -1, y34.t.get(), &ws, &ex) == 161002);
    CHECK(aclnnAscendQuantV3GetWorkspaceSize(x.t.get(), s.t.get(), nullptr, false, "hybrid", 36, -1, y36.t.get(), &ws, &ex) == 161002);
    char rint[] = "rint";
    raw_tensor a(be::float32, {1});
    CHECK(aclnnQuantMaxGetWorkspaceSize(x.t.get(), s.t.get(), rint, 34, y34.t.get(), a.t.get(), &ws, &ex) == 161002);
    // MX scale in the plain (unpaired) layout / with the wrong axis
    raw_tensor plain(format_id::float8_e8m0fnu, {2, 2});
    CHECK(aclnnDynamicMxQuantV3GetWorkspaceSize(x.t.get(), -1, rint, 36, 32, 0, 0.0, 0.0, y36.t.get(), plain.t.get(), &ws, &ex) == 161002);
    CHECK_THAT(aclGetRecentErrMsg(), Catch::Contains("(2, 1, 2)"));
    // QuantMatmulV5 MX: x2 (n, k) transposed needs x2Scale (n, ceil(k/64), 2), not the (k/64, n, 2) layout
    raw_tensor x1(format_id::float8_e4m3fn, {2, 64}), x2(format_id::float8_e4m3fn, {4, 64});
    raw_tensor s1(format_id::float8_e8m0fnu, {2, 1, 2}), s2_kn(format_id::float8_e8m0fnu, {1, 4, 2}), s2_nk(format_id::float8_e8m0fnu, {4, 1, 2});
    raw_tensor out(be::float32, {2, 4});
    const std::int64_t mx = asc::pack_group_size(1, 1, 32);
    CHECK(aclnnQuantMatmulV5GetWorkspaceSize(x1.t.get(), x2.t.get(), s1.t.get(), s2_kn.t.get(), nullptr, nullptr, nullptr, nullptr,
                                             nullptr, false, true, mx, out.t.get(), &ws, &ex) == 161002);
    CHECK_THAT(aclGetRecentErrMsg(), Catch::Contains("x2Scale must have shape (4, 1, 2)"));
    // groupSize packed in the wrong order (gsM | gsN << 16 | gsK << 32)
    const std::int64_t swapped = 1 | (1LL << 16) | (32LL << 32);
    CHECK(aclnnQuantMatmulV5GetWorkspaceSize(x1.t.get(), x2.t.get(), s1.t.get(), s2_nk.t.get(), nullptr, nullptr, nullptr, nullptr,
                                             nullptr, false, true, swapped, out.t.get(), &ws, &ex) == 161002);
    CHECK_THAT(aclGetRecentErrMsg(), Catch::Contains("4295032864"));
    // aclnnInplaceCopy has no FLOAT8_E8M0 (the shim moves scale bytes as UINT8)
    raw_tensor e8a(format_id::float8_e8m0fnu, {8}), e8b(format_id::float8_e8m0fnu, {8});
    CHECK(aclnnInplaceCopyGetWorkspaceSize(e8a.t.get(), e8b.t.get(), &ws, &ex) == 161002);
    CHECK_THAT(aclGetRecentErrMsg(), Catch::Contains("UINT8"));
    // and the right calls are accepted (then run, so no executor is left pending)
    aclrtStream stream = nullptr;
    REQUIRE(aclrtSetDevice(0) == 0);
    REQUIRE(aclrtCreateStream(&stream) == 0);
    REQUIRE(aclnnQuantMatmulV5GetWorkspaceSize(x1.t.get(), x2.t.get(), s1.t.get(), s2_nk.t.get(), nullptr, nullptr, nullptr, nullptr,
                                               nullptr, false, true, mx, out.t.get(), &ws, &ex) == 0);
    asc::device_buffer wbuf(static_cast<std::size_t>(ws));
    CHECK(aclnnQuantMatmulV5(wbuf.data(), ws, ex, stream) == 0);
    // a strided UINT8 copy: every other byte of src into a contiguous dst
    raw_tensor dst(ACL_UINT8, {4}), src(ACL_UINT8, {4}, {2}, {8});
    std::vector<std::uint8_t> bytes = {10, 11, 12, 13, 14, 15, 16, 17};
    src.buf.upload(bytes.data(), bytes.size());
    REQUIRE(aclnnInplaceCopyGetWorkspaceSize(dst.t.get(), src.t.get(), &ws, &ex) == 0);
    CHECK(aclnnInplaceCopy(nullptr, ws, ex, stream) == 0);
    CHECK(aclrtSynchronizeStream(stream) == 0);
    std::vector<std::uint8_t> got(4);
    dst.buf.download(got.data(), got.size());
    CHECK(got == std::vector<std::uint8_t>{10, 12, 14, 16});
    // the fake's reading of a paired GEMM scale rejects a non-zero pad byte (the shim zeroes it)
    raw_tensor x1o(format_id::float8_e4m3fn, {2, 96}), x2o(format_id::float8_e4m3fn, {4, 96});
    raw_tensor s1o(format_id::float8_e8m0fnu, {2, 2, 2}), s2o(format_id::float8_e8m0fnu, {4, 2, 2}), outo(be::float32, {2, 4});
    std::vector<std::uint8_t> pads(16, 127);  // pad bytes 127, as CATLASS pads
    s1o.buf.upload(pads.data(), 8);
    s2o.buf.upload(pads.data(), 16);
    REQUIRE(aclnnQuantMatmulV5GetWorkspaceSize(x1o.t.get(), x2o.t.get(), s1o.t.get(), s2o.t.get(), nullptr, nullptr, nullptr, nullptr,
                                               nullptr, false, true, mx, outo.t.get(), &ws, &ex) == 0);
    asc::device_buffer wbuf2(static_cast<std::size_t>(ws));
    CHECK(aclnnQuantMatmulV5(wbuf2.data(), ws, ex, stream) == 0);
    CHECK(aclrtSynchronizeStream(stream) != 0);
    CHECK_THAT(aclGetRecentErrMsg(), Catch::Contains("padding byte"));
    REQUIRE(aclrtDestroyStream(stream) == 0);
    REQUIRE(aclrtResetDevice(0) == 0);
    // a host pointer handed over as device memory
    std::vector<float> host(8);
    const std::vector<std::int64_t> d = {8}, st = {1};
    aclTensor* h = aclCreateTensor(d.data(), 1, ACL_FLOAT, st.data(), 0, ACL_FORMAT_ND, d.data(), 1, host.data());
    const auto v = fake_cann::take_violations();
    CHECK(std::any_of(v.begin(), v.end(), [](const std::string& msg) { return msg.find("host pointer") != std::string::npos; }));
    aclDestroyTensor(h);
  }
  check_clean(f.baseline);
}
