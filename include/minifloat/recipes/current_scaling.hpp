#pragma once
// Current scaling (TE Float8CurrentScaling, MindSpeed "tensorwise", torchao TENSORWISE): every
// step's scale comes from that step's own amax. It needs the amax before the data can be
// quantized (two passes, or one pass with a fused amax kernel plus a second for the codes), but
// it never overflows: with the guard rule the amax lands in binade 15 - N_guard every step.
// It is also the first step of every delayed-scaling run and of every restart after a skip.
//
//   current_scaling cs(amax_scaling::hif8_guard(tensor_role::activation));
//   step_result r = cs.step(x);              // r.scale, r.skip (Inf/NaN seen)
//   auto q = quantize_step(x, cs.scheme(), r);
#include <cstddef>
#include <span>

#include "../quant/matrix_view.hpp"
#include "scaling_rule.hpp"

namespace minifloat {

/// The current-scaling scale of one tensor: rule.scale(finite amax of x).
[[nodiscard]] inline float current_scale(matrix_view<const float> x, const amax_scaling& rule) {
  return rule.scale(scan_amax(x).amax);
}

struct current_scaling_counters {
  std::size_t steps = 0;           ///< step() calls, skipped ones included
  std::size_t skips = 0;           ///< steps that saw Inf/NaN
  std::size_t overflow_total = 0;  ///< finite elements that saturated (0 unless dst_max / margin allow it)
};

/// Current scaling of one tensor role, with the same step() protocol as delayed_scaling.
class current_scaling {
 public:
  explicit current_scaling(amax_scaling rule) : rule_(rule) { rule_.validate(); }

  /// Scans x (amax, Inf/NaN) and returns this step's scale. A step with Inf/NaN reports skip;
  /// its scale still comes from the finite amax (saturating quantization maps +-Inf to +-max).
  step_result step(matrix_view<const float> x) { return step(scan_amax(x), x); }
  step_result step(std::span<const float> x) { return step(matrix_view<const float>(x.data(), 1, x.size(), x.size())); }

  /// The same from precomputed (e.g. all-reduced) stats; overflow is counted over x if given.
  step_result step(const amax_stats& st, matrix_view<const float> x = {}) {
    step_result r = begin_step(st, counters_);
    r.scale = rule_.scale(st.amax);
    r.current = true;
    if (r.skip) {
      last_step_counts_ = false;
      return r;
    }
    r.overflow = count_overflow(x, rule_.format, rule_.round, r.scale, st.amax);
    counters_.overflow_total += r.overflow;
    last_overflow_ = r.overflow;
    last_step_counts_ = true;
    return r;
  }

  /// The trainer skipped the step of the last step() for a reason found elsewhere (another
  /// tensor saw Inf/NaN). Current scaling keeps no history, so this only counts the skip (and drops
  /// that step's overflow count); it
  /// is a no-op if that step already reported skip or skip_step() was already called.
  void skip_step() noexcept {
    if (!last_step_counts_) return;
    ++counters_.skips;
    counters_.overflow_total -= last_overflow_;
    last_step_counts_ = false;
  }

  [[nodiscard]] const amax_scaling& rule() const noexcept { return rule_; }
  [[nodiscard]] quant_scheme scheme() const { return rule_.scheme(); }
  [[nodiscard]] const current_scaling_counters& counters() const noexcept { return counters_; }

 private:
  amax_scaling rule_;
  current_scaling_counters counters_;
  std::size_t last_overflow_ = 0;
  bool last_step_counts_ = false;
};

}  // namespace minifloat
