#pragma once
// Per-tensor scaling rules shared by the recipes (current_scaling.hpp, delayed_scaling.hpp):
// how one amax becomes one fp32 scale, and the overflow count of a tensor at a given scale (the
// amax/Inf/NaN scan of a step's tensor is quant/scales.hpp scan_amax).
//
// Scale convention. Everywhere in minifloat the scale s MULTIPLIES on dequantization:
//     q = encode(x / s),   x ~ s * decode(q).
// TransformerEngine's `scale` is the reciprocal (q = cast(x * scale), x ~ q * scale_inv), so
//     TE scale = 1 / s,   TE scale_inv = s.
// MindSpeed's stored delayed-scaling scale (amax * 2^margin / fmt_max, docs/formats/scaling.md#scale-convention)
// is our s.
//
// The two rules (s as a function of the amax a > 0):
//   pow2 (HiF8 guard)  s = 2^(floor(log2 a) - T),  T = 15 - N_guard            (docs/formats/scaling.md#the-hif8-guard-rule)
//                      a / s lies in [2^T, 2^(T+1)): the amax lands in binade T, which leaves
//                      N_guard binades of headroom below HiF8's max 2^15 and 38 - N_guard
//                      binades (T down to -22) for the data. N_guard 11: a / s in [16, 32)
//                      (class D3, 2-bit mantissa); N_guard 10: a / s in [32, 64) (D3).
//                      Scales are powers of two, so x / s is exact (no rounding in the scale).
//   max (FP8, margin) s = a * 2^margin / dst_max                        (TE DelayedScaling)
//                      dst_max defaults to the format's max finite (E4M3 448, E5M2 57344), so
//                      a / s = dst_max / 2^margin. TE: scale = (fp8_max / amax) / 2^margin.
//                      Computed as (a / dst_max) in float32, then * 2^margin (exact).
//                      MindSpeed's HiF8 tensorwise recipe is this rule with dst_max 15 (inputs,
//                      weights) or 224 (gradients) and margin 0.
// A zero amax carries no information: scale(0) = 1 here, and the stateful recipes keep the
// scale they had (TE does the same: `torch.where(amax > 0, sf, scale)`).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "../core/errors.hpp"
#include "../formats/format_list.hpp"
#include "../formats/numeric_limits.hpp"
#include "../quant/matrix_view.hpp"
#include "../quant/quantized_tensor.hpp"
#include "../quant/scales.hpp"
#include "../quant/scheme.hpp"
#include "tensor_role.hpp"

namespace minifloat {

/// Largest finite value of an element format, as a float.
[[nodiscard]] inline float format_max(format_id f) {
  return visit_format(f, [](auto t) { return static_cast<float>(std::numeric_limits<typename decltype(t)::type>::max()); });
}

/// Finite elements of x that the format cannot hold at scale s: those whose x / s converts to
/// Inf/NaN without saturation (round = the scheme's rounding). Quantization saturates them to
/// +-max. `amax` (the finite amax of x) lets the common case, amax / s within range, return 0
/// without a second pass.
[[nodiscard]] inline std::size_t count_overflow(matrix_view<const float> x, format_id f, rounding round, float s,
                                                float amax) {
  if (!(amax / s > format_max(f))) return 0;
  return visit_format(f, [&](auto t) -> std::size_t {
    using Elem = typename decltype(t)::type;
    const conversion c{round, overflow::non_saturating};
    std::size_t n = 0;
    for (std::size_t r = 0; r < x.rows; ++r)
      for (std::size_t col = 0; col < x.cols; ++col) {
        const float v = x(r, col);
        if (std::isfinite(v) && !isfinite(narrow<Elem>(v / s, c))) ++n;
      }
    return n;
  });
}

/// amax -> fp32 scale for one tensor (see the file comment for both rules).
struct amax_scaling {
  format_id format = format_id::hifloat8;
  /// pow2: the HiF8 guard rule (amax at 2^(15 - n_guard)); max: s = amax * 2^margin / dst_max.
  scale_rule rule = scale_rule::pow2;
  int n_guard = 11;       ///< pow2: the amax lands in binade T = 15 - n_guard
  int margin = 0;         ///< max: extra headroom, in binades (TE `margin`)
  float dst_max = 0.0f;   ///< max: what the amax maps to; 0 = the format's max finite
  rounding round = rounding::nearest;

  /// The HiF8 guard rule with this N_guard.
  static amax_scaling hif8_guard(int n_guard) { return checked({.n_guard = n_guard}); }
  /// The HiF8 guard rule with the role's default N_guard (11 weight, 10 activation / gradient).
  static amax_scaling hif8_guard(tensor_role r) { return hif8_guard(default_n_guard(r)); }
  /// TE's rule: s = amax * 2^margin / max_finite(f).
  static amax_scaling fp8_max(format_id f, int margin = 0) {
    return checked({.format = f, .rule = scale_rule::max, .margin = margin});
  }
  /// TE Format.HYBRID: float8_e4m3fn for weights and activations, float8_e5m2 for gradients.
  static amax_scaling fp8_hybrid(tensor_role r, int margin = 0) {
    return fp8_max(r == tensor_role::gradient ? format_id::float8_e5m2 : format_id::float8_e4m3fn, margin);
  }
  /// amax -> dst_max exactly: s = amax / dst_max (MindSpeed tensorwise HiF8: 15 or 224).
  static amax_scaling max_to(format_id f, float dst_max) {
    return checked({.format = f, .rule = scale_rule::max, .dst_max = dst_max});
  }
  /// MindSpeed's HiF8 tensorwise targets: HIF8_15 for inputs and weights, HIF8_224 for grads.
  static amax_scaling mindspeed_hif8(tensor_role r) {
    return max_to(format_id::hifloat8, r == tensor_role::gradient ? 224.0f : 15.0f);
  }

  /// a, validated (the factories above build their recipe through it).
  static amax_scaling checked(const amax_scaling& a) {
    a.validate();
    return a;
  }

  /// pow2 target T = 15 - n_guard (pow2 only).
  [[nodiscard]] constexpr int target() const noexcept { return pow2_target_from_guard(n_guard); }

  /// The value the amax is mapped to by the max rule (dst_max or the format's max finite).
  [[nodiscard]] float effective_dst_max() const { return dst_max > 0.0f ? dst_max : format_max(format); }

  /// Throws unsupported_error / shape_error naming the expected and the actual value.
  void validate() const {
    if (rule != scale_rule::pow2 && rule != scale_rule::max)
      throw unsupported_error("amax_scaling: a per-tensor recipe takes scale rule pow2 (the HiF8 guard rule) or max, "
                              "got " + std::string(to_string(rule)));
    if (rule == scale_rule::pow2) {
      if (format != format_id::hifloat8)
        throw unsupported_error("amax_scaling: the guard rule (pow2, amax at 2^(15 - N_guard)) is defined for hifloat8, got " +
                                std::string(to_string(format)) + "; use the max rule for other formats");
      if (n_guard < 1 || n_guard > 37)
        throw shape_error("amax_scaling: N_guard must lie in [1, 37] (amax binade 15 - N_guard in [-22, 14], inside "
                          "HiF8's 38 binades without overflow), got " + std::to_string(n_guard));
    } else {
      quant_scheme s = quant_scheme::make(format, granularity::tensor);
      s.rule = scale_rule::max;
      s.validate();  // rejects float8_e8m0fnu
      if (margin < 0 || margin > 31)
        throw shape_error("amax_scaling: margin must lie in [0, 31] binades, got " + std::to_string(margin));
      const float fmax = format_max(format);
      if (!(dst_max >= 0.0f) || dst_max > fmax)
        throw shape_error("amax_scaling: dst_max must lie in (0, " + std::to_string(fmax) + "] for " +
                          std::string(to_string(format)) + " (0 = the format's max), got " + std::to_string(dst_max));
    }
  }

  /// s for a tensor with this finite amax; 1 for amax 0 (or non-finite / negative input).
  [[nodiscard]] float scale(float amax) const {
    if (!(amax > 0.0f) || !(amax <= std::numeric_limits<float>::max())) return 1.0f;
    if (rule == scale_rule::pow2) return group_scale<hifloat8>(amax, scale_rule::pow2, target());
    float s = std::ldexp(amax / effective_dst_max(), margin);
    if (!(s > 0.0f)) s = std::numeric_limits<float>::denorm_min();  // keeps x / s finite
    s = std::min(s, std::numeric_limits<float>::max());
    return visit_format(format, [&](auto t) {
      using Elem = typename decltype(t)::type;
      if constexpr (std::is_same_v<Elem, float8_e8m0fnu>) return s;  // rejected by validate()
      else return detail::finite_scale<Elem>(amax, s);
    });
  }

  /// The per-tensor scheme to quantize with these scales (quantize_with_scales).
  [[nodiscard]] quant_scheme scheme() const {
    quant_scheme s = quant_scheme::make(format, granularity::tensor);
    s.round = round;
    s.rule = rule;
    if (rule == scale_rule::pow2) s.target = target();
    return s;
  }

  /// e.g. "hifloat8 pow2 N_guard=11 (T=4)" or "float8_e4m3fn max margin=0".
  [[nodiscard]] std::string describe() const {
    std::string d = std::string(to_string(format)) + " " + std::string(to_string(rule));
    if (rule == scale_rule::pow2) return d + " N_guard=" + std::to_string(n_guard) + " (T=" + std::to_string(target()) + ")";
    d += " margin=" + std::to_string(margin);
    if (dst_max > 0.0f) d += " dst_max=" + std::to_string(dst_max);
    return d;
  }
};

/// What a recipe decided for one step of one tensor.
struct step_result {
  float scale = 1.0f;         ///< s used for this step (x ~ s * decode(q)); TE scale = 1 / s
  float amax = 0.0f;          ///< this step's finite amax
  std::size_t nonfinite = 0;  ///< Inf/NaN elements seen
  std::size_t overflow = 0;   ///< finite elements beyond the format's range at `scale` (they saturate)
  bool skip = false;          ///< Inf/NaN seen: skip this step (amax not recorded, recipe restarts)
  bool current = false;       ///< the scale came from this step's own amax (current scaling)
  bool updated = false;       ///< delayed: the scale was recomputed from the history after this step
};

/// What every recipe's step starts with: the step counted, its amax and Inf/NaN count reported,
/// and a step with Inf/NaN marked skip and counted (Counters: the recipe's own counters, with
/// `steps` and `skips`). The recipe then decides the scale.
template <class Counters>
[[nodiscard]] step_result begin_step(const amax_stats& st, Counters& c) {
  ++c.steps;
  step_result r;
  r.amax = st.amax;
  r.nonfinite = st.nonfinite;
  if (!st.finite()) {
    r.skip = true;
    ++c.skips;
  }
  return r;
}

/// Quantizes x per tensor with the scale a recipe chose for this step (quantize_with_scales, on
/// the SIMD kernels).
[[nodiscard]] inline quantized_tensor quantize_step(matrix_view<const float> x, const quant_scheme& s,
                                                    const step_result& r, const quantize_options& o = {}) {
  return quantize_with_scales(x, s, std::span<const float>(&r.scale, 1), o);
}
/// quantize_step then dequantize: the fake-quantized tensor.
[[nodiscard]] inline std::vector<float> fake_quantize_step(matrix_view<const float> x, const quant_scheme& s,
                                                           const step_result& r, const quantize_options& o = {}) {
  return dequantize(quantize_step(x, s, r, o), o);
}

}  // namespace minifloat
