#pragma once
// The Ascend 950 backend: backend::backend_interface (backend.hpp) mapped onto CANN aclnn operators.
//
//   UNTESTED ON HARDWARE. This shim was written from public documentation (docs/formats/ascend.md and
//   the operator docs it cites) without an Ascend NPU or a CANN toolkit. CI compiles it against
//   test-only stand-in headers and runs its whole call path against a recording fake of the aclnn
//   functions (tests/fake_cann/). docs/backends.md says what that proves and what only hardware can.
//
//   our operation        aclnn operator (950)                       notes
//   quantize             aclnnAscendQuantV3                         passes 1 / s (the op multiplies), in x's dtype
//   dynamic_quantize     aclnnDynamicQuantV4                        "pertoken" / "pertensor", dstTypeMax
//   quantize_with_amax   aclnnQuantMax                              passes 1 / s; amax in x's dtype
//   mx_quantize          aclnnDynamicMxQuantV3                      blocksize 32, scaleAlg 0 (floor) / 1 (rceil)
//   dequantize           aclnnCast (to FLOAT) + aclnnMul (by s)     aclnnAscendAntiQuant is not on the 950
//   gemm                 aclnnQuantMatmulV5                         groupSize packed gsK | gsN << 16 | gsM << 32
//   grouped_gemm         aclnnGroupedMatmulV4                       groupType 0, groupListType 1 (counts), single tensors
//
// Every operator goes through the two-phase protocol: XxxGetWorkspaceSize (validates, returns the
// workspace size and a fresh executor), then Xxx(workspace, size, executor, stream) exactly once per
// executor. Workspaces come from a per-backend, stream-ordered pool: the buffer is reused by later
// operators on the same stream (stream order makes that safe) and a buffer that is outgrown, like
// every temporary the shim uploads (1 / s, group sizes, the Cast output of dequantize), is freed only
// after synchronize() has waited for the stream. aclTensor / aclTensorList descriptors are RAII
// (aclDestroyTensor / aclDestroyTensorList; a list owns its tensors). Every status other than 0
// becomes backend_error carrying the API name, the status and aclGetRecentErrMsg(). Operations are
// asynchronous: results are visible after synchronize().
//
// Capability gating: the SoC name (aclrtGetSocName) must belong to the Ascend 950 generation;
// elsewhere every request is refused (aclDataType 33..41 exist only there, docs/formats/ascend.md#product-scope).
// Tensor placement: data tensors live on this backend's device (tensor_view::where ==
// ascend(index)); the static scales of quantize / quantize_with_amax live on the HOST (the shim
// inverts them there); group_sizes may live on either.
#if !defined(MINIFLOAT_WITH_CANN)
#error "minifloat/backend/ascend/ needs the CANN toolkit: configure with -DMINIFLOAT_WITH_CANN=ON and link minifloat::ascend"
#endif

#include <acl/acl.h>
#include <aclnnop/aclnn_ascend_quant_v3.h>
#include <aclnnop/aclnn_cast.h>
#include <aclnnop/aclnn_dynamic_mx_quant_v3.h>
#include <aclnnop/aclnn_dynamic_quant_v4.h>
#include <aclnnop/aclnn_grouped_matmul_v4.h>
#include <aclnnop/aclnn_mul.h>
#include <aclnnop/aclnn_quant_matmul_v5.h>
#include <aclnnop/aclnn_quant_max.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "../../formats/convert.hpp"
#include "../../formats/float16.hpp"
#include "../backend.hpp"
#include "acl_types.hpp"

namespace minifloat::backend::ascend {

// --- errors --------------------------------------------------------------------------------------

/// Throws backend_error for a non-zero ACL / aclnn status, with aclGetRecentErrMsg().
inline void check_acl(std::string_view api, long long status) {
  if (status == 0) return;
  const char* msg = aclGetRecentErrMsg();
  throw backend_error(std::string(api), status, msg != nullptr ? std::string(msg) : std::string());
}

// --- RAII ------------------------------------------------------------------------------------------

/// aclInit / aclFinalize for the process (create one before any backend, destroy it last).
class acl_session {
 public:
  explicit acl_session(const char* config_path = nullptr) { check_acl("aclInit", aclInit(config_path)); }
  acl_session(const acl_session&) = delete;
  acl_session& operator=(const acl_session&) = delete;
  ~acl_session() { (void)aclFinalize(); }
};

/// Device memory from aclrtMalloc, freed with aclrtFree; move-only.
class device_buffer {
 public:
  device_buffer() = default;
  explicit device_buffer(std::size_t bytes) : size_(bytes) {
    if (bytes != 0) check_acl("aclrtMalloc", aclrtMalloc(&ptr_, bytes, ACL_MEM_MALLOC_HUGE_FIRST));
  }
  device_buffer(device_buffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  device_buffer& operator=(device_buffer&& o) noexcept {
    if (this != &o) {
      reset();
      ptr_ = std::exchange(o.ptr_, nullptr);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
  ~device_buffer() { reset(); }

  [[nodiscard]] void* data() const noexcept { return ptr_; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }

  /// Synchronous host -> device copy into the start of the buffer.
  void upload(const void* src, std::size_t bytes) {
    if (bytes == 0) return;
    check_acl("aclrtMemcpy", aclrtMemcpy(ptr_, size_, src, bytes, ACL_MEMCPY_HOST_TO_DEVICE));
  }
  /// Synchronous device -> host copy (call the backend's synchronize() first).
  void download(void* dst, std::size_t bytes) const {
    if (bytes == 0) return;
    check_acl("aclrtMemcpy", aclrtMemcpy(dst, bytes, ptr_, bytes, ACL_MEMCPY_DEVICE_TO_HOST));
  }
  /// A contiguous view of the buffer on device `index`; throws shape_error if it does not fit.
  [[nodiscard]] tensor_view view(dtype t, std::initializer_list<std::int64_t> shape, int index = 0) const {
    tensor_view v = make_tensor(ptr_, t, shape, ascend_device(index));
    if (v.byte_extent() > size_)
      throw shape_error("device_buffer::view: " + v.describe() + " needs " + std::to_string(v.byte_extent()) +
                        " bytes, the buffer has " + std::to_string(size_));
    return v;
  }

 private:
  void reset() noexcept {
    if (ptr_ != nullptr) (void)aclrtFree(ptr_);
    ptr_ = nullptr;
    size_ = 0;
  }
  void* ptr_ = nullptr;
  std::size_t size_ = 0;
};

struct tensor_deleter {
  void operator()(aclTensor* t) const noexcept {
    if (t != nullptr) (void)aclDestroyTensor(t);
  }
};
using acl_tensor = std::unique_ptr<aclTensor, tensor_deleter>;

struct tensor_list_deleter {
  void operator()(aclTensorList* l) const noexcept {
    if (l != nullptr) (void)aclDestroyTensorList(l);
  }
};
using acl_tensor_list = std::unique_ptr<aclTensorList, tensor_list_deleter>;

/// An ND aclTensor over device memory: view dims, element strides, offset 0, storage dims.
/// tensorData must be 32-byte aligned (CANN 9.x aclCreateTensor; docs/formats/ascend.md#calling-convention).
inline acl_tensor make_acl_tensor(void* data, dtype t, const std::vector<std::int64_t>& dims,
                                  const std::vector<std::int64_t>& strides, const std::vector<std::int64_t>& storage) {
  if (reinterpret_cast<std::uintptr_t>(data) % 32 != 0)
    throw shape_error("aclCreateTensor: tensor data must be 32-byte aligned (CANN 9.x), " + std::string(to_string(t)) +
                      detail::dims_string(dims) + " starts at an address = " +
                      std::to_string(reinterpret_cast<std::uintptr_t>(data) % 32) + " mod 32");
  aclTensor* p = aclCreateTensor(dims.data(), dims.size(), to_acl(t), strides.data(), 0, ACL_FORMAT_ND, storage.data(),
                                 storage.size(), data);
  if (p == nullptr) check_acl("aclCreateTensor", -1);
  return acl_tensor(p);
}

/// A contiguous aclTensor of `dims` over v's memory (the same element count as v).
inline acl_tensor make_acl_tensor(const tensor_view& v, const std::vector<std::int64_t>& dims) {
  const auto s = tensor_view::contiguous_strides(v.type, dims);
  return make_acl_tensor(v.data, v.type, dims, std::vector<std::int64_t>(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(dims.size())),
                         dims);
}
inline acl_tensor make_acl_tensor(const tensor_view& v) {
  return make_acl_tensor(v, std::vector<std::int64_t>(v.dims().begin(), v.dims().end()));
}

/// A tensor list that takes ownership of `items` (aclDestroyTensorList destroys its tensors).
inline acl_tensor_list make_acl_tensor_list(std::initializer_list<acl_tensor*> items) {
  std::vector<const aclTensor*> raw;
  for (acl_tensor* t : items) raw.push_back(t->get());
  aclTensorList* l = aclCreateTensorList(raw.data(), raw.size());
  if (l == nullptr) check_acl("aclCreateTensorList", -1);
  for (acl_tensor* t : items) (void)t->release();
  return acl_tensor_list(l);
}

// --- the backend -------------------------------------------------------------------------------------

struct ascend_options {
  int device_index = 0;
  /// The stream to order work on; nullptr: the backend creates (and destroys) its own.
  aclrtStream stream = nullptr;
};

class ascend_backend final : public backend_interface {
 public:
  explicit ascend_backend(ascend_options o = {}) : device_(o.device_index) {
    check_acl("aclrtSetDevice", aclrtSetDevice(device_));
    device_set_ = true;
    try {
      if (o.stream != nullptr) {
        stream_ = o.stream;
      } else {
        check_acl("aclrtCreateStream", aclrtCreateStream(&stream_));
        own_stream_ = true;
      }
      const char* soc = aclrtGetSocName();
      soc_ = soc != nullptr ? soc : "";
    } catch (...) {
      release();
      throw;
    }
  }
  ascend_backend(const ascend_backend&) = delete;
  ascend_backend& operator=(const ascend_backend&) = delete;
  ~ascend_backend() override { release(); }

  [[nodiscard]] std::string_view name() const noexcept override { return "ascend"; }
  [[nodiscard]] device where() const noexcept override { return ascend_device(device_); }
  [[nodiscard]] const std::string& soc_name() const noexcept { return soc_; }
  [[nodiscard]] aclrtStream stream() const noexcept { return stream_; }

  [[nodiscard]] support supports(const request& r) const override {
    const auto no = [](const std::string& why) { return support::no(why); };
    if (!soc_is_950(soc_))
      return no("the runtime takes aclDataType 33..41 (HiFloat8, FP8, E8M0, FP6, FP4) only on the Ascend 950 / "
                "Atlas 350 generation; this device reports SoC '" + soc_ + "' (docs/formats/ascend.md#product-scope)");
    const auto fp8 = [](dtype t) { return t == dtype::float8_e4m3fn || t == dtype::float8_e5m2; };
    const auto q8 = [&](dtype t) { return t == dtype::hifloat8 || fp8(t); };
    const auto round_ok = [&](rounding_op op, dtype element) -> support {
      const auto s = round_name(r.round, element);
      if (s && round_documented(op, element, *s)) return support::yes();
      return no(std::string(rounding_op_name(op)) + " on the 950 takes roundMode " +
                (element == dtype::hifloat8 ? std::string("\"round\" (ties away) or \"hybrid\" for HIFLOAT8")
                 : op == rounding_op::ascend_quant_v3 ? std::string("only \"round\" (ties away) for FP8")
                 : op == rounding_op::quant_max       ? std::string("only \"rint\" (ties to even) for FP8")
                 : element == dtype::float4_e2m1fn_x2 ? std::string("\"rint\", \"floor\" or \"round\" for FLOAT4_E2M1")
                                                      : std::string("only \"rint\" for FP8")) +
                "; round mode " + std::string(to_string(r.round)) + " is " +
                (s ? "\"" + std::string(*s) + "\"" : std::string("not expressible")));
    };
    switch (r.op) {
      case operation::quantize:
        if (!is_float_dtype(r.input)) return no("x must be FLOAT, FLOAT16 or BFLOAT16");
        if (!q8(r.output)) return no("aclnnAscendQuantV3 writes HIFLOAT8, FLOAT8_E5M2 or FLOAT8_E4M3FN (dstType 34/35/36)");
        if (r.gran != granularity::tensor && r.gran != granularity::token && r.gran != granularity::channel)
          return no("aclnnAscendQuantV3 scales are per tensor or along one axis (per row); block scales have no "
                    "aclnn static quantizer");
        return round_ok(rounding_op::ascend_quant_v3, r.output);
      case operation::dynamic_quantize:
        if (r.input != dtype::float16 && r.input != dtype::bfloat16)
          return no("aclnnDynamicQuantV4 takes FLOAT16 or BFLOAT16 x, not " + std::string(to_string(r.input)));
        if (!q8(r.output)) return no("aclnnDynamicQuantV4 writes HIFLOAT8, FLOAT8_E5M2 or FLOAT8_E4M3FN");
        if (r.gran != granularity::tensor && r.gran != granularity::token && r.gran != granularity::channel)
          return no("aclnnDynamicQuantV4 is used with quantMode \"pertoken\" or \"pertensor\"");
        if (resolve_nearest(r.round, r.output) != resolve_nearest(round_mode::nearest, r.output))
          return no("aclnnDynamicQuantV4 has no round-mode argument: its 950 kernel rounds HIFLOAT8 ties-away and FP8 "
                    "ties-to-even, saturating (round mode nearest); got " + std::string(to_string(r.round)));
        if (r.dst_max != 0.0f && r.output != dtype::hifloat8)
          return no("dstTypeMax takes effect for HIFLOAT8 only; use dst_max 0 for " + std::string(to_string(r.output)));
        if (!(r.dst_max >= 0.0f && r.dst_max <= 32768.0f)) return no("dstTypeMax must lie in [0, 32768]");
        return support::yes();
      case operation::quantize_with_amax:
        if (!is_float_dtype(r.input)) return no("x must be FLOAT, FLOAT16 or BFLOAT16");
        if (!q8(r.output)) return no("aclnnQuantMax writes HIFLOAT8, FLOAT8_E5M2 or FLOAT8_E4M3 (dstType 34/35/36)");
        if (r.gran != granularity::tensor) return no("aclnnQuantMax takes one scale of shape [1] (per tensor)");
        return round_ok(rounding_op::quant_max, r.output);
      case operation::mx_quantize:
        if (!is_float_dtype(r.input)) return no("x must be FLOAT, FLOAT16 or BFLOAT16");
        if (!fp8(r.output) && r.output != dtype::float4_e2m1fn_x2)
          return no("aclnnDynamicMxQuantV3 writes FLOAT8_E5M2, FLOAT8_E4M3FN or FLOAT4_E2M1 (dstType 35/36/40), not " +
                    std::string(to_string(r.output)));
        if (!scale_alg(r.rule, r.output))
          return no("aclnnDynamicMxQuantV3 has scaleAlg 0 (OCP floor) for every output and 1 (rceil) for FP8 only; "
                    "rule " + std::string(to_string(r.rule)) + " has no counterpart");
        return round_ok(rounding_op::dynamic_mx_quant_v3, r.output);
      case operation::dequantize:
        if (!q8(r.input) && r.input != dtype::float4_e2m1fn_x2)
          return no("aclnnCast reads HIFLOAT8, FLOAT8_E5M2, FLOAT8_E4M3FN or FLOAT4_E2M1");
        if (r.output != dtype::float32) return no("dequantize writes FLOAT");
        if (r.gran != granularity::tensor && r.gran != granularity::token && r.gran != granularity::channel)
          return no("no documented aclnn dequantizer takes block or MX scales on the 950 (aclnnAscendAntiQuant is not "
                    "supported there); the shim composes aclnnCast + aclnnMul, which covers per-tensor and per-row "
                    "scales. aclnnQuantMatmulV5 consumes MX scales directly");
        return support::yes();
      case operation::gemm: return supports_matmul(r);
      case operation::grouped_gemm: return supports_grouped(r);
    }
    return no("unknown operation");
  }

  void quantize(const tensor_view& x, const tensor_view& scale, const tensor_view& y,
                const quantize_options& o = {}) override {
    constexpr std::string_view who = "ascend quantize";
    const auto p = detail::check_quantize(who, x, y, where());
    detail::check_scales(who, "scale", scale, o.gran, o.block_rows, o.block_cols, p.rows, p.cols, host);
    require(request::for_quantize(x.type, y.type, o));
    const auto scales = host_floats(scale);
    detail::require_positive_scales(who, scales);
    if (x.empty()) return;
    // aclnnAscendQuantV3 computes y = round(x * scale): it MULTIPLIES, so it gets 1 / s, in x's dtype.
    const device_buffer& inv = upload_reciprocals(who, scales, x.type);
    const auto xt = make_acl_tensor(x, {p.rows, p.cols});
    const auto yt = make_acl_tensor(y, {p.rows, p.cols});
    const auto st = make_acl_tensor(inv.data(), x.type, {static_cast<std::int64_t>(scales.size())}, {1},
                                    {static_cast<std::int64_t>(scales.size())});
    const std::int32_t axis = o.gran == granularity::tensor ? -1 : -2;  // per row: along dim -2 of (rows, cols)
    const std::string mode(*round_name(o.round, y.type));
    const auto dst = static_cast<std::int32_t>(acl_dtype_number(y.type));
    two_phase(
        "aclnnAscendQuantV3",
        [&](std::uint64_t* ws, aclOpExecutor** ex) {
          return aclnnAscendQuantV3GetWorkspaceSize(xt.get(), st.get(), nullptr, false, mode.c_str(), dst, axis, yt.get(),
                                                    ws, ex);
        },
        aclnnAscendQuantV3);
  }

  void dynamic_quantize(const tensor_view& x, const tensor_view& y, const tensor_view& scale_out,
                        const dynamic_quantize_options& o = {}) override {
    constexpr std::string_view who = "ascend dynamic_quantize";
    const auto p = detail::check_quantize(who, x, y, where());
    detail::check_dynamic_scale_out(who, scale_out, o.gran, p.rows, where());
    require(request::for_dynamic_quantize(x.type, y.type, o));
    if (x.empty()) return;
    const bool per_tensor = o.gran == granularity::tensor;
    const auto xt = make_acl_tensor(x, {p.rows, p.cols});
    const auto yt = make_acl_tensor(y, {p.rows, p.cols});
    const auto st = make_acl_tensor(scale_out, per_tensor ? std::vector<std::int64_t>{1} : std::vector<std::int64_t>{p.rows});
    const char* mode = per_tensor ? "pertensor" : "pertoken";
    const auto dst = static_cast<std::int64_t>(acl_dtype_number(y.type));
    two_phase(
        "aclnnDynamicQuantV4",
        [&](std::uint64_t* ws, aclOpExecutor** ex) {
          return aclnnDynamicQuantV4GetWorkspaceSize(xt.get(), nullptr, nullptr, dst, true, mode, o.dst_max, yt.get(),
                                                     st.get(), nullptr, ws, ex);
        },
        aclnnDynamicQuantV4);
  }

  void quantize_with_amax(const tensor_view& x, const tensor_view& scale, const tensor_view& y,
                          const tensor_view& amax_out, const quantize_options& o = {}) override {
    constexpr std::string_view who = "ascend quantize_with_amax";
    const auto p = detail::check_quantize(who, x, y, where());
    detail::check_scales(who, "scale", scale, granularity::tensor, 1, 1, p.rows, p.cols, host);
    detail::check_amax_out(who, amax_out, x, where());
    require(request::for_quantize_with_amax(x.type, y.type, o));
    const auto scales = host_floats(scale);
    detail::require_positive_scales(who, scales);
    if (x.empty()) return;
    // aclnnQuantMax computes y = Cast(x * scale): 1 / s again, as FLOAT of shape [1].
    const device_buffer& inv = upload_reciprocals(who, scales, dtype::float32);
    const auto xt = make_acl_tensor(x, {p.rows, p.cols});
    const auto yt = make_acl_tensor(y, {p.rows, p.cols});
    const auto st = make_acl_tensor(inv.data(), dtype::float32, {1}, {1}, {1});
    const auto at = make_acl_tensor(amax_out, {1});
    std::string mode(*round_name(o.round, y.type));  // the prototype takes a non-const char*
    const auto dst = static_cast<std::int64_t>(acl_dtype_number(y.type));
    two_phase(
        "aclnnQuantMax",
        [&](std::uint64_t* ws, aclOpExecutor** ex) {
          return aclnnQuantMaxGetWorkspaceSize(xt.get(), st.get(), mode.data(), dst, yt.get(), at.get(), ws, ex);
        },
        aclnnQuantMax);
  }

  void mx_quantize(const tensor_view& x, const tensor_view& y, const tensor_view& scale_out,
                   const mx_quantize_options& o = {}) override {
    constexpr std::string_view who = "ascend mx_quantize";
    const auto p = detail::check_mx_quantize(who, x, y, scale_out, o, where());
    require(request::for_mx_quantize(x.type, y.type, o));
    if (x.empty()) return;
    if (x.rank > 7) throw unsupported_error(std::string(who) + ": aclnnDynamicMxQuantV3 takes x of rank 1..7, got " + x.describe());
    if (x.type == dtype::float32 && x.dim(p.axis) < 32)
      throw unsupported_error(std::string(who) + ": aclnnDynamicMxQuantV3 with FLOAT x needs the quantized axis to have "
                              "at least 32 elements, got " + x.describe());
    if (y.type == dtype::float4_e2m1fn_x2 && x.dim(-1) % 2 != 0)
      throw unsupported_error(std::string(who) + ": aclnnDynamicMxQuantV3 with FLOAT4_E2M1 output needs an even last "
                              "dimension, got " + x.describe());
    const auto xt = make_acl_tensor(x);
    const auto yt = make_acl_tensor(y);
    const auto st = make_acl_tensor(scale_out);
    std::string mode(*round_name(o.round, y.type));
    const auto dst = static_cast<std::int64_t>(acl_dtype_number(y.type));
    const std::int64_t axis = p.axis, alg = *scale_alg(o.rule, y.type);
    two_phase(
        "aclnnDynamicMxQuantV3",
        [&](std::uint64_t* ws, aclOpExecutor** ex) {
          return aclnnDynamicMxQuantV3GetWorkspaceSize(xt.get(), axis, mode.data(), dst, std::int64_t{32}, alg, 0.0, 0.0,
                                                       yt.get(), st.get(), ws, ex);
        },
        aclnnDynamicMxQuantV3);
  }

  void dequantize(const tensor_view& codes, const tensor_view& scale, const tensor_view& out,
                  const dequantize_options& o = {}) override {
    constexpr std::string_view who = "ascend dequantize";
    const auto p = detail::check_dequantize(who, codes, scale, out, o, where());
    require(request::for_dequantize(codes.type, out.type, o));
    if (codes.empty()) return;
    // 1. aclnnCast codes -> FLOAT into a temporary (exact decode); 2. aclnnMul by the broadcast scale.
    const device_buffer& decoded = temporary(static_cast<std::size_t>(p.rows * p.cols) * sizeof(float));
    const auto ct = make_acl_tensor(codes, {p.rows, p.cols});
    const auto tt = make_acl_tensor(decoded.data(), dtype::float32, {p.rows, p.cols}, {p.cols, 1}, {p.rows, p.cols});
    two_phase(
        "aclnnCast",
        [&](std::uint64_t* ws, aclOpExecutor** ex) { return aclnnCastGetWorkspaceSize(ct.get(), ACL_FLOAT, tt.get(), ws, ex); },
        aclnnCast);
    const auto st = make_acl_tensor(scale, o.gran == granularity::tensor ? std::vector<std::int64_t>{1}
                                                                         : std::vector<std::int64_t>{p.rows, 1});
    const auto ot = make_acl_tensor(out, {p.rows, p.cols});
    two_phase(
        "aclnnMul",
        [&](std::uint64_t* ws, aclOpExecutor** ex) { return aclnnMulGetWorkspaceSize(tt.get(), st.get(), ot.get(), ws, ex); },
        aclnnMul);
  }

  void gemm(const gemm_operand& a, const gemm_operand& b, const tensor_view& bias, const tensor_view& out,
            const gemm_options& o = {}) override {
    constexpr std::string_view who = "ascend gemm";
    const auto p = detail::check_gemm(who, a, b, bias, out, o.layout, where());
    require(request::for_gemm(a, b, out.type, bias.is_none() ? bias_term::none : bias_term::present, o));
    if (p.m == 0 || p.n == 0) return;
    if (p.k == 0) throw unsupported_error(std::string(who) + ": aclnnQuantMatmulV5 takes no empty tensors (k = 0)");
    const bool nk = o.layout == gemm_layout::nk;
    if (a.gran == granularity::mx && b.data.type == dtype::float4_e2m1fn_x2) {
      if (a.data.type == dtype::float4_e2m1fn_x2 && (p.k % 2 != 0 || detail::ceil_div(p.k, 32) % 2 != 0))
        throw unsupported_error(std::string(who) + ": MX FLOAT4_E2M1 x FLOAT4_E2M1 needs k even and ceil(k/32) even, k = " +
                                std::to_string(p.k));
      if (a.data.type == dtype::float8_e4m3fn && p.k % 64 != 0)
        throw unsupported_error(std::string(who) + ": MX FLOAT8_E4M3FN x FLOAT4_E2M1 needs k a multiple of 64, k = " +
                                std::to_string(p.k));
    }
    const auto x1 = make_acl_tensor(a.data);
    const auto x2 = make_acl_tensor(b.data);  // stored (k, n), or (n, k) with transposeX2
    const auto x1s = make_acl_tensor(a.scale, matmul_scale_dims(a, p.m));
    const auto x2s = make_acl_tensor(b.scale, matmul_scale_dims(b, p.n));
    const acl_tensor bt = bias.is_none() ? acl_tensor() : make_acl_tensor(bias);
    const auto ot = make_acl_tensor(out);
    const std::int64_t group_size = matmul_group_size(a, b);
    two_phase(
        "aclnnQuantMatmulV5",
        [&](std::uint64_t* ws, aclOpExecutor** ex) {
          return aclnnQuantMatmulV5GetWorkspaceSize(x1.get(), x2.get(), x1s.get(), x2s.get(), nullptr, nullptr, nullptr,
                                                    nullptr, bt.get(), false, nk, group_size, ot.get(), ws, ex);
        },
        aclnnQuantMatmulV5);
  }

  void grouped_gemm(const gemm_operand& a, const gemm_operand& b, const tensor_view& group_sizes,
                    const tensor_view& bias, const tensor_view& out, const gemm_options& o = {}) override {
    constexpr std::string_view who = "ascend grouped_gemm";
    const device gw = group_sizes.where == host ? host : where();
    const auto p = detail::check_grouped_gemm(who, a, b, group_sizes, bias, out, o.layout, where(), gw);
    require(request::for_gemm(a, b, out.type, bias.is_none() ? bias_term::none : bias_term::present, o,
                              operation::grouped_gemm));
    if (p.m == 0 || p.n == 0 || p.groups == 0) return;
    if (p.k == 0) throw unsupported_error(std::string(who) + ": aclnnGroupedMatmulV4 takes no empty tensors (K = 0)");
    const bool nk = o.layout == gemm_layout::nk;
    if (a.data.type == dtype::float4_e2m1fn_x2 && (p.k % 2 != 0 || p.k == 2 || (!nk && p.n % 2 != 0)))
      throw unsupported_error(std::string(who) + ": MX FLOAT4_E2M1 needs K even and not 2 (and N even when B is (g, K, N))");
    // Group sizes: a device INT64 tensor; host sizes are checked (sum M) and uploaded.
    void* sizes_data = group_sizes.data;
    if (group_sizes.where == host) {
      (void)detail::read_group_sizes(who, group_sizes, p.m);
      device_buffer& dev = temporary(static_cast<std::size_t>(p.groups) * sizeof(std::int64_t));
      dev.upload(group_sizes.data, dev.size());
      sizes_data = dev.data();
    }
    acl_tensor x = make_acl_tensor(a.data);
    // B: (g, K, N) as stored, or the (g, N, K) storage seen through a transposed (g, K, N) view: the
    // GroupedMatmul docs express a transposed weight as a non-contiguous tensor.
    acl_tensor w = nk ? make_acl_tensor(b.data.data, b.data.type, {p.groups, p.k, p.n}, {p.n * p.k, 1, p.k},
                                        {p.groups, p.n, p.k})
                      : make_acl_tensor(b.data);
    acl_tensor ws_scale = make_acl_tensor(b.scale, grouped_weight_scale_dims(b, p));
    acl_tensor pt_scale = make_acl_tensor(a.scale, grouped_token_scale_dims(a, p));
    acl_tensor bt = bias.is_none() ? acl_tensor() : make_acl_tensor(bias);
    acl_tensor yt = make_acl_tensor(out);
    const auto gl = make_acl_tensor(sizes_data, dtype::int64, {p.groups}, {1}, {p.groups});
    const auto x_list = make_acl_tensor_list({&x});
    const auto w_list = make_acl_tensor_list({&w});
    const auto s_list = make_acl_tensor_list({&ws_scale});
    const auto pt_list = make_acl_tensor_list({&pt_scale});
    const acl_tensor_list b_list = bias.is_none() ? acl_tensor_list() : make_acl_tensor_list({&bt});
    const auto y_list = make_acl_tensor_list({&yt});
    constexpr std::int64_t split_item = 3, group_type = 0, group_list_type = 1, act_type = 0;
    two_phase(
        "aclnnGroupedMatmulV4",
        [&](std::uint64_t* ws, aclOpExecutor** ex) {
          return aclnnGroupedMatmulV4GetWorkspaceSize(x_list.get(), w_list.get(), b_list.get(), s_list.get(), nullptr,
                                                      nullptr, nullptr, pt_list.get(), gl.get(), nullptr, nullptr, nullptr,
                                                      split_item, group_type, group_list_type, act_type, y_list.get(),
                                                      nullptr, nullptr, ws, ex);
        },
        aclnnGroupedMatmulV4);
  }

  /// Waits for the stream, then frees the outgrown workspaces and temporaries.
  void synchronize() override {
    check_acl("aclrtSynchronizeStream", aclrtSynchronizeStream(stream_));
    retired_.clear();
  }

 private:
  // --- capability tables for the GEMMs (aclnnQuantMatmulV5 / aclnnGroupedMatmulV4 on the 950) -----

  static bool is_fp8(dtype t) noexcept { return t == dtype::float8_e4m3fn || t == dtype::float8_e5m2; }
  static bool is_block(const request& r, std::size_t ar, std::size_t ac) noexcept {
    return r.gran == granularity::block && r.block_rows == ar && r.block_cols == ac;
  }
  static bool b_block_128(const request& r) noexcept {
    return r.weight_gran == granularity::block && r.weight_block_rows == 128 && r.weight_block_cols == 128;
  }

  [[nodiscard]] static support supports_matmul(const request& r) {
    const auto no = [](const std::string& why) { return support::no("aclnnQuantMatmulV5: " + why); };
    if (r.output != dtype::float32 && r.output != dtype::bfloat16) return no("out is FLOAT or BFLOAT16 here");
    const bool fp8_pair = is_fp8(r.input) && is_fp8(r.weight);
    const bool hif8_pair = r.input == dtype::hifloat8 && r.weight == dtype::hifloat8;
    const bool fp4_pair = r.input == dtype::float4_e2m1fn_x2 && r.weight == dtype::float4_e2m1fn_x2;
    const bool mx_fake = r.input == dtype::float8_e4m3fn && r.weight == dtype::float4_e2m1fn_x2;
    if (!fp8_pair && !hif8_pair && !fp4_pair && !mx_fake)
      return no("the 950 multiplies FP8 x FP8 (E4M3/E5M2), HIFLOAT8 x HIFLOAT8, FLOAT4_E2M1 x FLOAT4_E2M1 (mx) or "
                "FLOAT8_E4M3FN x FLOAT4_E2M1 (mx); got " + std::string(to_string(r.input)) + " x " +
                std::string(to_string(r.weight)));
    const bool a_mx = r.gran == granularity::mx, b_mx = r.weight_gran == granularity::mx;
    if (a_mx || b_mx) {
      if (!a_mx || !b_mx) return no("mx quantization puts FLOAT8_E8M0 scales on both x1 and x2");
      if (hif8_pair) return no("mx quantization takes FP8 or FP4 elements, not HIFLOAT8");
      if ((fp4_pair || mx_fake) && r.layout != gemm_layout::nk)
        return no("with FLOAT4_E2M1 weights only transposeX2 = true, i.e. B stored (n, k) (layout nk)");
      if (mx_fake && (r.output != dtype::bfloat16 || r.bias == bias_term::present))
        return no("mx fake quantization (E4M3 x FP4) writes BFLOAT16 and takes its bias as BFLOAT16 (1, n), which this "
                  "interface does not carry");
      return support::yes();
    }
    if (fp4_pair || mx_fake) return no("FLOAT4_E2M1 operands take mx (E8M0) scales");
    const bool a_t = r.gran == granularity::tensor;
    const bool a_k = r.gran == granularity::token || r.gran == granularity::channel;
    const bool b_t = r.weight_gran == granularity::tensor;
    const bool b_c = r.weight_gran == granularity::channel || r.weight_gran == granularity::token;
    if ((a_t || a_k) && (b_t || b_c)) {
      if (a_t && b_c && r.bias == bias_term::present) return no("dynamic T-C quantization takes no bias");
      return support::yes();  // T-T, T-C, K-T, K-C with FLOAT32 x1Scale / x2Scale
    }
    if ((is_block(r, 1, 128) || is_block(r, 128, 128)) && b_block_128(r)) {
      if (r.bias == bias_term::present) return no("G-B / B-B quantization with FP8 or HIFLOAT8 takes no bias");
      return support::yes();
    }
    return no("scales " + std::string(to_string(r.gran)) + " x " + std::string(to_string(r.weight_gran)) +
              " match no documented mode: T-T/T-C/K-T/K-C (tensor|token x tensor|channel), G-B (A block 1x128, B block "
              "128x128), B-B (A 128x128, B 128x128) or mx");
  }

  [[nodiscard]] static support supports_grouped(const request& r) {
    const auto no = [](const std::string& why) { return support::no("aclnnGroupedMatmulV4: " + why); };
    if (r.output != dtype::float32 && r.output != dtype::bfloat16) return no("out is FLOAT or BFLOAT16 here");
    const bool fp8_pair = is_fp8(r.input) && is_fp8(r.weight);
    const bool hif8_pair = r.input == dtype::hifloat8 && r.weight == dtype::hifloat8;
    const bool fp4_pair = r.input == dtype::float4_e2m1fn_x2 && r.weight == dtype::float4_e2m1fn_x2;
    if (!fp8_pair && !hif8_pair && !fp4_pair)
      return no("the 950 groups FP8 x FP8, HIFLOAT8 x HIFLOAT8 or (mx) FLOAT4_E2M1 x FLOAT4_E2M1; got " +
                std::string(to_string(r.input)) + " x " + std::string(to_string(r.weight)));
    const bool a_mx = r.gran == granularity::mx, b_mx = r.weight_gran == granularity::mx;
    if (a_mx || b_mx) {
      if (!a_mx || !b_mx) return no("mx quantization puts FLOAT8_E8M0 scales on both x and weight");
      if (hif8_pair) return no("mx quantization takes FP8 or FP4 elements, not HIFLOAT8");
      if (fp8_pair && r.bias == bias_term::present) return no("mx with FP8 takes no bias");
      return support::yes();
    }
    if (fp4_pair) return no("FLOAT4_E2M1 operands take mx (E8M0) scales");
    if (r.bias == bias_term::present) return no("FP8 / HIFLOAT8 grouped quantization takes no bias");
    const bool a_ok = r.gran == granularity::tensor || r.gran == granularity::token || r.gran == granularity::channel;
    const bool b_ok = r.weight_gran == granularity::tensor || r.weight_gran == granularity::channel ||
                      r.weight_gran == granularity::token;
    if (a_ok && b_ok) return support::yes();
    if (is_block(r, 1, 128) && b_block_128(r)) return support::yes();  // G-B: gsM = 1, gsN = gsK = 128
    return no("scales " + std::string(to_string(r.gran)) + " x " + std::string(to_string(r.weight_gran)) +
              " match no documented mode: per-tensor/per-token x per-tensor/per-channel, G-B (A 1x128, B 128x128) or mx");
  }

  /// x1Scale / x2Scale dims of aclnnQuantMatmulV5: (1,), (m,) / (n,), the 2-D block grid, or the
  /// 3-D paired E8M0 layout (all already shape-checked against the docs' tables).
  static std::vector<std::int64_t> matmul_scale_dims(const gemm_operand& o, std::int64_t outer) {
    switch (o.gran) {
      case granularity::tensor: return {1};
      case granularity::token:
      case granularity::channel: return {outer};
      default: return std::vector<std::int64_t>(o.scale.dims().begin(), o.scale.dims().end());
    }
  }
  static std::int64_t matmul_group_size(const gemm_operand& a, const gemm_operand& b) {
    if (a.gran == granularity::mx) return pack_group_size(1, 1, 32);
    if (a.gran == granularity::block && b.gran == granularity::block)
      return pack_group_size(static_cast<std::int64_t>(a.block_rows), static_cast<std::int64_t>(b.block_rows),
                             static_cast<std::int64_t>(a.block_cols));
    return 0;
  }
  /// scaleOptional dims of aclnnGroupedMatmulV4 (single weight tensor, 950 tables).
  static std::vector<std::int64_t> grouped_weight_scale_dims(const gemm_operand& b, const detail::grouped_problem& p) {
    switch (b.gran) {
      case granularity::tensor: return {p.groups};
      case granularity::token:
      case granularity::channel: return {p.groups, p.n};
      default: return std::vector<std::int64_t>(b.scale.dims().begin(), b.scale.dims().end());
    }
  }
  /// perTokenScaleOptional dims: (g,) per tensor (one per group), (M,) per token, (M, ceil(K/128))
  /// G-B, (M, ceil(K/64), 2) mx.
  static std::vector<std::int64_t> grouped_token_scale_dims(const gemm_operand& a, const detail::grouped_problem& p) {
    switch (a.gran) {
      case granularity::tensor: return {p.groups};
      case granularity::token:
      case granularity::channel: return {p.m};
      default: return std::vector<std::int64_t>(a.scale.dims().begin(), a.scale.dims().end());
    }
  }

  // --- two-phase calls, workspaces, temporaries ------------------------------------------------------

  /// Phase 1 (validate, size, executor), a workspace from the stream-ordered pool, phase 2 (enqueue).
  /// The executor is used exactly once.
  template <class GetWorkspace, class Launch>
  void two_phase(const char* op, GetWorkspace&& get_workspace, Launch launch) {
    std::uint64_t ws_size = 0;
    aclOpExecutor* executor = nullptr;
    check_acl(std::string(op) + "GetWorkspaceSize", get_workspace(&ws_size, &executor));
    void* ws = workspace(ws_size);
    check_acl(op, launch(ws, ws_size, executor, stream_));
  }

  /// A workspace of at least `bytes` for the next operator on this stream. Reusing the buffer is
  /// safe because the stream runs operators in order; an outgrown buffer is retired until
  /// synchronize().
  void* workspace(std::uint64_t bytes) {
    if (bytes == 0) return nullptr;
    if (workspace_.size() < bytes) {
      if (workspace_.data() != nullptr) retired_.push_back(std::move(workspace_));
      workspace_ = device_buffer(static_cast<std::size_t>(bytes));
    }
    return workspace_.data();
  }

  /// A device buffer that lives until the next synchronize().
  device_buffer& temporary(std::size_t bytes) {
    retired_.emplace_back(bytes);
    return retired_.back();
  }

  std::span<const float> host_floats(const tensor_view& t) const {
    return {static_cast<const float*>(t.data), static_cast<std::size_t>(t.numel())};
  }

  /// 1 / s for every scale, rounded once to `t` (the dtype the operator wants the scale in), uploaded.
  const device_buffer& upload_reciprocals(std::string_view who, std::span<const float> scales, dtype t) {
    const std::size_t width = t == dtype::float32 ? 4 : 2;
    std::vector<std::uint8_t> bytes(scales.size() * width);
    for (std::size_t i = 0; i < scales.size(); ++i) {
      float inv_value = 0.0f;
      if (t == dtype::float32) {
        inv_value = 1.0f / scales[i];
        std::memcpy(bytes.data() + 4 * i, &inv_value, 4);
      } else {
        const double inv = 1.0 / static_cast<double>(scales[i]);
        const std::uint16_t b = t == dtype::bfloat16 ? narrow<bfloat16>(inv).bits() : narrow<float16>(inv).bits();
        inv_value = t == dtype::bfloat16 ? static_cast<float>(bfloat16::from_bits(b)) : static_cast<float>(float16::from_bits(b));
        std::memcpy(bytes.data() + 2 * i, &b, 2);
      }
      if (!std::isfinite(inv_value) || inv_value == 0.0f)
        throw unsupported_error(std::string(who) + ": 1 / scale[" + std::to_string(i) + "] = 1 / " +
                                std::to_string(scales[i]) + " is not a finite non-zero " + std::string(to_string(t)) +
                                " (the aclnn operator multiplies by the reciprocal, given in that dtype)");
    }
    device_buffer& dev = temporary(bytes.size());
    dev.upload(bytes.data(), bytes.size());
    return dev;
  }

  void release() noexcept {
    if (stream_ != nullptr) (void)aclrtSynchronizeStream(stream_);
    retired_.clear();
    workspace_ = device_buffer();
    if (own_stream_ && stream_ != nullptr) (void)aclrtDestroyStream(stream_);
    stream_ = nullptr;
    own_stream_ = false;
    if (device_set_) (void)aclrtResetDevice(device_);
    device_set_ = false;
  }

  int device_ = 0;
  bool device_set_ = false;
  bool own_stream_ = false;
  aclrtStream stream_ = nullptr;
  std::string soc_;
  device_buffer workspace_;
  std::deque<device_buffer> retired_;
};

}  // namespace minifloat::backend::ascend
