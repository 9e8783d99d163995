// The Ascend shim's whole call path against the test-only fake CANN (fake_cann.hpp). No NPU and no
// CANN toolkit are involved: these tests prove that the shim calls the documented aclnn functions
// with the documented arguments (dtype ids, shapes, strides, round strings, groupSize, 1 / scale,
// workspace sizes, the two-phase order, stream ordering, RAII) and that, where the fake can compute
// the documented result with the CPU backend, buffers written by one backend read back identically
// through the other. They cannot prove the hardware matches the documentation (docs/backends.md).
#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <minifloat/backend/ascend/ascend.hpp>
#include <minifloat/backend/cpu.hpp>
#include <minifloat/all.hpp>

#include "fake_cann.hpp"
#include "support/test_data.hpp"

using namespace minifloat;
namespace be = minifloat::backend;
namespace asc = minifloat::backend::ascend;

namespace {

std::vector<float> random_values(std::size_t n, unsigned seed, float spread = 4.0f) {
  return test_support::spread_normal(n, seed, spread);
}

using test_support::to_bf16_bits;

std::size_t bytes_of(be::dtype t, std::initializer_list<std::int64_t> shape) {
  std::vector<std::int64_t> d(shape);
  std::int64_t lead = 1;
  for (std::size_t i = 0; i + 1 < d.size(); ++i) lead *= d[i];
  const std::int64_t last = d.back();
  if (be::storage_bits(t) == 4) return static_cast<std::size_t>(lead * ((last + 1) / 2));
  return static_cast<std::size_t>(lead * last) * static_cast<std::size_t>(be::storage_bits(t) / 8);
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

dev_tensor dev_alloc(be::dtype t, std::initializer_list<std::int64_t> shape) {
  dev_tensor d{asc::device_buffer(std::max<std::size_t>(bytes_of(t, shape), 1)), {}};
  d.view = d.buf.view(t, shape);
  return d;
}

template <class T>
dev_tensor dev_upload(const std::vector<T>& host, be::dtype t, std::initializer_list<std::int64_t> shape) {
  dev_tensor d = dev_alloc(t, shape);
  REQUIRE(host.size() * sizeof(T) == bytes_of(t, shape));
  d.buf.upload(host.data(), host.size() * sizeof(T));
  return d;
}

/// Process setup for one test: aclInit, the backend (stream, device), a clean journal. On scope
/// exit the fake must report no protocol violation, no leaked tensor / list / executor / buffer /
/// stream, and balanced device and init references.
struct fixture {
  fixture() {
    fake_cann::reset();
    baseline = fake_cann::state();
  }
  ~fixture() = default;
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

using dims = std::vector<std::int64_t>;

}  // namespace

TEST_CASE("ascend tables: aclDataType ids round-mode names groupSize packing scaleAlg", "[ascend-fake]") {
  STATIC_REQUIRE(asc::acl_dtype_number(be::dtype::hifloat8) == 34);
  STATIC_REQUIRE(asc::acl_dtype_number(be::dtype::float8_e5m2) == 35);
  STATIC_REQUIRE(asc::acl_dtype_number(be::dtype::float8_e4m3fn) == 36);
  STATIC_REQUIRE(asc::acl_dtype_number(be::dtype::float8_e8m0fnu) == 37);
  STATIC_REQUIRE(asc::acl_dtype_number(be::dtype::float4_e2m1fn_x2) == 40);
  STATIC_REQUIRE(asc::acl_dtype_number(be::dtype::bfloat16) == 27);
  STATIC_REQUIRE(asc::pack_group_size(1, 1, 32) == 4295032864);
  CHECK(asc::round_name(be::round_mode::nearest, be::dtype::hifloat8) == "round");
  CHECK(asc::round_name(be::round_mode::nearest, be::dtype::float8_e4m3fn) == "rint");
  CHECK(asc::round_name(be::round_mode::hybrid, be::dtype::hifloat8) == "hybrid");
  CHECK(asc::round_name(be::round_mode::downward, be::dtype::float4_e2m1fn_x2) == "floor");
  CHECK_FALSE(asc::round_documented(asc::rounding_op::ascend_quant_v3, be::dtype::float8_e4m3fn, "rint"));
  CHECK(asc::round_documented(asc::rounding_op::quant_max, be::dtype::float8_e4m3fn, "rint"));
  CHECK(asc::scale_alg(mx_scale_rule::rceil, be::dtype::float8_e4m3fn) == 1);
  CHECK_FALSE(asc::scale_alg(mx_scale_rule::rceil, be::dtype::float4_e2m1fn_x2));
  CHECK(asc::soc_is_950("Ascend950PR_9599"));
  CHECK_FALSE(asc::soc_is_950("Ascend910B1"));
}

TEST_CASE("ascend quantize -> aclnnAscendQuantV3: 1/s in x's dtype dstType round axis - bytes equal the CPU backend",
          "[ascend-fake]") {
  fixture f;
  {
    asc::acl_session session;
    asc::ascend_backend npu;
    be::cpu_backend cpu;
    const std::int64_t rows = 4, cols = 40;
    const auto x = random_values(static_cast<std::size_t>(rows * cols), 3);
    struct variant {
      be::dtype x_type, y_type;
      granularity gran;
      be::round_mode round;
      int dst;
      const char* mode;
    };
    const variant variants[] = {
        {be::dtype::float32, be::dtype::hifloat8, granularity::tensor, be::round_mode::nearest, 34, "round"},
        {be::dtype::float32, be::dtype::float8_e4m3fn, granularity::token, be::round_mode::nearest_away, 36, "round"},
        {be::dtype::bfloat16, be::dtype::float8_e5m2, granularity::channel, be::round_mode::nearest_away, 35, "round"},
        {be::dtype::bfloat16, be::dtype::hifloat8, granularity::token, be::round_mode::nearest_away, 34, "round"},
    };
    std::size_t nth = 0;
    for (const auto& v : variants) {
      CAPTURE(be::to_string(v.x_type), be::to_string(v.y_type), to_string(v.gran));
      // power-of-two scales: x * (1 / s) and x / s round the same exact value (bit-exact backends)
      std::vector<float> scales(v.gran == granularity::tensor ? 1 : static_cast<std::size_t>(rows));
      for (std::size_t i = 0; i < scales.size(); ++i) scales[i] = std::ldexp(1.0f, static_cast<int>(i) - 3);
      const auto xb = to_bf16_bits(x);
      std::vector<float> x_host = x;
      if (v.x_type == be::dtype::bfloat16)
        for (std::size_t i = 0; i < x.size(); ++i) x_host[i] = static_cast<float>(bfloat16::from_bits(xb[i]));
      dev_tensor xd = v.x_type == be::dtype::float32 ? dev_upload(x, v.x_type, {rows, cols}) : dev_upload(xb, v.x_type, {rows, cols});
      dev_tensor yd = dev_alloc(v.y_type, {rows, cols});
      const auto sv = be::make_tensor(scales.data(), be::dtype::float32, {static_cast<std::int64_t>(scales.size())});
      be::quantize_options o;
      o.gran = v.gran, o.round = v.round;
      npu.quantize(xd.view, sv, yd.view, o);
      npu.synchronize();
      std::vector<std::uint8_t> ref(static_cast<std::size_t>(rows * cols));
      cpu.quantize(be::make_tensor(x_host.data(), be::dtype::float32, {rows, cols}), sv,
                   be::make_tensor(ref.data(), v.y_type, {rows, cols}), o);
      CHECK(yd.get<std::uint8_t>() == ref);

      const auto p1 = check_two_phase("aclnnAscendQuantV3", nth++);
      CHECK(p1.ints.at("dstType") == v.dst);
      CHECK(p1.strings.at("roundMode") == v.mode);
      CHECK(p1.ints.at("sqrtMode") == 0);
      CHECK(p1.ints.at("axis") == (v.gran == granularity::tensor ? -1 : -2));
      CHECK(p1.tensors.at("x").dims == dims{rows, cols});
      CHECK(p1.tensors.at("x").dtype == (v.x_type == be::dtype::float32 ? 0 : 27));
      CHECK(p1.tensors.at("y").dtype == v.dst);
      CHECK(p1.tensors.at("x").format == 2);  // ND
      CHECK_FALSE(p1.tensors.at("offset").present);
      const auto& st = p1.tensors.at("scale");
      CHECK(st.dtype == p1.tensors.at("x").dtype);  // the op wants the scale in x's dtype
      CHECK(st.dims == dims{static_cast<std::int64_t>(scales.size())});
      for (std::size_t i = 0; i < scales.size(); ++i) {  // the op MULTIPLIES: it must get 1 / s
        const float passed = v.x_type == be::dtype::float32
                                 ? read_device<float>(st.data, i)
                                 : static_cast<float>(bfloat16::from_bits(read_device<std::uint16_t>(st.data, i)));
        CHECK(passed == 1.0f / scales[i]);
      }
    }
  }
  check_clean(f.baseline);
}

TEST_CASE("ascend quantize: FP8 round-to-even is refused HiF8 hybrid goes out as hybrid", "[ascend-fake]") {
  fixture f;
  {
    asc::acl_session session;
    asc::ascend_backend npu;
    // FP8 with AscendQuantV3 on the 950: only "round" (ties away).
    const auto r = be::request::for_quantize(be::dtype::float32, be::dtype::float8_e4m3fn, {});
    CHECK_FALSE(npu.supports(r));
    CHECK_THAT(npu.supports(r).reason, Catch::Contains("only \"round\""));
    CHECK(be::cpu_backend().supports(r));  // the CPU backend has RNE
    // Hybrid: recorded by the fake, not emulated, so the error surfaces at synchronize() with the
    // runtime's own message.
    std::vector<float> x(64, 3.0f);
    float s = 1.0f;
    dev_tensor xd = dev_upload(x, be::dtype::float32, {2, 32});
    dev_tensor yd = dev_alloc(be::dtype::hifloat8, {2, 32});
    be::quantize_options o;
    o.round = be::round_mode::hybrid;
    CHECK_FALSE(be::cpu_backend().supports(be::request::for_quantize(be::dtype::float32, be::dtype::hifloat8, o)));
    npu.quantize(xd.view, be::make_tensor(&s, be::dtype::float32, {1}), yd.view, o);
    CHECK(fake_cann::calls_named("aclnnAscendQuantV3GetWorkspaceSize").at(0).strings.at("roundMode") == "hybrid");
    try {
      npu.synchronize();
      FAIL("expected backend_error");
    } catch (const be::backend_error& e) {
      CHECK(e.api() == "aclrtSynchronizeStream");
      CHECK_THAT(e.what(), Catch::Contains("hybrid") && Catch::Contains("not emulated"));
    }
    // The backend stays usable after an asynchronous failure.
    npu.quantize(xd.view, be::make_tensor(&s, be::dtype::float32, {1}), yd.view, {});
    npu.synchronize();
    CHECK(yd.get<std::uint8_t>() == std::vector<std::uint8_t>(64, narrow<hifloat8>(3.0f).bits()));
  }
  check_clean(f.baseline);
}

TEST_CASE("ascend dynamic_quantize -> aclnnDynamicQuantV4: quantMode dstTypeMax scale shapes", "[ascend-fake]") {
  fixture f;
  {
    asc::acl_session session;
    asc::ascend_backend npu;
    be::cpu_backend cpu;
    const std::int64_t rows = 3, cols = 48;
    const auto xb = to_bf16_bits(random_values(static_cast<std::size_t>(rows * cols), 8));
    struct variant {
      be::dtype y;
      granularity gran;
      float dst_max;
      const char* mode;
    };
    const variant variants[] = {{be::dtype::hifloat8, granularity::token, 15.0f, "pertoken"},
                                {be::dtype::float8_e4m3fn, granularity::tensor, 0.0f, "pertensor"},
                                {be::dtype::float8_e5m2, granularity::token, 0.0f, "pertoken"}};
    std::size_t nth = 0;
    for (const auto& v : variants) {
      CAPTURE(be::to_string(v.y), v.mode);
      dev_tensor xd = dev_upload(xb, be::dtype::bfloat16, {rows, cols});
      dev_tensor yd = dev_alloc(v.y, {rows, cols});
      const std::int64_t ns = v.gran == granularity::tensor ? 1 : rows;
      dev_tensor sd = dev_alloc(be::dtype::float32, {ns});
      be::dynamic_quantize_options o;
      o.gran = v.gran, o.dst_max = v.dst_max;
      npu.dynamic_quantize(xd.view, yd.view, sd.view, o);
      npu.synchronize();
      std::vector<std::uint8_t> ref(static_cast<std::size_t>(rows * cols));
      std::vector<float> ref_s(static_cast<std::size_t>(ns));
      cpu.dynamic_quantize(be::make_tensor(xb.data(), be::dtype::bfloat16, {rows, cols}), be::make_tensor(ref.data(), v.y, {rows, cols}),
                           be::make_tensor(ref_s.data(), be::dtype::float32, {ns}), o);
      CHECK(yd.get<std::uint8_t>() == ref);
      CHECK(sd.get<float>() == ref_s);
      const auto p1 = check_two_phase("aclnnDynamicQuantV4", nth++);
      CHECK(p1.strings.at("quantMode") == v.mode);
      CHECK(p1.reals.at("dstTypeMax") == v.dst_max);
      CHECK(p1.ints.at("dstType") == asc::acl_dtype_number(v.y));
      CHECK(p1.ints.at("isSymmetrical") == 1);
      CHECK(p1.tensors.at("scaleOut").dims == dims{ns});
      CHECK(p1.tensors.at("scaleOut").dtype == 0);
      CHECK_FALSE(p1.tensors.at("smoothScalesOptional").present);
      CHECK_FALSE(p1.tensors.at("offsetOut").present);
    }
    // float32 x is not an aclnnDynamicQuantV4 input.
    CHECK_THAT(npu.supports(be::request::for_dynamic_quantize(be::dtype::float32, be::dtype::hifloat8, {})).reason,
               Catch::Contains("FLOAT16 or BFLOAT16"));
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
    for (const auto y_type : {be::dtype::hifloat8, be::dtype::float8_e5m2, be::dtype::float8_e4m3fn}) {
      for (const auto x_type : {be::dtype::float32, be::dtype::bfloat16}) {
        CAPTURE(be::to_string(y_type), be::to_string(x_type));
        float s = 0.0625f;
        const auto xb = to_bf16_bits(x);
        dev_tensor xd = x_type == be::dtype::float32 ? dev_upload(x, x_type, {2, n / 2}) : dev_upload(xb, x_type, {2, n / 2});
        dev_tensor yd = dev_alloc(y_type, {2, n / 2});
        dev_tensor ad = dev_alloc(x_type, {1});
        npu.quantize_with_amax(xd.view, be::make_tensor(&s, be::dtype::float32, {1}), yd.view, ad.view, {});
        npu.synchronize();
        std::vector<std::uint8_t> ref(static_cast<std::size_t>(n));
        std::vector<std::uint8_t> ref_amax(4);
        const void* xh = x_type == be::dtype::float32 ? static_cast<const void*>(x.data()) : static_cast<const void*>(xb.data());
        cpu.quantize_with_amax(be::make_tensor(xh, x_type, {2, n / 2}), be::make_tensor(&s, be::dtype::float32, {1}),
                               be::make_tensor(ref.data(), y_type, {2, n / 2}), be::make_tensor(ref_amax.data(), x_type, {1}), {});
        CHECK(yd.get<std::uint8_t>() == ref);
        const auto amax = ad.get<std::uint8_t>();
        CHECK(std::equal(amax.begin(), amax.begin() + (x_type == be::dtype::float32 ? 4 : 2), ref_amax.begin()));
        const auto p1 = check_two_phase("aclnnQuantMax", nth++);
        CHECK(p1.strings.at("roundMode") == (y_type == be::dtype::hifloat8 ? "round" : "rint"));
        CHECK(p1.ints.at("dstType") == asc::acl_dtype_number(y_type));
        CHECK(p1.tensors.at("scale").dtype == 0);
        CHECK(p1.tensors.at("scale").dims == dims{1});
        CHECK(read_device<float>(p1.tensors.at("scale").data) == 16.0f);  // 1 / 0.0625
        CHECK(p1.tensors.at("amax").dtype == asc::acl_dtype_number(x_type));
      }
    }
  }
  check_clean(f.baseline);
}

TEST_CASE("ascend mx_quantize -> aclnnDynamicMxQuantV3: the CANN doc vector through both backends", "[ascend-fake][layout]") {
  fixture f;
  {
    asc::acl_session session;
    asc::ascend_backend npu;
    be::cpu_backend cpu;
    // bf16 [0, 8, 64, 512], axis -1, FLOAT8_E4M3FN, "rint", block 32 -> y [0, 72, 96, 120], mxscale [128, 0].
    const std::vector<std::uint16_t> x = {0x0000, 0x4100, 0x4280, 0x4400};
    dev_tensor xd = dev_upload(x, be::dtype::bfloat16, {1, 4});
    dev_tensor yd = dev_alloc(be::dtype::float8_e4m3fn, {1, 4});
    dev_tensor sd = dev_alloc(be::dtype::float8_e8m0fnu, {1, 1, 2});
    npu.mx_quantize(xd.view, yd.view, sd.view, {});
    npu.synchronize();
    CHECK(yd.get<std::uint8_t>() == std::vector<std::uint8_t>{0, 72, 96, 120});
    CHECK(sd.get<std::uint8_t>() == std::vector<std::uint8_t>{128, 0});
    std::vector<std::uint8_t> y(4), sc(2);
    cpu.mx_quantize(be::make_tensor(x.data(), be::dtype::bfloat16, {1, 4}), be::make_tensor(y.data(), be::dtype::float8_e4m3fn, {1, 4}),
                    be::make_tensor(sc.data(), be::dtype::float8_e8m0fnu, {1, 1, 2}), {});
    CHECK(y == std::vector<std::uint8_t>{0, 72, 96, 120});
    CHECK(sc == std::vector<std::uint8_t>{128, 0});
    const auto p1 = check_two_phase("aclnnDynamicMxQuantV3");
    CHECK(p1.tensors.at("x").dtype == 27);
    CHECK(p1.ints.at("axis") == -1);
    CHECK(p1.ints.at("dstType") == 36);
    CHECK(p1.ints.at("blocksize") == 32);
    CHECK(p1.ints.at("scaleAlg") == 0);
    CHECK(p1.strings.at("roundMode") == "rint");
    CHECK(p1.reals.at("dstTypeMax") == 0.0);
    CHECK(p1.reals.at("maxLowBound") == 0.0);
    CHECK(p1.tensors.at("mxscaleOut").dtype == 37);
    CHECK(p1.tensors.at("mxscaleOut").dims == dims{1, 1, 2});
  }
  check_clean(f.baseline);
}

TEST_CASE("ascend mx_quantize: axis -1 / -2 FP8 / FP4 floor / rceil -> scaleAlg 0 / 1 - paired scales equal the CPU's",
          "[ascend-fake][layout]") {
  fixture f;
  {
    asc::acl_session session;
    asc::ascend_backend npu;
    be::cpu_backend cpu;
    const std::int64_t rows = 66, cols = 96;
    const auto x = random_values(static_cast<std::size_t>(rows * cols), 17);
    std::size_t nth = 0;
    for (const auto t : {be::dtype::float8_e4m3fn, be::dtype::float8_e5m2, be::dtype::float4_e2m1fn_x2}) {
      for (const int axis : {-1, -2}) {
        for (const auto rule : {mx_scale_rule::floor, mx_scale_rule::rceil}) {
          if (rule == mx_scale_rule::rceil && t == be::dtype::float4_e2m1fn_x2) {
            CHECK_FALSE(npu.supports(be::request::for_mx_quantize(be::dtype::float32, t, {.axis = axis, .rule = rule})));
            continue;
          }
          CAPTURE(be::to_string(t), axis, to_string(rule));
          const auto xv = be::make_tensor(x.data(), be::dtype::float32, {rows, cols});
          const auto sshape = be::detail::mx_paired_scale_shape(xv, axis);
          dev_tensor xd = dev_upload(x, be::dtype::float32, {rows, cols});
          dev_tensor yd = dev_alloc(t, {rows, cols});
          const auto sbytes = static_cast<std::size_t>(sshape[0] * sshape[1] * sshape[2]);
          asc::device_buffer sbuf(sbytes);
          const auto sview = be::make_tensor(sbuf.data(), be::dtype::float8_e8m0fnu, sshape, be::ascend_device(0));
          npu.mx_quantize(xd.view, yd.view, sview, {.axis = axis, .rule = rule});
          npu.synchronize();
          std::vector<std::uint8_t> ref(bytes_of(t, {rows, cols})), ref_s(sbytes), got_s(sbytes);
          cpu.mx_quantize(xv, be::make_tensor(ref.data(), t, {rows, cols}), be::make_tensor(ref_s.data(), be::dtype::float8_e8m0fnu, sshape),
                          {.axis = axis, .rule = rule});
          sbuf.download(got_s.data(), sbytes);
          CHECK(yd.get<std::uint8_t>() == ref);
          CHECK(got_s == ref_s);
          const auto p1 = check_two_phase("aclnnDynamicMxQuantV3", nth++);
          CHECK(p1.ints.at("axis") == axis);
          CHECK(p1.ints.at("dstType") == asc::acl_dtype_number(t));
          CHECK(p1.ints.at("scaleAlg") == (rule == mx_scale_rule::floor ? 0 : 1));
          CHECK(p1.tensors.at("mxscaleOut").dims == sshape);
          CHECK(p1.tensors.at("yOut").dims == dims{rows, cols});  // FP4 in element units
        }
      }
    }
    // FP4 rounding "floor" exists on the 950 (the CPU backend has no MX floor): recorded, refused by the CPU.
    CHECK(npu.supports(be::request::for_mx_quantize(be::dtype::float32, be::dtype::float4_e2m1fn_x2,
                                                    {.round = be::round_mode::downward})));
    CHECK_FALSE(cpu.supports(be::request::for_mx_quantize(be::dtype::float32, be::dtype::float4_e2m1fn_x2,
                                                         {.round = be::round_mode::downward})));
    // FLOAT x with a quantized axis shorter than 32 is outside the op's documented range.
    std::vector<float> small(16, 1.0f);
    dev_tensor sd = dev_upload(small, be::dtype::float32, {1, 16});
    dev_tensor sy = dev_alloc(be::dtype::float8_e4m3fn, {1, 16});
    dev_tensor ss = dev_alloc(be::dtype::float8_e8m0fnu, {1, 1, 2});
    CHECK_THROWS_WITH(npu.mx_quantize(sd.view, sy.view, ss.view, {}), Catch::Contains("at least 32"));
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
    for (const auto t : {be::dtype::hifloat8, be::dtype::float8_e4m3fn, be::dtype::float4_e2m1fn_x2}) {
      for (const auto g : {granularity::tensor, granularity::token}) {
        CAPTURE(be::to_string(t), to_string(g));
        // codes + scales made by the CPU backend, read back through the NPU path
        std::vector<std::uint8_t> codes(bytes_of(t, {rows, cols}));
        std::vector<float> scales(g == granularity::tensor ? 1 : static_cast<std::size_t>(rows));
        cpu.dynamic_quantize(be::make_tensor(x.data(), be::dtype::float32, {rows, cols}), be::make_tensor(codes.data(), t, {rows, cols}),
                             be::make_tensor(scales.data(), be::dtype::float32, {static_cast<std::int64_t>(scales.size())}), {.gran = g});
        dev_tensor cd = dev_upload(codes, t, {rows, cols});
        dev_tensor sd = dev_upload(scales, be::dtype::float32, {static_cast<std::int64_t>(scales.size())});
        dev_tensor od = dev_alloc(be::dtype::float32, {rows, cols});
        npu.dequantize(cd.view, sd.view, od.view, {.gran = g});
        npu.synchronize();
        std::vector<float> ref(static_cast<std::size_t>(rows * cols));
        cpu.dequantize(be::make_tensor(codes.data(), t, {rows, cols}),
                       be::make_tensor(scales.data(), be::dtype::float32, {static_cast<std::int64_t>(scales.size())}),
                       be::make_tensor(ref.data(), be::dtype::float32, {rows, cols}), {.gran = g});
        const auto got = od.get<float>();
        CHECK(std::equal(got.begin(), got.end(), ref.begin(), ref.end(),
                         [](float a, float b) { return std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b); }));
        const auto cast = check_two_phase("aclnnCast", nth);
        const auto mul = check_two_phase("aclnnMul", nth);
        ++nth;
        CHECK(cast.ints.at("dtype") == 0);
        CHECK(cast.tensors.at("self").dtype == asc::acl_dtype_number(t));
        CHECK(cast.tensors.at("out").dims == dims{rows, cols});
        CHECK(cast.workspace_size == 0);
        CHECK(mul.tensors.at("self").data == cast.tensors.at("out").data);  // Mul reads Cast's output
        CHECK(mul.tensors.at("other").dims == (g == granularity::tensor ? dims{1} : dims{rows, 1}));
        CHECK(mul.tensors.at("out").data == reinterpret_cast<std::uintptr_t>(od.buf.data()));
      }
    }
    CHECK_THAT(npu.supports(be::request::for_dequantize(be::dtype::float8_e4m3fn, be::dtype::float32, {.gran = granularity::mx})).reason,
               Catch::Contains("AntiQuant"));
  }
  check_clean(f.baseline);
}

namespace {

/// A GEMM operand made on the host (CPU backend / library), the same bytes on the device.
struct operand_pair {
  std::vector<std::uint8_t> codes, mx;
  std::vector<float> scales;
  be::gemm_operand host, device;
  dev_tensor dcodes, dscale;
};

operand_pair make_pair_operand(be::cpu_backend& cpu, const std::vector<float>& x, std::int64_t rows, std::int64_t cols,
                               be::dtype t, granularity g, std::size_t br, std::size_t bc, int mx_axis,
                               bool per_column = false) {
  operand_pair o;
  o.codes.resize(bytes_of(t, {rows, cols}));
  o.host.gran = g, o.host.block_rows = br, o.host.block_cols = bc;
  const auto xv = be::make_tensor(x.data(), be::dtype::float32, {rows, cols});
  o.host.data = be::make_tensor(o.codes.data(), t, {rows, cols});
  std::vector<std::int64_t> sshape;
  be::dtype st = be::dtype::float32;
  if (g == granularity::mx) {
    sshape = be::detail::mx_paired_scale_shape(xv, mx_axis);
    o.mx.resize(static_cast<std::size_t>(sshape[0] * sshape[1] * sshape[2]));
    o.host.scale = be::make_tensor(o.mx.data(), be::dtype::float8_e8m0fnu, sshape);
    cpu.mx_quantize(xv, o.host.data, o.host.scale, {.axis = mx_axis});
    st = be::dtype::float8_e8m0fnu;
  } else {
    quant_scheme s;
    s.format = *be::format_of(t), s.rule = scale_rule::max;
    s.gran = per_column ? granularity::block : g == granularity::channel ? granularity::channel : g;
    s.block_rows = per_column ? static_cast<std::size_t>(rows) : br, s.block_cols = per_column ? 1 : bc;
    const auto q = quantize(matrix_view<const float>(x, static_cast<std::size_t>(rows), static_cast<std::size_t>(cols)), s);
    o.codes.assign(q.codes().begin(), q.codes().end());
    o.scales.assign(q.scales().begin(), q.scales().end());
    o.host.data = be::make_tensor(o.codes.data(), t, {rows, cols});
    if (g == granularity::block) sshape = {static_cast<std::int64_t>(q.view().scale_grid_rows()), static_cast<std::int64_t>(q.view().scale_grid_cols())};
    else sshape = {static_cast<std::int64_t>(o.scales.size())};
    o.host.scale = be::make_tensor(o.scales.data(), be::dtype::float32, sshape);
  }
  o.device = o.host;
  o.dcodes = dev_upload(o.codes, t, {rows, cols});
  o.device.data = o.dcodes.view;
  o.dscale.buf = asc::device_buffer(std::max<std::size_t>(o.host.scale.byte_extent(), 1));
  o.dscale.buf.upload(o.host.scale.data, o.host.scale.byte_extent());
  o.dscale.view = be::make_tensor(o.dscale.buf.data(), st, sshape, be::ascend_device(0));
  o.device.scale = o.dscale.view;
  return o;
}

}  // namespace

TEST_CASE("ascend gemm -> aclnnQuantMatmulV5: scale shapes transposeX2 groupSize per mode - output equals the CPU backend",
          "[ascend-fake]") {
  fixture f;
  {
    asc::acl_session session;
    asc::ascend_backend npu;
    be::cpu_backend cpu;
    struct mode {
      const char* name;
      be::dtype ta, tb;
      granularity ga, gb;
      std::size_t abr, abc;
      gemm_layout layout;
      std::int64_t group_size;
      bool bias;
    };
    const mode modes[] = {
        {"T-T hif8", be::dtype::hifloat8, be::dtype::hifloat8, granularity::tensor, granularity::tensor, 1, 1, gemm_layout::kn, 0, true},
        {"K-C e4m3 x e5m2 nk", be::dtype::float8_e4m3fn, be::dtype::float8_e5m2, granularity::token, granularity::channel, 1, 1, gemm_layout::nk, 0, true},
        {"K-C hif8 kn", be::dtype::hifloat8, be::dtype::hifloat8, granularity::token, granularity::channel, 1, 1, gemm_layout::kn, 0, false},
        {"G-B e4m3 nk", be::dtype::float8_e4m3fn, be::dtype::float8_e4m3fn, granularity::block, granularity::block, 1, 128, gemm_layout::nk, 4303356032, false},
        {"B-B hif8 kn", be::dtype::hifloat8, be::dtype::hifloat8, granularity::block, granularity::block, 128, 128, gemm_layout::kn, 549764202624, false},
        {"mx e4m3 kn", be::dtype::float8_e4m3fn, be::dtype::float8_e4m3fn, granularity::mx, granularity::mx, 1, 32, gemm_layout::kn, 4295032864, true},
        {"mx e5m2 nk", be::dtype::float8_e5m2, be::dtype::float8_e4m3fn, granularity::mx, granularity::mx, 1, 32, gemm_layout::nk, 4295032864, false},
        {"mx fp4 nk", be::dtype::float4_e2m1fn_x2, be::dtype::float4_e2m1fn_x2, granularity::mx, granularity::mx, 1, 32, gemm_layout::nk, 4295032864, true},
    };
    const std::int64_t m = 3, k = 256, n = 18;
    const auto xa = random_values(static_cast<std::size_t>(m * k), 5);
    const auto xb = random_values(static_cast<std::size_t>(k * n), 6);
    std::size_t nth = 0;
    for (const auto& md : modes) {
      for (const auto out_t : {be::dtype::float32, be::dtype::bfloat16}) {
        CAPTURE(md.name, be::to_string(out_t));
        const bool kn = md.layout == gemm_layout::kn;
        std::vector<float> bt(xb.size());
        for (std::int64_t i = 0; i < k; ++i)
          for (std::int64_t j = 0; j < n; ++j) bt[static_cast<std::size_t>(kn ? i * n + j : j * k + i)] = xb[static_cast<std::size_t>(i * n + j)];
        auto a = make_pair_operand(cpu, xa, m, k, md.ta, md.ga, md.abr, md.abc, -1);
        auto b = make_pair_operand(cpu, bt, kn ? k : n, kn ? n : k, md.tb, md.gb, 128, 128, kn ? -2 : -1,
                                   md.gb == granularity::channel && kn);
        std::vector<float> bias = random_values(static_cast<std::size_t>(n), 9);
        dev_tensor bias_d = dev_upload(bias, be::dtype::float32, {n});
        const std::size_t ob = out_t == be::dtype::float32 ? 4 : 2;
        dev_tensor od = dev_alloc(out_t, {m, n});
        npu.gemm(a.device, b.device, md.bias ? bias_d.view : be::tensor_view{}, od.view, {.layout = md.layout});
        npu.synchronize();
        std::vector<std::uint8_t> ref(static_cast<std::size_t>(m * n) * ob);
        cpu.gemm(a.host, b.host, md.bias ? be::make_tensor(bias.data(), be::dtype::float32, {n}) : be::tensor_view{},
                 be::make_tensor(ref.data(), out_t, {m, n}), {.layout = md.layout});
        CHECK(od.get<std::uint8_t>() == ref);
        const auto p1 = check_two_phase("aclnnQuantMatmulV5", nth++);
        CHECK(p1.ints.at("groupSize") == md.group_size);
        CHECK(p1.ints.at("transposeX1") == 0);
        CHECK(p1.ints.at("transposeX2") == (kn ? 0 : 1));
        CHECK(p1.tensors.at("x1").dims == dims{m, k});
        CHECK(p1.tensors.at("x2").dims == (kn ? dims{k, n} : dims{n, k}));
        CHECK(p1.tensors.at("x1").dtype == asc::acl_dtype_number(md.ta));
        CHECK(p1.tensors.at("x2").dtype == asc::acl_dtype_number(md.tb));
        CHECK(p1.tensors.at("out").dtype == asc::acl_dtype_number(out_t));
        CHECK(p1.tensors.at("bias").present == md.bias);
        CHECK_FALSE(p1.tensors.at("yScale").present);
        const std::int64_t kb2 = (k / 32 + 1) / 2;
        if (md.ga == granularity::mx) {
          CHECK(p1.tensors.at("x1Scale").dtype == 37);
          CHECK(p1.tensors.at("x1Scale").dims == dims{m, kb2, 2});
          CHECK(p1.tensors.at("x2Scale").dims == (kn ? dims{kb2, n, 2} : dims{n, kb2, 2}));
        } else if (md.ga == granularity::block) {
          CHECK(p1.tensors.at("x1Scale").dims == (md.abr == 1 ? dims{m, 2} : dims{1, 2}));
          CHECK(p1.tensors.at("x2Scale").dims == (kn ? dims{2, 1} : dims{1, 2}));
        } else {
          CHECK(p1.tensors.at("x1Scale").dims == (md.ga == granularity::tensor ? dims{1} : dims{m}));
          CHECK(p1.tensors.at("x2Scale").dims == (md.gb == granularity::tensor ? dims{1} : dims{n}));
          CHECK(p1.tensors.at("x1Scale").dtype == 0);
        }
      }
    }
    // Documented refusals.
    be::gemm_operand a, b;
    a.data.type = b.data.type = be::dtype::float8_e4m3fn;
    a.gran = granularity::tensor, b.gran = granularity::channel;
    CHECK_THAT(npu.supports(be::request::for_gemm(a, b, be::dtype::float32, be::bias_term::present, {})).reason,
               Catch::Contains("T-C"));
    a.data.type = b.data.type = be::dtype::float4_e2m1fn_x2;
    a.gran = b.gran = granularity::mx;
    CHECK_THAT(npu.supports(be::request::for_gemm(a, b, be::dtype::float32, be::bias_term::none, {.layout = gemm_layout::kn})).reason,
               Catch::Contains("transposeX2"));
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
    struct mode {
      const char* name;
      be::dtype t;
      granularity ga, gb;
      gemm_layout layout;
    };
    const mode modes[] = {
        {"mx e4m3 nk", be::dtype::float8_e4m3fn, granularity::mx, granularity::mx, gemm_layout::nk},
        {"mx e5m2 kn", be::dtype::float8_e5m2, granularity::mx, granularity::mx, gemm_layout::kn},
        {"K-C hif8 kn", be::dtype::hifloat8, granularity::token, granularity::channel, gemm_layout::kn},
        {"T-T e4m3 nk (per-group A scale)", be::dtype::float8_e4m3fn, granularity::tensor, granularity::tensor, gemm_layout::nk},
    };
    std::size_t nth = 0;
    for (const auto& md : modes) {
      CAPTURE(md.name);
      const bool kn = md.layout == gemm_layout::kn, mx = md.ga == granularity::mx;
      auto a = make_pair_operand(cpu, xa, m, k, md.t, mx ? granularity::mx : granularity::token, 1, 32, -1);
      std::vector<float> a_group = {0.5f, 2.0f, 0.125f};
      dev_tensor a_group_d = dev_upload(a_group, be::dtype::float32, {g});
      if (md.ga == granularity::tensor) {
        a.host.gran = a.device.gran = granularity::tensor;
        a.host.scale = be::make_tensor(a_group.data(), be::dtype::float32, {g});
        a.device.scale = a_group_d.view;
      }
      // B: g experts, stacked.
      std::vector<std::uint8_t> bcodes, bmx;
      std::vector<float> bscales;
      for (std::int64_t e = 0; e < g; ++e) {
        const auto w = random_values(static_cast<std::size_t>(k * n), 60 + static_cast<unsigned>(e));
        auto part = make_pair_operand(cpu, w, kn ? k : n, kn ? n : k, md.t, md.gb, 1, 32, kn ? -2 : -1,
                                      md.gb == granularity::channel && kn);
        bcodes.insert(bcodes.end(), part.codes.begin(), part.codes.end());
        bmx.insert(bmx.end(), part.mx.begin(), part.mx.end());
        bscales.insert(bscales.end(), part.scales.begin(), part.scales.end());
      }
      const std::int64_t kb2 = (k / 32 + 1) / 2;
      be::gemm_operand bh;
      bh.gran = md.gb;
      bh.data = be::make_tensor(bcodes.data(), md.t, kn ? dims{g, k, n} : dims{g, n, k});
      const dims sdims = mx ? (kn ? dims{g, kb2, n, 2} : dims{g, n, kb2, 2}) : md.gb == granularity::tensor ? dims{g} : dims{g, n};
      bh.scale = mx ? be::make_tensor(bmx.data(), be::dtype::float8_e8m0fnu, sdims) : be::make_tensor(bscales.data(), be::dtype::float32, sdims);
      be::gemm_operand bd = bh;
      dev_tensor bcd;
      bcd.buf = asc::device_buffer(bcodes.size());
      bcd.buf.upload(bcodes.data(), bcodes.size());
      bd.data = be::make_tensor(bcd.buf.data(), md.t, bh.data.dims(), be::ascend_device(0));
      asc::device_buffer bsd(bh.scale.byte_extent());
      bsd.upload(bh.scale.data, bh.scale.byte_extent());
      bd.scale = be::make_tensor(bsd.data(), bh.scale.type, sdims, be::ascend_device(0));
      dev_tensor od = dev_alloc(be::dtype::float32, {m, n});
      // group sizes from the host: the shim checks and uploads them
      npu.grouped_gemm(a.device, bd, be::make_tensor(sizes.data(), be::dtype::int64, {g}), {}, od.view, {.layout = md.layout});
      npu.synchronize();
      std::vector<float> ref(static_cast<std::size_t>(m * n));
      cpu.grouped_gemm(a.host, bh, be::make_tensor(sizes.data(), be::dtype::int64, {g}), {},
                       be::make_tensor(ref.data(), be::dtype::float32, {m, n}), {.layout = md.layout});
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
      CHECK(p1.lists.at("scaleOptional").at(0).dims == sdims);
      CHECK(p1.lists.at("perTokenScaleOptional").at(0).dims ==
            (mx ? dims{m, kb2, 2} : md.ga == granularity::tensor ? dims{g} : dims{m}));
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
    dev_tensor xd = dev_upload(x, be::dtype::float32, {2, 32});
    dev_tensor yd = dev_alloc(be::dtype::hifloat8, {2, 32});
    dev_tensor ad = dev_alloc(be::dtype::float32, {1});
    dev_tensor sd = dev_alloc(be::dtype::float8_e8m0fnu, {2, 1, 2});
    fake_cann::reset();
    // QuantMax (256-byte workspace) twice: one workspace allocation, reused.
    npu.quantize_with_amax(xd.view, be::make_tensor(&s, be::dtype::float32, {1}), yd.view, ad.view, {});
    npu.quantize_with_amax(xd.view, be::make_tensor(&s, be::dtype::float32, {1}), yd.view, ad.view, {});
    const auto q = fake_cann::calls_named("aclnnQuantMax");
    REQUIRE(q.size() == 2);
    CHECK(q[0].workspace == q[1].workspace);
    // DynamicMxQuant wants 2048 bytes: the 256-byte buffer is retired, not freed, while queued.
    dev_tensor y2 = dev_alloc(be::dtype::float8_e4m3fn, {2, 32});
    npu.mx_quantize(xd.view, y2.view, sd.view, {});
    CHECK(fake_cann::calls_named("aclnnDynamicMxQuantV3").at(0).workspace != q[0].workspace);
    CHECK(fake_cann::state().queued_ops == 3);
    const long frees_before_sync = static_cast<long>(fake_cann::calls_named("aclrtFree").size());
    npu.synchronize();
    CHECK(fake_cann::state().queued_ops == 0);
    // the retired workspace and the two uploaded 1/s temporaries are freed after the synchronize
    CHECK(frees_before_sync == 0);
    CHECK(fake_cann::last_index("aclrtFree") > fake_cann::last_index("aclrtSynchronizeStream"));
    CHECK(fake_cann::calls_named("aclrtFree").size() == 3);
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
    dev_tensor xd = dev_upload(x, be::dtype::float32, {2, 32});
    dev_tensor yd = dev_alloc(be::dtype::float8_e4m3fn, {2, 32});
    dev_tensor ad = dev_alloc(be::dtype::float32, {1});
    for (const std::string api : {"aclnnQuantMaxGetWorkspaceSize", "aclnnQuantMax"}) {
      CAPTURE(api);
      fake_cann::fail_next(api, 161002, "injected by the test");
      try {
        npu.quantize_with_amax(xd.view, be::make_tensor(&s, be::dtype::float32, {1}), yd.view, ad.view, {});
        FAIL("expected backend_error");
      } catch (const be::backend_error& e) {
        CHECK(e.api() == api);
        CHECK(e.code() == 161002);
        CHECK_THAT(e.what(), Catch::Contains("injected by the test"));
      }
    }
    // A failing aclrtMalloc surfaces the same way.
    fake_cann::fail_next("aclrtMalloc", 207001, "out of device memory");
    CHECK_THROWS_WITH(asc::device_buffer(1 << 20), Catch::Contains("aclrtMalloc") && Catch::Contains("out of device memory"));
    // The shim checks 32-byte alignment before aclCreateTensor.
    asc::device_buffer raw(256);
    const auto misaligned = be::make_tensor(static_cast<unsigned char*>(raw.data()) + 8, be::dtype::float32, {2, 32}, be::ascend_device(0));
    CHECK_THROWS_WITH(npu.quantize_with_amax(misaligned, be::make_tensor(&s, be::dtype::float32, {1}), yd.view, ad.view, {}),
                      Catch::Contains("32-byte aligned"));
    // Host tensors are refused before any aclnn call.
    const auto calls_before = fake_cann::calls().size();
    CHECK_THROWS_WITH(npu.quantize_with_amax(be::make_tensor(x.data(), be::dtype::float32, {2, 32}),
                                             be::make_tensor(&s, be::dtype::float32, {1}), yd.view, ad.view, {}),
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
    const auto r = be::request::for_mx_quantize(be::dtype::bfloat16, be::dtype::float8_e4m3fn, {});
    CHECK_FALSE(npu.supports(r));
    CHECK_THAT(npu.supports(r).reason, Catch::Contains("Ascend910B1") && Catch::Contains("33..41"));
    std::vector<float> x(64, 1.0f);
    dev_tensor xd = dev_upload(x, be::dtype::float32, {2, 32});
    dev_tensor yd = dev_alloc(be::dtype::float8_e4m3fn, {2, 32});
    dev_tensor sd = dev_alloc(be::dtype::float8_e8m0fnu, {2, 1, 2});
    fake_cann::reset();
    CHECK_THROWS_AS(npu.mx_quantize(xd.view, yd.view, sd.view, {}), unsupported_error);
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
  raw_tensor(be::dtype type, std::vector<std::int64_t> d, std::vector<std::int64_t> storage = {})
      : buf(std::max<std::size_t>(1024, 1)) {
    auto s = be::tensor_view::contiguous_strides(type, d);
    t = asc::make_acl_tensor(buf.data(), type, d, std::vector<std::int64_t>(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(d.size())),
                             storage.empty() ? d : storage);
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
    raw_tensor x(be::dtype::float32, {4}), s(be::dtype::float32, {1}), y(be::dtype::hifloat8, {4}), a(be::dtype::float32, {1});
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
    REQUIRE(aclrtDestroyStream(stream) == 0);
    REQUIRE(aclrtResetDevice(0) == 0);
  }
  check_clean(f.baseline);
}

TEST_CASE("fake CANN rejects wrong dtype ids round strings groupSize packing and transposed MX scale layouts",
          "[ascend-fake][fake]") {
  fixture f;
  {
    asc::acl_session session;
    std::uint64_t ws = 0;
    aclOpExecutor* ex = nullptr;
    raw_tensor x(be::dtype::float32, {2, 64}), s(be::dtype::float32, {1});
    raw_tensor y36(be::dtype::float8_e4m3fn, {2, 64}), y34(be::dtype::hifloat8, {2, 64});
    // dstType 35 (E5M2) for an E4M3FN y
    CHECK(aclnnAscendQuantV3GetWorkspaceSize(x.t.get(), s.t.get(), nullptr, false, "round", 35, -1, y36.t.get(), &ws, &ex) == 161002);
    CHECK_THAT(aclGetRecentErrMsg(), Catch::Contains("dstType is 35"));
    // "rint" is not a HIFLOAT8 round mode; "hybrid" is not an FP8 one
    CHECK(aclnnAscendQuantV3GetWorkspaceSize(x.t.get(), s.t.get(), nullptr, false, "rint", 34, -1, y34.t.get(), &ws, &ex) == 161002);
    CHECK(aclnnAscendQuantV3GetWorkspaceSize(x.t.get(), s.t.get(), nullptr, false, "hybrid", 36, -1, y36.t.get(), &ws, &ex) == 161002);
    char rint[] = "rint";
    raw_tensor a(be::dtype::float32, {1});
    CHECK(aclnnQuantMaxGetWorkspaceSize(x.t.get(), s.t.get(), rint, 34, y34.t.get(), a.t.get(), &ws, &ex) == 161002);
    // MX scale in the plain (unpaired) layout / with the wrong axis
    raw_tensor plain(be::dtype::float8_e8m0fnu, {2, 2});
    CHECK(aclnnDynamicMxQuantV3GetWorkspaceSize(x.t.get(), -1, rint, 36, 32, 0, 0.0, 0.0, y36.t.get(), plain.t.get(), &ws, &ex) == 161002);
    CHECK_THAT(aclGetRecentErrMsg(), Catch::Contains("(2, 1, 2)"));
    // QuantMatmulV5 MX: x2 (n, k) transposed needs x2Scale (n, ceil(k/64), 2), not the (k/64, n, 2) layout
    raw_tensor x1(be::dtype::float8_e4m3fn, {2, 64}), x2(be::dtype::float8_e4m3fn, {4, 64});
    raw_tensor s1(be::dtype::float8_e8m0fnu, {2, 1, 2}), s2_kn(be::dtype::float8_e8m0fnu, {1, 4, 2}), s2_nk(be::dtype::float8_e8m0fnu, {4, 1, 2});
    raw_tensor out(be::dtype::float32, {2, 4});
    const std::int64_t mx = asc::pack_group_size(1, 1, 32);
    CHECK(aclnnQuantMatmulV5GetWorkspaceSize(x1.t.get(), x2.t.get(), s1.t.get(), s2_kn.t.get(), nullptr, nullptr, nullptr, nullptr,
                                             nullptr, false, true, mx, out.t.get(), &ws, &ex) == 161002);
    CHECK_THAT(aclGetRecentErrMsg(), Catch::Contains("x2Scale must have shape (4, 1, 2)"));
    // groupSize packed in the wrong order (gsM | gsN << 16 | gsK << 32)
    const std::int64_t swapped = 1 | (1LL << 16) | (32LL << 32);
    CHECK(aclnnQuantMatmulV5GetWorkspaceSize(x1.t.get(), x2.t.get(), s1.t.get(), s2_nk.t.get(), nullptr, nullptr, nullptr, nullptr,
                                             nullptr, false, true, swapped, out.t.get(), &ws, &ex) == 161002);
    CHECK_THAT(aclGetRecentErrMsg(), Catch::Contains("4295032864"));
    // and the right call is accepted (then run, so no executor is left pending)
    REQUIRE(aclnnQuantMatmulV5GetWorkspaceSize(x1.t.get(), x2.t.get(), s1.t.get(), s2_nk.t.get(), nullptr, nullptr, nullptr, nullptr,
                                               nullptr, false, true, mx, out.t.get(), &ws, &ex) == 0);
    aclrtStream stream = nullptr;
    REQUIRE(aclrtSetDevice(0) == 0);
    REQUIRE(aclrtCreateStream(&stream) == 0);
    asc::device_buffer wbuf(static_cast<std::size_t>(ws));
    CHECK(aclnnQuantMatmulV5(wbuf.data(), ws, ex, stream) == 0);
    CHECK(aclrtSynchronizeStream(stream) == 0);
    REQUIRE(aclrtDestroyStream(stream) == 0);
    REQUIRE(aclrtResetDevice(0) == 0);
    // a host pointer handed over as device memory
    std::vector<float> host(8);
    const std::vector<std::int64_t> d = {8}, st = {1};
    aclTensor* h = aclCreateTensor(d.data(), 1, ACL_FLOAT, st.data(), 0, ACL_FORMAT_ND, d.data(), 1, host.data());
    const auto v = fake_cann::take_violations();
    CHECK(std::any_of(v.begin(), v.end(), [](const std::string& m) { return m.find("host pointer") != std::string::npos; }));
    aclDestroyTensor(h);
  }
  check_clean(f.baseline);
}
