#pragma once
// Backend tensor views: a data pointer, an element type, a shape and strides in LOGICAL ELEMENTS
// (FP4 included, as aclTensor counts them; docs/formats/ascend.md#torch_npu-names) and a device
// tag. No vendor type appears here: the Ascend shim (backend/ascend/) maps these views onto
// aclTensor, the CPU backend reads them directly, and both see the same bytes.
//
// Element types are the library's formats (format_id: codes, bfloat16 / float16 values, E8M0
// scales) plus the two plain types a backend also moves: float32 (inputs, fp32 scales, outputs)
// and int64 (grouped-GEMM group sizes). Storage is the library's (formats/packed.hpp): 8- and 6-bit
// codes one per byte, FP4 two per byte (element 2i in the LOW nibble), 16-bit formats two bytes
// little-endian; float32 4 bytes, int64 8. The Ascend dtype numbers live in
// backend/ascend/acl_types.hpp, the only place that knows them.
//
// Contiguous ("row-major") tensors have strides (..., shape[-1], 1) with one exception: an FP4
// tensor whose last dimension is odd starts every row on a byte boundary, so its row stride is
// shape[-1] + 1 elements. That is exactly the library's FP4 row layout (quant/quantized_tensor.hpp:
// ceil(cols / 2) bytes per row), so byte buffers move between the library, the CPU backend and the
// Ascend backend unchanged.
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

#include "../core/checked.hpp"
#include "../core/errors.hpp"
#include "../formats/format_list.hpp"
#include "../formats/packed.hpp"
#include "../quant/quantized_tensor.hpp"

namespace minifloat::backend {

/// What a tensor holds: a library format, or float32 / int64.
class element_type {
 public:
  /// Every library format is an element type (implicit, so `format_id::hifloat8` reads as one).
  constexpr element_type(format_id f) noexcept : format_(f) {}  // NOLINT(google-explicit-constructor)
  [[nodiscard]] static constexpr element_type float32() noexcept { return element_type(plain::float32); }
  [[nodiscard]] static constexpr element_type int64() noexcept { return element_type(plain::int64); }

  /// The library format, or nullopt for float32 and int64.
  [[nodiscard]] constexpr std::optional<format_id> format() const noexcept {
    return plain_ == plain::none ? std::optional<format_id>(format_) : std::nullopt;
  }
  [[nodiscard]] constexpr bool is_float32() const noexcept { return plain_ == plain::float32; }
  [[nodiscard]] constexpr bool is_int64() const noexcept { return plain_ == plain::int64; }

  friend constexpr bool operator==(element_type a, element_type b) noexcept {
    return a.plain_ == b.plain_ && (a.plain_ != plain::none || a.format_ == b.format_);
  }

 private:
  enum class plain : std::uint8_t { none, float32, int64 };
  explicit constexpr element_type(plain p) noexcept : plain_(p) {}
  format_id format_ = format_id::hifloat8;
  plain plain_ = plain::none;
};

inline constexpr element_type float32 = element_type::float32();
inline constexpr element_type int64 = element_type::int64();

/// "float32", "int64" or the format's name (formats/format_list.hpp).
constexpr std::string_view to_string(element_type t) noexcept {
  if (const auto f = t.format()) return to_string(*f);
  return t.is_float32() ? "float32" : "int64";
}

/// Storage bits of one element: 4 for FP4, 6 for FP6 (kept one per byte), 16, 32 or 64.
inline int storage_bits(element_type t) {
  if (const auto f = t.format()) return minifloat::detail::format_bits(*f);
  return t.is_float32() ? 32 : 64;
}

/// The inputs of the quantizers: float32, bfloat16 or float16.
constexpr bool is_float_input(element_type t) noexcept {
  return t == float32 || t == format_id::bfloat16 || t == format_id::float16;
}

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

/// Bytes that hold `elements` consecutive elements of `t`.
inline std::size_t bytes_for(element_type t, std::int64_t elements) {
  const auto n = static_cast<std::size_t>(elements < 0 ? 0 : elements);
  if (const auto f = t.format()) return packed_bytes(n, minifloat::detail::format_bits(*f));
  return n * (t.is_float32() ? 4U : 8U);
}

inline std::string dims_string(std::span<const std::int64_t> d) {
  std::string s = "(";
  for (std::size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + (d.size() == 1 ? ",)" : ")");
}

/// Throws shape_error unless the storage of a contiguous tensor of these non-negative dims (FP4
/// rows padded to a byte) counts fewer than 2^62 elements, so that every element count, stride and
/// byte size derived from the shape fits in int64 and size_t.
inline void check_shape_size(std::span<const std::int64_t> shape, element_type t, std::string_view what) {
  std::size_t n = 1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    auto d = static_cast<std::size_t>(shape[i]);
    if (i + 1 == shape.size() && storage_bits(t) == 4) d += d % 2;
    n = checked_mul(n, d, what);
  }
  if (n >= (std::size_t{1} << 62))
    throw shape_error(std::string(what) + ": " + dims_string(shape) + " holds 2^62 elements or more");
}

}  // namespace detail

/// A non-owning tensor: see the header comment. A default-constructed view (rank 0, null data)
/// means "no tensor" (an absent bias, for instance); is_none() tells.
struct tensor_view {
  void* data = nullptr;
  element_type type = float32;
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
  [[nodiscard]] std::size_t byte_extent() const { return detail::bytes_for(type, extent()); }
  /// Rows and columns of the row-major matrix view: (prod(shape[:-1]), shape[-1]); (1, n) for rank 1.
  [[nodiscard]] constexpr std::int64_t rows() const noexcept {
    if (rank == 0) return 0;
    std::int64_t r = 1;
    for (int i = 0; i + 1 < rank; ++i) r *= shape[static_cast<std::size_t>(i)];
    return r;
  }
  [[nodiscard]] constexpr std::int64_t cols() const noexcept { return rank == 0 ? 0 : shape[static_cast<std::size_t>(rank - 1)]; }
  [[nodiscard]] std::string describe() const {
    return std::string(to_string(type)) + detail::dims_string(dims()) + " on " + to_string(where);
  }

  /// The row-major strides of `shape` for element type t (see the header comment for odd-width FP4).
  static std::array<std::int64_t, max_rank> contiguous_strides(element_type t, std::span<const std::int64_t> shape) {
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
  [[nodiscard]] bool is_contiguous() const {
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
inline tensor_view make_tensor(void* data, element_type t, std::span<const std::int64_t> shape, device where = host) {
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
  detail::check_shape_size(shape, t, "make_tensor");
  v.strides = tensor_view::contiguous_strides(t, shape);
  v.where = where;
  if (data == nullptr && v.numel() != 0)
    throw shape_error("make_tensor: null data for the non-empty tensor " + v.describe());
  return v;
}
inline tensor_view make_tensor(void* data, element_type t, std::initializer_list<std::int64_t> shape, device where = host) {
  return make_tensor(data, t, std::span<const std::int64_t>(shape.begin(), shape.size()), where);
}
/// An input view over const memory (the backends never write through input views).
inline tensor_view make_tensor(const void* data, element_type t, std::span<const std::int64_t> shape, device where = host) {
  return make_tensor(const_cast<void*>(data), t, shape, where);
}
inline tensor_view make_tensor(const void* data, element_type t, std::initializer_list<std::int64_t> shape,
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
