#pragma once
// The checks of a training configuration from the command line that no single option can make
// (shared by lm_training and lm_training_dp): each a usage_error, exit status 2.
#include <cstddef>
#include <string>

#include "../common/args.hpp"
#include "trainer.hpp"

// The text both programs train on by default (CMake passes the shipped slice's absolute path; this
// fallback is the same file relative to the repository root).
#ifndef LM_TRAINING_DEFAULT_TEXT
#define LM_TRAINING_DEFAULT_TEXT "data/kjv/genesis_1-25.txt"
#endif

namespace lm {

namespace limits {
inline constexpr std::size_t steps = 10'000'000;
/// The activations a step keeps for its backward, in values (4 GiB of float32 at most).
inline constexpr std::size_t activation_values = std::size_t{1} << 30;
}  // namespace limits

/// `extra` ends the message of a shape that does not fit (e.g. a note about the ranks).
inline void check_training_options(const train_config& tc, const std::string& extra) {
  using minifloat_examples::usage_error;
  const model_config& m = tc.model;
  if (m.d_model % m.heads != 0)
    throw usage_error("--d-model " + std::to_string(m.d_model) + " is not a multiple of --heads " + std::to_string(m.heads) +
                      "; expected d_model = heads x head dimension" + extra);
  for (const auto& [step, option] : {std::pair{tc.inject_inf_step, "--inject-inf"}, std::pair{tc.inject_nan_step, "--inject-nan"}})
    if (step && *step >= tc.steps)
      throw usage_error(std::string(option) + " " + std::to_string(*step) + " lies beyond the run; expected a step below --steps " +
                        std::to_string(tc.steps));
  // Every factor is bounded by its option's range, so this estimate cannot wrap: per layer the
  // block's inputs, norms, q/k/v, attention output, the MLP's two activations and the attention
  // probabilities (B H T^T), plus the logits (B T 256).
  const std::size_t rows = tc.batch * m.context;
  const std::size_t values = m.layers * (rows * (8 * m.d_model + 2 * m.d_ff) + tc.batch * m.heads * m.context * m.context) +
                             rows * 3 * 256;
  if (values > limits::activation_values)
    throw usage_error("--batch " + std::to_string(tc.batch) + ", --context " + std::to_string(m.context) + " and the model (" +
                      m.describe() + ") keep about " + std::to_string(values) +
                      " activation values a step; expected at most 2^30 (use a smaller batch, context or model)");
}

}  // namespace lm
