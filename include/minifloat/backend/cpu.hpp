#pragma once
// The CPU backend: backend::backend_interface (backend.hpp) on host memory, built on the library's best
// available functions, bit-exact with the scalar reference either way:
//   quantize / dynamic_quantize / dequantize   simd::quantize_with_scales, simd::quantize,
//                                              simd::dequantize (simd/quantize_twin.hpp), else the
//                                              scalar minifloat::quantize* / dequantize
//   quantize_with_amax                         simd::quantize_scaled: codes and amax in one pass
//   mx_quantize / mx dequantize                simd::mx_quantize_into / mx_dequantize, then the
//                                              CANN paired scale layout (mx_scales_to_cann)
//   gemm / grouped_gemm                        minifloat::gemm / grouped_gemm (gemm/blocked.hpp:
//                                              the fp32_blocks order, bit-identical to the reference)
// bfloat16 / float16 inputs are widened to float32 first (exact), so they give the codes of the
// same values given as float32.
//
// What the CPU backend does not do (supports() says no, with the reason): HiF8 "hybrid" rounding
// (hardware only), MX elements rounded other than to nearest even, float16 GEMM outputs.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "../quant/mx_tensor.hpp"
#include "../formats/convert.hpp"
#include "../formats/float16.hpp"
#include "../quant/quantized_tensor.hpp"
#include "../quant/scales.hpp"
#include "backend.hpp"

#if __has_include("../simd/quantize_twin.hpp") && __has_include("../simd/mx.hpp")
#include "../simd/mx.hpp"
#include "../simd/quantize_twin.hpp"
#define MINIFLOAT_BACKEND_CPU_KERNELS 1
#else
#define MINIFLOAT_BACKEND_CPU_KERNELS 0
#endif

#if __has_include("../gemm/gemm.hpp")
#include "../gemm/gemm.hpp"
#define MINIFLOAT_BACKEND_CPU_GEMM 1
#else
#define MINIFLOAT_BACKEND_CPU_GEMM 0
#endif

namespace minifloat::backend {

namespace detail::cpu {

inline std::size_t usize(std::int64_t v) noexcept { return static_cast<std::size_t>(v); }

/// x as contiguous float32: a view of x itself, or a widened copy of a 16-bit x.
class dense_f32 {
 public:
  explicit dense_f32(const tensor_view& x) {
    const std::size_t n = usize(x.numel());
    if (x.type == dtype::float32) {
      view_ = std::span<const float>(static_cast<const float*>(x.data), n);
      return;
    }
    copy_.resize(n);
    const auto* bits = static_cast<const std::uint16_t*>(x.data);
    for (std::size_t i = 0; i < n; ++i)
      copy_[i] = x.type == dtype::bfloat16 ? static_cast<float>(bfloat16::from_bits(bits[i]))
                                           : static_cast<float>(float16::from_bits(bits[i]));
    view_ = copy_;
  }
  [[nodiscard]] std::span<const float> span() const noexcept { return view_; }
  [[nodiscard]] matrix_view<const float> matrix(std::int64_t rows, std::int64_t cols) const {
    return matrix_view<const float>(view_.data(), usize(rows), usize(cols), usize(cols));
  }

 private:
  std::vector<float> copy_;
  std::span<const float> view_;
};

/// Writes v into one element of dtype t (float32, bfloat16 or float16; exact for an amax).
inline void store_float(void* dst, dtype t, float v) {
  if (t == dtype::float32) {
    std::memcpy(dst, &v, sizeof v);
  } else {
    const std::uint16_t b = t == dtype::bfloat16 ? narrow<bfloat16>(v).bits() : narrow<float16>(v).bits();
    std::memcpy(dst, &b, sizeof b);
  }
}

inline std::span<std::uint8_t> bytes_of(const tensor_view& t) {
  return {static_cast<std::uint8_t*>(t.data), t.byte_extent()};
}
inline std::span<const std::uint8_t> cbytes_of(const tensor_view& t) {
  return {static_cast<const std::uint8_t*>(t.data), t.byte_extent()};
}
inline std::span<const float> floats_of(const tensor_view& t) {
  return {static_cast<const float*>(t.data), usize(t.numel())};
}

/// The library scheme of an fp32-scaled granularity (scale rule `rule`: max for dynamic scales,
/// none where the scales are given).
inline quant_scheme scheme_for(dtype element, granularity g, std::size_t br, std::size_t bc, rounding r,
                               scale_rule rule) {
  quant_scheme s;
  s.format = *format_of(element);
  s.gran = g;
  s.block_rows = br;
  s.block_cols = bc;
  s.rule = rule;
  s.round = r;
  return s;
}

/// An MX scheme over one slab (axis 1: blocks along rows).
inline quant_scheme mx_scheme_for(dtype element, int library_axis) {
  quant_scheme s = quant_scheme::make(*format_of(element), granularity::mx);
  s.axis = library_axis;
  if (library_axis == 0) s.block_rows = 32, s.block_cols = 1;
  return s;
}

inline void copy_codes(const quantized_tensor& q, const tensor_view& y) {
  const auto dst = bytes_of(y);
  if (q.codes().size() != dst.size())
    throw shape_error("cpu backend: internal code size mismatch (" + std::to_string(q.codes().size()) + " vs " +
                      std::to_string(dst.size()) + " bytes)");
  std::copy(q.codes().begin(), q.codes().end(), dst.begin());
}

}  // namespace detail::cpu

/// Options of the CPU backend.
struct cpu_options {
  unsigned gemm_threads = 1;  ///< worker threads of gemm / grouped_gemm (0: all hardware threads)
};

class cpu_backend final : public backend_interface {
 public:
  cpu_backend() = default;
  explicit cpu_backend(cpu_options o) : options_(o) {}

  [[nodiscard]] std::string_view name() const noexcept override { return "cpu"; }
  [[nodiscard]] device where() const noexcept override { return host; }

  [[nodiscard]] support supports(const request& r) const override {
    const auto no = [&](const std::string& why) { return support::no(why); };
    const bool quant_family = r.op == operation::quantize || r.op == operation::dynamic_quantize ||
                              r.op == operation::quantize_with_amax || r.op == operation::mx_quantize;
    if (quant_family) {
      if (!is_float_dtype(r.input)) return no("x must be float32, bfloat16 or float16");
      if (!is_element_dtype(r.output)) return no("the output must be an element dtype");
      if (r.round == round_mode::hybrid)
        return no("hybrid rounding is an Ascend hardware mode (aclnn \"hybrid\"); the CPU backend has no model of it");
    }
    switch (r.op) {
      case operation::quantize:
        if (r.gran == granularity::mx) return no("granularity mx has E8M0 scales: use mx_quantize");
        if (r.gran == granularity::block && (r.block_rows == 0 || r.block_cols == 0)) return no("block size must be at least 1x1");
        return support::yes();
      case operation::dynamic_quantize:
        if (r.gran != granularity::tensor && r.gran != granularity::token && r.gran != granularity::channel)
          return no("dynamic scales are per tensor or per token (row)");
        if (r.dst_max != 0.0f && r.output != dtype::hifloat8)
          return no("dst_max applies to hifloat8 only (aclnnDynamicQuantV4 dstTypeMax); use 0 for " +
                    std::string(to_string(r.output)));
        if (!(r.dst_max >= 0.0f && r.dst_max <= 32768.0f)) return no("dst_max must lie in [0, 32768]");
        return support::yes();
      case operation::quantize_with_amax:
        if (r.gran != granularity::tensor) return no("quantize_with_amax is per-tensor (aclnnQuantMax); got " + std::string(to_string(r.gran)));
        return support::yes();
      case operation::mx_quantize:
        if (!is_mx_element_dtype(r.output)) return no("MX elements are float8_e4m3fn, float8_e5m2, float6_* or float4_e2m1fn_x2");
        if (resolve_nearest(r.round, r.output) != round_mode::nearest_even)
          return no("the library encodes MX elements round-to-nearest-even only (OCP MX 6.3); got " +
                    std::string(to_string(r.round)));
        return support::yes();
      case operation::dequantize:
        if (!is_element_dtype(r.input)) return no("codes must have an element dtype");
        if (r.output != dtype::float32) return no("dequantize writes float32");
        if (r.gran == granularity::mx && !is_mx_element_dtype(r.input)) return no("granularity mx needs an MX element dtype");
        return support::yes();
      case operation::gemm:
      case operation::grouped_gemm: return supports_gemm(r);
    }
    return no("unknown operation");
  }

  void quantize(const tensor_view& x, const tensor_view& scale, const tensor_view& y,
                const quantize_options& o = {}) override {
    constexpr std::string_view who = "cpu quantize";
    const auto p = detail::check_quantize(who, x, y, host);
    detail::check_scales(who, "scale", scale, o.gran, o.block_rows, o.block_cols, p.rows, p.cols, host);
    require(request::for_quantize(x.type, y.type, o));
    const auto scales = detail::cpu::floats_of(scale);
    detail::require_positive_scales(who, scales);
    const detail::cpu::dense_f32 xs(x);
    const quant_scheme s = detail::cpu::scheme_for(y.type, o.gran, o.block_rows, o.block_cols,
                                                   *to_rounding(o.round), scale_rule::none);
#if MINIFLOAT_BACKEND_CPU_KERNELS
    detail::cpu::copy_codes(simd::quantize_with_scales(xs.matrix(p.rows, p.cols), s, scales), y);
#else
    detail::cpu::copy_codes(minifloat::quantize_with_scales(xs.matrix(p.rows, p.cols), s, scales), y);
#endif
  }

  void dynamic_quantize(const tensor_view& x, const tensor_view& y, const tensor_view& scale_out,
                        const dynamic_quantize_options& o = {}) override {
    constexpr std::string_view who = "cpu dynamic_quantize";
    const auto p = detail::check_quantize(who, x, y, host);
    detail::check_dynamic_scale_out(who, scale_out, o.gran, p.rows, host);
    require(request::for_dynamic_quantize(x.type, y.type, o));
    const detail::cpu::dense_f32 xs(x);
    const granularity g = o.gran == granularity::tensor ? granularity::tensor : granularity::token;
    const rounding rnd = *to_rounding(o.round);
    auto* out_scales = static_cast<float*>(scale_out.data);
    if (o.dst_max == 0.0f) {
      // s = amax / max_finite: the library's `max` rule, computed by the library.
      const quant_scheme s = detail::cpu::scheme_for(y.type, g, 1, 128, rnd, scale_rule::max);
#if MINIFLOAT_BACKEND_CPU_KERNELS
      const quantized_tensor q = simd::quantize(xs.matrix(p.rows, p.cols), s);
#else
      const quantized_tensor q = minifloat::quantize(xs.matrix(p.rows, p.cols), s);
#endif
      detail::cpu::copy_codes(q, y);
      std::copy(q.scales().begin(), q.scales().end(), out_scales);
      return;
    }
    // s = amax / dst_max with the library's special cases (amax 0 -> 1; an underflowing
    // quotient -> the smallest positive float, so x / s stays finite or saturates).
    const auto rows = detail::cpu::usize(p.rows), cols = detail::cpu::usize(p.cols);
    const std::size_t groups = g == granularity::tensor ? 1 : rows;
    std::vector<float> scales(groups, 1.0f);
    for (std::size_t gi = 0; gi < groups; ++gi) {
      const auto part = g == granularity::tensor ? xs.span() : xs.span().subspan(gi * cols, cols);
      const float amax = finite_amax(part);
      if (amax > 0.0f) {
        const float s = amax / o.dst_max;
        scales[gi] = s > 0.0f ? s : std::numeric_limits<float>::denorm_min();
      }
    }
    const quant_scheme s = detail::cpu::scheme_for(y.type, g, 1, 128, rnd, scale_rule::none);
#if MINIFLOAT_BACKEND_CPU_KERNELS
    detail::cpu::copy_codes(simd::quantize_with_scales(xs.matrix(p.rows, p.cols), s, scales), y);
#else
    detail::cpu::copy_codes(minifloat::quantize_with_scales(xs.matrix(p.rows, p.cols), s, scales), y);
#endif
    std::copy(scales.begin(), scales.end(), out_scales);
  }

  void quantize_with_amax(const tensor_view& x, const tensor_view& scale, const tensor_view& y,
                          const tensor_view& amax_out, const quantize_options& o = {}) override {
    constexpr std::string_view who = "cpu quantize_with_amax";
    const auto p = detail::check_quantize(who, x, y, host);
    detail::check_scales(who, "scale", scale, granularity::tensor, 1, 1, p.rows, p.cols, host);
    detail::check_amax_out(who, amax_out, x, host);
    require(request::for_quantize_with_amax(x.type, y.type, o));
    const auto scales = detail::cpu::floats_of(scale);
    detail::require_positive_scales(who, scales);
    const detail::cpu::dense_f32 xs(x);
    const conversion conv{*to_rounding(o.round), overflow::saturate};
    float amax = 0.0f;
    const auto rows = detail::cpu::usize(p.rows), cols = detail::cpu::usize(p.cols);
    visit_format(*format_of(y.type), [&](auto tag) {
      using Elem = typename decltype(tag)::type;
      if constexpr (sizeof_bits<Elem> <= 8) {
        auto* codes = static_cast<std::uint8_t*>(y.data);
#if MINIFLOAT_BACKEND_CPU_KERNELS
        // One fused pass: codes and the finite amax (delayed scaling's QuantMax).
        if constexpr (sizeof_bits<Elem> == 4) {
          const std::size_t row_bytes = (cols + 1) / 2;
          const bool flat = cols % 2 == 0 || rows <= 1;
          for (std::size_t r = 0; r < (flat ? std::size_t{1} : rows); ++r) {
            const std::size_t n = flat ? rows * cols : cols;
            float a = 0.0f;
            simd::check(simd::quantize_scaled_fp4_packed(xs.span().subspan(r * cols, n),
                                                               std::span<std::uint8_t>(codes + r * row_bytes, (n + 1) / 2),
                                                               scales[0], a, conv),
                           who);
            amax = std::max(amax, a);
          }
        } else {
          simd::check(simd::quantize_scaled<Elem>(xs.span(), std::span<std::uint8_t>(codes, rows * cols), scales[0],
                                                        amax, conv),
                         who);
        }
#else
        const quant_scheme s = detail::cpu::scheme_for(y.type, granularity::tensor, 1, 128, conv.round, scale_rule::none);
        detail::cpu::copy_codes(minifloat::quantize_with_scales(xs.matrix(p.rows, p.cols), s, scales), y);
        amax = finite_amax(xs.span());
        (void)codes;
#endif
      }
    });
    detail::cpu::store_float(amax_out.data, amax_out.type, amax);
  }

  void mx_quantize(const tensor_view& x, const tensor_view& y, const tensor_view& scale_out,
                   const mx_quantize_options& o = {}) override {
    constexpr std::string_view who = "cpu mx_quantize";
    const auto p = detail::check_mx_quantize(who, x, y, scale_out, o, host);
    require(request::for_mx_quantize(x.type, y.type, o));
    const detail::cpu::dense_f32 xs(x);
    const auto rows = detail::cpu::usize(p.rows), cols = detail::cpu::usize(p.cols);
    auto* codes = static_cast<std::uint8_t*>(y.data);
    auto* paired = static_cast<std::uint8_t*>(scale_out.data);
    visit_format(*format_of(y.type), [&](auto tag) {
      using Elem = typename decltype(tag)::type;
      if constexpr (mx_element<Elem>) {
        const std::size_t slab_codes = mx_code_bytes<Elem>(rows, cols);
        const auto grid = mx_scale_shape(rows, cols, p.library_axis);
        std::vector<std::uint8_t> plain(grid[0] * grid[1]);
        for (std::size_t b = 0; b < detail::cpu::usize(p.batch); ++b) {
          const mx_tensor_mutable_view<Elem> out(rows, cols, p.library_axis, o.rule,
                                                 std::span<std::uint8_t>(codes + b * slab_codes, slab_codes),
                                                 std::span<std::uint8_t>(plain));
          const auto xb = xs.span().subspan(b * rows * cols, rows * cols);
#if MINIFLOAT_BACKEND_CPU_KERNELS
          simd::check(simd::mx_quantize_into<Elem>(xb, out), who);
#else
          mx_quantize_into<Elem>(xb, out);
#endif
          const auto cann = mx_scales_to_cann(plain, rows, cols, p.library_axis);
          std::copy(cann.begin(), cann.end(), paired + b * detail::cpu::usize(p.scale_slab));
        }
      }
    });
  }

  void dequantize(const tensor_view& codes, const tensor_view& scale, const tensor_view& out,
                  const dequantize_options& o = {}) override {
    constexpr std::string_view who = "cpu dequantize";
    const auto p = detail::check_dequantize(who, codes, scale, out, o, host);
    require(request::for_dequantize(codes.type, out.type, o));
    auto* dst = static_cast<float*>(out.data);
    if (o.gran == granularity::mx) {
      const auto m = detail::mx_slabs(codes, detail::mx_axis(who, o.axis, codes.rank));
      const auto rows = detail::cpu::usize(m.rows), cols = detail::cpu::usize(m.cols);
      const auto* paired = static_cast<const std::uint8_t*>(scale.data);
      const auto* src = static_cast<const std::uint8_t*>(codes.data);
      visit_format(*format_of(codes.type), [&](auto tag) {
        using Elem = typename decltype(tag)::type;
        if constexpr (mx_element<Elem>) {
          const std::size_t slab_codes = mx_code_bytes<Elem>(rows, cols), slab_scales = detail::cpu::usize(m.scale_slab);
          for (std::size_t b = 0; b < detail::cpu::usize(m.batch); ++b) {
            const auto plain = mx_scales_from_cann(std::span<const std::uint8_t>(paired + b * slab_scales, slab_scales),
                                                   rows, cols, m.library_axis);
            const mx_tensor_view<Elem> q(rows, cols, m.library_axis, mx_scale_rule::floor,
                                         std::span<const std::uint8_t>(src + b * slab_codes, slab_codes),
                                         std::span<const std::uint8_t>(plain));
            const std::span<float> ob(dst + b * rows * cols, rows * cols);
#if MINIFLOAT_BACKEND_CPU_KERNELS
            simd::check(simd::mx_dequantize<Elem>(q, ob), who);
#else
            mx_dequantize(q, ob);
#endif
          }
        }
      });
      return;
    }
    const quant_scheme s =
        detail::cpu::scheme_for(codes.type, o.gran, o.block_rows, o.block_cols, rounding::nearest, scale_rule::none);
    const quantized_tensor_view q{s, detail::cpu::usize(p.rows), detail::cpu::usize(p.cols), detail::cpu::cbytes_of(codes),
                                  detail::cpu::floats_of(scale), {}};
    const std::span<float> o_span(dst, detail::cpu::usize(out.numel()));
#if MINIFLOAT_BACKEND_CPU_KERNELS
    simd::dequantize(q, o_span);
#else
    minifloat::dequantize(q, o_span);
#endif
  }

  void gemm(const gemm_operand& a, const gemm_operand& b, const tensor_view& bias, const tensor_view& out,
            const gemm_options& o = {}) override {
    constexpr std::string_view who = "cpu gemm";
    const auto p = detail::check_gemm(who, a, b, bias, out, o.layout, host);
    require(request::for_gemm(a, b, out.type, bias.is_none() ? bias_term::none : bias_term::present, o));
#if MINIFLOAT_BACKEND_CPU_GEMM
    operand_storage sa, sb;
    const quantized_tensor_view qa = a_view(a, p.m, p.k, sa);
    const quantized_tensor_view qb = b_view(b, o.layout, b.data.dim(0), b.data.dim(1), 0, sb);
    const std::span<const float> bias_span =
        bias.is_none() ? std::span<const float>{} : detail::cpu::floats_of(bias);
    run_gemm(qa, qb, o.layout, bias_span, out, 0, detail::cpu::usize(p.m));
#else
    (void)p;
    throw unsupported_error("cpu gemm: this build has no include/minifloat/gemm/");
#endif
  }

  void grouped_gemm(const gemm_operand& a, const gemm_operand& b, const tensor_view& group_sizes,
                    const tensor_view& bias, const tensor_view& out, const gemm_options& o = {}) override {
    constexpr std::string_view who = "cpu grouped_gemm";
    const auto p = detail::check_grouped_gemm(who, a, b, group_sizes, bias, out, o.layout, host, host);
    require(request::for_gemm(a, b, out.type, bias.is_none() ? bias_term::none : bias_term::present, o,
                              operation::grouped_gemm));
#if MINIFLOAT_BACKEND_CPU_GEMM
    const auto sizes = detail::read_group_sizes(who, group_sizes, p.m);
    const auto groups = detail::cpu::usize(p.groups), n = detail::cpu::usize(p.n);
    const std::int64_t sr = b.data.dim(1), sc = b.data.dim(2);
    std::vector<operand_storage> sb(groups);
    std::vector<quantized_tensor_view> bs;
    bs.reserve(groups);
    for (std::size_t g = 0; g < groups; ++g) bs.push_back(b_view(b, o.layout, sr, sc, g, sb[g]));
    std::vector<std::span<const float>> biases;
    if (!bias.is_none())
      for (std::size_t g = 0; g < groups; ++g) biases.push_back(detail::cpu::floats_of(bias).subspan(g * n, n));
    if (a.gran == granularity::tensor) {
      // One A scale per group: each group is its own GEMM on a slice of A's rows.
      const auto* a_scales = static_cast<const float*>(a.scale.data);
      const std::size_t row_bytes = minifloat::detail::code_row_bytes(*format_of(a.data.type), detail::cpu::usize(p.k));
      const auto* a_codes = static_cast<const std::uint8_t*>(a.data.data);
      std::size_t r0 = 0;
      for (std::size_t g = 0; g < groups; r0 += sizes[g], ++g) {
        if (sizes[g] == 0) continue;
        quant_scheme s = detail::cpu::scheme_for(a.data.type, granularity::tensor, 1, 128, rounding::nearest, scale_rule::none);
        const quantized_tensor_view qa{s, sizes[g], detail::cpu::usize(p.k),
                                       std::span<const std::uint8_t>(a_codes + r0 * row_bytes, sizes[g] * row_bytes),
                                       std::span<const float>(a_scales + g, 1), {}};
        run_gemm(qa, bs[g], o.layout, biases.empty() ? std::span<const float>{} : biases[g], out, r0, sizes[g]);
      }
      return;
    }
    operand_storage sa;
    const quantized_tensor_view qa = a_view(a, p.m, p.k, sa);
    gemm_config cfg;
    cfg.threads = options_.gemm_threads;
    if (out.type == dtype::float32)
      minifloat::grouped_gemm(qa, sizes, bs, o.layout, biases,
                              std::span<float>(static_cast<float*>(out.data), detail::cpu::usize(out.numel())), cfg);
    else
      minifloat::grouped_gemm(qa, sizes, bs, o.layout, biases,
                              std::span<bfloat16>(static_cast<bfloat16*>(out.data), detail::cpu::usize(out.numel())), cfg);
#else
    (void)p;
    throw unsupported_error("cpu grouped_gemm: this build has no include/minifloat/gemm/");
#endif
  }

  void synchronize() override {}

 private:
  [[nodiscard]] support supports_gemm(const request& r) const {
    const auto no = [](const std::string& why) { return support::no(why); };
#if !MINIFLOAT_BACKEND_CPU_GEMM
    return no("this build has no include/minifloat/gemm/");
#endif
    if (!is_element_dtype(r.input) || !is_element_dtype(r.weight)) return no("A and B must have element dtypes");
    if (r.output != dtype::float32 && r.output != dtype::bfloat16) return no("the output is float32 or bfloat16");
    const bool a_mx = r.gran == granularity::mx, b_mx = r.weight_gran == granularity::mx;
    if (a_mx != b_mx) return no("MX (E8M0) scales go on both operands or on neither");
    if (a_mx && (!is_mx_element_dtype(r.input) || !is_mx_element_dtype(r.weight)))
      return no("MX scales need MX element dtypes (not hifloat8)");
    if (r.gran == granularity::block && (r.block_rows == 0 || r.block_cols == 0)) return no("A block size must be at least 1x1");
    if (r.weight_gran == granularity::block && (r.weight_block_rows == 0 || r.weight_block_cols == 0))
      return no("B block size must be at least 1x1");
    if (r.op == operation::grouped_gemm && r.gran == granularity::block && r.block_rows != 1)
      return no("grouped GEMM: A blocks must be 1 x C (a group may start on any row)");
    return support::yes();
  }

#if MINIFLOAT_BACKEND_CPU_GEMM
  /// Plain MX scales converted from the paired layout live here while a view uses them.
  struct operand_storage {
    std::vector<std::uint8_t> plain;
  };

  static quantized_tensor_view a_view(const gemm_operand& a, std::int64_t m, std::int64_t k, operand_storage& st) {
    const auto rows = detail::cpu::usize(m), cols = detail::cpu::usize(k);
    quantized_tensor_view q;
    q.rows = rows, q.cols = cols;
    q.codes = detail::cpu::cbytes_of(a.data);
    if (a.gran == granularity::mx) {
      q.scheme = detail::cpu::mx_scheme_for(a.data.type, 1);
      st.plain = mx_scales_from_cann(detail::cpu::cbytes_of(a.scale), rows, cols, 1);
      q.mx_scales = st.plain;
      return q;
    }
    const granularity g = a.gran == granularity::channel ? granularity::token : a.gran;
    q.scheme = detail::cpu::scheme_for(a.data.type, g, a.block_rows, a.block_cols, rounding::nearest, scale_rule::none);
    q.scales = detail::cpu::floats_of(a.scale);
    return q;
  }

  /// B (or group g of a stacked B) as the library's stored (rows, cols) matrix.
  static quantized_tensor_view b_view(const gemm_operand& b, gemm_layout layout, std::int64_t stored_rows,
                                      std::int64_t stored_cols, std::size_t g, operand_storage& st) {
    const auto rows = detail::cpu::usize(stored_rows), cols = detail::cpu::usize(stored_cols);
    const bool kn = layout == gemm_layout::kn;
    const std::size_t k = kn ? rows : cols, n = kn ? cols : rows;
    const std::size_t code_bytes = rows * minifloat::detail::code_row_bytes(*format_of(b.data.type), cols);
    quantized_tensor_view q;
    q.rows = rows, q.cols = cols;
    q.codes = detail::cpu::cbytes_of(b.data).subspan(g * code_bytes, code_bytes);
    if (b.gran == granularity::mx) {
      const int axis = kn ? 0 : 1;
      q.scheme = detail::cpu::mx_scheme_for(b.data.type, axis);
      const auto cs = mx_cann_scale_shape(rows, cols, axis);
      const std::size_t slab = cs[0] * cs[1] * cs[2];
      st.plain = mx_scales_from_cann(detail::cpu::cbytes_of(b.scale).subspan(g * slab, slab), rows, cols, axis);
      q.mx_scales = st.plain;
      return q;
    }
    const auto all = detail::cpu::floats_of(b.scale);
    switch (b.gran) {
      case granularity::tensor:
        q.scheme = detail::cpu::scheme_for(b.data.type, granularity::tensor, 1, 128, rounding::nearest, scale_rule::none);
        q.scales = all.subspan(g, 1);
        break;
      case granularity::token:
      case granularity::channel:
        // One scale per output column n: rows of a stored (n, k) B, or K x 1 blocks of a stored (k, n) B.
        q.scheme = kn ? detail::cpu::scheme_for(b.data.type, granularity::block, std::max<std::size_t>(k, 1), 1,
                                                rounding::nearest, scale_rule::none)
                      : detail::cpu::scheme_for(b.data.type, granularity::channel, 1, 128, rounding::nearest,
                                                scale_rule::none);
        q.scales = all.subspan(g * n, n);
        break;
      default: {
        q.scheme = detail::cpu::scheme_for(b.data.type, granularity::block, b.block_rows, b.block_cols, rounding::nearest,
                                           scale_rule::none);
        const std::size_t grid = q.scale_grid_rows() * q.scale_grid_cols();
        q.scales = all.subspan(g * grid, grid);
        break;
      }
    }
    return q;
  }

  /// out rows [r0, r0 + m) = A * B (+ bias).
  void run_gemm(const quantized_tensor_view& a, const quantized_tensor_view& b, gemm_layout layout,
                std::span<const float> bias, const tensor_view& out, std::size_t r0, std::size_t m) const {
    const std::size_t n = detail::cpu::usize(out.dim(1));
    gemm_config cfg;
    cfg.threads = options_.gemm_threads;
    if (out.type == dtype::float32)
      minifloat::gemm(a, b, layout, bias, std::span<float>(static_cast<float*>(out.data) + r0 * n, m * n), cfg);
    else
      minifloat::gemm(a, b, layout, bias, std::span<bfloat16>(static_cast<bfloat16*>(out.data) + r0 * n, m * n), cfg);
  }
#endif

  cpu_options options_{};
};

}  // namespace minifloat::backend
