#pragma once
// THE quantize engine: the definitions of quantize(), quantize_with_scales(), dequantize() and
// check_scales_keep_finite() declared in quantized_tensor.hpp, and the group loops behind them.
// Included by quantized_tensor.hpp in header-only mode and compiled once into minifloat::kernels
// in compiled-kernels mode (core/config.hpp); include it directly only for the detail:: helpers.
//
// Every call runs on the bulk kernels of simd/ (finite_amax, quantize_scaled,
// dequantize_scaled, mx_quantize, mx_dequantize) over row segments of one scale group each, so
// every caller gets the SIMD paths; quantize_options::path = simd::isa::scalar runs the same
// calls on the scalar twins (simd/scalar/), which ARE the reference: element by element
// narrow<Elem>(x / s, {round, saturate}, random_bits(seed, r * cols + c)) (formats/convert.hpp),
// the division in float32, s from quant/scales.hpp. The paths give the same codes, scales and
// values bit for bit (tests/simd_equivalence/test_quantize_paths.cpp), for every thread count:
// a group's amax is a max (order-free), each element is rounded once from its own inputs, and
// stochastic rounding draws the bits of its (seed, index). Empty tensors return at once.
#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "../core/threads.hpp"
#include "../formats/convert.hpp"
#include "../simd/bulk.hpp"
#include "../simd/mx.hpp"
#include "../simd/threads.hpp"
#include "quantized_tensor.hpp"
#include "mx_tensor.hpp"
#include "scales.hpp"

namespace minifloat {

namespace detail {

inline simd::bulk_options bulk(const quantize_options& o, const quant_scheme& s, std::size_t first_index) noexcept {
  return {.path = o.path, .seed = s.seed, .first_index = first_index};
}

/// The scales of a band of groups [bi] (one per group column), from each group's finite amax.
template <class Elem>
void band_scales(matrix_view<const float> x, const quant_scheme& s, std::size_t bi, std::size_t tr, std::size_t tc,
                 std::span<float> scales, const quantize_options& o) {
  const std::size_t gc = ceil_div(x.cols, tc), r0 = bi * tr, r1 = std::min(x.rows, r0 + tr);
  for (std::size_t bj = 0; bj < gc; ++bj) {
    const std::size_t c0 = bj * tc, c1 = std::min(x.cols, c0 + tc);
    float amax = 0.0f;
    for (std::size_t r = r0; r < r1; ++r) {
      float a = 0.0f;
      simd::check(simd::finite_amax(std::span<const float>(x.row(r) + c0, c1 - c0), a, bulk(o, s, 0)), "quantize");
      amax = std::max(amax, a);
    }
    scales[bi * gc + bj] = group_scale<Elem>(amax, s.rule, s.target);
  }
}

/// Per-tensor scaling of a dense matrix runs as one flat span: the same elements, indices and
/// code bytes as row by row (FP4 only when rows end on a byte), in chunks of 64 elements.
template <class Elem>
bool runs_flat(const quant_scheme& s, std::size_t rows, std::size_t cols, bool contiguous) noexcept {
  return s.gran == granularity::tensor && contiguous && rows > 1 && (sizeof_bits<Elem> != 4 || cols % 2 == 0);
}
inline constexpr std::size_t flat_grain = 64;

/// The finite amax of the whole matrix, split over the threads.
inline float matrix_amax(matrix_view<const float> x, const quantize_options& o) {
  std::atomic<std::uint32_t> m{0};
  const bool flat = x.contiguous();
  const std::size_t n = flat ? x.size() : x.rows;
  parallel_for(n, o.threads, flat ? flat_grain : 1, [&](std::size_t b, std::size_t e) {
    float a = 0.0f;
    if (flat) {
      simd::check(simd::finite_amax(std::span<const float>(x.data + b, e - b), a, {.path = o.path}), "quantize");
    } else {
      for (std::size_t r = b; r < e; ++r) {
        float ar = 0.0f;
        simd::check(simd::finite_amax(std::span<const float>(x.row(r), x.cols), ar, {.path = o.path}), "quantize");
        a = std::max(a, ar);
      }
    }
    // non-negative finite floats order like their bit patterns
    std::uint32_t cur = m.load();
    const std::uint32_t mine = std::bit_cast<std::uint32_t>(a);
    while (cur < mine && !m.compare_exchange_weak(cur, mine)) {
    }
  });
  return std::bit_cast<float>(m.load());
}

/// Codes of row r's elements [c0, c1) at scale `scale`, written into the row's code bytes.
template <class Elem>
void encode_segment(const float* x, std::size_t c0, std::size_t c1, std::span<std::uint8_t> row_codes, float scale,
                    conversion conv, const simd::bulk_options& bo) {
  const std::size_t n = c1 - c0;
  float unused = 0.0f;
  const std::span<const float> in(x + c0, n);
  if constexpr (sizeof_bits<Elem> == 4) {
    if (c0 % 2 == 0) {  // the segment starts on a byte: straight into the packed row
      simd::check(simd::quantize_scaled_fp4_packed(in, row_codes.subspan(c0 / 2, (n + 1) / 2), scale, unused, conv, bo),
                  "quantize");
      return;
    }
    std::vector<std::uint8_t> tmp(n);
    simd::check(simd::quantize_scaled<Elem>(in, std::span<std::uint8_t>(tmp), scale, unused, conv, bo), "quantize");
    for (std::size_t i = 0; i < n; ++i) set_nibble(row_codes, c0 + i, tmp[i]);
  } else if constexpr (sizeof(typename Elem::storage_type) == 2) {
    // 16-bit codes: little-endian bytes in the byte buffer (no uint16_t access to it)
    static_assert(std::endian::native == std::endian::little, "16-bit codes are stored little-endian");
    std::vector<std::uint16_t> tmp(n);
    simd::check(simd::quantize_scaled<Elem>(in, std::span<std::uint16_t>(tmp), scale, unused, conv, bo), "quantize");
    std::memcpy(row_codes.data() + 2 * c0, tmp.data(), 2 * n);
  } else {
    simd::check(simd::quantize_scaled<Elem>(in, row_codes.subspan(c0, n), scale, unused, conv, bo), "quantize");
  }
}

/// Values of row r's elements [c0, c1) from its code bytes.
template <class Elem>
void decode_segment(std::span<const std::uint8_t> row_codes, std::size_t c0, std::size_t c1, float* out, float scale,
                    const simd::bulk_options& bo) {
  const std::size_t n = c1 - c0;
  const std::span<float> dst(out + c0, n);
  if constexpr (sizeof_bits<Elem> == 4) {
    if (c0 % 2 == 0) {
      simd::check(simd::dequantize_scaled_fp4_packed(row_codes.subspan(c0 / 2, (n + 1) / 2), dst, scale, bo), "dequantize");
      return;
    }
    std::vector<std::uint8_t> tmp(n);
    for (std::size_t i = 0; i < n; ++i) tmp[i] = nibble_at(row_codes, c0 + i);
    simd::check(simd::dequantize_scaled<Elem>(std::span<const std::uint8_t>(tmp), dst, scale, bo), "dequantize");
  } else if constexpr (sizeof(typename Elem::storage_type) == 2) {
    std::vector<std::uint16_t> tmp(n);
    std::memcpy(tmp.data(), row_codes.data() + 2 * c0, 2 * n);
    simd::check(simd::dequantize_scaled<Elem>(std::span<const std::uint16_t>(tmp), dst, scale, bo), "dequantize");
  } else {
    simd::check(simd::dequantize_scaled<Elem>(row_codes.subspan(c0, n), dst, scale, bo), "dequantize");
  }
}

/// fp32-scaled granularities. `given` empty: scales from each group's amax; else static scales.
template <class Elem>
void quantize_scaled_groups(matrix_view<const float> x, const quant_scheme& s, std::span<std::uint8_t> codes,
                            std::span<float> scales, std::span<const float> given, const quantize_options& o) {
  // Plain names, not a structured binding: clang 14 cannot capture a binding in the lambdas below.
  const auto tile = scale_tile(s, x.rows, x.cols);
  const std::size_t tr = tile.first, tc = tile.second;
  const std::size_t gr = ceil_div(x.rows, tr), gc = ceil_div(x.cols, tc);
  const std::size_t rb = code_row_bytes(s.format, x.cols);
  const conversion conv{s.round, overflow::saturate};
  // 1. scales
  if (!given.empty()) {
    std::copy(given.begin(), given.end(), scales.begin());
  } else if (s.gran == granularity::tensor) {
    scales[0] = group_scale<Elem>(matrix_amax(x, o), s.rule, s.target);
  } else {
    parallel_for(gr, o.threads, 1, [&](std::size_t b0, std::size_t b1) {
      for (std::size_t bi = b0; bi < b1; ++bi) band_scales<Elem>(x, s, bi, tr, tc, scales, o);
    });
  }
  // 2. codes, rows (or flat chunks) split over the threads
  if (runs_flat<Elem>(s, x.rows, x.cols, x.contiguous())) {
    const std::size_t n = x.size();
    parallel_for(n, o.threads, flat_grain, [&](std::size_t b, std::size_t e) {
      encode_segment<Elem>(x.data, b, e, codes, scales[0], conv, bulk(o, s, b));
    });
    return;
  }
  parallel_for(x.rows, o.threads, 1, [&](std::size_t r0, std::size_t r1) {
    for (std::size_t r = r0; r < r1; ++r) {
      const std::span<std::uint8_t> row = codes.subspan(r * rb, rb);
      for (std::size_t bj = 0; bj < gc; ++bj) {
        const std::size_t c0 = bj * tc, c1 = std::min(x.cols, c0 + tc);
        encode_segment<Elem>(x.row(r), c0, c1, row, scales[(r / tr) * gc + bj], conv, bulk(o, s, r * x.cols + c0));
      }
    }
  });
}

template <class Elem>
void dequantize_scaled_groups(const quantized_tensor_view& q, std::span<float> out, const quantize_options& o) {
  const auto tile = scale_tile(q.scheme, q.rows, q.cols);  // no structured binding: see quantize_scaled_groups
  const std::size_t tr = tile.first, tc = tile.second;
  const std::size_t gc = q.scale_grid_cols(), rb = code_row_bytes(q.scheme.format, q.cols);
  if (runs_flat<Elem>(q.scheme, q.rows, q.cols, true)) {
    parallel_for(q.rows * q.cols, o.threads, flat_grain, [&](std::size_t b, std::size_t e) {
      decode_segment<Elem>(q.codes, b, e, out.data(), q.scales[0], {.path = o.path});
    });
    return;
  }
  parallel_for(q.rows, o.threads, 1, [&](std::size_t r0, std::size_t r1) {
    for (std::size_t r = r0; r < r1; ++r) {
      const auto row = q.codes.subspan(r * rb, rb);
      for (std::size_t bj = 0; bj < gc; ++bj) {
        const std::size_t c0 = bj * tc, c1 = std::min(q.cols, c0 + tc);
        decode_segment<Elem>(row, c0, c1, out.data() + r * q.cols, q.scales[(r / tr) * gc + bj], {.path = o.path});
      }
    }
  });
}

/// x as one contiguous row-major span: x itself when it already is, else a copy made in `storage`
/// (MX quantization runs over dense rows).
inline std::span<const float> contiguous_rows(matrix_view<const float> x, std::vector<float>& storage) {
  if (x.contiguous()) return std::span(x.data, x.size());
  storage.clear();
  storage.reserve(x.size());
  for (std::size_t r = 0; r < x.rows; ++r) storage.insert(storage.end(), x.row(r), x.row(r) + x.cols);
  return storage;
}

template <mx_element Elem>
void dequantize_mx(const quantized_tensor_view& q, std::span<float> out, const quantize_options& o) {
  const mx_tile tile = q.scheme.tile();
  const std::size_t tr = mx_tile_rows(tile), rb = code_row_bytes(q.scheme.format, q.cols), gc = q.scale_grid_cols();
  parallel_for(q.rows, o.threads, tr, [&](std::size_t r0, std::size_t r1) {
    const std::size_t g0 = r0 / tr, g1 = ceil_div(r1, tr);
    simd::check(simd::mx_dequantize<Elem>(q.codes.subspan(r0 * rb, (r1 - r0) * rb),
                                          q.mx_scales.subspan(g0 * gc, (g1 - g0) * gc), r1 - r0, q.cols, tile,
                                          out.subspan(r0 * q.cols, (r1 - r0) * q.cols), {.path = o.path}),
                "dequantize");
  });
}

/// The largest finite value of an element format (0 for E8M0, which is no element format).
inline double format_max_finite(format_id f) {
  return visit_format(f, [](auto t) -> double {
    using S = typename decltype(t)::type::spec;
    if constexpr (requires { S::max_code; }) return S::decode(S::max_code);
    else return 0.0;
  });
}

/// Caller-given fp32 scales must keep every dequantized value of their group finite (a finite
/// scale such as 2^127 would otherwise turn finite inputs into Inf). A scale whose product with
/// the format's max finite value is finite passes at once (no pass over the data); only for the
/// rare scale that is not is the group's finite amax scanned and its largest possible code
/// (rounded away from zero under directed and stochastic rounding) checked, in float32 as
/// dequantize() computes it. Throws std::invalid_argument naming the group, scale and amax.
template <class Elem>
void check_given_scales_finite(matrix_view<const float> x, const quant_scheme& s, std::span<const float> scales,
                               const quantize_options& o) {
  const float fmax = static_cast<float>(format_max_finite(s.format));
  const auto tile = scale_tile(s, x.rows, x.cols);  // no structured binding: see quantize_scaled_groups
  const std::size_t tr = tile.first, tc = tile.second, gc = ceil_div(x.cols, tc);
  const bool directed = s.round == rounding::upward || s.round == rounding::downward || s.round == rounding::stochastic;
  const conversion conv{directed ? rounding::upward : s.round, overflow::saturate};
  for (std::size_t g = 0; g < scales.size(); ++g) {
    const float sc = scales[g];
    if (std::isfinite(fmax * sc)) continue;
    const std::size_t bi = g / gc, bj = g % gc;
    const std::size_t r0 = bi * tr, r1 = std::min(x.rows, r0 + tr), c0 = bj * tc, c1 = std::min(x.cols, c0 + tc);
    float amax = 0.0f;
    for (std::size_t r = r0; r < r1; ++r) {
      float a = 0.0f;
      simd::check(simd::finite_amax(std::span<const float>(x.row(r) + c0, c1 - c0), a, {.path = o.path}),
                  "quantize_with_scales");
      amax = std::max(amax, a);
    }
    const float top = static_cast<float>(narrow<Elem>(amax / sc, conv));
    if (std::isfinite(top * sc)) continue;
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "quantize_with_scales: scale %.9g of group %zu (rows %zu..%zu, cols %zu..%zu) times %.9g, the "
                  "code of its largest finite |x| %.9g, overflows float32 on dequantization; expected a scale that keeps "
                  "every dequantized value of the group finite (any scale up to 2^%d keeps every code of ",
                  static_cast<double>(sc), g, r0, r1 - 1, c0, c1 - 1, static_cast<double>(top), static_cast<double>(amax),
                  127 - std::ilogb(fmax));
    throw std::invalid_argument(buf + std::string(to_string(s.format)) + " finite)");
  }
}

}  // namespace detail

#if MINIFLOAT_DEFINE_KERNELS(MINIFLOAT_KERNELS_QUANT)  // declared and documented in quantized_tensor.hpp
MINIFLOAT_KERNEL_API void check_scales_keep_finite(matrix_view<const float> x, const quant_scheme& s,
                                                   std::span<const float> scales, const quantize_options& o) {
  if (x.rows == 0 || x.cols == 0) return;
  visit_format(s.format, [&](auto t) {
    using Elem = typename decltype(t)::type;
    if constexpr (!std::is_same_v<Elem, float8_e8m0fnu>) detail::check_given_scales_finite<Elem>(x, s, scales, o);
  });
}
#endif

namespace detail {

/// quantize_with_scales' argument checks (also what a backend runs before it hands static scales
/// to a device): a valid fp32-scaled scheme and matrix, one finite positive scale per group.
inline void check_static_scales(matrix_view<const float> x, const quant_scheme& s, std::span<const float> scales) {
  s.validate();
  x.validate();
  if (s.gran == granularity::mx)
    throw unsupported_error("quantize_with_scales takes fp32-scaled schemes; mx scales come from each block");
  const quantized_tensor_view shape{s, x.rows, x.cols, {}, {}, {}};
  const std::size_t grid = shape.scale_count();
  if (scales.size() != grid)
    throw shape_error("quantize_with_scales: " + s.describe() + " on " + std::to_string(x.rows) + "x" +
                      std::to_string(x.cols) + " needs " + std::to_string(grid) + " scales, got " +
                      std::to_string(scales.size()));
  for (const float sc : scales)
    if (!(sc > 0.0f) || !std::isfinite(sc))
      throw std::invalid_argument("quantize_with_scales: scales must be finite and positive, got " + std::to_string(sc));
  check_scales_keep_finite(x, s, scales);
}

/// The ISA level must be one this CPU has (the kernels would report it per call anyway; this
/// says so before any work, with the list of what is available).
inline void check_path(const quantize_options& o, const char* who) {
  if (simd::detail::resolve(o.path) == simd::isa::automatic)
    throw unsupported_error(std::string(who) + ": ISA level " + std::string(simd::to_string(o.path)) +
                            " is not available on this CPU (available: " + std::string(simd::available_isas_string()) +
                            ")");
}

}  // namespace detail

#if MINIFLOAT_DEFINE_KERNELS(MINIFLOAT_KERNELS_QUANT)  // declared and documented in quantized_tensor.hpp
MINIFLOAT_KERNEL_API quantized_tensor quantize(matrix_view<const float> x, const quant_scheme& s, const quantize_options& o) {
  s.validate();
  x.validate();
  detail::check_path(o, "quantize");
  const quantized_tensor_view shape{s, x.rows, x.cols, {}, {}, {}};
  std::vector<std::uint8_t> codes(shape.code_bytes(), 0);
  std::vector<float> scales;
  std::vector<std::uint8_t> mx_scales;
  const bool mx = s.gran == granularity::mx;
  (mx ? mx_scales.resize(shape.scale_count()) : scales.resize(shape.scale_count()));
  if (x.rows != 0 && x.cols != 0) {
    visit_format(s.format, [&](auto t) {
      using Elem = typename decltype(t)::type;
      if constexpr (mx_element<Elem>) {
        if (mx) {
          std::vector<float> dense;
          const std::span<const float> src = detail::contiguous_rows(x, dense);
          simd::check(simd::mx_quantize_parallel<Elem>(src, x.rows, x.cols, s.tile(), s.rule, codes, mx_scales,
                                                       o.threads, {.path = o.path}),
                      "quantize");
          return;
        }
      }
      if constexpr (!std::is_same_v<Elem, float8_e8m0fnu>) detail::quantize_scaled_groups<Elem>(x, s, codes, scales, {}, o);
    });
  }
  return quantized_tensor::from_parts(s, x.rows, x.cols, std::move(codes), std::move(scales), std::move(mx_scales));
}
#endif

#if MINIFLOAT_DEFINE_KERNELS(MINIFLOAT_KERNELS_QUANT)  // declared and documented in quantized_tensor.hpp
MINIFLOAT_KERNEL_API quantized_tensor quantize_with_scales(matrix_view<const float> x, const quant_scheme& s,
                                                           std::span<const float> scales, const quantize_options& o) {
  detail::check_static_scales(x, s, scales);
  detail::check_path(o, "quantize_with_scales");
  const quantized_tensor_view shape{s, x.rows, x.cols, {}, {}, {}};
  std::vector<std::uint8_t> codes(shape.code_bytes(), 0);
  std::vector<float> out_scales(scales.begin(), scales.end());
  if (x.rows != 0 && x.cols != 0) {
    visit_format(s.format, [&](auto t) {
      using Elem = typename decltype(t)::type;
      if constexpr (!std::is_same_v<Elem, float8_e8m0fnu>)
        detail::quantize_scaled_groups<Elem>(x, s, codes, out_scales, scales, o);
    });
  }
  return quantized_tensor::from_parts(s, x.rows, x.cols, std::move(codes), std::move(out_scales), {});
}
#endif

#if MINIFLOAT_DEFINE_KERNELS(MINIFLOAT_KERNELS_QUANT)  // declared and documented in quantized_tensor.hpp
MINIFLOAT_KERNEL_API void dequantize(const quantized_tensor_view& q, std::span<float> out, const quantize_options& o) {
  q.validate();
  detail::check_path(o, "dequantize");
  if (out.size() != q.rows * q.cols)
    throw shape_error("dequantize: output needs " + std::to_string(q.rows * q.cols) + " floats (" +
                      std::to_string(q.rows) + "x" + std::to_string(q.cols) + "), got " + std::to_string(out.size()));
  if (q.rows == 0 || q.cols == 0) return;
  visit_format(q.scheme.format, [&](auto t) {
    using Elem = typename decltype(t)::type;
    if constexpr (mx_element<Elem>) {
      if (q.scheme.gran == granularity::mx) return detail::dequantize_mx<Elem>(q, out, o);
    }
    if constexpr (!std::is_same_v<Elem, float8_e8m0fnu>) detail::dequantize_scaled_groups<Elem>(q, out, o);
  });
}
#endif

}  // namespace minifloat
