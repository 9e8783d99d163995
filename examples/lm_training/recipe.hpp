#pragma once
// The training recipes: how every GEMM operand of the model is quantized.
//
//   key            X, Q, K, V (activations)   W (weights)        dY, dO, dS (gradients)    scaling
//   fp32           fp32                       fp32               fp32                      -
//   bf16           bfloat16                   bfloat16           bfloat16                  - (a cast)
//   hif8_delayed   HiF8 per tensor            HiF8 per tensor    HiF8 per tensor           delayed: L 128, I 10, max,
//                                                                                          guard rule N_guard 11 (W) / 10
//   hif8_current   HiF8 per tensor            HiF8 per tensor    HiF8 per tensor           current, the same guard rule
//   fp8_delayed    E4M3 per tensor            E4M3 per tensor    E5M2 per tensor           delayed, TE HYBRID: L 1024, I 1,
//                                                                                          max, s = amax / max_finite (margin 0)
//   mxfp8          MXFP8 E4M3, 32-element blocks along each GEMM's reduction axis (quantized
//                  once per GEMM a tensor enters), E8M0 rule rceil (TE's: never clips)
//   mxfp8_32x32    MXFP8 E4M3, one E8M0 scale per 32x32 tile of every Linear operand, so a tensor
//                  and its transpose share codes and scales: each is quantized once
//
// P (the softmax probabilities entering P.V and dV = P^T dO) has a known amax, 1: P is quantized
// per tensor with the scale the role's rule gives an amax of 1 (HiF8 2^-(15 - N_guard); E4M3
// 1/448; MX E4M3 2^-8, the E8M0 scale of a block whose amax is 1).
// The first step and the first step after a skip use current scaling (the delayed_scaling state
// machine, include/minifloat/recipes/delayed_scaling.hpp).
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <minifloat/recipes/recipes.hpp>

namespace lm {

namespace mf = minifloat;

enum class recipe_kind : std::uint8_t {
  fp32, bf16, hif8_delayed, hif8_current, fp8_delayed, mxfp8, mxfp8_32x32,
  // inference recipes (forward only, on trained fp32 weights): weights per channel (offline),
  // X, Q, K, V static per tensor (calibrated), P at its known amax 1; or MXFP8 throughout
  infer_hif8, infer_fp8, infer_mxfp8
};

inline constexpr std::array all_recipe_kinds = {recipe_kind::fp32,         recipe_kind::bf16,
                                                recipe_kind::hif8_delayed, recipe_kind::hif8_current,
                                                recipe_kind::fp8_delayed,  recipe_kind::mxfp8,
                                                recipe_kind::mxfp8_32x32};

constexpr std::string_view key(recipe_kind k) noexcept {
  switch (k) {
    case recipe_kind::fp32: return "fp32";
    case recipe_kind::bf16: return "bf16";
    case recipe_kind::hif8_delayed: return "hif8_delayed";
    case recipe_kind::hif8_current: return "hif8_current";
    case recipe_kind::fp8_delayed: return "fp8_delayed";
    case recipe_kind::mxfp8: return "mxfp8";
    case recipe_kind::mxfp8_32x32: return "mxfp8_32x32";
    case recipe_kind::infer_hif8: return "infer_hif8";
    case recipe_kind::infer_fp8: return "infer_fp8";
    case recipe_kind::infer_mxfp8: return "infer_mxfp8";
  }
  return "?";
}

inline std::optional<recipe_kind> parse_recipe_kind(std::string_view s) noexcept {
  for (const recipe_kind k : all_recipe_kinds)
    if (key(k) == s) return k;
  return std::nullopt;
}

/// One training recipe with its knobs (the ablations move n_guard_*, interval and history).
struct recipe {
  recipe_kind kind = recipe_kind::fp32;
  int n_guard_weight = 11, n_guard_activation = 10, n_guard_gradient = 10;  // HiF8 guard rule
  std::size_t interval = 10, history = 128;                                  // HiF8 delayed
  std::size_t fp8_interval = 1, fp8_history = 1024;                          // TE DelayedScaling defaults
  int fp8_margin = 0;
  mf::scale_rule mx_rule = mf::scale_rule::rceil;
  mf::calibration_method calib = mf::calibration_method::amax;  // inference: static activation scales

  [[nodiscard]] bool per_tensor() const noexcept {
    return kind == recipe_kind::hif8_delayed || kind == recipe_kind::hif8_current || kind == recipe_kind::fp8_delayed;
  }
  [[nodiscard]] bool delayed() const noexcept { return kind == recipe_kind::hif8_delayed || kind == recipe_kind::fp8_delayed; }
  [[nodiscard]] bool mx() const noexcept {
    return kind == recipe_kind::mxfp8 || kind == recipe_kind::mxfp8_32x32 || kind == recipe_kind::infer_mxfp8;
  }
  [[nodiscard]] bool inference() const noexcept {
    return kind == recipe_kind::infer_hif8 || kind == recipe_kind::infer_fp8 || kind == recipe_kind::infer_mxfp8;
  }
  /// Inference recipes with static activation scales to calibrate.
  [[nodiscard]] bool calibrated() const noexcept { return kind == recipe_kind::infer_hif8 || kind == recipe_kind::infer_fp8; }
  [[nodiscard]] mf::format_id infer_format() const noexcept {
    return kind == recipe_kind::infer_hif8 ? mf::format_id::hifloat8 : mf::format_id::float8_e4m3fn;
  }

  [[nodiscard]] int n_guard(mf::tensor_role r) const noexcept {
    switch (r) {
      case mf::tensor_role::weight: return n_guard_weight;
      case mf::tensor_role::activation: return n_guard_activation;
      case mf::tensor_role::gradient: return n_guard_gradient;
    }
    return 10;
  }

  /// The per-tensor amax -> scale rule of a role (per-tensor recipes only).
  [[nodiscard]] mf::amax_scaling rule(mf::tensor_role r) const {
    if (kind == recipe_kind::fp8_delayed) return mf::amax_scaling::fp8_hybrid(r, fp8_margin);
    return mf::amax_scaling::hif8_guard(n_guard(r));
  }
  [[nodiscard]] mf::delayed_scaling_config delayed_config(mf::tensor_role r) const {
    mf::delayed_scaling_config c;
    c.scaling = rule(r);
    c.reduction = mf::amax_reduction::max;
    c.history_len = kind == recipe_kind::fp8_delayed ? fp8_history : history;
    c.interval = kind == recipe_kind::fp8_delayed ? fp8_interval : interval;
    return c;
  }

  /// A file-name key: the recipe, plus every knob that differs from its default.
  [[nodiscard]] std::string name() const {
    std::string s(key(kind));
    const recipe d{kind};
    if (kind == recipe_kind::hif8_delayed || kind == recipe_kind::hif8_current) {
      if (n_guard_weight != d.n_guard_weight || n_guard_activation != d.n_guard_activation ||
          n_guard_gradient != d.n_guard_gradient)
        s += "_g" + std::to_string(n_guard_weight) + "-" + std::to_string(n_guard_activation) + "-" +
             std::to_string(n_guard_gradient);
    }
    if (kind == recipe_kind::hif8_delayed) {
      if (interval != d.interval) s += "_i" + std::to_string(interval);
      if (history != d.history) s += "_h" + std::to_string(history);
    }
    if (calibrated()) s += "_" + std::string(mf::to_string(calib));
    return s;
  }

  /// A table label.
  [[nodiscard]] std::string label() const {
    switch (kind) {
      case recipe_kind::fp32: return "fp32";
      case recipe_kind::bf16: return "bf16 operands";
      case recipe_kind::hif8_delayed:
        return "HiF8 delayed (N_guard " + std::to_string(n_guard_weight) + "/" + std::to_string(n_guard_activation) + "/" +
               std::to_string(n_guard_gradient) + ", I " + std::to_string(interval) + ", L " + std::to_string(history) + ")";
      case recipe_kind::hif8_current:
        return "HiF8 current (N_guard " + std::to_string(n_guard_weight) + "/" + std::to_string(n_guard_activation) + "/" +
               std::to_string(n_guard_gradient) + ")";
      case recipe_kind::fp8_delayed:
        return "FP8 delayed HYBRID (E4M3/E5M2, margin " + std::to_string(fp8_margin) + ", L " + std::to_string(fp8_history) +
               ", I " + std::to_string(fp8_interval) + ")";
      case recipe_kind::mxfp8: return "MXFP8 E4M3 (1x32 along K, " + std::string(mf::to_string(mx_rule)) + ")";
      case recipe_kind::mxfp8_32x32: return "MXFP8 E4M3 (32x32 tiles, " + std::string(mf::to_string(mx_rule)) + ")";
      case recipe_kind::infer_hif8:
        return "HiF8: W per channel, X/Q/K/V static per tensor (" + std::string(mf::to_string(calib)) + ")";
      case recipe_kind::infer_fp8:
        return "FP8 E4M3: W per channel, X/Q/K/V static per tensor (" + std::string(mf::to_string(calib)) + ")";
      case recipe_kind::infer_mxfp8: return "MXFP8 E4M3 1x32 (dynamic, " + std::string(mf::to_string(mx_rule)) + ")";
    }
    return "?";
  }
};

}  // namespace lm
