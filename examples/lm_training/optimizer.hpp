#pragma once
// AdamW (decoupled weight decay on the matrices), a linear warm-up into a cosine schedule, and
// clipping of the global gradient norm. All fp32 (or T), on the master weights.
#include <cmath>
#include <cstddef>
#include <vector>

#include "layers.hpp"

namespace lm {

struct optimizer_config {
  double lr = 2e-3, min_lr_ratio = 0.1;  ///< peak learning rate; the cosine ends at peak * ratio
  std::size_t warmup = 100;               ///< linear warm-up steps
  double beta1 = 0.9, beta2 = 0.95, eps = 1e-8, weight_decay = 0.1;
  double clip = 1.0;                      ///< global gradient norm limit
};

/// Learning rate of (0-based) step s of n: linear warm-up to the peak, cosine down to peak * ratio.
inline double learning_rate(const optimizer_config& c, std::size_t s, std::size_t n) {
  if (s < c.warmup) return c.lr * static_cast<double>(s + 1) / static_cast<double>(c.warmup);
  const double span = static_cast<double>(n > c.warmup ? n - c.warmup : 1);
  const double x = std::min(1.0, static_cast<double>(s - c.warmup) / span);
  const double lo = c.lr * c.min_lr_ratio;
  return lo + 0.5 * (c.lr - lo) * (1.0 + std::cos(3.141592653589793 * x));
}

/// sqrt of the sum of squares of every gradient (in double; NaN/Inf propagate).
template <class T>
double global_norm(const std::vector<parameter<T>>& params) {
  double s = 0.0;
  for (const auto& p : params)
    for (const T g : p.grad->v) s += static_cast<double>(g) * static_cast<double>(g);
  return std::sqrt(s);
}

template <class T>
class adamw {
 public:
  explicit adamw(const optimizer_config& c) : cfg_(c) {}

  /// One update with learning rate lr; gradients are scaled by `grad_scale` first (clipping).
  void step(std::vector<parameter<T>>& params, double lr, double grad_scale) {
    if (m_.empty()) {
      for (const auto& p : params) m_.emplace_back(p.value->size(), T(0)), v_.emplace_back(p.value->size(), T(0));
    }
    ++t_;
    const double bc1 = 1.0 - std::pow(cfg_.beta1, static_cast<double>(t_));
    const double bc2 = 1.0 - std::pow(cfg_.beta2, static_cast<double>(t_));
    const T b1 = static_cast<T>(cfg_.beta1), b2 = static_cast<T>(cfg_.beta2);
    for (std::size_t i = 0; i < params.size(); ++i) {
      std::vector<T>& w = params[i].value->v;
      const std::vector<T>& g = params[i].grad->v;
      const T decay = params[i].decay ? static_cast<T>(1.0 - lr * cfg_.weight_decay) : T(1);
      const T step_size = static_cast<T>(lr / bc1), gs = static_cast<T>(grad_scale);
      const T inv_bc2 = static_cast<T>(1.0 / bc2), eps = static_cast<T>(cfg_.eps);
      for (std::size_t j = 0; j < w.size(); ++j) {
        const T gj = g[j] * gs;
        m_[i][j] = b1 * m_[i][j] + (T(1) - b1) * gj;
        v_[i][j] = b2 * v_[i][j] + (T(1) - b2) * gj * gj;
        w[j] = w[j] * decay - step_size * m_[i][j] / (std::sqrt(v_[i][j] * inv_bc2) + eps);
      }
    }
  }

  [[nodiscard]] std::size_t updates() const noexcept { return t_; }

 private:
  optimizer_config cfg_;
  std::vector<std::vector<T>> m_, v_;
  std::size_t t_ = 0;
};

}  // namespace lm
