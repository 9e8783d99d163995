#pragma once
// The Ascend shim's tables: our dtypes as aclDataType numbers, our round modes as aclnn round-mode
// strings per operator, groupSize packing, and which SoCs take the low-precision dtypes.
// Every value comes from public documentation (docs/formats/ascend.md#sources); NOTHING here
// has been checked against hardware. When compiled against a CANN toolkit, the static_asserts
// below compare our numbers with the toolkit's own aclDataType enum.
//
// Opt-in: this header is never included by minifloat.hpp and refuses to compile unless
// MINIFLOAT_WITH_CANN is defined (CMake: -DMINIFLOAT_WITH_CANN=ON, target minifloat::ascend).
#if !defined(MINIFLOAT_WITH_CANN)
#error "minifloat/backend/ascend/ needs the CANN toolkit: configure with -DMINIFLOAT_WITH_CANN=ON and link minifloat::ascend"
#endif

#include <acl/acl.h>

#include <cstdint>
#include <optional>
#include <string_view>

#include "../backend.hpp"

namespace minifloat::backend::ascend {

// --- aclDataType (docs/formats/ascend.md#data-types; runtime docs aclDataType.md) --------------------------------

/// The aclDataType number of a dtype, written down from the docs (not taken from the header, so
/// the static_asserts below compare two independent transcriptions).
constexpr int acl_dtype_number(dtype t) noexcept {
  switch (t) {
    case dtype::float32: return 0;            // ACL_FLOAT
    case dtype::float16: return 1;            // ACL_FLOAT16
    case dtype::int64: return 9;              // ACL_INT64
    case dtype::bfloat16: return 27;          // ACL_BF16
    case dtype::hifloat8: return 34;          // ACL_HIFLOAT8
    case dtype::float8_e5m2: return 35;       // ACL_FLOAT8_E5M2
    case dtype::float8_e4m3fn: return 36;     // ACL_FLOAT8_E4M3FN
    case dtype::float8_e8m0fnu: return 37;    // ACL_FLOAT8_E8M0
    case dtype::float6_e3m2fn: return 38;     // ACL_FLOAT6_E3M2
    case dtype::float6_e2m3fn: return 39;     // ACL_FLOAT6_E2M3
    case dtype::float4_e2m1fn_x2: return 40;  // ACL_FLOAT4_E2M1 (element units, two per byte)
  }
  return -1;
}

static_assert(ACL_FLOAT == acl_dtype_number(dtype::float32));
static_assert(ACL_FLOAT16 == acl_dtype_number(dtype::float16));
static_assert(ACL_INT64 == acl_dtype_number(dtype::int64));
static_assert(ACL_BF16 == acl_dtype_number(dtype::bfloat16));
static_assert(ACL_HIFLOAT8 == acl_dtype_number(dtype::hifloat8));
static_assert(ACL_FLOAT8_E5M2 == acl_dtype_number(dtype::float8_e5m2));
static_assert(ACL_FLOAT8_E4M3FN == acl_dtype_number(dtype::float8_e4m3fn));
static_assert(ACL_FLOAT8_E8M0 == acl_dtype_number(dtype::float8_e8m0fnu));
static_assert(ACL_FLOAT6_E3M2 == acl_dtype_number(dtype::float6_e3m2fn));
static_assert(ACL_FLOAT6_E2M3 == acl_dtype_number(dtype::float6_e2m3fn));
static_assert(ACL_FLOAT4_E2M1 == acl_dtype_number(dtype::float4_e2m1fn_x2));

constexpr aclDataType to_acl(dtype t) noexcept { return static_cast<aclDataType>(acl_dtype_number(t)); }

/// The dtypes the runtime docs restrict to the Atlas 350 / Ascend 950 generation (values 33..41).
constexpr bool is_a5_only(dtype t) noexcept { return acl_dtype_number(t) >= 33 && acl_dtype_number(t) <= 41; }

/// Whether a SoC name (aclrtGetSocName) belongs to the Ascend 950 generation, the only one whose
/// runtime accepts aclDataType 33..41 (docs/formats/ascend.md#product-scope).
constexpr bool soc_is_950(std::string_view soc) noexcept { return soc.find("Ascend950") != std::string_view::npos; }

// --- round-mode strings (docs/formats/ascend.md#round-mode-strings; the operators' docs) ------------------------------------

/// The aclnn operators the shim calls that take a round-mode string.
enum class rounding_op : std::uint8_t { ascend_quant_v3, quant_max, dynamic_mx_quant_v3 };

/// The aclnn round-mode name of m for `element` (nearest resolved per format: "round" for HiF8,
/// "rint" otherwise); nullopt where no name exists.
constexpr std::optional<std::string_view> round_name(round_mode m, dtype element) noexcept {
  switch (resolve_nearest(m, element)) {
    case round_mode::nearest_even: return "rint";
    case round_mode::nearest_away: return "round";
    case round_mode::toward_zero: return "trunc";
    case round_mode::upward: return "ceil";
    case round_mode::downward: return "floor";
    case round_mode::hybrid: return "hybrid";
    case round_mode::nearest: break;
  }
  return std::nullopt;
}

/// Whether operator `op` documents round-mode string `s` for output `element` on the 950.
///   aclnnAscendQuantV3   HIFLOAT8: round, hybrid    FP8: round
///   aclnnQuantMax        HIFLOAT8: round, hybrid    FP8: rint
///   aclnnDynamicMxQuantV3                           FP8: rint     FP4_E2M1: rint, floor, round
constexpr bool round_documented(rounding_op op, dtype element, std::string_view s) noexcept {
  const bool hif8 = element == dtype::hifloat8;
  const bool fp8 = element == dtype::float8_e4m3fn || element == dtype::float8_e5m2;
  const bool fp4 = element == dtype::float4_e2m1fn_x2;
  switch (op) {
    case rounding_op::ascend_quant_v3: return (hif8 && (s == "round" || s == "hybrid")) || (fp8 && s == "round");
    case rounding_op::quant_max: return (hif8 && (s == "round" || s == "hybrid")) || (fp8 && s == "rint");
    case rounding_op::dynamic_mx_quant_v3: return (fp8 && s == "rint") || (fp4 && (s == "rint" || s == "floor" || s == "round"));
  }
  return false;
}

inline std::string_view rounding_op_name(rounding_op op) noexcept {
  switch (op) {
    case rounding_op::ascend_quant_v3: return "aclnnAscendQuantV3";
    case rounding_op::quant_max: return "aclnnQuantMax";
    case rounding_op::dynamic_mx_quant_v3: return "aclnnDynamicMxQuantV3";
  }
  return "?";
}

// --- aclnnQuantMatmulV5 groupSize (docs/formats/ascend.md#gemm-operators) -------------------------------------------

/// groupSize = gsK | gsN << 16 | gsM << 32 (the high 16 bits are ignored by the op).
constexpr std::int64_t pack_group_size(std::int64_t gs_m, std::int64_t gs_n, std::int64_t gs_k) noexcept {
  return gs_k | (gs_n << 16) | (gs_m << 32);
}
static_assert(pack_group_size(1, 1, 32) == 4295032864);      // MX
static_assert(pack_group_size(1, 128, 128) == 4303356032);   // G-B
static_assert(pack_group_size(128, 128, 128) == 549764202624);  // B-B

// --- aclnnDynamicMxQuantV3 scaleAlg (docs/formats/ascend.md#quantize-operators) -----------------------------------------

/// scaleAlg for an MX scale rule: 0 = OCP floor; 1 = the cuBLAS-style exponent rounded up, which is
/// the library's rceil (FP8 only); nullopt for the rules aclnn has no algorithm for.
constexpr std::optional<std::int64_t> scale_alg(mx_scale_rule r, dtype element) noexcept {
  if (r == mx_scale_rule::floor) return 0;
  if (r == mx_scale_rule::rceil && (element == dtype::float8_e4m3fn || element == dtype::float8_e5m2)) return 1;
  return std::nullopt;
}

}  // namespace minifloat::backend::ascend
