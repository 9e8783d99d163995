#pragma once
// One interface for every backend: model code calls backend::backend_interface and runs on the CPU here
// (backend/cpu.hpp) or on an Ascend 950 NPU there (backend/ascend/ascend.hpp, opt-in), on the
// same bytes. No vendor type appears in this header.
//
// Operations (tensor views: backend/tensor.hpp; every tensor contiguous row-major; x is viewed as
// the matrix rows x cols = prod(shape[:-1]) x shape[-1]):
//
//   quantize(x, scale, y, {gran, block, round})         static scale: y = encode(x / s), saturating
//       x float32|bfloat16|float16; y element dtype, x's shape; scale float32:
//       tensor (1 value) | token, channel (rows values: one per row) | block R x C (ceil(rows/R) x ceil(cols/C))
//   dynamic_quantize(x, y, scale_out, {gran, round, dst_max})
//       s = amax(group) / M with M = dst_max (hifloat8 only; 0 = the format's max), y = encode(x / s);
//       scale_out float32: tensor (1) | token (rows). amax 0 gives s = 1.
//   quantize_with_amax(x, scale, y, amax_out, {round})  delayed scaling's one-pass primitive
//       (aclnnQuantMax): per-tensor s, y = encode(x / s), amax_out = max |x| over the finite x, in x's dtype.
//   mx_quantize(x, y, scale_out, {axis, rule, round})   OCP MX, blocks of 32 along axis -1 or -2
//       scale_out float8_e8m0fnu in the CANN PAIRED layout (block/mx_tensor.hpp): shape = x.shape with
//       the blocked dim replaced by ceil(ceil(d / 32) / 2), plus a trailing 2; block count padded to
//       even with byte 0; axis -2 interleaves every two block rows:
//         axis -1: x (..., C)    -> scale (..., ceil(kb/2), 2)
//         axis -2: x (..., R, C) -> scale (..., ceil(mb/2), C, 2)
//   dequantize(codes, scale, out, {gran, block, axis})  out float32 = decode(code) * s
//       scale as for quantize, or float8_e8m0fnu paired (as mx_quantize writes) for gran mx.
//   gemm(a, b, bias, out, {layout})                      out (m, n) = A (m, k) * B [+ bias (n,)]
//       B stored (k, n) (layout kn) or (n, k) (layout nk, "weights (out, in)"). Scales (aclnnQuantMatmulV5):
//         A: tensor (1) | token (m) | block R x C over (m, k) | mx (m, ceil(kb/2), 2)
//         B: tensor (1) | channel (n) | block R x C over the STORED matrix | mx kn (ceil(kb/2), n, 2),
//            nk (n, ceil(kb/2), 2)
//       out float32 | bfloat16; bias float32 (n,) or none.
//   grouped_gemm(a, b, group_sizes, bias, out, {layout}) MoE (aclnnGroupedMatmulV4, M grouping):
//       A (M, K) split into g consecutive row groups by group_sizes (int64, (g,), sum M);
//       B stored (g, K, N) (kn) or (g, N, K) (nk); out (M, N); bias float32 (g, N) or none.
//       Scales: A tensor = ONE PER GROUP (g,) | token (M) | block 1 x C (M, ceil(K/C)) | mx (M, ceil(kb/2), 2);
//       B tensor (g) | channel (g, N) | block (g, stored grid) | mx (g, paired grid).
//
// Scale convention (the library's): s multiplies on dequantization, x ~ s * decode(q). aclnn's
// AscendQuant/QuantMax multiply by THEIR scale, so the Ascend shim passes 1 / s (see ascend.hpp).
//
// supports(request) answers per operation, dtype, granularity, rounding and scale rule, without
// touching data; every operation first builds its request and throws unsupported_error with the
// same reason when the answer is no. Shapes, dtypes and devices that do not fit together throw
// shape_error, the same message on every backend (the checks live in detail:: below).
// Backend failures (a vendor status) throw backend_error.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "../formats/mx_scale.hpp"
#include "../core/errors.hpp"
#include "../gemm/operand.hpp"
#include "../core/policy.hpp"
#include "../quant/scheme.hpp"
#include "tensor.hpp"

namespace minifloat::backend {

// --- vocabulary ----------------------------------------------------------------------------------

enum class operation : std::uint8_t {
  quantize,
  dynamic_quantize,
  quantize_with_amax,
  mx_quantize,
  dequantize,
  gemm,
  grouped_gemm,
};

constexpr std::string_view to_string(operation o) noexcept {
  switch (o) {
    case operation::quantize: return "quantize";
    case operation::dynamic_quantize: return "dynamic_quantize";
    case operation::quantize_with_amax: return "quantize_with_amax";
    case operation::mx_quantize: return "mx_quantize";
    case operation::dequantize: return "dequantize";
    case operation::gemm: return "gemm";
    case operation::grouped_gemm: return "grouped_gemm";
  }
  return "?";
}

/// The library's rounding modes (policy.hpp) minus stochastic, plus HiF8 "hybrid" rounding,
/// which only the Ascend hardware offers (aclnn round mode "hybrid"; docs/formats/ascend.md#hybrid-rounding).
enum class round_mode : std::uint8_t {
  nearest,       ///< the format's own nearest: ties-away for hifloat8, ties-to-even otherwise
  nearest_even,  ///< aclnn "rint"
  nearest_away,  ///< aclnn "round"
  toward_zero,   ///< aclnn "trunc"
  upward,        ///< aclnn "ceil"
  downward,      ///< aclnn "floor"
  hybrid,        ///< aclnn "hybrid" (HiF8 only, hardware only)
};

constexpr std::string_view to_string(round_mode m) noexcept {
  switch (m) {
    case round_mode::nearest: return "nearest";
    case round_mode::nearest_even: return "nearest_even";
    case round_mode::nearest_away: return "nearest_away";
    case round_mode::toward_zero: return "toward_zero";
    case round_mode::upward: return "upward";
    case round_mode::downward: return "downward";
    case round_mode::hybrid: return "hybrid";
  }
  return "?";
}

/// The library rounding for a round mode (nullopt for hybrid).
constexpr std::optional<rounding> to_rounding(round_mode m) noexcept {
  switch (m) {
    case round_mode::nearest: return rounding::nearest;
    case round_mode::nearest_even: return rounding::nearest_even;
    case round_mode::nearest_away: return rounding::nearest_away;
    case round_mode::toward_zero: return rounding::toward_zero;
    case round_mode::upward: return rounding::upward;
    case round_mode::downward: return rounding::downward;
    case round_mode::hybrid: return std::nullopt;
  }
  return std::nullopt;
}

/// `nearest` resolved against the element format: hifloat8 rounds ties away, all others to even.
constexpr round_mode resolve_nearest(round_mode m, dtype element) noexcept {
  if (m != round_mode::nearest) return m;
  return element == dtype::hifloat8 ? round_mode::nearest_away : round_mode::nearest_even;
}

/// A supports() answer: yes, or no with the reason (which names what would be supported).
struct support {
  bool ok = true;
  std::string reason;
  explicit operator bool() const noexcept { return ok; }
  static support yes() { return {}; }
  static support no(std::string why) { return {false, std::move(why)}; }
};

/// A backend call that failed inside the vendor runtime: the API name, its status code and the
/// runtime's own message (aclGetRecentErrMsg for CANN).
class backend_error : public std::runtime_error {
 public:
  backend_error(std::string api, long long code, const std::string& detail)
      : std::runtime_error(api + " failed with status " + std::to_string(code) + (detail.empty() ? "" : ": " + detail)),
        api_(std::move(api)),
        code_(code) {}
  [[nodiscard]] const std::string& api() const noexcept { return api_; }
  [[nodiscard]] long long code() const noexcept { return code_; }

 private:
  std::string api_;
  long long code_;
};

// --- per-operation options -----------------------------------------------------------------------

/// quantize and quantize_with_amax (the latter: granularity tensor only).
struct quantize_options {
  granularity gran = granularity::tensor;  ///< tensor | token | channel | block
  std::size_t block_rows = 1;              ///< block granularity: tile height
  std::size_t block_cols = 128;            ///< block granularity: tile width
  round_mode round = round_mode::nearest;
};

struct dynamic_quantize_options {
  granularity gran = granularity::token;  ///< token (per row) | tensor
  round_mode round = round_mode::nearest;
  /// M in s = amax / M; 0 means the format's largest finite value. Only hifloat8 takes another
  /// value (aclnnDynamicQuantV4 dstTypeMax, [0, 32768]; MindSpeed uses 15 and 224).
  float dst_max = 0.0f;
};

struct mx_quantize_options {
  int axis = -1;  ///< -1 (blocks along the last dim) or -2; rank - 1 and rank - 2 are accepted too
  mx_scale_rule rule = mx_scale_rule::floor;
  round_mode round = round_mode::nearest;
};

struct dequantize_options {
  granularity gran = granularity::tensor;  ///< tensor | token | channel | block | mx
  std::size_t block_rows = 1;
  std::size_t block_cols = 128;
  int axis = -1;  ///< mx: the blocked axis (-1 or -2)
};

/// One GEMM operand: its codes, its scales and how the scales tile it (block dims over the stored
/// matrix; see the header comment).
struct gemm_operand {
  tensor_view data;
  tensor_view scale;
  granularity gran = granularity::tensor;
  std::size_t block_rows = 1;
  std::size_t block_cols = 128;
};

struct gemm_options {
  gemm_layout layout = gemm_layout::kn;  ///< how B is stored: (k, n) or (n, k)
};

/// Presence of an optional tensor in a request (an enum, not a bool, docs/formats/README.md#project-conventions).
enum class bias_term : std::uint8_t { none, present };

// --- the capability question ---------------------------------------------------------------------

/// Everything supports() looks at: no shapes, no data. Build it with the for_* functions, which
/// the operations themselves use.
struct request {
  operation op = operation::quantize;
  dtype input = dtype::float32;    ///< x (quantize family), codes (dequantize), A (GEMM)
  dtype output = dtype::hifloat8;  ///< y (quantize family), out (dequantize, GEMM)
  dtype weight = dtype::hifloat8;  ///< B (GEMM)
  granularity gran = granularity::tensor;         ///< scales of x / codes / A
  granularity weight_gran = granularity::tensor;  ///< scales of B
  std::size_t block_rows = 1, block_cols = 128;
  std::size_t weight_block_rows = 128, weight_block_cols = 128;
  round_mode round = round_mode::nearest;
  mx_scale_rule rule = mx_scale_rule::floor;
  float dst_max = 0.0f;
  gemm_layout layout = gemm_layout::kn;
  bias_term bias = bias_term::none;

  static request for_quantize(dtype x, dtype y, const quantize_options& o) {
    request r;
    r.op = operation::quantize, r.input = x, r.output = y, r.gran = o.gran;
    r.block_rows = o.block_rows, r.block_cols = o.block_cols, r.round = o.round;
    return r;
  }
  static request for_dynamic_quantize(dtype x, dtype y, const dynamic_quantize_options& o) {
    request r;
    r.op = operation::dynamic_quantize, r.input = x, r.output = y, r.gran = o.gran, r.round = o.round;
    r.dst_max = o.dst_max;
    return r;
  }
  static request for_quantize_with_amax(dtype x, dtype y, const quantize_options& o) {
    request r = for_quantize(x, y, o);
    r.op = operation::quantize_with_amax;
    return r;
  }
  static request for_mx_quantize(dtype x, dtype y, const mx_quantize_options& o) {
    request r;
    r.op = operation::mx_quantize, r.input = x, r.output = y, r.gran = granularity::mx;
    r.rule = o.rule, r.round = o.round;
    return r;
  }
  static request for_dequantize(dtype codes, dtype out, const dequantize_options& o) {
    request r;
    r.op = operation::dequantize, r.input = codes, r.output = out, r.gran = o.gran;
    r.block_rows = o.block_rows, r.block_cols = o.block_cols;
    return r;
  }
  static request for_gemm(const gemm_operand& a, const gemm_operand& b, dtype out, bias_term bias,
                          const gemm_options& o, operation op = operation::gemm) {
    request r;
    r.op = op, r.input = a.data.type, r.weight = b.data.type, r.output = out;
    r.gran = a.gran, r.block_rows = a.block_rows, r.block_cols = a.block_cols;
    r.weight_gran = b.gran, r.weight_block_rows = b.block_rows, r.weight_block_cols = b.block_cols;
    r.layout = o.layout, r.bias = bias;
    return r;
  }

  /// e.g. "quantize float32 -> hifloat8, tensor, round nearest".
  [[nodiscard]] std::string describe() const {
    std::string s = std::string(to_string(op)) + " ";
    const auto gran_str = [](granularity g, std::size_t br, std::size_t bc) {
      std::string t(to_string(g));
      if (g == granularity::block) t += " " + std::to_string(br) + "x" + std::to_string(bc);
      return t;
    };
    if (op == operation::gemm || op == operation::grouped_gemm) {
      s += std::string(to_string(input)) + " (" + gran_str(gran, block_rows, block_cols) + ") x " +
           std::string(to_string(weight)) + " " + std::string(minifloat::to_string(layout)) + " (" +
           gran_str(weight_gran, weight_block_rows, weight_block_cols) + ") -> " + std::string(to_string(output)) +
           (bias == bias_term::present ? ", bias" : "");
      return s;
    }
    s += std::string(to_string(input)) + " -> " + std::string(to_string(output)) + ", " +
         gran_str(gran, block_rows, block_cols);
    if (op == operation::mx_quantize) s += ", rule " + std::string(to_string(rule));
    if (op != operation::dequantize) s += ", round " + std::string(to_string(round));
    if (op == operation::dynamic_quantize && dst_max != 0.0f) s += ", dst_max " + std::to_string(dst_max);
    return s;
  }
};

// --- the interface -------------------------------------------------------------------------------

/// What every backend implements (see the header comment for shapes and semantics). Operations
/// may run asynchronously on the backend's stream: results are visible after synchronize().
/// (Not named `interface`: <objbase.h> defines that as a macro on Windows.)
class backend_interface {
 public:
  backend_interface() = default;
  backend_interface(const backend_interface&) = delete;
  backend_interface& operator=(const backend_interface&) = delete;
  virtual ~backend_interface() = default;

  [[nodiscard]] virtual std::string_view name() const noexcept = 0;
  /// Where the backend's tensors must live.
  [[nodiscard]] virtual device where() const noexcept = 0;
  [[nodiscard]] virtual support supports(const request& r) const = 0;

  virtual void quantize(const tensor_view& x, const tensor_view& scale, const tensor_view& y,
                        const quantize_options& o) = 0;
  virtual void dynamic_quantize(const tensor_view& x, const tensor_view& y, const tensor_view& scale_out,
                                const dynamic_quantize_options& o) = 0;
  virtual void quantize_with_amax(const tensor_view& x, const tensor_view& scale, const tensor_view& y,
                                  const tensor_view& amax_out, const quantize_options& o) = 0;
  virtual void mx_quantize(const tensor_view& x, const tensor_view& y, const tensor_view& scale_out,
                           const mx_quantize_options& o) = 0;
  virtual void dequantize(const tensor_view& codes, const tensor_view& scale, const tensor_view& out,
                          const dequantize_options& o) = 0;
  virtual void gemm(const gemm_operand& a, const gemm_operand& b, const tensor_view& bias, const tensor_view& out,
                    const gemm_options& o) = 0;
  virtual void grouped_gemm(const gemm_operand& a, const gemm_operand& b, const tensor_view& group_sizes,
                            const tensor_view& bias, const tensor_view& out, const gemm_options& o) = 0;
  /// Waits for every queued operation (CPU: nothing to wait for).
  virtual void synchronize() = 0;

  /// Throws unsupported_error with the reason unless supports(r).
  void require(const request& r) const {
    if (support s = supports(r); !s) throw unsupported_error(std::string(name()) + " backend: " + r.describe() + ": " + s.reason);
  }

 protected:
  backend_interface(backend_interface&&) = default;
  backend_interface& operator=(backend_interface&&) = default;
};

// --- shared argument checks (identical messages on every backend) ---------------------------------

namespace detail {

[[noreturn]] inline void fail(std::string_view who, const std::string& what) {
  throw shape_error(std::string(who) + ": " + what);
}

inline void require_tensor(std::string_view who, std::string_view name, const tensor_view& t, device where) {
  if (t.is_none()) fail(who, std::string(name) + " is missing");
  if (t.rank < 1 || t.rank > max_rank)
    fail(who, std::string(name) + " must have rank 1.." + std::to_string(max_rank) + ", got " + std::to_string(t.rank));
  for (int i = 0; i < t.rank; ++i)
    if (t.shape[static_cast<std::size_t>(i)] < 0) fail(who, std::string(name) + " has a negative dimension: " + t.describe());
  if (!t.is_contiguous()) {
    const auto c = tensor_view::contiguous_strides(t.type, t.dims());
    fail(who, std::string(name) + " " + t.describe() + " must be contiguous (row-major; strides " +
                  dims_string(std::span<const std::int64_t>(c.data(), static_cast<std::size_t>(t.rank))) +
                  " elements, got " + dims_string(t.stride_span()) + ")");
  }
  if (t.data == nullptr && !t.empty()) fail(who, std::string(name) + " " + t.describe() + " has null data");
  if (t.where != where)
    fail(who, std::string(name) + " " + t.describe() + " must live on " + to_string(where));
}

inline void require_dtype(std::string_view who, std::string_view name, const tensor_view& t, dtype want) {
  if (t.type != want)
    fail(who, std::string(name) + " must be " + std::string(to_string(want)) + ", got " + t.describe());
}

inline void require_same_shape(std::string_view who, std::string_view name, const tensor_view& t, const tensor_view& like,
                               std::string_view like_name) {
  bool same = t.rank == like.rank;
  for (int i = 0; same && i < t.rank; ++i) same = t.shape[static_cast<std::size_t>(i)] == like.shape[static_cast<std::size_t>(i)];
  if (!same)
    fail(who, std::string(name) + " must have the shape of " + std::string(like_name) + " " +
                  dims_string(like.dims()) + ", got " + t.describe());
}

inline void require_numel(std::string_view who, std::string_view name, const tensor_view& t, std::int64_t n,
                          const std::string& why) {
  if (t.numel() != n)
    fail(who, std::string(name) + " must hold " + std::to_string(n) + " values (" + why + "), got " + t.describe());
}

inline void require_shape(std::string_view who, std::string_view name, const tensor_view& t,
                          std::initializer_list<std::int64_t> want, const std::string& why) {
  bool same = t.rank == static_cast<int>(want.size());
  int i = 0;
  for (auto it = want.begin(); same && it != want.end(); ++it, ++i) same = t.shape[static_cast<std::size_t>(i)] == *it;
  if (!same)
    fail(who, std::string(name) + " must have shape " + dims_string(std::span<const std::int64_t>(want.begin(), want.size())) +
                  " (" + why + "), got " + t.describe());
}

/// The fp32 scale grid (rows, cols) of a rows x cols matrix under gran.
inline std::pair<std::int64_t, std::int64_t> scale_grid(granularity g, std::int64_t rows, std::int64_t cols,
                                                        std::size_t br, std::size_t bc) {
  switch (g) {
    case granularity::tensor: return {1, 1};
    case granularity::token:
    case granularity::channel: return {rows, 1};
    case granularity::block:
      return {ceil_div(rows, static_cast<std::int64_t>(br)), ceil_div(cols, static_cast<std::int64_t>(bc))};
    case granularity::mx: return {0, 0};
  }
  return {1, 1};
}

inline std::string grid_why(granularity g, std::int64_t rows, std::int64_t cols, std::size_t br, std::size_t bc) {
  switch (g) {
    case granularity::tensor: return "one per-tensor scale";
    case granularity::token:
    case granularity::channel: return "one scale per row of the " + std::to_string(rows) + " x " + std::to_string(cols) + " matrix";
    case granularity::block:
      return "ceil(" + std::to_string(rows) + "/" + std::to_string(br) + ") x ceil(" + std::to_string(cols) + "/" +
             std::to_string(bc) + ") blocks";
    case granularity::mx: return "mx";
  }
  return "";
}

/// The blocked axis of an MX call normalised to -1 or -2 (rank 1 allows only -1).
inline int mx_axis(std::string_view who, int axis, int rank) {
  const int a = axis >= 0 ? axis - rank : axis;
  if (a == -1 || (a == -2 && rank >= 2)) return a;
  fail(who, "mx axis must be -1 or -2 (or rank-1 / rank-2) of a rank-" + std::to_string(rank) + " tensor, got " +
                std::to_string(axis));
}

/// The CANN paired scale shape for x blocked along `axis` (-1 / -2): see the header comment.
inline std::vector<std::int64_t> mx_paired_scale_shape(const tensor_view& x, int axis) {
  std::vector<std::int64_t> s(x.dims().begin(), x.dims().end());
  const std::size_t at = static_cast<std::size_t>(x.rank + axis);
  s[at] = ceil_div(ceil_div(s[at], 32), 2);
  s.push_back(2);
  return s;
}

inline void require_shape(std::string_view who, std::string_view name, const tensor_view& t,
                          const std::vector<std::int64_t>& want, const std::string& why) {
  bool same = t.rank == static_cast<int>(want.size());
  for (std::size_t i = 0; same && i < want.size(); ++i) same = t.shape[i] == want[i];
  if (!same) fail(who, std::string(name) + " must have shape " + dims_string(want) + " (" + why + "), got " + t.describe());
}

/// Rows x cols of the quantize family, after checking x, y and (for static scaling) scale.
struct quant_problem {
  std::int64_t rows = 0, cols = 0;
};

inline quant_problem check_quantize(std::string_view who, const tensor_view& x, const tensor_view& y, device where) {
  require_tensor(who, "x", x, where);
  require_tensor(who, "y", y, where);
  if (!is_float_dtype(x.type)) fail(who, "x must be float32, bfloat16 or float16, got " + x.describe());
  if (!is_element_dtype(y.type))
    fail(who, "y must have an element dtype (hifloat8, float8_e5m2, float8_e4m3fn, float6_*, float4_e2m1fn_x2), got " +
                  y.describe());
  require_same_shape(who, "y", y, x, "x");
  return {x.rows(), x.cols()};
}

/// The float32 scales of a rows x cols matrix under g (tensor, token, channel, block).
inline void check_scales(std::string_view who, std::string_view name, const tensor_view& scale, granularity g,
                         std::size_t br, std::size_t bc, std::int64_t rows, std::int64_t cols, device where) {
  if (g == granularity::mx) fail(who, "granularity mx takes E8M0 scales (use mx_quantize)");
  if (g == granularity::block && (br == 0 || bc == 0)) fail(who, "block size must be at least 1x1");
  require_tensor(who, name, scale, where);
  require_dtype(who, name, scale, dtype::float32);
  const auto [gr, gc] = scale_grid(g, rows, cols, br, bc);
  require_numel(who, name, scale, gr * gc, grid_why(g, rows, cols, br, bc));
}

/// dequantize: codes, out and scale (float32 per granularity, or E8M0 paired for mx).
inline quant_problem check_dequantize(std::string_view who, const tensor_view& codes, const tensor_view& scale,
                                      const tensor_view& out, const dequantize_options& o, device where) {
  require_tensor(who, "codes", codes, where);
  require_tensor(who, "out", out, where);
  if (!is_element_dtype(codes.type)) fail(who, "codes must have an element dtype, got " + codes.describe());
  require_dtype(who, "out", out, dtype::float32);
  require_same_shape(who, "out", out, codes, "codes");
  if (o.gran == granularity::mx) {
    const int axis = mx_axis(who, o.axis, codes.rank);
    require_tensor(who, "scale", scale, where);
    require_dtype(who, "scale", scale, dtype::float8_e8m0fnu);
    require_shape(who, "scale", scale, mx_paired_scale_shape(codes, axis), "E8M0 paired layout");
  } else {
    check_scales(who, "scale", scale, o.gran, o.block_rows, o.block_cols, codes.rows(), codes.cols(), where);
  }
  return {codes.rows(), codes.cols()};
}

/// mx_quantize / mx dequantize: x viewed as `batch` slabs of rows x cols, blocked along the library
/// axis (1: along rows, for axis -1; 0: down columns, for axis -2).
struct mx_problem {
  int axis = -1;          ///< -1 or -2
  int library_axis = 1;   ///< block/mx_tensor.hpp axis of each slab
  std::int64_t batch = 1, rows = 0, cols = 0;
  std::int64_t scale_slab = 0;  ///< paired scale bytes per slab
};

inline mx_problem mx_slabs(const tensor_view& x, int axis) {
  mx_problem p;
  p.axis = axis;
  if (axis == -1) {
    p.library_axis = 1, p.batch = 1, p.rows = x.rows(), p.cols = x.cols();
    p.scale_slab = p.rows * 2 * ceil_div(ceil_div(p.cols, 32), 2);
  } else {
    p.library_axis = 0, p.rows = x.dim(-2), p.cols = x.dim(-1);
    p.batch = p.rows * p.cols == 0 ? 0 : x.numel() / (p.rows * p.cols);
    p.scale_slab = 2 * ceil_div(ceil_div(p.rows, 32), 2) * p.cols;
  }
  return p;
}

inline mx_problem check_mx_quantize(std::string_view who, const tensor_view& x, const tensor_view& y,
                                    const tensor_view& scale_out, const mx_quantize_options& o, device where) {
  require_tensor(who, "x", x, where);
  require_tensor(who, "y", y, where);
  if (!is_float_dtype(x.type)) fail(who, "x must be float32, bfloat16 or float16, got " + x.describe());
  if (!is_mx_element_dtype(y.type))
    fail(who, "y must have an MX element dtype (float8_e4m3fn, float8_e5m2, float6_*, float4_e2m1fn_x2), got " +
                  y.describe());
  require_same_shape(who, "y", y, x, "x");
  const int axis = mx_axis(who, o.axis, x.rank);
  require_tensor(who, "scale_out", scale_out, where);
  require_dtype(who, "scale_out", scale_out, dtype::float8_e8m0fnu);
  require_shape(who, "scale_out", scale_out, mx_paired_scale_shape(x, axis),
                "E8M0 paired layout: the blocked dim d becomes ceil(ceil(d/32)/2), plus a trailing 2");
  return mx_slabs(x, axis);
}

/// dynamic_quantize's scale_out: float32, one value (tensor) or one per row (token / channel).
inline void check_dynamic_scale_out(std::string_view who, const tensor_view& scale_out, granularity g,
                                    std::int64_t rows, device where) {
  if (g != granularity::tensor && g != granularity::token && g != granularity::channel)
    fail(who, "dynamic_quantize takes granularity tensor or token, got " + std::string(to_string(g)));
  require_tensor(who, "scale_out", scale_out, where);
  require_dtype(who, "scale_out", scale_out, dtype::float32);
  require_numel(who, "scale_out", scale_out, g == granularity::tensor ? 1 : rows,
                g == granularity::tensor ? "one per-tensor scale" : "one scale per row");
}

/// quantize_with_amax's amax_out: one value in x's dtype (aclnnQuantMax: "same dtype as x, shape [1]").
inline void check_amax_out(std::string_view who, const tensor_view& amax_out, const tensor_view& x, device where) {
  require_tensor(who, "amax_out", amax_out, where);
  require_dtype(who, "amax_out", amax_out, x.type);
  require_numel(who, "amax_out", amax_out, 1, "max |x|");
}

/// GEMM shapes after checking A, B, their scales, bias and out: (m, n, k).
struct gemm_problem {
  std::int64_t m = 0, n = 0, k = 0;
};

inline void check_gemm_scale(std::string_view who, std::string_view name, const gemm_operand& o, std::int64_t outer,
                             std::int64_t k, bool k_major, std::int64_t stored_rows, std::int64_t stored_cols,
                             device where) {
  const std::string nm(name);
  require_tensor(who, nm + " scale", o.scale, where);
  if (o.gran == granularity::mx) {
    require_dtype(who, nm + " scale", o.scale, dtype::float8_e8m0fnu);
    const std::int64_t kb2 = ceil_div(ceil_div(k, 32), 2);
    if (k_major) require_shape(who, nm + " scale", o.scale, {outer, kb2, 2}, "E8M0 paired, (outer, ceil(k/64), 2)");
    else require_shape(who, nm + " scale", o.scale, {kb2, outer, 2}, "E8M0 paired, (ceil(k/64), n, 2)");
    return;
  }
  require_dtype(who, nm + " scale", o.scale, dtype::float32);
  switch (o.gran) {
    case granularity::tensor: require_numel(who, nm + " scale", o.scale, 1, "one per-tensor scale"); break;
    case granularity::token:
    case granularity::channel:
      require_numel(who, nm + " scale", o.scale, outer, std::string(name == "A" ? "one per row m" : "one per column n"));
      break;
    case granularity::block: {
      if (o.block_rows == 0 || o.block_cols == 0) fail(who, nm + " block size must be at least 1x1");
      const auto [gr, gc] = scale_grid(granularity::block, stored_rows, stored_cols, o.block_rows, o.block_cols);
      require_shape(who, nm + " scale", o.scale, {gr, gc}, grid_why(granularity::block, stored_rows, stored_cols, o.block_rows, o.block_cols) + " of the stored matrix");
      break;
    }
    default: break;
  }
}

inline gemm_problem check_gemm(std::string_view who, const gemm_operand& a, const gemm_operand& b, const tensor_view& bias,
                               const tensor_view& out, gemm_layout layout, device where) {
  require_tensor(who, "A", a.data, where);
  require_tensor(who, "B", b.data, where);
  require_tensor(who, "out", out, where);
  if (!is_element_dtype(a.data.type)) fail(who, "A must have an element dtype, got " + a.data.describe());
  if (!is_element_dtype(b.data.type)) fail(who, "B must have an element dtype, got " + b.data.describe());
  if (a.data.rank != 2) fail(who, "A must be 2-D (m, k), got " + a.data.describe());
  if (b.data.rank != 2) fail(who, "B must be 2-D, got " + b.data.describe());
  gemm_problem p;
  p.m = a.data.dim(0), p.k = a.data.dim(1);
  const bool kn = layout == gemm_layout::kn;
  const std::int64_t bk = kn ? b.data.dim(0) : b.data.dim(1);
  p.n = kn ? b.data.dim(1) : b.data.dim(0);
  if (bk != p.k)
    fail(who, "A is " + a.data.describe() + " (m, k) but B stored " + (kn ? "(k, n)" : "(n, k)") + " is " +
                  b.data.describe() + ": k must agree");
  check_gemm_scale(who, "A", a, p.m, p.k, true, p.m, p.k, where);
  check_gemm_scale(who, "B", b, p.n, p.k, !kn, b.data.dim(0), b.data.dim(1), where);
  if (out.type != dtype::float32 && out.type != dtype::bfloat16) fail(who, "out must be float32 or bfloat16, got " + out.describe());
  require_shape(who, "out", out, {p.m, p.n}, "(m, n)");
  if (!bias.is_none()) {
    require_tensor(who, "bias", bias, where);
    require_dtype(who, "bias", bias, dtype::float32);
    require_shape(who, "bias", bias, {p.n}, "(n,)");
  }
  return p;
}

/// Grouped GEMM shapes: (M, N, K, g).
struct grouped_problem {
  std::int64_t m = 0, n = 0, k = 0, groups = 0;
};

inline grouped_problem check_grouped_gemm(std::string_view who, const gemm_operand& a, const gemm_operand& b,
                                          const tensor_view& group_sizes, const tensor_view& bias,
                                          const tensor_view& out, gemm_layout layout, device where,
                                          device group_sizes_where) {
  require_tensor(who, "A", a.data, where);
  require_tensor(who, "B", b.data, where);
  require_tensor(who, "out", out, where);
  if (!is_element_dtype(a.data.type)) fail(who, "A must have an element dtype, got " + a.data.describe());
  if (!is_element_dtype(b.data.type)) fail(who, "B must have an element dtype, got " + b.data.describe());
  if (a.data.rank != 2) fail(who, "A must be 2-D (M, K), got " + a.data.describe());
  if (b.data.rank != 3) fail(who, "B must be 3-D (g, K, N) or (g, N, K), got " + b.data.describe());
  grouped_problem p;
  p.m = a.data.dim(0), p.k = a.data.dim(1), p.groups = b.data.dim(0);
  const bool kn = layout == gemm_layout::kn;
  const std::int64_t bk = kn ? b.data.dim(1) : b.data.dim(2);
  p.n = kn ? b.data.dim(2) : b.data.dim(1);
  if (bk != p.k)
    fail(who, "A is " + a.data.describe() + " (M, K) but B stored " + (kn ? "(g, K, N)" : "(g, N, K)") + " is " +
                  b.data.describe() + ": K must agree");
  require_tensor(who, "group_sizes", group_sizes, group_sizes_where);
  require_dtype(who, "group_sizes", group_sizes, dtype::int64);
  require_shape(who, "group_sizes", group_sizes, {p.groups}, "one token count per group");
  // A scales: tensor is one per group.
  require_tensor(who, "A scale", a.scale, where);
  const std::int64_t kb2 = ceil_div(ceil_div(p.k, 32), 2);
  switch (a.gran) {
    case granularity::tensor:
      require_dtype(who, "A scale", a.scale, dtype::float32);
      require_numel(who, "A scale", a.scale, p.groups, "grouped GEMM: one per-tensor scale per group");
      break;
    case granularity::token:
    case granularity::channel:
      require_dtype(who, "A scale", a.scale, dtype::float32);
      require_numel(who, "A scale", a.scale, p.m, "one per row of A");
      break;
    case granularity::block:
      require_dtype(who, "A scale", a.scale, dtype::float32);
      if (a.block_rows != 1 || a.block_cols == 0) fail(who, "grouped GEMM: A blocks must be 1 x C (groups start on any row)");
      require_shape(who, "A scale", a.scale, {p.m, ceil_div(p.k, static_cast<std::int64_t>(a.block_cols))}, "(M, ceil(K/C))");
      break;
    case granularity::mx:
      require_dtype(who, "A scale", a.scale, dtype::float8_e8m0fnu);
      require_shape(who, "A scale", a.scale, {p.m, kb2, 2}, "E8M0 paired, (M, ceil(K/64), 2)");
      break;
  }
  require_tensor(who, "B scale", b.scale, where);
  const std::int64_t sr = b.data.dim(1), sc = b.data.dim(2);
  switch (b.gran) {
    case granularity::tensor:
      require_dtype(who, "B scale", b.scale, dtype::float32);
      require_numel(who, "B scale", b.scale, p.groups, "one per-tensor scale per group");
      break;
    case granularity::token:
    case granularity::channel:
      require_dtype(who, "B scale", b.scale, dtype::float32);
      require_shape(who, "B scale", b.scale, {p.groups, p.n}, "(g, N): one per output column and group");
      break;
    case granularity::block: {
      require_dtype(who, "B scale", b.scale, dtype::float32);
      if (b.block_rows == 0 || b.block_cols == 0) fail(who, "B block size must be at least 1x1");
      const auto [gr, gc] = scale_grid(granularity::block, sr, sc, b.block_rows, b.block_cols);
      require_shape(who, "B scale", b.scale, {p.groups, gr, gc}, "(g, stored block grid)");
      break;
    }
    case granularity::mx:
      require_dtype(who, "B scale", b.scale, dtype::float8_e8m0fnu);
      if (kn) require_shape(who, "B scale", b.scale, {p.groups, kb2, p.n, 2}, "E8M0 paired, (g, ceil(K/64), N, 2)");
      else require_shape(who, "B scale", b.scale, {p.groups, p.n, kb2, 2}, "E8M0 paired, (g, N, ceil(K/64), 2)");
      break;
  }
  if (out.type != dtype::float32 && out.type != dtype::bfloat16) fail(who, "out must be float32 or bfloat16, got " + out.describe());
  require_shape(who, "out", out, {p.m, p.n}, "(M, N)");
  if (!bias.is_none()) {
    require_tensor(who, "bias", bias, where);
    require_dtype(who, "bias", bias, dtype::float32);
    require_shape(who, "bias", bias, {p.groups, p.n}, "(g, N)");
  }
  return p;
}

/// Group sizes read from host memory: non-negative, summing to M.
inline std::vector<std::size_t> read_group_sizes(std::string_view who, const tensor_view& group_sizes, std::int64_t m) {
  const auto* g = static_cast<const std::int64_t*>(group_sizes.data);
  std::vector<std::size_t> r(static_cast<std::size_t>(group_sizes.numel()));
  std::int64_t total = 0;
  for (std::size_t i = 0; i < r.size(); ++i) {
    if (g[i] < 0) fail(who, "group_sizes[" + std::to_string(i) + "] is negative (" + std::to_string(g[i]) + ")");
    r[i] = static_cast<std::size_t>(g[i]);
    total += g[i];
  }
  if (total != m)
    fail(who, "group_sizes add up to " + std::to_string(total) + " rows but A has M = " + std::to_string(m));
  return r;
}

/// Static scales must be finite and positive (the library's quantize_with_scales rule).
inline void require_positive_scales(std::string_view who, std::span<const float> s) {
  for (std::size_t i = 0; i < s.size(); ++i)
    if (!(s[i] > 0.0f) || !std::isfinite(s[i]))
      throw std::invalid_argument(std::string(who) + ": scale[" + std::to_string(i) + "] must be finite and positive, got " +
                                  std::to_string(s[i]));
}

}  // namespace detail

}  // namespace minifloat::backend
