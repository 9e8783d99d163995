#pragma once
// The Ascend shim's tables, each written once and each mapping FROM the library's vocabulary:
// element types (format_id, float32, int64) -> aclDataType numbers, the library's `rounding` ->
// aclnn round-mode strings, MX scale rules -> scaleAlg, GEMM tiles -> groupSize, the library's plain
// MX scale layout <-> the CANN paired layout, and which SoCs take the low-precision dtypes.
// Every value comes from public documentation (docs/formats/ascend.md#sources); NOTHING here has
// been checked against hardware. When compiled against a CANN toolkit, the static_asserts below
// compare our numbers with the toolkit's own aclDataType enum.
//
// Opt-in: this header is never included by minifloat.hpp and refuses to compile unless
// MINIFLOAT_WITH_CANN is defined (CMake: -DMINIFLOAT_WITH_CANN=ON, target minifloat::ascend).
#if !defined(MINIFLOAT_WITH_CANN)
#error "minifloat/backend/ascend/ needs the CANN toolkit: configure with -DMINIFLOAT_WITH_CANN=ON and link minifloat::ascend"
#endif

#include <acl/acl.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "../../quant/mx_tensor.hpp"
#include "../backend.hpp"

namespace minifloat::backend::ascend {

// --- aclDataType (docs/formats/ascend.md#data-types; the CANN runtime documentation of aclDataType) --------------------------------

/// The aclDataType number of an element type, written down from the docs (not taken from the
/// header, so the static_asserts below compare two independent transcriptions).
constexpr int acl_dtype_number(element_type t) noexcept {
  if (t == float32) return 0;  // ACL_FLOAT
  if (t == int64) return 9;    // ACL_INT64
  switch (*t.format()) {
    case format_id::float16: return 1;          // ACL_FLOAT16
    case format_id::bfloat16: return 27;        // ACL_BF16
    case format_id::hifloat8: return 34;        // ACL_HIFLOAT8
    case format_id::float8_e5m2: return 35;     // ACL_FLOAT8_E5M2
    case format_id::float8_e4m3fn: return 36;   // ACL_FLOAT8_E4M3FN
    case format_id::float8_e8m0fnu: return 37;  // ACL_FLOAT8_E8M0
    case format_id::float6_e3m2fn: return 38;   // ACL_FLOAT6_E3M2
    case format_id::float6_e2m3fn: return 39;   // ACL_FLOAT6_E2M3
    case format_id::float4_e2m1fn: return 40;   // ACL_FLOAT4_E2M1 (element units, two per byte)
    case format_id::float8_e4m3fnuz:  // the ml_dtypes float8 variants have no aclDataType
    case format_id::float8_e5m2fnuz:
    case format_id::float8_e4m3b11fnuz:
    case format_id::float8_e3m4:
    case format_id::float8_e4m3: return -1;
  }
  return -1;
}

static_assert(ACL_FLOAT == acl_dtype_number(float32));
static_assert(ACL_FLOAT16 == acl_dtype_number(format_id::float16));
static_assert(ACL_INT64 == acl_dtype_number(int64));
static_assert(ACL_BF16 == acl_dtype_number(format_id::bfloat16));
static_assert(ACL_HIFLOAT8 == acl_dtype_number(format_id::hifloat8));
static_assert(ACL_FLOAT8_E5M2 == acl_dtype_number(format_id::float8_e5m2));
static_assert(ACL_FLOAT8_E4M3FN == acl_dtype_number(format_id::float8_e4m3fn));
static_assert(ACL_FLOAT8_E8M0 == acl_dtype_number(format_id::float8_e8m0fnu));
static_assert(ACL_FLOAT6_E3M2 == acl_dtype_number(format_id::float6_e3m2fn));
static_assert(ACL_FLOAT6_E2M3 == acl_dtype_number(format_id::float6_e2m3fn));
static_assert(ACL_FLOAT4_E2M1 == acl_dtype_number(format_id::float4_e2m1fn));

constexpr aclDataType to_acl(element_type t) noexcept { return static_cast<aclDataType>(acl_dtype_number(t)); }

/// Whether a SoC name (aclrtGetSocName) belongs to the Ascend 950 generation, the only one whose
/// runtime accepts aclDataType 33..41 (docs/formats/ascend.md#product-scope).
constexpr bool soc_is_950(std::string_view soc) noexcept { return soc.find("Ascend950") != std::string_view::npos; }

// --- round-mode strings (docs/formats/ascend.md#round-mode-strings; the operators' docs) ------------------------------------

/// The aclnn operators the shim calls that take a round-mode string.
enum class rounding_op : std::uint8_t { ascend_quant_v3, quant_max, dynamic_mx_quant_v3 };

/// The aclnn round-mode string of the library's rounding r for output `element`, where one exists:
/// nearest is the format's own nearest ("round", ties away, for hifloat8; "rint" otherwise), and
/// stochastic is the 950's one stochastic mode, HiF8-only "hybrid" (docs/formats/ascend.md#hybrid-rounding:
/// ties away near 1, input-seeded stochastic elsewhere; the request's seed plays no part).
constexpr std::optional<std::string_view> round_name(rounding r, format_id element) noexcept {
  switch (r) {
    case rounding::nearest: return element == format_id::hifloat8 ? "round" : "rint";
    case rounding::nearest_even: return "rint";
    case rounding::nearest_away: return "round";
    case rounding::toward_zero: return "trunc";
    case rounding::upward: return "ceil";
    case rounding::downward: return "floor";
    case rounding::stochastic:
      if (element == format_id::hifloat8) return "hybrid";
      break;
  }
  return std::nullopt;
}

/// Whether operator `op` documents round-mode string `s` for output `element` on the 950.
///   aclnnAscendQuantV3   HIFLOAT8: round, hybrid    FP8: round
///   aclnnQuantMax        HIFLOAT8: round, hybrid    FP8: rint
///   aclnnDynamicMxQuantV3                           FP8: rint     FP4_E2M1: rint, floor, round
constexpr bool round_documented(rounding_op op, format_id element, std::string_view s) noexcept {
  const bool hif8 = element == format_id::hifloat8;
  const bool fp8 = element == format_id::float8_e4m3fn || element == format_id::float8_e5m2;
  const bool fp4 = element == format_id::float4_e2m1fn;
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
constexpr std::optional<std::int64_t> scale_alg(scale_rule r, format_id element) noexcept {
  if (r == scale_rule::floor) return 0;
  if (r == scale_rule::rceil && (element == format_id::float8_e4m3fn || element == format_id::float8_e5m2)) return 1;
  return std::nullopt;
}

// --- the CANN paired MX scale layout (docs/formats/mx.md#scale-layouts) ------------------------------------------

/// The paired shape CANN's MX operators read and write for codes of shape `codes_dims` blocked along
/// library axis `axis` (1: along the last dim, 0: down dim -2): every trailing 2-D slab's
/// mx_cann_scale_shape (rank 1: without its leading 1), so rank(codes) + 1 dims.
inline std::vector<std::int64_t> paired_scale_dims(std::span<const std::int64_t> codes_dims, int axis) {
  const std::size_t rank = codes_dims.size();
  const auto rows = rank >= 2 ? static_cast<std::size_t>(codes_dims[rank - 2]) : std::size_t{1};
  const auto cs = mx_cann_scale_shape(rows, static_cast<std::size_t>(codes_dims[rank - 1]), axis);
  std::vector<std::int64_t> d(codes_dims.begin(), codes_dims.end() - (rank >= 2 ? 2 : 1));
  for (std::size_t i = rank >= 2 ? 0 : 1; i < 3; ++i) d.push_back(static_cast<std::int64_t>(cs[i]));
  return d;
}

/// One strided byte walk that moves part of the plain layout to its place in the paired layout:
/// element i of `dims` sits at plain_offset + sum i_d * plain_strides[d] in the plain buffer and
/// at paired_offset + sum i_d * paired_strides[d] in the paired one.
struct mx_pair_copy {
  std::vector<std::int64_t> dims, plain_strides, paired_strides;
  std::int64_t plain_offset = 0, paired_offset = 0;
};

/// How `slabs` consecutive slabs of plain scales of a (rows, cols) tensor blocked along axis sit
/// in the paired layout (per slab, mx_scales_to_cann's byte order). Every plain byte is covered by
/// exactly one copy; the pad bytes of the paired layout by none (pad says whether there are any).
/// No copies: the two layouts are the same bytes (axis 1 with an even block count).
struct mx_pairing {
  std::vector<mx_pair_copy> copies;
  bool pad = false;
  std::size_t plain_bytes = 0, paired_bytes = 0;  ///< of all slabs
};

inline mx_pairing mx_pairing_of(std::size_t slabs, std::size_t rows, std::size_t cols, int axis) {
  const auto plain = mx_scale_shape(rows, cols, axis);
  const auto paired = mx_cann_scale_shape(rows, cols, axis);
  const auto i64 = [](std::size_t v) { return static_cast<std::int64_t>(v); };
  mx_pairing p;
  const std::size_t plain_slab = plain[0] * plain[1], paired_slab = paired[0] * paired[1] * paired[2];
  p.plain_bytes = slabs * plain_slab, p.paired_bytes = slabs * paired_slab;
  if (p.plain_bytes == 0) return p;
  if (axis == 1) {
    // (rows, kb) -> (rows, kb_pad): each row of kb blocks padded to an even count; rows of all
    // slabs are consecutive in both layouts.
    const std::size_t kb = plain[1], kb_pad = 2 * paired[1];
    p.pad = kb != kb_pad;
    if (p.pad) p.copies.push_back({{i64(slabs * rows), i64(kb)}, {i64(kb), 1}, {i64(kb_pad), 1}, 0, 0});
    return p;
  }
  // (mb, cols) -> (mb_pad / 2, cols, 2): block rows 2q and 2q + 1 interleave, byte by byte.
  const std::size_t mb = plain[0], pairs = mb / 2;
  p.pad = mb % 2 != 0;
  if (pairs > 0)
    p.copies.push_back({{i64(slabs), i64(pairs), 2, i64(cols)},
                        {i64(plain_slab), i64(2 * cols), i64(cols), 1},
                        {i64(paired_slab), i64(2 * cols), 1, 2},
                        0,
                        0});
  if (p.pad)  // the last, unpaired block row: every other byte of the last paired row
    p.copies.push_back({{i64(slabs), i64(cols)}, {i64(plain_slab), 1}, {i64(paired_slab), 2}, i64((mb - 1) * cols),
                        i64(pairs * 2 * cols)});
  return p;
}

}  // namespace minifloat::backend::ascend
