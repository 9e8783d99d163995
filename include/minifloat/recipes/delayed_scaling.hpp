#pragma once
// Delayed scaling: the scale of step k comes from the amax HISTORY of earlier steps, so a step
// can quantize in one pass while it measures its own amax (TE DelayedScaling, MindSpeed
// `scale_data.py`). The state is per tensor role (and per layer); one object per tensor.
//
// Configuration (delayed_scaling_config; validate() throws shape_error naming expected/actual):
//   history_len L   1..4096 (default 128; the HiF8 recipe uses 64, 128 or 256, TE's FP8 recipe
//                   1024): a ring of the last L recorded amaxes
//   interval    I   1..4096 (default 10; the HiF8 recipe uses 5..20, 1 recomputes every step):
//                   the scale is recomputed from the history every I steps
//   reduction       max (default: max over the history) or most_recent (the last recorded amax)
//   scaling         amax -> scale rule (scaling_rule.hpp): the HiF8 guard rule, amax at
//                   2^(15 - N_guard), pow2 scales, N_guard 11 for weights and 10 for activations
//                   and gradients; or the FP8 rule s = amax * 2^margin / max_finite, E4M3 forward
//                   and E5M2 for gradients (TE's HYBRID), for comparison.
//
// The state machine, one call of step(x) (numbered as the code below):
//   1. steps += 1. Scan x: finite amax a, number of Inf/NaN.
//   2. Inf/NaN seen (or stats whose amax is Inf, NaN or negative: amax_stats::finite()): report
//      skip. The amax is NOT recorded; history, held scale and interval position are kept as
//      they are ("keep the data"); skips += 1; the next step restarts with current scaling. The
//      reported scale is the held one. So a bad step never enters the history, whatever it held.
//   3. Restart (the first step ever, or the first after a skip): current scaling. The scale
//      becomes rule.scale(a) (kept if a = 0) and a new interval starts at this step.
//      Otherwise the step uses the held scale, set at the last restart or update.
//   4. Overflow: finite elements beyond the format's range at that scale (they saturate) are
//      counted into the running interval.
//   5. Record a into the history ring (the oldest of L entries drops out).
//   6. The I-th recorded step of an interval (the restart step counts as the first) closes it:
//      the scale is recomputed from the reduced history (kept if the reduction is 0), updates
//      += 1, the interval's overflow count is published (overflow_last_update) and reset.
//      So a scale set at step k serves steps k .. k+I-1, and the update after step k+I-1
//      (which already includes that step's amax) serves k+I .. k+2I-1.
//
// skip_step(): the trainer skipped the step for a reason this tensor did not see (another
// tensor's Inf/NaN, a non-finite loss). It undoes the last step() exactly (history entry, held
// scale, interval position, overflow counters), counts a skip and restarts, so a skipped step
// leaves every history untouched. It is a no-op after a step that already reported skip, and
// when called twice.
//
// Typical use per training step:
//   step_result r = state.step(x);              // before the GEMM
//   auto xq = fake_quantize_step(x, state.scheme(), r);
//   ... if any tensor reported r.skip (or the loss is not finite): do not apply the update and
//       call skip_step() on every state.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "../core/errors.hpp"
#include "../quant/matrix_view.hpp"
#include "scaling_rule.hpp"
#include "tensor_role.hpp"

namespace minifloat {

enum class amax_reduction : std::uint8_t { max, most_recent };

constexpr std::string_view to_string(amax_reduction r) noexcept {
  return r == amax_reduction::max ? std::string_view("max") : std::string_view("most_recent");
}
constexpr std::optional<amax_reduction> parse_amax_reduction(std::string_view s) noexcept {
  if (s == "max") return amax_reduction::max;
  if (s == "most_recent") return amax_reduction::most_recent;
  return std::nullopt;
}

struct delayed_scaling_config {
  std::size_t history_len = 128;
  std::size_t interval = 10;
  amax_reduction reduction = amax_reduction::max;
  amax_scaling scaling = amax_scaling::hif8_guard(11);

  /// HiF8 with the role's default N_guard (11 weight, 10 activation / gradient), L 128, I 10, max.
  static delayed_scaling_config hif8(tensor_role r) {
    delayed_scaling_config c;
    c.scaling = amax_scaling::hif8_guard(r);
    return c;
  }
  /// FP8 for comparison (TE HYBRID): E4M3 for weights/activations, E5M2 for gradients.
  static delayed_scaling_config fp8(tensor_role r, int margin = 0) {
    delayed_scaling_config c;
    c.scaling = amax_scaling::fp8_hybrid(r, margin);
    return c;
  }

  void validate() const {
    if (history_len < 1 || history_len > 4096)
      throw shape_error("delayed_scaling: amax history length must lie in [1, 4096] (the HiF8 recipe uses 64, 128 "
                        "or 256), got " + std::to_string(history_len));
    if (interval < 1 || interval > 4096)
      throw shape_error("delayed_scaling: update interval must lie in [1, 4096] steps (the HiF8 recipe uses 5..20), "
                        "got " + std::to_string(interval));
    if (reduction != amax_reduction::max && reduction != amax_reduction::most_recent)
      throw unsupported_error("delayed_scaling: amax reduction must be max or most_recent");
    scaling.validate();
  }

  /// e.g. "L=128 I=10 max hifloat8 pow2 N_guard=10 (T=5)".
  [[nodiscard]] std::string describe() const {
    return "L=" + std::to_string(history_len) + " I=" + std::to_string(interval) + " " +
           std::string(to_string(reduction)) + " " + scaling.describe();
  }
};

struct delayed_scaling_counters {
  std::size_t steps = 0;                  ///< step() calls, skipped ones included
  std::size_t skips = 0;                  ///< steps skipped (own Inf/NaN, or skip_step())
  std::size_t updates = 0;                ///< scale recomputations from the history (interval ends)
  std::size_t restarts = 0;               ///< steps that used current scaling (the first one included)
  std::size_t overflow_total = 0;         ///< saturated elements over all recorded steps
  std::size_t overflow_since_update = 0;  ///< saturated elements in the running interval
  std::size_t overflow_last_update = 0;   ///< saturated elements in the interval the last update closed
};

class delayed_scaling {
 public:
  explicit delayed_scaling(const delayed_scaling_config& c) : config_(c) {
    config_.validate();
    history_.assign(config_.history_len, 0.0f);
  }

  /// One step of this tensor (see the file comment). Returns the scale to quantize x with.
  step_result step(matrix_view<const float> x) { return step(scan_amax(x), x); }
  step_result step(std::span<const float> x) { return step(matrix_view<const float>(x.data(), 1, x.size(), x.size())); }

  /// The same from precomputed stats (e.g. an amax all-reduced over ranks, or a test's
  /// injected amax). Overflow is counted over x when it is given, else reported as 0.
  step_result step(const amax_stats& st, matrix_view<const float> x = {}) {
    // 1. count the step; 2. Inf/NaN: skip, keep everything, restart next time
    step_result r = begin_step(st, counters_);
    if (r.skip) {
      r.scale = state_.scale;
      state_.restart_next = true;
      last_recorded_ = false;
      return r;
    }
    saved_ = state_;
    saved_counters_ = counters_;
    saved_slot_value_ = history_[state_.head];
    // 3. restart with current scaling, or use the held scale
    if (state_.restart_next) {
      if (st.amax > 0.0f) state_.scale = config_.scaling.scale(st.amax);
      state_.restart_next = false;
      state_.in_interval = 0;
      ++counters_.restarts;
      r.current = true;
    }
    r.scale = state_.scale;
    // 4. overflow at that scale
    r.overflow = count_overflow(x, config_.scaling.format, config_.scaling.round, r.scale, st.amax);
    counters_.overflow_total += r.overflow;
    counters_.overflow_since_update += r.overflow;
    // 5. record the amax
    history_[state_.head] = st.amax;
    state_.head = (state_.head + 1) % history_.size();
    state_.size = std::min(state_.size + 1, history_.size());
    // 6. interval end: recompute the scale from the history
    if (++state_.in_interval == config_.interval) {
      const float a = reduced_amax();
      if (a > 0.0f) state_.scale = config_.scaling.scale(a);
      state_.in_interval = 0;
      ++counters_.updates;
      counters_.overflow_last_update = counters_.overflow_since_update;
      counters_.overflow_since_update = 0;
      r.updated = true;
    }
    last_recorded_ = true;
    return r;
  }

  /// Undo the last step() because the trainer skipped that step (see the file comment).
  void skip_step() noexcept {
    if (!last_recorded_) return;
    const std::size_t steps = counters_.steps;
    state_ = saved_;
    counters_ = saved_counters_;
    counters_.steps = steps;
    history_[state_.head] = saved_slot_value_;
    ++counters_.skips;
    state_.restart_next = true;
    last_recorded_ = false;
  }

  /// Forget everything (history, scale, counters): the next step is a first step.
  void reset() {
    history_.assign(config_.history_len, 0.0f);
    state_ = {};
    counters_ = {};
    last_recorded_ = false;
  }

  /// The reduction of the recorded history (0 while it is empty).
  [[nodiscard]] float reduced_amax() const noexcept {
    if (state_.size == 0) return 0.0f;
    if (config_.reduction == amax_reduction::most_recent)
      return history_[(state_.head + history_.size() - 1) % history_.size()];
    float m = 0.0f;
    for (std::size_t i = 0; i < state_.size; ++i) m = std::max(m, history_[i]);  // unused slots are never read
    return m;
  }

  /// The recorded amaxes, oldest first (at most L).
  [[nodiscard]] std::vector<float> history() const {
    std::vector<float> h;
    h.reserve(state_.size);
    const std::size_t n = history_.size(), first = (state_.head + n - state_.size) % n;
    for (std::size_t i = 0; i < state_.size; ++i) h.push_back(history_[(first + i) % n]);
    return h;
  }

  /// The held scale: what the next step uses unless it restarts.
  [[nodiscard]] float scale() const noexcept { return state_.scale; }
  /// True when the next step will use current scaling (first step, or after a skip).
  [[nodiscard]] bool next_is_current() const noexcept { return state_.restart_next; }
  /// Recorded steps in the running interval (0 .. I-1).
  [[nodiscard]] std::size_t steps_in_interval() const noexcept { return state_.in_interval; }
  [[nodiscard]] const delayed_scaling_counters& counters() const noexcept { return counters_; }
  [[nodiscard]] const delayed_scaling_config& config() const noexcept { return config_; }
  [[nodiscard]] quant_scheme scheme() const { return config_.scaling.scheme(); }

 private:
  struct state {
    std::size_t head = 0;         // next history slot to write
    std::size_t size = 0;         // recorded entries (<= L)
    std::size_t in_interval = 0;  // recorded steps since the scale was last set
    float scale = 1.0f;
    bool restart_next = true;
  };
  delayed_scaling_config config_;
  std::vector<float> history_;
  state state_;
  delayed_scaling_counters counters_;
  // The state before the last recorded step, for skip_step().
  state saved_;
  delayed_scaling_counters saved_counters_;
  float saved_slot_value_ = 0.0f;
  bool last_recorded_ = false;
};

}  // namespace minifloat
