#pragma once
// Backend tensor views: a data pointer, a dtype, a shape and strides in LOGICAL ELEMENTS (FP4
// included, as aclTensor counts them; docs/formats/ascend.md#torch_npu-names) and a device tag. No vendor type appears
// here: the Ascend shim (backend/ascend/) maps these views onto aclTensor, the CPU backend reads
// them directly, and both see the same bytes.
//
//   dtype              storage                      aclDataType   torch / torch_npu
//   float32            4 B                          0             torch.float32
//   float16            2 B (IEEE binary16)          1             torch.float16
//   bfloat16           2 B                          27            torch.bfloat16
//   int64              8 B (group sizes)            9             torch.int64
//   hifloat8           1 B                          34            torch_npu.hifloat8 (290)
//   float8_e5m2        1 B                          35            torch.float8_e5m2
//   float8_e4m3fn      1 B                          36            torch.float8_e4m3fn
//   float8_e8m0fnu     1 B (MX scales, bias 127)    37            torch.float8_e8m0fnu
//   float6_e3m2fn      1 B, code in the low 6 bits  38            -
//   float6_e2m3fn      1 B, code in the low 6 bits  39            -
//   float4_e2m1fn_x2   1/2 B: element 2i in the LOW nibble, 2i+1 in the HIGH nibble
//                                                   40            torch.float4_e2m1fn_x2
//
// Contiguous ("row-major") tensors have strides (..., shape[-1], 1) with one exception: an FP4
// tensor whose last dimension is odd starts every row on a byte boundary, so its row stride is
// shape[-1] + 1 elements. That is exactly the library's FP4 row layout (quant/quantized_tensor.hpp,
// block/mx_tensor.hpp: ceil(cols / 2) bytes per row), so byte buffers move between the library,
// the CPU backend and the Ascend backend unchanged.
//
// A tensor_view does not own memory and is never written through when it is an input. Errors:
// shape_error (errors.hpp) with the expected and the actual value in the message.
#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "../core/errors.hpp"
#include "../formats/format_list.hpp"

namespace minifloat::backend {

// The enumerators share the format type names on purpose (dtype::hifloat8 names hifloat8); GCC's
// -Wshadow flags that although scoped enumerators cannot shadow anything (as in format_list.hpp).
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wshadow"
#endif
enum class dtype : std::uint8_t {
  float32,
  float16,
  bfloat16,
  int64,
  hifloat8,
  float8_e5m2,
  float8_e4m3fn,
  float8_e8m0fnu,
  float6_e3m2fn,
  float6_e2m3fn,
  float4_e2m1fn_x2,
};
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

inline constexpr dtype all_dtypes[] = {dtype::float32,       dtype::float16,        dtype::bfloat16,
                                       dtype::int64,         dtype::hifloat8,       dtype::float8_e5m2,
                                       dtype::float8_e4m3fn, dtype::float8_e8m0fnu, dtype::float6_e3m2fn,
                                       dtype::float6_e2m3fn, dtype::float4_e2m1fn_x2};

constexpr std::string_view to_string(dtype t) noexcept {
  switch (t) {
    case dtype::float32: return "float32";
    case dtype::float16: return "float16";
    case dtype::bfloat16: return "bfloat16";
    case dtype::int64: return "int64";
    case dtype::hifloat8: return "hifloat8";
    case dtype::float8_e5m2: return "float8_e5m2";
    case dtype::float8_e4m3fn: return "float8_e4m3fn";
    case dtype::float8_e8m0fnu: return "float8_e8m0fnu";
    case dtype::float6_e3m2fn: return "float6_e3m2fn";
    case dtype::float6_e2m3fn: return "float6_e2m3fn";
    case dtype::float4_e2m1fn_x2: return "float4_e2m1fn_x2";
  }
  return "?";
}

constexpr std::optional<dtype> parse_dtype(std::string_view s) noexcept {
  for (const dtype t : all_dtypes)
    if (to_string(t) == s) return t;
  return std::nullopt;
}

/// Storage bits of one element: 4 for float4_e2m1fn_x2, 8 for FP6 (one code per byte).
constexpr int storage_bits(dtype t) noexcept {
  switch (t) {
    case dtype::float32: return 32;
    case dtype::float16:
    case dtype::bfloat16: return 16;
    case dtype::int64: return 64;
    case dtype::float4_e2m1fn_x2: return 4;
    default: return 8;
  }
}

/// The library format of a dtype (nullopt for float32 and int64).
constexpr std::optional<format_id> format_of(dtype t) noexcept {
  switch (t) {
    case dtype::float16: return format_id::float16;
    case dtype::bfloat16: return format_id::bfloat16;
    case dtype::hifloat8: return format_id::hifloat8;
    case dtype::float8_e5m2: return format_id::float8_e5m2;
    case dtype::float8_e4m3fn: return format_id::float8_e4m3fn;
    case dtype::float8_e8m0fnu: return format_id::float8_e8m0fnu;
    case dtype::float6_e3m2fn: return format_id::float6_e3m2fn;
    case dtype::float6_e2m3fn: return format_id::float6_e2m3fn;
    case dtype::float4_e2m1fn_x2: return format_id::float4_e2m1fn;
    default: return std::nullopt;
  }
}

/// The dtype that stores a library format (FP4 -> float4_e2m1fn_x2).
constexpr dtype dtype_of(format_id f) noexcept {
  switch (f) {
    case format_id::hifloat8: return dtype::hifloat8;
    case format_id::float8_e4m3fn: return dtype::float8_e4m3fn;
    case format_id::float8_e5m2: return dtype::float8_e5m2;
    case format_id::float6_e3m2fn: return dtype::float6_e3m2fn;
    case format_id::float6_e2m3fn: return dtype::float6_e2m3fn;
    case format_id::float4_e2m1fn: return dtype::float4_e2m1fn_x2;
    case format_id::float8_e8m0fnu: return dtype::float8_e8m0fnu;
    case format_id::bfloat16: return dtype::bfloat16;
    case format_id::float16: return dtype::float16;
  }
  return dtype::float32;
}

/// Element formats a quantizer writes and a GEMM reads (not the E8M0 scale format).
constexpr bool is_element_dtype(dtype t) noexcept {
  return t == dtype::hifloat8 || t == dtype::float8_e5m2 || t == dtype::float8_e4m3fn || t == dtype::float6_e3m2fn ||
         t == dtype::float6_e2m3fn || t == dtype::float4_e2m1fn_x2;
}
/// The high-precision inputs of the quantizers.
constexpr bool is_float_dtype(dtype t) noexcept {
  return t == dtype::float32 || t == dtype::bfloat16 || t == dtype::float16;
}
/// The MX element formats (OCP MX v1.0 minus MXINT8).
constexpr bool is_mx_element_dtype(dtype t) noexcept { return is_element_dtype(t) && t != dtype::hifloat8; }

/// Where a tensor's memory lives.
enum class device_kind : std::uint8_t { host, ascend };

constexpr std::string_view to_string(device_kind k) noexcept { return k == device_kind::host ? "host" : "ascend"; }

struct device {
  device_kind kind = device_kind::host;
  int index = 0;
  friend constexpr bool operator==(device, device) = default;
};

inline constexpr device host{};
constexpr device ascend_device(int index = 0) noexcept { return {device_kind::ascend, index}; }

inline std::string to_string(device d) {
  return d.kind == device_kind::host ? std::string("host") : "ascend:" + std::to_string(d.index);
}

/// The largest rank a view holds (aclTensor ops take at most 8 dimensions).
inline constexpr int max_rank = 8;

namespace detail {

constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) noexcept { return a / b + (a % b != 0 ? 1 : 0); }

/// Bytes that hold `elements` consecutive elements of `t`.
constexpr std::size_t bytes_for(dtype t, std::int64_t elements) noexcept {
  const auto n = static_cast<std::size_t>(elements < 0 ? 0 : elements);
  return storage_bits(t) == 4 ? (n + 1) / 2 : n * static_cast<std::size_t>(storage_bits(t) / 8);
}

inline std::string dims_string(std::span<const std::int64_t> d) {
  std::string s = "(";
  for (std::size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + (d.size() == 1 ? ",)" : ")");
}

}  // namespace detail

/// A non-owning tensor: see the header comment. A default-constructed view (rank 0, null data)
/// means "no tensor" (an absent bias, for instance); is_none() tells.
struct tensor_view {
  void* data = nullptr;
  dtype type = dtype::float32;
  int rank = 0;
  std::array<std::int64_t, max_rank> shape{};
  std::array<std::int64_t, max_rank> strides{};  ///< in logical elements
  device where = host;

  [[nodiscard]] constexpr bool is_none() const noexcept { return rank == 0 && data == nullptr; }
  [[nodiscard]] constexpr std::span<const std::int64_t> dims() const noexcept {
    return std::span<const std::int64_t>(shape.data(), static_cast<std::size_t>(rank));
  }
  [[nodiscard]] constexpr std::span<const std::int64_t> stride_span() const noexcept {
    return std::span<const std::int64_t>(strides.data(), static_cast<std::size_t>(rank));
  }
  /// Dimension i; negative i counts from the back (dim(-1) is the last).
  [[nodiscard]] constexpr std::int64_t dim(int i) const noexcept { return shape[static_cast<std::size_t>(i < 0 ? i + rank : i)]; }
  [[nodiscard]] constexpr std::int64_t numel() const noexcept {
    std::int64_t n = 1;
    for (int i = 0; i < rank; ++i) n *= shape[static_cast<std::size_t>(i)];
    return rank == 0 ? 0 : n;
  }
  [[nodiscard]] constexpr bool empty() const noexcept { return numel() == 0; }
  /// Elements a strided walk can reach: 1 + sum (shape_i - 1) * stride_i (0 for an empty view).
  [[nodiscard]] constexpr std::int64_t extent() const noexcept {
    if (empty()) return 0;
    std::int64_t e = 1;
    for (int i = 0; i < rank; ++i) e += (shape[static_cast<std::size_t>(i)] - 1) * strides[static_cast<std::size_t>(i)];
    return e;
  }
  /// Bytes from data to the end of the last reachable element.
  [[nodiscard]] constexpr std::size_t byte_extent() const noexcept { return detail::bytes_for(type, extent()); }
  /// Rows and columns of the row-major matrix view: (prod(shape[:-1]), shape[-1]); (1, n) for rank 1.
  [[nodiscard]] constexpr std::int64_t rows() const noexcept { return rank == 0 ? 0 : numel() / shape[static_cast<std::size_t>(rank - 1)]; }
  [[nodiscard]] constexpr std::int64_t cols() const noexcept { return rank == 0 ? 0 : shape[static_cast<std::size_t>(rank - 1)]; }
  [[nodiscard]] std::string describe() const {
    return std::string(to_string(type)) + detail::dims_string(dims()) + " on " + to_string(where);
  }

  /// The row-major strides of `shape` for dtype t (see the header comment for odd-width FP4).
  static constexpr std::array<std::int64_t, max_rank> contiguous_strides(dtype t, std::span<const std::int64_t> shape) noexcept {
    std::array<std::int64_t, max_rank> s{};
    std::int64_t acc = 1;
    for (std::size_t i = shape.size(); i-- > 0;) {
      s[i] = acc;
      std::int64_t d = shape[i];
      if (i + 1 == shape.size() && storage_bits(t) == 4) d += d % 2;  // rows start on a byte
      acc *= d;
    }
    return s;
  }
  [[nodiscard]] constexpr bool is_contiguous() const noexcept {
    if (empty()) return true;
    const auto c = contiguous_strides(type, dims());
    for (int i = 0; i < rank; ++i)
      if (shape[static_cast<std::size_t>(i)] != 1 && strides[static_cast<std::size_t>(i)] != c[static_cast<std::size_t>(i)])
        return false;
    return true;
  }
  /// The same memory with a new contiguous shape (same element count; needs a contiguous view;
  /// FP4 keeps the last dimension so the row padding does not move).
  [[nodiscard]] tensor_view reshaped(std::initializer_list<std::int64_t> new_shape) const;
};

/// A contiguous view over `data` (see the header comment for the strides).
inline tensor_view make_tensor(void* data, dtype t, std::span<const std::int64_t> shape, device where = host) {
  if (shape.size() == 0 || shape.size() > static_cast<std::size_t>(max_rank))
    throw shape_error("make_tensor: rank must lie in [1, " + std::to_string(max_rank) + "], got " +
                      std::to_string(shape.size()));
  tensor_view v;
  v.data = data;
  v.type = t;
  v.rank = static_cast<int>(shape.size());
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0) throw shape_error("make_tensor: negative dimension in " + detail::dims_string(shape));
    v.shape[i] = shape[i];
  }
  v.strides = tensor_view::contiguous_strides(t, shape);
  v.where = where;
  if (data == nullptr && v.numel() != 0)
    throw shape_error("make_tensor: null data for the non-empty tensor " + v.describe());
  return v;
}
inline tensor_view make_tensor(void* data, dtype t, std::initializer_list<std::int64_t> shape, device where = host) {
  return make_tensor(data, t, std::span<const std::int64_t>(shape.begin(), shape.size()), where);
}
/// An input view over const memory (the backends never write through input views).
inline tensor_view make_tensor(const void* data, dtype t, std::span<const std::int64_t> shape, device where = host) {
  return make_tensor(const_cast<void*>(data), t, shape, where);
}
inline tensor_view make_tensor(const void* data, dtype t, std::initializer_list<std::int64_t> shape,
                               device where = host) {
  return make_tensor(const_cast<void*>(data), t, std::span<const std::int64_t>(shape.begin(), shape.size()), where);
}

inline tensor_view tensor_view::reshaped(std::initializer_list<std::int64_t> new_shape) const {
  if (!is_contiguous()) throw shape_error("tensor_view::reshaped: " + describe() + " is not contiguous");
  tensor_view r = make_tensor(data, type, new_shape, where);
  if (r.numel() != numel())
    throw shape_error("tensor_view::reshaped: " + describe() + " has " + std::to_string(numel()) +
                      " elements, the new shape " + detail::dims_string(r.dims()) + " has " + std::to_string(r.numel()));
  if (storage_bits(type) == 4 && cols() % 2 != 0 && r.cols() != cols())
    throw shape_error("tensor_view::reshaped: an FP4 tensor with an odd last dimension (" + describe() +
                      ") keeps its last dimension (rows are byte-aligned)");
  return r;
}

}  // namespace minifloat::backend
