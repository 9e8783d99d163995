#pragma once
// Gradient buckets: several tensors packed into one flat vector for one all_reduce, each tensor
// starting on a scale-group boundary so that no scale group spans two tensors (a small bias
// would otherwise share the scale of a large weight gradient). Nothing here needs MPI.
//
//   bucket_alignment(r)          r.chunk for the fp32-scaled formats (hif8, e4m3, e5m2), 32 else
//   make_bucket(sizes, r)        offsets of each tensor and the padded total
//   pack(tensors, b, flat)       copies the tensors in, zeros in the padding
//   unpack(flat, b, tensors)     copies them back out
#include <algorithm>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "../core/checked.hpp"
#include "../core/errors.hpp"
#include "recipe.hpp"

namespace minifloat::comm {

enum class reduction : std::uint8_t { sum, mean };

[[nodiscard]] inline std::size_t bucket_alignment(const recipe& r) noexcept {
  return scale_kind_of(r.format) == scale_kind::fp32 ? r.chunk : mx_group;
}

struct bucket {
  std::vector<std::size_t> offsets;  ///< where tensor i starts
  std::vector<std::size_t> sizes;    ///< its element count
  std::size_t total = 0;             ///< elements of the flat vector, padding included
};

[[nodiscard]] inline bucket make_bucket(std::span<const std::size_t> sizes, const recipe& r) {
  const std::size_t align = bucket_alignment(r);
  bucket b;
  for (const std::size_t n : sizes) {
    b.offsets.push_back(b.total);
    b.sizes.push_back(n);
    const std::size_t padded = checked_mul(minifloat::detail::ceil_div(n, align), align, "comm bucket: padded size");
    b.total = checked_add(b.total, padded, "comm bucket: total size");
  }
  return b;
}

template <class Span>
[[nodiscard]] inline bucket make_bucket_of(std::span<const Span> tensors, const recipe& r) {
  std::vector<std::size_t> sizes;
  sizes.reserve(tensors.size());
  for (const auto& t : tensors) sizes.push_back(t.size());
  return make_bucket(sizes, r);
}

namespace detail {
inline void check_bucket(const bucket& b, std::size_t tensors, std::size_t flat, const char* who) {
  if (tensors != b.sizes.size() || flat != b.total)
    throw shape_error(std::string(who) + ": the bucket holds " + std::to_string(b.sizes.size()) + " tensors in " +
                      std::to_string(b.total) + " elements, got " + std::to_string(tensors) + " tensors and " +
                      std::to_string(flat) + " elements");
}
}  // namespace detail

template <class Span>
void pack(std::span<const Span> tensors, const bucket& b, std::span<float> flat) {
  detail::check_bucket(b, tensors.size(), flat.size(), "comm::pack");
  std::fill(flat.begin(), flat.end(), 0.0f);
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].size() != b.sizes[i])
      throw shape_error("comm::pack: tensor " + std::to_string(i) + " has " + std::to_string(tensors[i].size()) +
                        " elements, the bucket expects " + std::to_string(b.sizes[i]));
    std::copy(tensors[i].begin(), tensors[i].end(), flat.begin() + static_cast<std::ptrdiff_t>(b.offsets[i]));
  }
}

inline void unpack(std::span<const float> flat, const bucket& b, std::span<const std::span<float>> tensors) {
  detail::check_bucket(b, tensors.size(), flat.size(), "comm::unpack");
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].size() != b.sizes[i])
      throw shape_error("comm::unpack: tensor " + std::to_string(i) + " has " + std::to_string(tensors[i].size()) +
                        " elements, the bucket expects " + std::to_string(b.sizes[i]));
    const auto first = flat.begin() + static_cast<std::ptrdiff_t>(b.offsets[i]);
    std::copy(first, first + static_cast<std::ptrdiff_t>(b.sizes[i]), tensors[i].begin());
  }
}

/// mean: every value divided by the rank count in fp32 (the same division on every rank).
inline void apply_reduction(std::span<float> v, reduction red, std::size_t ranks) noexcept {
  if (red != reduction::mean || ranks <= 1) return;
  const auto p = static_cast<float>(ranks);
  for (float& x : v) x /= p;
}

}  // namespace minifloat::comm
