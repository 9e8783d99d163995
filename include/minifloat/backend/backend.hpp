#pragma once
// One interface for every backend: model code calls backend::backend_interface and runs on the CPU
// here (backend/cpu.hpp) or on an Ascend 950 NPU there (backend/ascend/ascend.hpp, opt-in), on the
// same bytes. The interface speaks the library's vocabulary: formats are format_id, rounding is
// `rounding`, every quantization choice is a quant_scheme (quant/scheme.hpp), and a quantized
// tensor is a quantized_view, the library's quantized_tensor_view (quant/quantized_tensor.hpp)
// with tensor views (backend/tensor.hpp) in place of spans, so it can live on a device. No vendor
// type and no vendor layout appears in this header.
//
// Operations (every tensor contiguous row-major; x is viewed as the matrix rows x cols =
// prod(shape[:-1]) x shape[-1]; y, q, a, b are quantized_views):
//
//   quantize(x, y, {dst_max})        minifloat::quantize: y.codes and y.scales from x under y.scheme,
//       fp32 scales from each group's amax by the scheme's rule (max | pow2 | none; dst_max != 0:
//       s = amax / dst_max, hifloat8 and rule max only), or E8M0 scales (granularity mx).
//   quantize_with_scales(x, y)       minifloat::quantize_with_scales: y.scales are given (fp32, finite,
//       positive), y.codes = encode(x / s), saturating.
//   quantize_with_amax(x, y, amax)   delayed scaling's one-pass primitive (aclnnQuantMax):
//       quantize_with_scales with one per-tensor scale, plus amax = max |x| over the finite x, in x's
//       element type.
//   dequantize(q, out)               minifloat::dequantize: out float32 = decode(code) * s.
//   gemm(a, b, bias, out, layout)    minifloat::gemm: out (m, n) = A (m, k) * B [+ bias (n,)], B stored
//       (k, n) (kn) or (n, k) (nk, "weights (out, in)"); the scales A and B may have are the library
//       GEMM's (gemm/operand.hpp; per output channel of a kn B is block K x 1). out float32 | bfloat16.
//   grouped_gemm(a, b, group_sizes, bias, out, layout)   minifloat::grouped_gemm (MoE): A (M, K) split
//       into g consecutive row groups by group_sizes (int64 (g,), sum M); b's codes (g, K, N) (kn) or
//       (g, N, K) (nk), its scales g slabs of one expert's scales; bias float32 (g, N) or none.
//       A with granularity tensor holds ONE SCALE PER GROUP (g,) (aclnnGroupedMatmulV4's perTokenScale).
//
// Inputs x are float32, bfloat16 or float16. Scales of a quantized_view (the library's layouts):
//   fp32 granularities   float32, row-major over the scale grid of the (rows, cols) matrix (tensor 1,
//                        channel / token rows, block R x C ceil(rows/R) x ceil(cols/C)), any shape
//                        with that many values
//   mx                   float8_e8m0fnu in the library's PLAIN layout, one slab per trailing 2-D
//                        matrix: shape = the codes' shape with the last two dims replaced by the
//                        slab's scale grid (axis 1: (..., R, ceil(C/32)); axis 0: (..., ceil(R/32), C);
//                        rank 1: (ceil(C/32),)). The CANN paired layout is the Ascend shim's business.
//
// Scale convention (the library's): s multiplies on dequantization, x ~ s * decode(q). aclnn's
// AscendQuant/QuantMax multiply by THEIR scale, so the Ascend shim passes 1 / s (see ascend.hpp).
//
// supports(request) answers per operation, input type, schemes, layout and bias, without touching
// data; every operation first builds its request and throws unsupported_error with the same reason
// when the answer is no. Shapes, element types and devices that do not fit together throw
// shape_error, the same message on every backend (the checks live in detail:: below). Backend
// failures (a vendor status) throw backend_error.
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "../core/checked.hpp"
#include "../core/errors.hpp"
#include "../gemm/operand.hpp"
#include "../quant/quantized_tensor.hpp"
#include "../quant/scheme.hpp"
#include "tensor.hpp"

namespace minifloat::backend {

// --- vocabulary the library has no word for --------------------------------------------------------

enum class operation : std::uint8_t {
  quantize,
  quantize_with_scales,
  quantize_with_amax,
  dequantize,
  gemm,
  grouped_gemm,
};

constexpr std::string_view to_string(operation o) noexcept {
  switch (o) {
    case operation::quantize: return "quantize";
    case operation::quantize_with_scales: return "quantize_with_scales";
    case operation::quantize_with_amax: return "quantize_with_amax";
    case operation::dequantize: return "dequantize";
    case operation::gemm: return "gemm";
    case operation::grouped_gemm: return "grouped_gemm";
  }
  return "?";
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

/// quantize()'s one knob beyond the scheme.
struct dynamic_scale_options {
  /// M in s = amax / M for rule max; 0 means the format's largest finite value (the library's rule).
  /// Only hifloat8 takes another value (aclnnDynamicQuantV4 dstTypeMax, [0, 32768]; MindSpeed uses
  /// 15 and 224).
  float dst_max = 0.0f;
};

/// Presence of an optional tensor in a request (an enum, not a bool, docs/formats/README.md#project-conventions).
enum class bias_term : std::uint8_t { none, present };

// --- quantized tensors ---------------------------------------------------------------------------

/// A quantized tensor on a backend's device: see the header comment for the scale layouts. As an
/// output (quantize*), codes (and, for quantize, scales) are written; otherwise nothing is.
struct quantized_view {
  quant_scheme scheme;
  tensor_view codes;   ///< element type scheme.format
  tensor_view scales;  ///< float32, or float8_e8m0fnu for granularity mx
};

namespace detail {

/// How a quantized tensor splits into the library's 2-D matrices: fp32 granularities are one slab,
/// the (rows, cols) matrix; mx has one slab per trailing 2-D matrix, so blocks never cross a slab.
struct slab_layout {
  std::size_t count = 1;                      ///< slabs
  std::size_t rows = 0, cols = 0;             ///< of one slab
  std::size_t grid_rows = 0, grid_cols = 0;   ///< its scale grid
  std::size_t code_bytes = 0;                 ///< of one slab
  [[nodiscard]] std::size_t scale_count() const noexcept { return grid_rows * grid_cols; }
};

inline std::size_t usize(std::int64_t v) noexcept { return static_cast<std::size_t>(v < 0 ? 0 : v); }

/// The library's scale grid of a rows x cols matrix under s (quantized_tensor_view::scale_grid_*).
inline std::pair<std::size_t, std::size_t> scale_grid(const quant_scheme& s, std::size_t rows, std::size_t cols) {
  const quantized_tensor_view shape{s, rows, cols, {}, {}, {}};
  return {shape.scale_grid_rows(), shape.scale_grid_cols()};
}

inline slab_layout slabs_of(const quant_scheme& s, const tensor_view& codes) {
  slab_layout l;
  if (s.gran == granularity::mx && codes.rank >= 2) {
    l.rows = usize(codes.dim(-2)), l.cols = usize(codes.dim(-1));
    for (int i = 0; i + 2 < codes.rank; ++i) l.count *= usize(codes.dim(i));
  } else {
    l.rows = usize(codes.rows()), l.cols = usize(codes.cols());
  }
  std::tie(l.grid_rows, l.grid_cols) = scale_grid(s, l.rows, l.cols);
  l.code_bytes = checked_mul(l.rows, minifloat::detail::code_row_bytes(s.format, l.cols), "backend: codes of one slab");
  return l;
}

/// The plain E8M0 scale shape of mx codes: the codes' shape with the last two dims replaced by the
/// slab's scale grid (rank 1: the grid's columns).
inline std::vector<std::int64_t> mx_scale_dims(const tensor_view& codes, const slab_layout& l) {
  std::vector<std::int64_t> d(codes.dims().begin(), codes.dims().end());
  d.back() = static_cast<std::int64_t>(l.grid_cols);
  if (d.size() >= 2) d[d.size() - 2] = static_cast<std::int64_t>(l.grid_rows);
  return d;
}

}  // namespace detail

/// A host quantized_view over the library's view, no copy (fp32 scales shaped as the scale grid,
/// MX scales in the plain layout the library already uses).
inline quantized_view from_library(const quantized_tensor_view& q) {
  const auto r = static_cast<std::int64_t>(q.rows), c = static_cast<std::int64_t>(q.cols);
  const auto gr = static_cast<std::int64_t>(q.scale_grid_rows()), gc = static_cast<std::int64_t>(q.scale_grid_cols());
  quantized_view v;
  v.scheme = q.scheme;
  v.codes = make_tensor(q.codes.data(), q.scheme.format, {r, c});
  v.scales = q.scheme.gran == granularity::mx ? make_tensor(q.mx_scales.data(), format_id::float8_e8m0fnu, {gr, gc})
                                              : make_tensor(q.scales.data(), float32, {gr, gc});
  return v;
}

/// The library view of slab `slab` of a HOST quantized_view (detail::slabs_of; fp32 granularities
/// have one slab). Sizes are not checked here: quantized_tensor_view::validate() does that.
inline quantized_tensor_view to_library(const quantized_view& q, std::size_t slab = 0) {
  const auto l = detail::slabs_of(q.scheme, q.codes);
  quantized_tensor_view v;
  v.scheme = q.scheme;
  v.rows = l.rows, v.cols = l.cols;
  v.codes = std::span<const std::uint8_t>(static_cast<const std::uint8_t*>(q.codes.data) + slab * l.code_bytes, l.code_bytes);
  if (q.scheme.gran == granularity::mx)
    v.mx_scales = std::span<const std::uint8_t>(static_cast<const std::uint8_t*>(q.scales.data) + slab * l.scale_count(),
                                                l.scale_count());
  else
    v.scales = std::span<const float>(static_cast<const float*>(q.scales.data) + slab * l.scale_count(), l.scale_count());
  return v;
}

// --- the capability question ---------------------------------------------------------------------

/// Everything supports() looks at: no shapes, no data. Build it with the for_* functions, which
/// the operations themselves use.
struct request {
  operation op = operation::quantize;
  element_type input = float32;   ///< x (quantize family)
  quant_scheme scheme{};          ///< y (quantize family), q (dequantize), A (GEMM)
  quant_scheme weight{};          ///< B (GEMM)
  element_type output = float32;  ///< out (dequantize, GEMM)
  float dst_max = 0.0f;           ///< quantize
  gemm_layout layout = gemm_layout::kn;
  bias_term bias = bias_term::none;

  static request for_quantize(element_type x, const quant_scheme& y, const dynamic_scale_options& o = {}) {
    request r;
    r.op = operation::quantize, r.input = x, r.scheme = y, r.dst_max = o.dst_max;
    return r;
  }
  static request for_quantize_with_scales(element_type x, const quant_scheme& y) {
    request r;
    r.op = operation::quantize_with_scales, r.input = x, r.scheme = y;
    return r;
  }
  static request for_quantize_with_amax(element_type x, const quant_scheme& y) {
    request r;
    r.op = operation::quantize_with_amax, r.input = x, r.scheme = y;
    return r;
  }
  static request for_dequantize(const quant_scheme& q, element_type out = float32) {
    request r;
    r.op = operation::dequantize, r.scheme = q, r.output = out;
    return r;
  }
  static request for_gemm(const quant_scheme& a, const quant_scheme& b, element_type out, gemm_layout layout,
                          bias_term bias = bias_term::none, operation op = operation::gemm) {
    request r;
    r.op = op, r.scheme = a, r.weight = b, r.output = out, r.layout = layout, r.bias = bias;
    return r;
  }

  /// e.g. "quantize float32 -> hifloat8 token max nearest".
  [[nodiscard]] std::string describe() const {
    std::string s(to_string(op));
    switch (op) {
      case operation::gemm:
      case operation::grouped_gemm:
        return s + " A " + scheme.describe() + " x B " + std::string(minifloat::to_string(layout)) + " " +
               weight.describe() + " -> " + std::string(to_string(output)) + (bias == bias_term::present ? ", bias" : "");
      case operation::dequantize: return s + " " + scheme.describe() + " -> " + std::string(to_string(output));
      default:
        return s + " " + std::string(to_string(input)) + " -> " + scheme.describe() +
               (dst_max != 0.0f ? ", dst_max " + std::to_string(dst_max) : std::string());
    }
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

  virtual void quantize(const tensor_view& x, const quantized_view& y, const dynamic_scale_options& o = {}) = 0;
  virtual void quantize_with_scales(const tensor_view& x, const quantized_view& y) = 0;
  virtual void quantize_with_amax(const tensor_view& x, const quantized_view& y, const tensor_view& amax_out) = 0;
  virtual void dequantize(const quantized_view& q, const tensor_view& out) = 0;
  virtual void gemm(const quantized_view& a, const quantized_view& b, const tensor_view& bias, const tensor_view& out,
                    gemm_layout layout = gemm_layout::kn) = 0;
  virtual void grouped_gemm(const quantized_view& a, const quantized_view& b, const tensor_view& group_sizes,
                            const tensor_view& bias, const tensor_view& out, gemm_layout layout = gemm_layout::kn) = 0;
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

/// A library check (one that throws shape_error / unsupported_error) as a supports() answer.
template <class Check>
support library_verdict(Check&& check) {
  try {
    check();
    return support::yes();
  } catch (const std::invalid_argument& e) {
    return support::no(e.what());
  }
}

/// The library's verdict on a scheme (quant_scheme::validate).
inline support scheme_support(const quant_scheme& s) {
  return library_verdict([&] { s.validate(); });
}

/// The library GEMM's own operand rules (gemm/operand.hpp make_operand: element formats, MX blocks
/// along K, no per-k scales of a kn B), asked on empty operands of the request's schemes.
inline support gemm_operand_support(const request& r) {
  return library_verdict([&] {
    (void)minifloat::detail::gemm::make_operand(quantized_tensor_view{r.scheme, 0, 0, {}, {}, {}}, 'A', gemm_layout::nk);
    (void)minifloat::detail::gemm::make_operand(quantized_tensor_view{r.weight, 0, 0, {}, {}, {}}, 'B', r.layout);
  });
}

/// quant_scheme::validate with the caller's name in front (shape_error stays shape_error,
/// unsupported_error stays unsupported_error).
inline void validate_scheme(std::string_view who, std::string_view name, const quant_scheme& s) {
  const std::string prefix = std::string(who) + ": " + std::string(name) + " scheme: ";
  try {
    s.validate();
  } catch (const shape_error& e) {
    throw shape_error(prefix + e.what());
  } catch (const unsupported_error& e) {
    throw unsupported_error(prefix + e.what());
  }
}

inline void require_tensor(std::string_view who, std::string_view name, const tensor_view& t, device where) {
  if (t.is_none()) fail(who, std::string(name) + " is missing");
  if (t.rank < 1 || t.rank > max_rank)
    fail(who, std::string(name) + " must have rank 1.." + std::to_string(max_rank) + ", got " + std::to_string(t.rank));
  for (int i = 0; i < t.rank; ++i)
    if (t.shape[static_cast<std::size_t>(i)] < 0) fail(who, std::string(name) + " has a negative dimension: " + t.describe());
  check_shape_size(t.dims(), t.type, std::string(who) + ": " + std::string(name));
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

inline void require_type(std::string_view who, std::string_view name, const tensor_view& t, element_type want) {
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

inline void require_numel(std::string_view who, std::string_view name, const tensor_view& t, std::size_t n,
                          const std::string& why) {
  if (usize(t.numel()) != n)
    fail(who, std::string(name) + " must hold " + std::to_string(n) + " values (" + why + "), got " + t.describe());
}

inline void require_shape(std::string_view who, std::string_view name, const tensor_view& t,
                          std::span<const std::int64_t> want, const std::string& why) {
  bool same = t.rank == static_cast<int>(want.size());
  for (std::size_t i = 0; same && i < want.size(); ++i) same = t.shape[i] == want[i];
  if (!same) fail(who, std::string(name) + " must have shape " + dims_string(want) + " (" + why + "), got " + t.describe());
}
inline void require_shape(std::string_view who, std::string_view name, const tensor_view& t,
                          std::initializer_list<std::int64_t> want, const std::string& why) {
  require_shape(who, name, t, std::span<const std::int64_t>(want.begin(), want.size()), why);
}

inline std::string grid_why(const quant_scheme& s, const slab_layout& l) {
  return std::to_string(l.grid_rows) + " x " + std::to_string(l.grid_cols) + " scale grid of " + s.describe() +
         " on " + std::to_string(l.rows) + " x " + std::to_string(l.cols);
}

/// A quantized_view's codes (on `where`) and scales (on `scales_where`) against its scheme; returns
/// its slabs. fp32 scales need the grid's count, MX scales the exact plain shape.
inline slab_layout check_quantized(std::string_view who, std::string_view name, const quantized_view& q, device where,
                                   device scales_where) {
  const std::string nm(name);
  validate_scheme(who, nm, q.scheme);
  require_tensor(who, nm + " codes", q.codes, where);
  require_type(who, nm + " codes", q.codes, q.scheme.format);
  if (q.scheme.gran == granularity::mx && q.scheme.axis == 0 && q.codes.rank < 2)
    fail(who, nm + ": mx blocks down columns (axis 0) need codes of rank 2 or more, got " + q.codes.describe());
  const slab_layout l = slabs_of(q.scheme, q.codes);
  require_tensor(who, nm + " scales", q.scales, scales_where);
  if (q.scheme.gran == granularity::mx) {
    require_type(who, nm + " scales", q.scales, format_id::float8_e8m0fnu);
    require_shape(who, nm + " scales", q.scales, mx_scale_dims(q.codes, l),
                  "E8M0 in the plain layout, the " + grid_why(q.scheme, l) + " per slab");
  } else {
    require_type(who, nm + " scales", q.scales, float32);
    require_numel(who, nm + " scales", q.scales, l.scale_count(), "the " + grid_why(q.scheme, l));
  }
  return l;
}

/// The quantize family: x a float input with y's shape, then y itself.
inline slab_layout check_quantize(std::string_view who, const tensor_view& x, const quantized_view& y, device where,
                                  device scales_where) {
  require_tensor(who, "x", x, where);
  if (!is_float_input(x.type)) fail(who, "x must be float32, bfloat16 or float16, got " + x.describe());
  const slab_layout l = check_quantized(who, "y", y, where, scales_where);
  require_same_shape(who, "y codes", y.codes, x, "x");
  return l;
}

/// quantize_with_amax's amax_out: one value in x's element type (aclnnQuantMax: "same dtype as x, shape [1]").
inline void check_amax_out(std::string_view who, const tensor_view& amax_out, const tensor_view& x, device where) {
  require_tensor(who, "amax_out", amax_out, where);
  require_type(who, "amax_out", amax_out, x.type);
  require_numel(who, "amax_out", amax_out, 1, "max |x|");
}

/// dequantize: q, and out float32 of q's shape.
inline slab_layout check_dequantize(std::string_view who, const quantized_view& q, const tensor_view& out, device where) {
  const slab_layout l = check_quantized(who, "q", q, where, where);
  require_tensor(who, "out", out, where);
  require_type(who, "out", out, float32);
  require_same_shape(who, "out", out, q.codes, "q codes");
  return l;
}

inline void check_gemm_out(std::string_view who, const tensor_view& out, std::int64_t m, std::int64_t n,
                           const tensor_view& bias, std::span<const std::int64_t> bias_dims, device where) {
  require_tensor(who, "out", out, where);
  if (out.type != float32 && out.type != format_id::bfloat16)
    fail(who, "out must be float32 or bfloat16, got " + out.describe());
  require_shape(who, "out", out, {m, n}, "(m, n)");
  if (!bias.is_none()) {
    require_tensor(who, "bias", bias, where);
    require_type(who, "bias", bias, float32);
    require_shape(who, "bias", bias, bias_dims, "one per output column");
  }
}

/// B's n, from its stored last two dims ((k, n) for kn, (n, k) for nk), after checking that its k is A's.
inline std::int64_t check_shared_k(std::string_view who, const quantized_view& a, const quantized_view& b, gemm_layout layout) {
  const bool kn = layout == gemm_layout::kn, grouped = b.codes.rank == 3;
  if ((kn ? b.codes.dim(-2) : b.codes.dim(-1)) != a.codes.dim(1))
    fail(who, "A is " + a.codes.describe() + (grouped ? " (M, K)" : " (m, k)") + " but B stored " +
                  (kn ? (grouped ? "(g, K, N)" : "(k, n)") : (grouped ? "(g, N, K)" : "(n, k)")) + " is " +
                  b.codes.describe() + ": " + (grouped ? "K" : "k") + " must agree");
  return kn ? b.codes.dim(-1) : b.codes.dim(-2);
}

/// GEMM shapes after checking A, B, bias and out: (m, n, k).
struct gemm_problem {
  std::int64_t m = 0, n = 0, k = 0;
};

inline gemm_problem check_gemm(std::string_view who, const quantized_view& a, const quantized_view& b, const tensor_view& bias,
                               const tensor_view& out, gemm_layout layout, device where) {
  (void)check_quantized(who, "A", a, where, where);
  (void)check_quantized(who, "B", b, where, where);
  if (a.codes.rank != 2) fail(who, "A must be 2-D (m, k), got " + a.codes.describe());
  if (b.codes.rank != 2) fail(who, "B must be 2-D, got " + b.codes.describe());
  gemm_problem p;
  p.m = a.codes.dim(0), p.k = a.codes.dim(1), p.n = check_shared_k(who, a, b, layout);
  const std::int64_t bias_dims[] = {p.n};
  check_gemm_out(who, out, p.m, p.n, bias, bias_dims, where);
  return p;
}

/// Grouped GEMM shapes: (M, N, K, g), and one expert's B slab.
struct grouped_problem {
  std::int64_t m = 0, n = 0, k = 0, groups = 0;
  slab_layout b_slab;  ///< stored rows x cols of one expert, its grid and code bytes
};

inline grouped_problem check_grouped_gemm(std::string_view who, const quantized_view& a, const quantized_view& b,
                                          const tensor_view& group_sizes, const tensor_view& bias,
                                          const tensor_view& out, gemm_layout layout, device where,
                                          device group_sizes_where) {
  if (b.codes.rank != 3) {
    require_tensor(who, "B codes", b.codes, where);
    fail(who, "B must be 3-D (g, K, N) or (g, N, K), got " + b.codes.describe());
  }
  grouped_problem p;
  p.groups = b.codes.dim(0);
  // A: tensor granularity is one scale per group; anything else is A's own scales.
  if (a.scheme.gran == granularity::tensor) {
    validate_scheme(who, "A", a.scheme);
    require_tensor(who, "A codes", a.codes, where);
    require_type(who, "A codes", a.codes, a.scheme.format);
    require_tensor(who, "A scales", a.scales, where);
    require_type(who, "A scales", a.scales, float32);
    require_numel(who, "A scales", a.scales, usize(p.groups), "grouped GEMM: one per-tensor scale per group");
  } else {
    (void)check_quantized(who, "A", a, where, where);
  }
  if (a.codes.rank != 2) fail(who, "A must be 2-D (M, K), got " + a.codes.describe());
  // B: g slabs of one expert's stored matrix; MX scales (g, grid), fp32 g grids.
  validate_scheme(who, "B", b.scheme);
  require_tensor(who, "B codes", b.codes, where);
  require_type(who, "B codes", b.codes, b.scheme.format);
  slab_layout& s = p.b_slab;
  s.count = usize(p.groups), s.rows = usize(b.codes.dim(1)), s.cols = usize(b.codes.dim(2));
  std::tie(s.grid_rows, s.grid_cols) = scale_grid(b.scheme, s.rows, s.cols);
  s.code_bytes = checked_mul(s.rows, minifloat::detail::code_row_bytes(b.scheme.format, s.cols), "grouped gemm: codes of one B slab");
  require_tensor(who, "B scales", b.scales, where);
  if (b.scheme.gran == granularity::mx) {
    require_type(who, "B scales", b.scales, format_id::float8_e8m0fnu);
    require_shape(who, "B scales", b.scales, mx_scale_dims(b.codes, s), "E8M0 plain, the " + grid_why(b.scheme, s) + " per group");
  } else {
    require_type(who, "B scales", b.scales, float32);
    require_numel(who, "B scales", b.scales, s.count * s.scale_count(), "g x the " + grid_why(b.scheme, s));
  }
  p.m = a.codes.dim(0), p.k = a.codes.dim(1), p.n = check_shared_k(who, a, b, layout);
  require_tensor(who, "group_sizes", group_sizes, group_sizes_where);
  require_type(who, "group_sizes", group_sizes, int64);
  require_shape(who, "group_sizes", group_sizes, {p.groups}, "one token count per group");
  const std::int64_t bias_dims[] = {p.groups, p.n};
  check_gemm_out(who, out, p.m, p.n, bias, bias_dims, where);
  return p;
}

/// Group sizes read from host memory: non-negative, summing to M.
inline std::vector<std::size_t> read_group_sizes(std::string_view who, const tensor_view& group_sizes, std::int64_t m) {
  const auto* g = static_cast<const std::int64_t*>(group_sizes.data);
  std::vector<std::size_t> r(usize(group_sizes.numel()));
  std::size_t total = 0;
  for (std::size_t i = 0; i < r.size(); ++i) {
    if (g[i] < 0) fail(who, "group_sizes[" + std::to_string(i) + "] is negative (" + std::to_string(g[i]) + ")");
    r[i] = static_cast<std::size_t>(g[i]);
    total = checked_add(total, r[i], std::string(who) + ": the sum of group_sizes");
  }
  if (total != usize(m))
    fail(who, "group_sizes add up to " + std::to_string(total) + " rows but A has M = " + std::to_string(m));
  return r;
}

}  // namespace detail

}  // namespace minifloat::backend
