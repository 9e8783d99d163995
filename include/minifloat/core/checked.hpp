#pragma once
// Checked size arithmetic: every element count, byte size, M*N, group-size sum or allocation
// that comes from a caller or a file goes through these, so a size that does not fit in
// std::size_t is a shape_error naming what was being computed, never a wrapped number that
// passes a later equality check and overruns a buffer.
//
//   checked_mul(rows, cols, "quantize: rows x cols")    throws shape_error on overflow
//   checked_add(a, b, "grouped_gemm: group sizes")
//   checked_product({b, h, t, d}, "attention: Q")       any number of factors
// The *_or helpers return std::nullopt instead of throwing (for noexcept kernels, which turn it
// into kernel_status::size_mismatch).
#include <cstddef>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "errors.hpp"

namespace minifloat {

[[nodiscard]] constexpr std::optional<std::size_t> checked_mul_or(std::size_t a, std::size_t b) noexcept {
  std::size_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

[[nodiscard]] constexpr std::optional<std::size_t> checked_add_or(std::size_t a, std::size_t b) noexcept {
  std::size_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

namespace detail {
[[noreturn]] inline void throw_size_overflow(std::string_view what, const std::string& expr) {
  throw shape_error(std::string(what) + ": " + expr + " does not fit in a 64-bit size");
}
}  // namespace detail

[[nodiscard]] inline std::size_t checked_mul(std::size_t a, std::size_t b, std::string_view what) {
  if (const auto r = checked_mul_or(a, b)) return *r;
  detail::throw_size_overflow(what, std::to_string(a) + " x " + std::to_string(b));
}

[[nodiscard]] inline std::size_t checked_add(std::size_t a, std::size_t b, std::string_view what) {
  if (const auto r = checked_add_or(a, b)) return *r;
  detail::throw_size_overflow(what, std::to_string(a) + " + " + std::to_string(b));
}

/// The product of every factor; a zero factor makes the product 0 (an empty tensor), whatever
/// the others are.
[[nodiscard]] inline std::size_t checked_product(std::initializer_list<std::size_t> factors, std::string_view what) {
  for (const std::size_t f : factors)
    if (f == 0) return 0;
  std::size_t r = 1;
  std::string expr;
  for (const std::size_t f : factors) {
    expr += (expr.empty() ? "" : " x ") + std::to_string(f);
    const auto p = checked_mul_or(r, f);
    if (!p) detail::throw_size_overflow(what, expr + " x ...");
    r = *p;
  }
  return r;
}

}  // namespace minifloat
