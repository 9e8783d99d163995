#pragma once
// Types shared by every bulk kernel and every ISA path: the status a kernel returns instead of
// throwing, and the per-call options (the ISA level itself: isa.hpp).
//
// Error handling: every kernel in simd/ is noexcept and reports a bad call through
// kernel_status (null data with a non-zero length, spans whose sizes do not fit together, an
// ISA that is not available). check() turns a status into the library's typed exceptions for
// callers that prefer throwing. Valid calls always return kernel_status::ok.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "../core/errors.hpp"
#include "../core/policy.hpp"
#include "isa.hpp"

namespace minifloat::simd {

enum class kernel_status : std::uint8_t {
  ok,
  null_pointer,     ///< a span with data() == nullptr and a non-zero size
  size_mismatch,    ///< output and input sizes do not fit together
  unsupported_isa,  ///< the requested ISA is not compiled in or not supported by this CPU
  bad_argument,     ///< any other invalid argument (scheme, scale, rounding mode for MX, ...)
};

}  // namespace minifloat::simd

template <>
struct minifloat::enum_names<minifloat::simd::kernel_status> {
  using ks = minifloat::simd::kernel_status;
  static constexpr std::array table{name_of(ks::ok, "ok"), name_of(ks::null_pointer, "null_pointer"),
                                    name_of(ks::size_mismatch, "size_mismatch"),
                                    name_of(ks::unsupported_isa, "unsupported_isa"),
                                    name_of(ks::bad_argument, "bad_argument")};
};

namespace minifloat::simd {

/// Throws for a status other than ok: shape_error for null/size problems, unsupported_error
/// for an unavailable ISA, std::invalid_argument otherwise. `who` prefixes the message.
inline void check(kernel_status s, std::string_view who) {
  if (s == kernel_status::ok) return;
  const std::string msg = std::string(who) + ": kernel_status::" + std::string(to_string(s));
  switch (s) {
    case kernel_status::null_pointer:
    case kernel_status::size_mismatch: throw shape_error(msg);
    case kernel_status::unsupported_isa: throw unsupported_error(msg);
    default: throw std::invalid_argument(msg);
  }
}

/// Per-call options of every bulk kernel.
struct bulk_options {
  /// Force a path (tests, kernel authors); `automatic` picks the best available one.
  isa path = isa::automatic;
  /// rounding::stochastic only: element i of the call uses random_bits(seed, first_index + i)
  /// (random.hpp), so every ISA path and every thread split gives the same codes.
  std::uint64_t seed = 0;
  std::uint64_t first_index = 0;
};

namespace detail {

/// The rounding a kernel applies to magnitudes, once rounding::nearest is resolved against the
/// format's own rule. The three directed modes share one kernel (which lanes truncate and which
/// round away is a per-lane choice made from the sign).
enum class round_kind : std::uint8_t { nearest_even, nearest_away, directed, stochastic };

constexpr round_kind kind_of(rounding r, rounding format_nearest) noexcept {
  if (r == rounding::nearest) r = format_nearest;
  switch (r) {
    case rounding::nearest_even: return round_kind::nearest_even;
    case rounding::nearest_away: return round_kind::nearest_away;
    case rounding::stochastic: return round_kind::stochastic;
    default: return round_kind::directed;
  }
}

template <class T>
constexpr bool bad_span(const T* p, std::size_t n) noexcept {
  return p == nullptr && n != 0;
}

}  // namespace detail

}  // namespace minifloat::simd
