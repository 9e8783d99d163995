#pragma once
// One training run of one recipe: the step loop with the Inf/NaN protocol, evaluation, timing.
//
// A step (attempt a of step s, batch = training_batch(seed, s)):
//   1. forward. Stop if an activation or weight slot saw Inf/NaN, or the loss is not finite.
//   2. backward, then the gradient hook (all gradient spans, before anything reads them: the
//      place for a data-parallel all-reduce). Stop if a gradient slot saw Inf/NaN or the global
//      gradient norm is not finite.
//   3. clip the global norm, AdamW with the step's learning rate.
// A stopped step applies nothing (the weights and the optimizer state are untouched), calls
// skip_step() on every scaling state (each drops its record of the step and restarts with
// current scaling) and retries the SAME batch, at most max_retries times. The learning-rate
// schedule counts steps, not attempts.
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <functional>
#include <iostream>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "model.hpp"
#include "optimizer.hpp"

namespace lm {

struct train_config {
  model_config model;
  optimizer_config opt;
  std::size_t steps = 3000, batch = 16;
  std::uint64_t seed = 1;                    ///< initialisation and data order
  std::optional<std::size_t> inject_inf_step;  ///< Inf into a gradient at this step (first attempt)
  std::optional<std::size_t> inject_nan_step;  ///< NaN into an activation at this step (first attempt)
  std::size_t max_retries = 3;
  std::size_t eval_every = 0;      ///< validation loss on the first eval_windows windows every N steps (0: never)
  std::size_t eval_windows = 64;
  std::size_t log_every = 100;
  unsigned threads = 2;
  bool quiet = false;
  /// Data parallelism (lm_training_dp): this process is rank `rank` of `ranks` and trains on rows
  /// [batch rank / ranks, batch (rank + 1) / ranks) of every global batch; the injected faults
  /// happen on rank `fault_rank` only.
  std::size_t rank = 0, ranks = 1, fault_rank = 0;
};

/// The smoke configuration (ctest): tiny model, short run on the shipped slice, both faults.
inline train_config smoke_config() {
  train_config c;
  c.model = {.layers = 2, .d_model = 64, .heads = 2, .d_ff = 128, .context = 64};
  c.steps = 60, c.batch = 4;
  c.opt.lr = 3e-3, c.opt.warmup = 10;
  c.inject_inf_step = 20, c.inject_nan_step = 35;
  c.log_every = 0, c.quiet = true, c.threads = 2;
  return c;
}

/// One gradient as the hook sees it.
struct gradient_span {
  std::string_view name;
  std::span<float> grad;
};
/// Called after backward, before the skip check and the optimizer, with every gradient of the
/// model (the data-parallel all-reduce goes here; a non-finite gradient on any rank then reaches
/// every rank and all of them skip the step together).
using gradient_hook = std::function<void(std::span<const gradient_span>)>;
/// Data parallelism: true on every rank if `stop` is true on any rank (called at both points
/// where a step can stop, so every rank stops, skips and retries together).
using agree_hook = std::function<bool(bool stop)>;
/// Data parallelism: the mean loss of the global batch from this rank's mean over its rows.
using loss_hook = std::function<double(double local_mean)>;

struct step_record {
  std::size_t step = 0;
  double loss = NAN, lr = 0.0, grad_norm = NAN;
  std::size_t attempts = 1;  ///< 1 = applied at the first try
  std::string event;
  double val_loss = NAN;     ///< periodic validation (fp32 forward), NaN when not evaluated
};

struct run_result {
  recipe rc;
  std::vector<step_record> steps;
  std::size_t skipped = 0;        ///< attempts that were stopped
  std::size_t given_up = 0;       ///< steps abandoned after max_retries
  slot_counters counters;
  double train_loss_tail = NAN;   ///< mean loss over the last 10 % of steps
  double first_loss = NAN;
  double val_fp32 = NAN;          ///< validation loss: fp32 forward of the trained master weights
  double val_recipe = NAN;        ///< validation loss: the recipe's own forward (scaling states read, not stepped)
  double wall_s = 0.0, cpu_s = 0.0;
  std::size_t tokens = 0;
  std::size_t parameters = 0;
};

inline double cpu_seconds() { return static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

/// Mean validation loss over windows [0, n) of the validation text (n = 0: all), forward only.
inline double validation_loss(transformer<float>& m, const corpus& c, std::size_t b, std::size_t n_windows = 0) {
  const std::size_t total = window_count(c.valid, m.cfg.context);
  const std::size_t n = n_windows == 0 ? total : std::min(total, n_windows);
  double sum = 0.0;
  std::size_t count = 0;
  batch bt;
  for (std::size_t first = 0; first < n && window_batch(c.valid, std::min(b, n - first), m.cfg.context, first, bt);
       first += bt.b) {
    sum += m.forward(bt, {}, false) * static_cast<double>(bt.b);
    count += bt.b;
  }
  return sum / static_cast<double>(count);
}

/// Copies the master weights of `from` into `to` (same shape, any recipe).
inline void copy_weights(transformer<float>& from, transformer<float>& to) {
  auto a = from.parameters(), b = to.parameters();
  for (std::size_t i = 0; i < a.size(); ++i) b[i].value->v = a[i].value->v;
}

inline void set_slot_mode(transformer<float>& m, slot_mode mode) {
  m.for_each_slot([&](quant_slot<float>& s) { s.set_mode(mode); });
}

class trainer {
 public:
  trainer(const train_config& c, const recipe& rc, const corpus& data)
      : cfg_(c), rc_(rc), data_(data), model_(c.model, rc, c.seed, c.threads), opt_(c.opt) {}

  void set_gradient_hook(gradient_hook h) { hook_ = std::move(h); }
  void set_agree_hook(agree_hook h) { agree_ = std::move(h); }
  void set_loss_hook(loss_hook h) { loss_hook_ = std::move(h); }
  /// Called after every step (applied or given up), with its index.
  void set_step_hook(std::function<void(std::size_t)> h) { step_hook_ = std::move(h); }
  transformer<float>& model() { return model_; }

  run_result run() {
    run_result res;
    res.rc = rc_;
    res.parameters = model_.parameter_count();
    auto params = model_.parameters();
    std::vector<gradient_span> spans;
    for (auto& p : params) spans.push_back({p.name, p.grad->span()});
    std::optional<transformer<float>> fp32;  // the periodic fp32 evaluation
    if (cfg_.eval_every > 0) fp32.emplace(cfg_.model, recipe{}, cfg_.seed, cfg_.threads);
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = cpu_seconds();
    for (std::size_t s = 0; s < cfg_.steps; ++s) {
      const batch bt = rank_rows(training_batch(data_, cfg_.batch, cfg_.model.context, cfg_.seed, s));
      step_record rec;
      rec.step = s;
      rec.lr = learning_rate(cfg_.opt, s, cfg_.steps);
      for (std::size_t attempt = 0;; ++attempt) {
        const bool here = cfg_.rank == cfg_.fault_rank;
        const fault f{.nan_activation = here && cfg_.inject_nan_step == s && attempt == 0,
                      .inf_gradient = here && cfg_.inject_inf_step == s && attempt == 0};
        if (f.nan_activation) rec.event += "inject NaN activation; ";
        if (f.inf_gradient) rec.event += "inject Inf gradient; ";
        model_.for_each_slot([](quant_slot<float>& q) { q.clear_flag(); });
        const double loss = model_.forward(bt, f);
        std::string why = agreed(stop_reason("activation", !std::isfinite(loss), "loss"));
        double gnorm = NAN;
        if (why.empty()) {
          model_.backward(f);
          if (hook_) hook_(spans);
          gnorm = global_norm(params);
          why = agreed(stop_reason("gradient", !std::isfinite(gnorm), "gradient norm"));
        }
        res.tokens += bt.inputs.size();
        if (why.empty()) {
          opt_.step(params, rec.lr, gnorm > cfg_.opt.clip ? cfg_.opt.clip / gnorm : 1.0);
          rec.loss = loss_hook_ ? loss_hook_(loss) : loss, rec.grad_norm = gnorm, rec.attempts = attempt + 1;
          break;
        }
        ++res.skipped;
        model_.for_each_slot([](quant_slot<float>& q) { q.skip_step(); });
        rec.event += "skipped (" + why + "): weights not updated, scaling restarted; ";
        if (!cfg_.quiet)
          std::cout << "  [" << rc_.name() << "] step " << s << " attempt " << attempt << ": " << why
                    << " -> step skipped, weights not updated, scaling states restart; retrying the same batch\n";
        if (attempt + 1 > cfg_.max_retries) {
          ++res.given_up;
          rec.attempts = attempt + 1;
          rec.event += "given up; ";
          break;
        }
      }
      if (rec.attempts > 1 && std::isfinite(rec.loss)) {
        rec.event += "retried: applied at attempt " + std::to_string(rec.attempts - 1) + "; ";
        if (!cfg_.quiet)
          std::cout << "  [" << rc_.name() << "] step " << s << ": retried batch applied (loss " << rec.loss << ")\n";
      }
      if (fp32 && ((s + 1) % cfg_.eval_every == 0 || s + 1 == cfg_.steps)) {
        copy_weights(model_, *fp32);
        rec.val_loss = validation_loss(*fp32, data_, cfg_.batch, cfg_.eval_windows);
      }
      if (!cfg_.quiet && cfg_.log_every > 0 && (s % cfg_.log_every == 0 || s + 1 == cfg_.steps))
        std::cout << "  [" << rc_.name() << "] step " << s << " loss " << rec.loss << " lr " << rec.lr << " |g| "
                  << rec.grad_norm << (std::isnan(rec.val_loss) ? "" : " val " + std::to_string(rec.val_loss)) << "\n";
      res.steps.push_back(rec);
      if (step_hook_) step_hook_(s);
    }
    res.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    res.cpu_s = cpu_seconds() - c0;
    model_.for_each_slot([&](const quant_slot<float>& q) { q.add_counters(res.counters); });
    // summaries
    const std::size_t n = res.steps.size(), tail = std::max<std::size_t>(1, n / 10);
    double sum = 0.0;
    std::size_t cnt = 0;
    for (std::size_t i = n - tail; i < n; ++i)
      if (std::isfinite(res.steps[i].loss)) sum += res.steps[i].loss, ++cnt;
    res.train_loss_tail = cnt > 0 ? sum / static_cast<double>(cnt) : NAN;
    res.first_loss = n > 0 ? res.steps[0].loss : NAN;
    return res;
  }

  /// Validation losses of the trained model: fp32 forward, and the recipe's own forward.
  void evaluate(run_result& res, std::size_t windows = 0) {
    transformer<float> fp32(cfg_.model, recipe{}, cfg_.seed, cfg_.threads);
    copy_weights(model_, fp32);
    res.val_fp32 = validation_loss(fp32, data_, cfg_.batch, windows);
    if (rc_.kind == recipe_kind::fp32) {
      res.val_recipe = res.val_fp32;
      return;
    }
    set_slot_mode(model_, slot_mode::eval);
    res.val_recipe = validation_loss(model_, data_, cfg_.batch, windows);
    set_slot_mode(model_, slot_mode::train);
  }

 private:
  /// This rank's rows of a global batch (all of it in a single process).
  [[nodiscard]] batch rank_rows(batch g) const {
    if (cfg_.ranks <= 1) return g;
    const std::size_t r0 = g.b * cfg_.rank / cfg_.ranks, r1 = g.b * (cfg_.rank + 1) / cfg_.ranks;
    batch out;
    out.b = r1 - r0, out.t = g.t;
    out.inputs.assign(g.inputs.begin() + static_cast<std::ptrdiff_t>(r0 * g.t), g.inputs.begin() + static_cast<std::ptrdiff_t>(r1 * g.t));
    out.targets.assign(g.targets.begin() + static_cast<std::ptrdiff_t>(r0 * g.t), g.targets.begin() + static_cast<std::ptrdiff_t>(r1 * g.t));
    return out;
  }
  /// The stop decision of every rank (this one's reason, or that another rank stopped).
  [[nodiscard]] std::string agreed(std::string why) const {
    if (!agree_) return why;
    const bool any = agree_(!why.empty());
    return any && why.empty() ? std::string("another rank stopped the step") : why;
  }
  /// Empty if the step may go on; else why it stops (counting the slots that saw Inf/NaN).
  std::string stop_reason(const char* what, bool bad_value, const char* value_name) {
    std::size_t n = 0;
    model_.for_each_slot([&](const quant_slot<float>& q) { n += q.nonfinite() ? 1U : 0U; });
    if (n > 0) return "Inf/NaN in " + std::to_string(n) + " " + what + " operand" + (n == 1 ? "" : "s");
    if (bad_value) return std::string("non-finite ") + value_name;
    return {};
  }

  train_config cfg_;
  recipe rc_;
  const corpus& data_;
  transformer<float> model_;
  adamw<float> opt_;
  gradient_hook hook_;
  agree_hook agree_;
  loss_hook loss_hook_;
  std::function<void(std::size_t)> step_hook_;
};

}  // namespace lm
