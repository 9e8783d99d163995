#pragma once
// The Ascend 950 backend: backend::backend_interface (backend.hpp) mapped onto CANN aclnn operators.
//
//   UNTESTED ON HARDWARE. This shim was written from public documentation (docs/formats/ascend.md and
//   the operator docs it cites) without an Ascend NPU or a CANN toolkit. CI compiles it against
//   test-only stand-in headers and runs its whole call path against a recording fake of the aclnn
//   functions (tests/fake_cann/). docs/backends.md says what that proves and what only hardware can.
//
//   our operation          aclnn operator (950)                     notes
//   quantize               aclnnDynamicQuantV4 (rule max)           "pertoken" / "pertensor", dstTypeMax
//                          aclnnDynamicMxQuantV3 (granularity mx)   blocksize 32, scaleAlg 0 (floor) / 1 (rceil)
//   quantize_with_scales   aclnnAscendQuantV3                       passes 1 / s (the op multiplies), in x's dtype
//   quantize_with_amax     aclnnQuantMax                            passes 1 / s; amax in x's dtype
//   dequantize             aclnnCast (to FLOAT) + aclnnMul (by s)   aclnnAscendAntiQuant is not on the 950
//   gemm                   aclnnQuantMatmulV5                       groupSize packed gsK | gsN << 16 | gsM << 32
//   grouped_gemm           aclnnGroupedMatmulV4                     groupType 0, groupListType 1 (counts), single tensors
//
// Everything arrives in the library's vocabulary (backend.hpp) and is mapped here, through the tables
// of acl_types.hpp: format_id -> aclDataType, rounding -> round-mode string, scale_rule -> scaleAlg,
// block tiles -> groupSize, and the library's plain MX scale layout <-> the CANN paired layout. The
// paired layout exists only inside this shim: MX scales the operators write go to a paired
// temporary and are copied into the caller's plain buffer; MX scales a GEMM reads are copied into a
// paired temporary (pad bytes 0, aclrtMemsetAsync). Both copies are strided byte copies
// (aclnnInplaceCopy on UINT8 views, acl_types.hpp mx_pairing_of); where the two layouts are the same
// bytes (blocks along the last dim, an even block count) the caller's buffer is used as it is.
//
// Every operator goes through the two-phase protocol: XxxGetWorkspaceSize (validates, returns the
// workspace size and a fresh executor), then Xxx(workspace, size, executor, stream) exactly once per
// executor. Workspaces come from a per-backend, stream-ordered pool: the buffer is reused by later
// operators on the same stream (stream order makes that safe) and a buffer that is outgrown, like
// every temporary the shim makes (1 / s, group sizes, the Cast output of dequantize, paired MX
// scales), is freed only after synchronize() has waited for the stream. aclTensor / aclTensorList descriptors are RAII
// (aclDestroyTensor / aclDestroyTensorList; a list owns its tensors). Every status other than 0
// becomes backend_error carrying the API name, the status and aclGetRecentErrMsg(). Operations are
// asynchronous: results are visible after synchronize().
//
// Capability gating: the SoC name (aclrtGetSocName) must belong to the Ascend 950 generation;
// elsewhere every request is refused (aclDataType 33..41 exist only there, docs/formats/ascend.md#product-scope).
// Tensor placement: data tensors live on this backend's device (tensor_view::where ==
// ascend(index)); the static scales of quantize_with_scales / quantize_with_amax live on the HOST
// (the shim inverts them there); group_sizes may live on either.
#include "acl_types.hpp"  // first: it refuses to compile without MINIFLOAT_WITH_CANN

#include <acl/acl.h>
#include <aclnnop/aclnn_ascend_quant_v3.h>
#include <aclnnop/aclnn_cast.h>
#include <aclnnop/aclnn_copy.h>
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
#include "../../quant/matrix_view.hpp"
#include "../../quant/quantize_engine.hpp"
#include "../../quant/quantized_tensor.hpp"
#include "../backend.hpp"

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
  [[nodiscard]] tensor_view view(element_type t, std::initializer_list<std::int64_t> shape, int index = 0) const {
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

/// An ND aclTensor over device memory: view dims, element strides, an element offset, storage dims.
/// tensorData must be 32-byte aligned (CANN 9.x aclCreateTensor; docs/formats/ascend.md#calling-convention).
inline acl_tensor make_acl_tensor(void* data, aclDataType t, const std::vector<std::int64_t>& dims,
                                  const std::vector<std::int64_t>& strides, const std::vector<std::int64_t>& storage,
                                  std::int64_t offset = 0) {
  if (reinterpret_cast<std::uintptr_t>(data) % 32 != 0)
    throw shape_error("aclCreateTensor: tensor data must be 32-byte aligned (CANN 9.x), aclDataType " +
                      std::to_string(static_cast<int>(t)) + detail::dims_string(dims) + " starts at an address = " +
                      std::to_string(reinterpret_cast<std::uintptr_t>(data) % 32) + " mod 32");
  aclTensor* p = aclCreateTensor(dims.data(), dims.size(), t, strides.data(), offset, ACL_FORMAT_ND, storage.data(),
                                 storage.size(), data);
  if (p == nullptr) check_acl("aclCreateTensor", -1);
  return acl_tensor(p);
}
inline acl_tensor make_acl_tensor(void* data, element_type t, const std::vector<std::int64_t>& dims,
                                  const std::vector<std::int64_t>& strides, const std::vector<std::int64_t>& storage) {
  return make_acl_tensor(data, to_acl(t), dims, strides, storage);
}

/// A contiguous aclTensor of `dims` over `data`.
inline acl_tensor make_acl_tensor(void* data, element_type t, const std::vector<std::int64_t>& dims) {
  const auto s = tensor_view::contiguous_strides(t, dims);
  return make_acl_tensor(data, t, dims, std::vector<std::int64_t>(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(dims.size())),
                         dims);
}

/// A contiguous aclTensor of `dims` over v's memory (the same element count as v).
inline acl_tensor make_acl_tensor(const tensor_view& v, const std::vector<std::int64_t>& dims) {
  return make_acl_tensor(v.data, v.type, dims);
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
    const quant_scheme& s = r.scheme;
    const auto round_ok = [&](rounding_op op) -> support {
      const auto name = round_name(s.round, s.format);
      if (name && round_documented(op, s.format, *name)) return support::yes();
      return no(std::string(rounding_op_name(op)) + " on the 950 takes roundMode " +
                (s.format == format_id::hifloat8   ? std::string("\"round\" (ties away) or \"hybrid\" for HIFLOAT8")
                 : op == rounding_op::ascend_quant_v3 ? std::string("only \"round\" (ties away) for FP8")
                 : op == rounding_op::quant_max       ? std::string("only \"rint\" (ties to even) for FP8")
                 : s.format == format_id::float4_e2m1fn ? std::string("\"rint\", \"floor\" or \"round\" for FLOAT4_E2M1")
                                                        : std::string("only \"rint\" for FP8")) +
                "; rounding " + std::string(to_string(s.round)) + " is " +
                (name ? "\"" + std::string(*name) + "\"" : std::string("not expressible")));
    };
    const auto per_row_or_tensor = [](granularity g) {
      return g == granularity::tensor || g == granularity::token || g == granularity::channel;
    };
    switch (r.op) {
      case operation::quantize:
      case operation::quantize_with_scales:
      case operation::quantize_with_amax: {
        if (!is_float_input(r.input)) return no("x must be FLOAT, FLOAT16 or BFLOAT16");
        if (support v = detail::scheme_support(s); !v) return v;
        if (r.op == operation::quantize && s.gran == granularity::mx) {
          if (!is_fp8(s.format) && s.format != format_id::float4_e2m1fn)
            return no("aclnnDynamicMxQuantV3 writes FLOAT8_E5M2, FLOAT8_E4M3FN or FLOAT4_E2M1 (dstType 35/36/40), not " +
                      std::string(to_string(s.format)));
          if (!scale_alg(s.rule, s.format))
            return no("aclnnDynamicMxQuantV3 has scaleAlg 0 (OCP floor) for every output and 1 (rceil) for FP8 only; "
                      "rule " + std::string(to_string(s.rule)) + " has no counterpart");
          if (!is_mx32(s)) return no("aclnnDynamicMxQuantV3 is used with blocksize 32 along one axis, not " + s.describe());
          if (r.dst_max != 0.0f) return no("dst_max is a per-token / per-tensor (aclnnDynamicQuantV4) knob");
          return round_ok(rounding_op::dynamic_mx_quant_v3);
        }
        if (s.gran == granularity::mx) return no(std::string(to_string(r.op)) + " takes fp32 scales; use quantize for mx");
        if (!is_q8(s.format))
          return no("the 950's static and dynamic quantizers write HIFLOAT8, FLOAT8_E5M2 or FLOAT8_E4M3FN (dstType 34/35/36), "
                    "not " + std::string(to_string(s.format)));
        if (r.op == operation::quantize_with_amax) {
          if (s.gran != granularity::tensor) return no("aclnnQuantMax takes one scale of shape [1] (per tensor)");
          return round_ok(rounding_op::quant_max);
        }
        if (!per_row_or_tensor(s.gran))
          return no(std::string(r.op == operation::quantize ? "aclnnDynamicQuantV4" : "aclnnAscendQuantV3") +
                    " scales are per tensor or per row; block scales have no aclnn quantizer");
        if (r.op == operation::quantize_with_scales) return round_ok(rounding_op::ascend_quant_v3);
        if (r.input != format_id::float16 && r.input != format_id::bfloat16)
          return no("aclnnDynamicQuantV4 takes FLOAT16 or BFLOAT16 x, not " + std::string(to_string(r.input)));
        if (s.rule != scale_rule::max)
          return no("aclnnDynamicQuantV4 computes s = amax / max (scale rule max), not rule " + std::string(to_string(s.rule)));
        if (round_name(s.round, s.format) != round_name(rounding::nearest, s.format))
          return no("aclnnDynamicQuantV4 has no round-mode argument: its 950 kernel rounds HIFLOAT8 ties-away and FP8 "
                    "ties-to-even, saturating (rounding nearest); got " + std::string(to_string(s.round)));
        if (r.dst_max != 0.0f && s.format != format_id::hifloat8)
          return no("dstTypeMax takes effect for HIFLOAT8 only; use dst_max 0 for " + std::string(to_string(s.format)));
        if (!(r.dst_max >= 0.0f && r.dst_max <= 32768.0f)) return no("dstTypeMax must lie in [0, 32768]");
        return support::yes();
      }
      case operation::dequantize:
        if (support v = detail::scheme_support(s); !v) return v;
        if (!is_q8(s.format) && s.format != format_id::float4_e2m1fn)
          return no("aclnnCast reads HIFLOAT8, FLOAT8_E5M2, FLOAT8_E4M3FN or FLOAT4_E2M1");
        if (r.output != float32) return no("dequantize writes FLOAT");
        if (!per_row_or_tensor(s.gran))
          return no("no documented aclnn dequantizer takes block or MX scales on the 950 (aclnnAscendAntiQuant is not "
                    "supported there); the shim composes aclnnCast + aclnnMul, which covers per-tensor and per-row "
                    "scales. aclnnQuantMatmulV5 consumes MX scales directly");
        return support::yes();
      case operation::gemm:
      case operation::grouped_gemm: return supports_gemm(r);
    }
    return no("unknown operation");
  }

  void quantize(const tensor_view& x, const quantized_view& y, const dynamic_scale_options& o = {}) override {
    constexpr std::string_view who = "ascend quantize";
    const auto l = detail::check_quantize(who, x, y, where(), where());
    require(request::for_quantize(x.type, y.scheme, o));
    if (x.empty()) return;
    if (y.scheme.gran == granularity::mx) {
      mx_quantize(who, x, y, l);
      return;
    }
    const bool per_tensor = y.scheme.gran == granularity::tensor;
    const std::int64_t rows = x.rows(), cols = x.cols();
    const auto xt = make_acl_tensor(x, {rows, cols});
    const auto yt = make_acl_tensor(y.codes, {rows, cols});
    const auto st = make_acl_tensor(y.scales, per_tensor ? std::vector<std::int64_t>{1} : std::vector<std::int64_t>{rows});
    const char* mode = per_tensor ? "pertensor" : "pertoken";
    const auto dst = static_cast<std::int64_t>(acl_dtype_number(y.scheme.format));
    two_phase(
        "aclnnDynamicQuantV4",
        [&](std::uint64_t* ws, aclOpExecutor** ex) {
          return aclnnDynamicQuantV4GetWorkspaceSize(xt.get(), nullptr, nullptr, dst, true, mode, o.dst_max, yt.get(),
                                                     st.get(), nullptr, ws, ex);
        },
        aclnnDynamicQuantV4);
  }

  void quantize_with_scales(const tensor_view& x, const quantized_view& y) override {
    constexpr std::string_view who = "ascend quantize_with_scales";
    const auto l = detail::check_quantize(who, x, y, where(), host);
    require(request::for_quantize_with_scales(x.type, y.scheme));
    const auto scales = host_scales(x, y, l);
    if (x.empty()) return;
    // aclnnAscendQuantV3 computes y = round(x * scale): it MULTIPLIES, so it gets 1 / s, in x's dtype.
    const device_buffer& inv = upload_reciprocals(who, scales, x.type);
    const auto xt = make_acl_tensor(x, {x.rows(), x.cols()});
    const auto yt = make_acl_tensor(y.codes, {x.rows(), x.cols()});
    const auto st = make_acl_tensor(inv.data(), x.type, {static_cast<std::int64_t>(scales.size())});
    const std::int32_t axis = y.scheme.gran == granularity::tensor ? -1 : -2;  // per row: along dim -2 of (rows, cols)
    const std::string mode(*round_name(y.scheme.round, y.scheme.format));
    const auto dst = static_cast<std::int32_t>(acl_dtype_number(y.scheme.format));
    two_phase(
        "aclnnAscendQuantV3",
        [&](std::uint64_t* ws, aclOpExecutor** ex) {
          return aclnnAscendQuantV3GetWorkspaceSize(xt.get(), st.get(), nullptr, false, mode.c_str(), dst, axis, yt.get(),
                                                    ws, ex);
        },
        aclnnAscendQuantV3);
  }

  void quantize_with_amax(const tensor_view& x, const quantized_view& y, const tensor_view& amax_out) override {
    constexpr std::string_view who = "ascend quantize_with_amax";
    const auto l = detail::check_quantize(who, x, y, where(), host);
    detail::check_amax_out(who, amax_out, x, where());
    require(request::for_quantize_with_amax(x.type, y.scheme));
    const auto scales = host_scales(x, y, l);
    if (x.empty()) return;
    // aclnnQuantMax computes y = Cast(x * scale): 1 / s again, as FLOAT of shape [1].
    const device_buffer& inv = upload_reciprocals(who, scales, float32);
    const auto xt = make_acl_tensor(x, {x.rows(), x.cols()});
    const auto yt = make_acl_tensor(y.codes, {x.rows(), x.cols()});
    const auto st = make_acl_tensor(inv.data(), float32, {1});
    const auto at = make_acl_tensor(amax_out, {1});
    std::string mode(*round_name(y.scheme.round, y.scheme.format));  // the prototype takes a non-const char*
    const auto dst = static_cast<std::int64_t>(acl_dtype_number(y.scheme.format));
    two_phase(
        "aclnnQuantMax",
        [&](std::uint64_t* ws, aclOpExecutor** ex) {
          return aclnnQuantMaxGetWorkspaceSize(xt.get(), st.get(), mode.data(), dst, yt.get(), at.get(), ws, ex);
        },
        aclnnQuantMax);
  }

  void dequantize(const quantized_view& q, const tensor_view& out) override {
    constexpr std::string_view who = "ascend dequantize";
    (void)detail::check_dequantize(who, q, out, where());
    require(request::for_dequantize(q.scheme, out.type));
    if (q.codes.empty()) return;
    const std::int64_t rows = q.codes.rows(), cols = q.codes.cols();
    // 1. aclnnCast codes -> FLOAT into a temporary (exact decode); 2. aclnnMul by the broadcast scale.
    const device_buffer& decoded = temporary(static_cast<std::size_t>(rows * cols) * sizeof(float));
    const auto ct = make_acl_tensor(q.codes, {rows, cols});
    const auto tt = make_acl_tensor(decoded.data(), float32, {rows, cols});
    two_phase(
        "aclnnCast",
        [&](std::uint64_t* ws, aclOpExecutor** ex) { return aclnnCastGetWorkspaceSize(ct.get(), ACL_FLOAT, tt.get(), ws, ex); },
        aclnnCast);
    const auto st = make_acl_tensor(q.scales, q.scheme.gran == granularity::tensor ? std::vector<std::int64_t>{1}
                                                                                  : std::vector<std::int64_t>{rows, 1});
    const auto ot = make_acl_tensor(out, {rows, cols});
    two_phase(
        "aclnnMul",
        [&](std::uint64_t* ws, aclOpExecutor** ex) { return aclnnMulGetWorkspaceSize(tt.get(), st.get(), ot.get(), ws, ex); },
        aclnnMul);
  }

  void gemm(const quantized_view& a, const quantized_view& b, const tensor_view& bias, const tensor_view& out,
            gemm_layout layout = gemm_layout::kn) override {
    constexpr std::string_view who = "ascend gemm";
    const auto p = detail::check_gemm(who, a, b, bias, out, layout, where());
    require(request::for_gemm(a.scheme, b.scheme, out.type, layout, bias_of(bias)));
    if (p.m == 0 || p.n == 0) return;
    if (p.k == 0) throw unsupported_error(std::string(who) + ": aclnnQuantMatmulV5 takes no empty tensors (k = 0)");
    const bool nk = layout == gemm_layout::nk;
    const format_id fa = a.scheme.format, fb = b.scheme.format;
    if (a.scheme.gran == granularity::mx && fb == format_id::float4_e2m1fn) {
      if (fa == format_id::float4_e2m1fn && (p.k % 2 != 0 || (p.k + 31) / 32 % 2 != 0))
        throw unsupported_error(std::string(who) + ": MX FLOAT4_E2M1 x FLOAT4_E2M1 needs k even and ceil(k/32) even, k = " +
                                std::to_string(p.k));
      if (fa == format_id::float8_e4m3fn && p.k % 64 != 0)
        throw unsupported_error(std::string(who) + ": MX FLOAT8_E4M3FN x FLOAT4_E2M1 needs k a multiple of 64, k = " +
                                std::to_string(p.k));
    }
    const auto x1 = make_acl_tensor(a.codes);
    const auto x2 = make_acl_tensor(b.codes);  // stored (k, n), or (n, k) with transposeX2
    const auto x1s = matmul_scale(who, a, 'A', layout, 1, detail::usize(p.m), detail::usize(p.k));
    const auto x2s = nk ? matmul_scale(who, b, 'B', layout, 1, detail::usize(p.n), detail::usize(p.k))
                        : matmul_scale(who, b, 'B', layout, 1, detail::usize(p.k), detail::usize(p.n));
    const acl_tensor bt = bias.is_none() ? acl_tensor() : make_acl_tensor(bias);
    const auto ot = make_acl_tensor(out);
    const std::int64_t group_size = matmul_group_size(a.scheme, b.scheme, layout);
    two_phase(
        "aclnnQuantMatmulV5",
        [&](std::uint64_t* ws, aclOpExecutor** ex) {
          return aclnnQuantMatmulV5GetWorkspaceSize(x1.get(), x2.get(), x1s.get(), x2s.get(), nullptr, nullptr, nullptr,
                                                    nullptr, bt.get(), false, nk, group_size, ot.get(), ws, ex);
        },
        aclnnQuantMatmulV5);
  }

  void grouped_gemm(const quantized_view& a, const quantized_view& b, const tensor_view& group_sizes,
                    const tensor_view& bias, const tensor_view& out, gemm_layout layout = gemm_layout::kn) override {
    constexpr std::string_view who = "ascend grouped_gemm";
    const device gw = group_sizes.where == host ? host : where();
    const auto p = detail::check_grouped_gemm(who, a, b, group_sizes, bias, out, layout, where(), gw);
    require(request::for_gemm(a.scheme, b.scheme, out.type, layout, bias_of(bias), operation::grouped_gemm));
    if (p.m == 0 || p.n == 0 || p.groups == 0) return;
    if (p.k == 0) throw unsupported_error(std::string(who) + ": aclnnGroupedMatmulV4 takes no empty tensors (K = 0)");
    const bool nk = layout == gemm_layout::nk;
    if (a.scheme.format == format_id::float4_e2m1fn && (p.k % 2 != 0 || p.k == 2 || (!nk && p.n % 2 != 0)))
      throw unsupported_error(std::string(who) + ": MX FLOAT4_E2M1 needs K even and not 2 (and N even when B is (g, K, N))");
    // Group sizes: a device INT64 tensor; host sizes are checked (sum M) and uploaded.
    void* sizes_data = group_sizes.data;
    if (group_sizes.where == host) {
      (void)detail::read_group_sizes(who, group_sizes, p.m);
      device_buffer& dev = temporary(static_cast<std::size_t>(p.groups) * sizeof(std::int64_t));
      dev.upload(group_sizes.data, dev.size());
      sizes_data = dev.data();
    }
    acl_tensor x = make_acl_tensor(a.codes);
    // B: (g, K, N) as stored, or the (g, N, K) storage seen through a transposed (g, K, N) view: the
    // GroupedMatmul docs express a transposed weight as a non-contiguous tensor.
    acl_tensor w = nk ? make_acl_tensor(b.codes.data, b.scheme.format, {p.groups, p.k, p.n}, {p.n * p.k, 1, p.k},
                                        {p.groups, p.n, p.k})
                      : make_acl_tensor(b.codes);
    acl_tensor ws_scale = grouped_weight_scale(who, b, layout, p);
    acl_tensor pt_scale = a.scheme.gran == granularity::tensor
                              ? make_acl_tensor(a.scales, {p.groups})
                              : matmul_scale(who, a, 'A', gemm_layout::nk, 1, detail::usize(p.m), detail::usize(p.k));
    acl_tensor bt = bias.is_none() ? acl_tensor() : make_acl_tensor(bias);
    acl_tensor yt = make_acl_tensor(out);
    const auto gl = make_acl_tensor(sizes_data, int64, {p.groups});
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
  static bias_term bias_of(const tensor_view& bias) noexcept { return bias.is_none() ? bias_term::none : bias_term::present; }
  static bool is_fp8(format_id f) noexcept { return f == format_id::float8_e4m3fn || f == format_id::float8_e5m2; }
  static bool is_q8(format_id f) noexcept { return f == format_id::hifloat8 || is_fp8(f); }
  /// The MX block the operators know: 32 elements along one axis (the library's 1-D MX tile).
  static bool is_mx32(const quant_scheme& s) {
    const auto tile = minifloat::detail::scale_tile(s, 64, 64);
    return tile == std::pair<std::size_t, std::size_t>{1, 32} || tile == std::pair<std::size_t, std::size_t>{32, 1};
  }
  static bool is_block(const quant_scheme& s, std::size_t r, std::size_t c) noexcept {
    return s.gran == granularity::block && s.block_rows == r && s.block_cols == c;
  }
  /// B scaled per output channel n, in the library's words: rows of an (n, k) B, or one K x 1 block
  /// per column of a (k, n) B (the tile must cover K; checked with the shapes, matmul_scale).
  static bool per_output_channel(const quant_scheme& b, gemm_layout layout) noexcept {
    if (layout == gemm_layout::nk) return b.gran == granularity::channel || b.gran == granularity::token;
    return b.gran == granularity::block && b.block_cols == 1;
  }

  // --- capability tables for the GEMMs (aclnnQuantMatmulV5 / aclnnGroupedMatmulV4 on the 950) -----

  [[nodiscard]] static support supports_gemm(const request& r) {
    const bool grouped = r.op == operation::grouped_gemm;
    const std::string op = grouped ? "aclnnGroupedMatmulV4: " : "aclnnQuantMatmulV5: ";
    const auto no = [&](const std::string& why) { return support::no(op + why); };
    // First the library's own rules (what the GEMM means), then the operator's modes.
    if (support v = detail::gemm_operand_support(r); !v) return v;
    if (r.output != float32 && r.output != format_id::bfloat16) return no("out is FLOAT or BFLOAT16 here");
    const quant_scheme &a = r.scheme, &b = r.weight;
    const bool fp8_pair = is_fp8(a.format) && is_fp8(b.format);
    const bool hif8_pair = a.format == format_id::hifloat8 && b.format == format_id::hifloat8;
    const bool fp4_pair = a.format == format_id::float4_e2m1fn && b.format == format_id::float4_e2m1fn;
    const bool mx_fake = !grouped && a.format == format_id::float8_e4m3fn && b.format == format_id::float4_e2m1fn;
    if (!fp8_pair && !hif8_pair && !fp4_pair && !mx_fake)
      return no(std::string(grouped ? "the 950 groups FP8 x FP8, HIFLOAT8 x HIFLOAT8 or (mx) FLOAT4_E2M1 x FLOAT4_E2M1"
                                    : "the 950 multiplies FP8 x FP8 (E4M3/E5M2), HIFLOAT8 x HIFLOAT8, FLOAT4_E2M1 x "
                                      "FLOAT4_E2M1 (mx) or FLOAT8_E4M3FN x FLOAT4_E2M1 (mx)") +
                "; got " + std::string(to_string(a.format)) + " x " + std::string(to_string(b.format)));
    const bool a_mx = a.gran == granularity::mx, b_mx = b.gran == granularity::mx;
    if (a_mx || b_mx) {
      if (!a_mx || !b_mx) return no("mx quantization puts FLOAT8_E8M0 scales on both operands");
      if (hif8_pair) return no("mx quantization takes FP8 or FP4 elements, not HIFLOAT8");
      if (!is_mx32(a) || !is_mx32(b)) return no("mx scales cover 32 elements along K");
      if (grouped) {
        if (fp8_pair && r.bias == bias_term::present) return no("mx with FP8 takes no bias");
        return support::yes();
      }
      if ((fp4_pair || mx_fake) && r.layout != gemm_layout::nk)
        return no("with FLOAT4_E2M1 weights only transposeX2 = true, i.e. B stored (n, k) (layout nk)");
      if (mx_fake && (r.output != format_id::bfloat16 || r.bias == bias_term::present))
        return no("mx fake quantization (E4M3 x FP4) writes BFLOAT16 and takes its bias as BFLOAT16 (1, n), which this "
                  "interface does not carry");
      return support::yes();
    }
    if (fp4_pair || mx_fake) return no("FLOAT4_E2M1 operands take mx (E8M0) scales");
    if (grouped && r.bias == bias_term::present) return no("FP8 / HIFLOAT8 grouped quantization takes no bias");
    const bool a_t = a.gran == granularity::tensor;
    const bool a_k = a.gran == granularity::token || a.gran == granularity::channel;
    const bool b_t = b.gran == granularity::tensor, b_c = per_output_channel(b, r.layout);
    if ((a_t || a_k) && (b_t || b_c)) {
      if (!grouped && a_t && b_c && r.bias == bias_term::present) return no("dynamic T-C quantization takes no bias");
      return support::yes();  // T-T, T-C, K-T, K-C with FLOAT32 scales
    }
    const bool b_128 = is_block(b, 128, 128);
    if (is_block(a, 1, 128) && b_128) {
      if (r.bias == bias_term::present) return no("G-B quantization with FP8 or HIFLOAT8 takes no bias");
      return support::yes();  // G-B: gsM = 1, gsN = gsK = 128
    }
    if (!grouped && is_block(a, 128, 128) && b_128) {
      if (r.bias == bias_term::present) return no("B-B quantization with FP8 or HIFLOAT8 takes no bias");
      return support::yes();
    }
    return no("scales " + a.describe() + " x " + b.describe() +
              " match no documented mode: per tensor | per token x per tensor | per output channel (B nk channel, "
              "B kn block K x 1), G-B (A block 1x128, B block 128x128)" +
              (grouped ? std::string() : std::string(", B-B (A 128x128, B 128x128)")) + " or mx");
  }

  /// The scale tensor of one GEMM operand stored rows x cols (`slabs` of them): (1,) per tensor,
  /// (outer,) per row / output channel, the 2-D block grid, or the paired E8M0 layout (a paired
  /// temporary, or the caller's buffer where the layouts agree).
  acl_tensor matmul_scale(std::string_view who, const quantized_view& q, char role, gemm_layout layout, std::size_t slabs,
                          std::size_t rows, std::size_t cols) {
    const quant_scheme& s = q.scheme;
    const auto [gr, gc] = detail::scale_grid(s, rows, cols);
    const auto i64 = [](std::size_t v) { return static_cast<std::int64_t>(v); };
    switch (s.gran) {
      case granularity::tensor: return make_acl_tensor(q.scales, {1});
      case granularity::token:
      case granularity::channel: return make_acl_tensor(q.scales, {i64(gr)});
      case granularity::block:
        if (role == 'B' && per_output_channel(s, layout)) {
          if (gr != 1)
            throw unsupported_error(std::string(who) + ": B stored (k, n) scaled per output channel needs block_rows >= k = " +
                                    std::to_string(rows) + " (one K x 1 block per column), got " + s.describe());
          return make_acl_tensor(q.scales, {i64(gc)});
        }
        return make_acl_tensor(q.scales, {i64(gr), i64(gc)});
      case granularity::mx: break;
    }
    const int axis = s.axis;
    std::vector<std::int64_t> dims;
    if (slabs > 1) dims.push_back(i64(slabs));
    const std::int64_t codes_dims[] = {i64(rows), i64(cols)};
    for (const auto d : paired_scale_dims(codes_dims, axis)) dims.push_back(d);
    return make_acl_tensor(paired_from_plain(q.scales, mx_pairing_of(slabs, rows, cols, axis)), format_id::float8_e8m0fnu, dims);
  }

  /// scaleOptional of aclnnGroupedMatmulV4 (single weight tensor, 950 tables): (g,), (g, N), the
  /// per-expert block grid, or the paired MX layout of every expert.
  acl_tensor grouped_weight_scale(std::string_view who, const quantized_view& b, gemm_layout layout,
                                  const detail::grouped_problem& p) {
    const detail::slab_layout& l = p.b_slab;
    if (b.scheme.gran == granularity::mx) return matmul_scale(who, b, 'B', layout, l.count, l.rows, l.cols);
    if (b.scheme.gran == granularity::tensor) return make_acl_tensor(b.scales, {p.groups});
    if (per_output_channel(b.scheme, layout)) {
      if (layout == gemm_layout::kn && l.grid_rows != 1)
        throw unsupported_error(std::string(who) + ": B stored (g, K, N) scaled per output channel needs block_rows >= K = " +
                                std::to_string(l.rows) + ", got " + b.scheme.describe());
      return make_acl_tensor(b.scales, {p.groups, p.n});
    }
    return make_acl_tensor(b.scales, {p.groups, static_cast<std::int64_t>(l.grid_rows), static_cast<std::int64_t>(l.grid_cols)});
  }

  static std::int64_t matmul_group_size(const quant_scheme& a, const quant_scheme& b, gemm_layout layout) {
    if (a.gran == granularity::mx) return pack_group_size(1, 1, 32);
    if (a.gran == granularity::block && b.gran == granularity::block && !per_output_channel(b, layout)) {
      // A's tile is (m, k); B's stored tile is (n, k) for nk and (k, n) for kn.
      const std::size_t gs_n = layout == gemm_layout::nk ? b.block_rows : b.block_cols;
      return pack_group_size(static_cast<std::int64_t>(a.block_rows), static_cast<std::int64_t>(gs_n),
                             static_cast<std::int64_t>(a.block_cols));
    }
    return 0;
  }

  // --- MX quantization and the paired layout -------------------------------------------------------

  /// aclnnDynamicMxQuantV3 writes the paired layout: into the caller's plain buffer where the two
  /// layouts are the same bytes, else into a temporary copied to it afterwards.
  void mx_quantize(std::string_view who, const tensor_view& x, const quantized_view& y, const detail::slab_layout& l) {
    const int neg_axis = y.scheme.axis == 1 ? -1 : -2;
    if (x.rank > 7) throw unsupported_error(std::string(who) + ": aclnnDynamicMxQuantV3 takes x of rank 1..7, got " + x.describe());
    if (x.type == float32 && x.dim(neg_axis) < 32)
      throw unsupported_error(std::string(who) + ": aclnnDynamicMxQuantV3 with FLOAT x needs the quantized axis to have "
                              "at least 32 elements, got " + x.describe());
    if (y.scheme.format == format_id::float4_e2m1fn && x.dim(-1) % 2 != 0)
      throw unsupported_error(std::string(who) + ": aclnnDynamicMxQuantV3 with FLOAT4_E2M1 output needs an even last "
                              "dimension, got " + x.describe());
    const mx_pairing pairing = mx_pairing_of(l.count, l.rows, l.cols, y.scheme.axis);
    void* paired = pairing.copies.empty() ? y.scales.data : temporary(pairing.paired_bytes).data();
    const auto xt = make_acl_tensor(x);
    const auto yt = make_acl_tensor(y.codes);
    const auto st = make_acl_tensor(paired, format_id::float8_e8m0fnu, paired_scale_dims(x.dims(), y.scheme.axis));
    std::string mode(*round_name(y.scheme.round, y.scheme.format));
    const auto dst = static_cast<std::int64_t>(acl_dtype_number(y.scheme.format));
    const std::int64_t axis = neg_axis, alg = *scale_alg(y.scheme.rule, y.scheme.format);
    two_phase(
        "aclnnDynamicMxQuantV3",
        [&](std::uint64_t* ws, aclOpExecutor** ex) {
          return aclnnDynamicMxQuantV3GetWorkspaceSize(xt.get(), axis, mode.data(), dst, std::int64_t{32}, alg, 0.0, 0.0,
                                                       yt.get(), st.get(), ws, ex);
        },
        aclnnDynamicMxQuantV3);
    for (const auto& c : pairing.copies)
      copy_bytes({y.scales.data, pairing.plain_bytes, c.dims, c.plain_strides, c.plain_offset},
                 {paired, pairing.paired_bytes, c.dims, c.paired_strides, c.paired_offset});
  }

  /// The paired layout of the plain MX scales `plain` on the device: `plain` itself where the two
  /// layouts are the same bytes, else a temporary with pad bytes 0 (as the quantize op writes them).
  void* paired_from_plain(const tensor_view& plain, const mx_pairing& pairing) {
    if (pairing.copies.empty()) return plain.data;
    device_buffer& paired = temporary(pairing.paired_bytes);
    if (pairing.pad)
      check_acl("aclrtMemsetAsync", aclrtMemsetAsync(paired.data(), paired.size(), 0, paired.size(), stream_));
    for (const auto& c : pairing.copies)
      copy_bytes({paired.data(), pairing.paired_bytes, c.dims, c.paired_strides, c.paired_offset},
                 {plain.data, pairing.plain_bytes, c.dims, c.plain_strides, c.plain_offset});
    return paired.data();
  }

  /// A strided byte view of a device buffer (aclnnInplaceCopy's UINT8 operand).
  struct byte_view {
    void* base;
    std::size_t bytes;
    const std::vector<std::int64_t>& dims;
    const std::vector<std::int64_t>& strides;
    std::int64_t offset;
  };

  /// dst = src, element by element (aclnnInplaceCopy takes non-contiguous views on both sides).
  void copy_bytes(const byte_view& dst, const byte_view& src) {
    const std::vector<std::int64_t> dst_storage{static_cast<std::int64_t>(dst.bytes)};
    const std::vector<std::int64_t> src_storage{static_cast<std::int64_t>(src.bytes)};
    const auto d = make_acl_tensor(dst.base, ACL_UINT8, dst.dims, dst.strides, dst_storage, dst.offset);
    const auto s = make_acl_tensor(src.base, ACL_UINT8, src.dims, src.strides, src_storage, src.offset);
    two_phase(
        "aclnnInplaceCopy",
        [&](std::uint64_t* ws, aclOpExecutor** ex) { return aclnnInplaceCopyGetWorkspaceSize(d.get(), s.get(), ws, ex); },
        aclnnInplaceCopy);
  }

  /// The host static scales after the library's own check (quantize_with_scales: one finite
  /// positive scale per group), shape-only on x (its device data is never read here).
  static std::span<const float> host_scales(const tensor_view& x, const quantized_view& y, const detail::slab_layout& l) {
    const std::span<const float> scales(static_cast<const float*>(y.scales.data), detail::usize(y.scales.numel()));
    minifloat::detail::check_static_scales(matrix_view<const float>(static_cast<const float*>(x.data), l.rows, l.cols, l.cols),
                                           y.scheme, scales);
    return scales;
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

  /// 1 / s for every scale, rounded once to `t` (the dtype the operator wants the scale in), uploaded.
  const device_buffer& upload_reciprocals(std::string_view who, std::span<const float> scales, element_type t) {
    const std::size_t width = t == float32 ? 4 : 2;
    std::vector<std::uint8_t> bytes(scales.size() * width);
    for (std::size_t i = 0; i < scales.size(); ++i) {
      float inv_value = 0.0f;
      if (t == float32) {
        inv_value = 1.0f / scales[i];
        std::memcpy(bytes.data() + 4 * i, &inv_value, 4);
      } else {
        const double inv = 1.0 / static_cast<double>(scales[i]);
        const bool bf16 = t == format_id::bfloat16;
        const std::uint16_t b = bf16 ? narrow<bfloat16>(inv).bits() : narrow<float16>(inv).bits();
        inv_value = bf16 ? static_cast<float>(bfloat16::from_bits(b)) : static_cast<float>(float16::from_bits(b));
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
