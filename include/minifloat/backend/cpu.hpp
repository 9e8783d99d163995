#pragma once
// The CPU backend: backend::backend_interface (backend.hpp) on host memory. Every operation is the
// library's own entry point on the caller's bytes, so it runs at the library's speed and gives the
// library's results bit for bit:
//   quantize               minifloat::quantize (one call per slab for mx); with dst_max,
//                          minifloat::quantize_with_scales on s = amax / dst_max
//   quantize_with_scales   minifloat::quantize_with_scales
//   quantize_with_amax     minifloat::quantize_with_scales and finite_amax
//   dequantize             minifloat::dequantize (one call per slab for mx)
//   gemm / grouped_gemm    minifloat::gemm / grouped_gemm (gemm/blocked.hpp: the fp32_blocks order,
//                          bit-identical to gemm_reference)
// bfloat16 / float16 inputs are widened to float32 by the library's dequantize of that format with
// scale 1 (exact), so they give the codes of the same values given as float32.
//
// supports() is the library's own verdict (quant_scheme::validate, the MX rounding rule, the GEMM's
// operand rules) plus the two rules of this interface (dst_max, quantize_with_amax per tensor). The
// CPU backend has no model of what only the hardware does: HiF8 "hybrid" rounding (the Ascend shim
// sends it for rounding::stochastic, which here is the library's own seeded stochastic rounding),
// MX elements rounded other than to nearest even, float16 GEMM outputs.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "../formats/convert.hpp"
#include "../formats/float16.hpp"
#include "../gemm/gemm.hpp"
#include "../quant/quantized_tensor.hpp"
#include "../quant/scales.hpp"
#include "backend.hpp"

namespace minifloat::backend {

namespace detail::cpu {

/// x as contiguous float32: a view of x itself, or the library's exact decode of a 16-bit x.
class dense_f32 {
 public:
  explicit dense_f32(const tensor_view& x) {
    const std::size_t n = usize(x.numel());
    if (x.type == float32) {
      view_ = std::span<const float>(static_cast<const float*>(x.data), n);
      return;
    }
    // A bfloat16 / float16 tensor is the library's quantized tensor of that format with one scale 1.
    quant_scheme s;
    s.format = *x.type.format();
    s.gran = granularity::tensor;
    s.rule = scale_rule::none;
    const float one = 1.0f;
    const quantized_tensor_view q{s, usize(x.rows()), usize(x.cols()),
                                  std::span<const std::uint8_t>(static_cast<const std::uint8_t*>(x.data), x.byte_extent()),
                                  std::span<const float>(&one, 1), {}};
    copy_ = minifloat::dequantize(q);
    view_ = copy_;
  }
  // view_ may point into copy_: a moved vector keeps its buffer, a copied one would not.
  dense_f32(const dense_f32&) = delete;
  dense_f32& operator=(const dense_f32&) = delete;
  dense_f32(dense_f32&&) noexcept = default;
  dense_f32& operator=(dense_f32&&) noexcept = default;
  ~dense_f32() = default;

  [[nodiscard]] std::span<const float> span() const noexcept { return view_; }
  /// Slab `slab` of the layout as the library's matrix.
  [[nodiscard]] matrix_view<const float> matrix(std::size_t slab, const slab_layout& l) const {
    return matrix_view<const float>(view_.data() + slab * l.rows * l.cols, l.rows, l.cols, l.cols);
  }

 private:
  std::vector<float> copy_;
  std::span<const float> view_;
};

/// Writes v into one element of t (float32, bfloat16 or float16; exact for an amax).
inline void store_float(void* dst, element_type t, float v) {
  if (t == float32) {
    std::memcpy(dst, &v, sizeof v);
  } else {
    const std::uint16_t b = t == format_id::bfloat16 ? narrow<bfloat16>(v).bits() : narrow<float16>(v).bits();
    std::memcpy(dst, &b, sizeof b);
  }
}

inline std::span<const float> floats_of(const tensor_view& t) {
  return {static_cast<const float*>(t.data), usize(t.numel())};
}

/// Copies src into dst, `offset_elements` elements in (one slab of an output tensor).
template <class T>
void put(const tensor_view& dst, std::size_t offset_elements, std::span<const T> src) {
  if (!src.empty()) std::memcpy(static_cast<T*>(dst.data) + offset_elements, src.data(), src.size_bytes());
}

/// One quantized slab into slab `slab` of y.
inline void store(const quantized_tensor& q, const quantized_view& y, std::size_t slab, const slab_layout& l) {
  put(y.codes, slab * l.code_bytes, q.codes());
  if (y.scheme.gran == granularity::mx) put(y.scales, slab * l.scale_count(), q.mx_scales());
  else put(y.scales, slab * l.scale_count(), q.scales());
}

}  // namespace detail::cpu

/// Options of the CPU backend.
struct cpu_options {
  unsigned gemm_threads = 1;      ///< worker threads of gemm / grouped_gemm (0: all hardware threads)
  unsigned quantize_threads = 1;  ///< threads of quantize / dequantize (0: all hardware threads)
};

class cpu_backend final : public backend_interface {
 public:
  cpu_backend() = default;
  explicit cpu_backend(cpu_options o) : options_(o) {}

  [[nodiscard]] std::string_view name() const noexcept override { return "cpu"; }
  [[nodiscard]] device where() const noexcept override { return host; }

  [[nodiscard]] support supports(const request& r) const override {
    const auto no = [](const std::string& why) { return support::no(why); };
    const quant_scheme& s = r.scheme;
    switch (r.op) {
      case operation::quantize:
      case operation::quantize_with_scales:
      case operation::quantize_with_amax: {
        if (!is_float_input(r.input)) return no("x must be float32, bfloat16 or float16, got " + std::string(to_string(r.input)));
        if (support v = detail::scheme_support(s); !v) return v;
        if (s.gran == granularity::mx) {
          if (r.op != operation::quantize)
            return no(std::string(to_string(r.op)) + " takes fp32 scales; MX (E8M0) scales come from each block: use quantize");
          if (support v = detail::library_verdict([&] { s.validate(); }); !v) return v;
        }
        if (r.op == operation::quantize_with_amax && s.gran != granularity::tensor)
          return no("quantize_with_amax is per tensor (aclnnQuantMax); got " + std::string(to_string(s.gran)));
        if (r.dst_max != 0.0f) {
          if (!(r.dst_max > 0.0f && r.dst_max <= 32768.0f)) return no("dst_max must lie in [0, 32768]");
          if (s.format != format_id::hifloat8)
            return no("dst_max applies to hifloat8 only (aclnnDynamicQuantV4 dstTypeMax); use 0 for " +
                      std::string(to_string(s.format)));
          if (s.rule != scale_rule::max || (s.gran != granularity::tensor && s.gran != granularity::token &&
                                            s.gran != granularity::channel))
            return no("dst_max replaces the format's max in rule max, per tensor or per token; got " + s.describe());
        }
        return support::yes();
      }
      case operation::dequantize:
        if (r.output != float32) return no("dequantize writes float32");
        return detail::scheme_support(s);
      case operation::gemm:
      case operation::grouped_gemm: return supports_gemm(r);
    }
    return no("unknown operation");
  }

  void quantize(const tensor_view& x, const quantized_view& y, const dynamic_scale_options& o = {}) override {
    constexpr std::string_view who = "cpu quantize";
    const auto l = detail::check_quantize(who, x, y, host, host);
    require(request::for_quantize(x.type, y.scheme, o));
    const detail::cpu::dense_f32 xs(x);
    if (o.dst_max != 0.0f) {
      // s = amax / dst_max with the library's special cases (amax 0 -> 1; an underflowing quotient
      // -> the smallest positive float, so x / s stays finite or saturates): the one scale rule the
      // library has no name for.
      const bool per_tensor = y.scheme.gran == granularity::tensor;
      std::vector<float> scales(per_tensor ? 1 : l.rows, 1.0f);
      for (std::size_t g = 0; g < scales.size(); ++g) {
        const float amax = finite_amax(per_tensor ? xs.span() : xs.span().subspan(g * l.cols, l.cols));
        if (amax > 0.0f) {
          const float s = amax / o.dst_max;
          scales[g] = s > 0.0f ? s : std::numeric_limits<float>::denorm_min();
        }
      }
      detail::cpu::store(minifloat::quantize_with_scales(xs.matrix(0, l), y.scheme, scales, qopts()), y, 0, l);
      return;
    }
    for (std::size_t b = 0; b < l.count; ++b) detail::cpu::store(minifloat::quantize(xs.matrix(b, l), y.scheme, qopts()), y, b, l);
  }

  void quantize_with_scales(const tensor_view& x, const quantized_view& y) override {
    constexpr std::string_view who = "cpu quantize_with_scales";
    const auto l = detail::check_quantize(who, x, y, host, host);
    require(request::for_quantize_with_scales(x.type, y.scheme));
    (void)encode_with_scales(x, y, l);
  }

  void quantize_with_amax(const tensor_view& x, const quantized_view& y, const tensor_view& amax_out) override {
    constexpr std::string_view who = "cpu quantize_with_amax";
    const auto l = detail::check_quantize(who, x, y, host, host);
    detail::check_amax_out(who, amax_out, x, host);
    require(request::for_quantize_with_amax(x.type, y.scheme));
    const detail::cpu::dense_f32 xs = encode_with_scales(x, y, l);
    detail::cpu::store_float(amax_out.data, amax_out.type, finite_amax(xs.span()));
  }

  void dequantize(const quantized_view& q, const tensor_view& out) override {
    constexpr std::string_view who = "cpu dequantize";
    const auto l = detail::check_dequantize(who, q, out, host);
    require(request::for_dequantize(q.scheme, out.type));
    auto* dst = static_cast<float*>(out.data);
    for (std::size_t b = 0; b < l.count; ++b)
      minifloat::dequantize(to_library(q, b), std::span<float>(dst + b * l.rows * l.cols, l.rows * l.cols), qopts());
  }

  void gemm(const quantized_view& a, const quantized_view& b, const tensor_view& bias, const tensor_view& out,
            gemm_layout layout = gemm_layout::kn) override {
    constexpr std::string_view who = "cpu gemm";
    const auto p = detail::check_gemm(who, a, b, bias, out, layout, host);
    require(request::for_gemm(a.scheme, b.scheme, out.type, layout, bias_of(bias)));
    run_gemm(to_library(a), to_library(b), layout, bias.is_none() ? std::span<const float>{} : detail::cpu::floats_of(bias),
             out, 0, detail::usize(p.m));
  }

  void grouped_gemm(const quantized_view& a, const quantized_view& b, const tensor_view& group_sizes,
                    const tensor_view& bias, const tensor_view& out, gemm_layout layout = gemm_layout::kn) override {
    constexpr std::string_view who = "cpu grouped_gemm";
    const auto p = detail::check_grouped_gemm(who, a, b, group_sizes, bias, out, layout, host, host);
    require(request::for_gemm(a.scheme, b.scheme, out.type, layout, bias_of(bias), operation::grouped_gemm));
    const auto sizes = detail::read_group_sizes(who, group_sizes, p.m);
    const auto groups = detail::usize(p.groups), n = detail::usize(p.n), k = detail::usize(p.k);
    const detail::slab_layout& bl = p.b_slab;
    std::vector<quantized_tensor_view> bs;
    bs.reserve(groups);
    for (std::size_t g = 0; g < groups; ++g) {
      quantized_tensor_view v{b.scheme, bl.rows, bl.cols,
                              std::span<const std::uint8_t>(static_cast<const std::uint8_t*>(b.codes.data) + g * bl.code_bytes,
                                                            bl.code_bytes),
                              {}, {}};
      if (b.scheme.gran == granularity::mx)
        v.mx_scales = std::span<const std::uint8_t>(static_cast<const std::uint8_t*>(b.scales.data) + g * bl.scale_count(),
                                                    bl.scale_count());
      else
        v.scales = detail::cpu::floats_of(b.scales).subspan(g * bl.scale_count(), bl.scale_count());
      bs.push_back(v);
    }
    std::vector<std::span<const float>> biases;
    if (!bias.is_none())
      for (std::size_t g = 0; g < groups; ++g) biases.push_back(detail::cpu::floats_of(bias).subspan(g * n, n));
    if (a.scheme.gran == granularity::tensor) {
      // One A scale per group: each group is its own GEMM on a slice of A's rows.
      const auto a_scales = detail::cpu::floats_of(a.scales);
      const std::size_t row_bytes = minifloat::detail::code_row_bytes(a.scheme.format, k);
      const auto* a_codes = static_cast<const std::uint8_t*>(a.codes.data);
      std::size_t r0 = 0;
      for (std::size_t g = 0; g < groups; r0 += sizes[g], ++g) {
        if (sizes[g] == 0) continue;
        const quantized_tensor_view qa{a.scheme, sizes[g], k,
                                       std::span<const std::uint8_t>(a_codes + r0 * row_bytes, sizes[g] * row_bytes),
                                       a_scales.subspan(g, 1), {}};
        run_gemm(qa, bs[g], layout, biases.empty() ? std::span<const float>{} : biases[g], out, r0, sizes[g]);
      }
      return;
    }
    gemm_config cfg;
    cfg.threads = options_.gemm_threads;
    const std::size_t count = detail::usize(out.numel());
    if (out.type == float32)
      minifloat::grouped_gemm(to_library(a), sizes, bs, layout, biases, std::span<float>(static_cast<float*>(out.data), count), cfg);
    else
      minifloat::grouped_gemm(to_library(a), sizes, bs, layout, biases,
                              std::span<bfloat16>(static_cast<bfloat16*>(out.data), count), cfg);
  }

  void synchronize() override {}

 private:
  /// quantize_with_scales after the checks; returns x as float32 (for quantize_with_amax's amax).
  detail::cpu::dense_f32 encode_with_scales(const tensor_view& x, const quantized_view& y, const detail::slab_layout& l) const {
    detail::cpu::dense_f32 xs(x);
    detail::cpu::put(y.codes, 0, minifloat::quantize_with_scales(xs.matrix(0, l), y.scheme, detail::cpu::floats_of(y.scales), qopts()).codes());
    return xs;
  }

  static bias_term bias_of(const tensor_view& bias) noexcept { return bias.is_none() ? bias_term::none : bias_term::present; }

  [[nodiscard]] static support supports_gemm(const request& r) {
    if (r.output != float32 && r.output != format_id::bfloat16)
      return support::no("out must be float32 or bfloat16, got " + std::string(to_string(r.output)));
    return detail::gemm_operand_support(r);
  }

  /// out rows [r0, r0 + m) = A * B (+ bias).
  void run_gemm(const quantized_tensor_view& a, const quantized_tensor_view& b, gemm_layout layout,
                std::span<const float> bias, const tensor_view& out, std::size_t r0, std::size_t m) const {
    const std::size_t n = detail::usize(out.dim(1));
    gemm_config cfg;
    cfg.threads = options_.gemm_threads;
    if (out.type == float32)
      minifloat::gemm(a, b, layout, bias, std::span<float>(static_cast<float*>(out.data) + r0 * n, m * n), cfg);
    else
      minifloat::gemm(a, b, layout, bias, std::span<bfloat16>(static_cast<bfloat16*>(out.data) + r0 * n, m * n), cfg);
  }

  [[nodiscard]] quantize_options qopts() const noexcept { return {.threads = options_.quantize_threads}; }
  cpu_options options_{};
};

}  // namespace minifloat::backend
