#pragma once
// The three roles a tensor plays in a training GEMM. Scaling recipes keep separate state per role
// (and per layer), and pick defaults by role:
//
//   role        HiF8 guard rule (N_guard)      FP8 "hybrid" rule (TransformerEngine)
//   weight      11 -> amax in binade 2^4        float8_e4m3fn (forward)
//   activation  10 -> amax in binade 2^5        float8_e4m3fn (forward)
//   gradient    10 -> amax in binade 2^5        float8_e5m2   (backward)
//
// The N_guard defaults are this project's recipe (docs/formats/hifloat8.md#recipe-numbers-and-n_guard; no public source
// defines "N_guard"). The FP8 split is TE's Format.HYBRID (docs/formats/scaling.md#the-fp8-max-margin-rule).
#include <cstdint>
#include <optional>
#include <string_view>

namespace minifloat {

enum class tensor_role : std::uint8_t { weight, activation, gradient };

constexpr std::string_view to_string(tensor_role r) noexcept {
  switch (r) {
    case tensor_role::weight: return "weight";
    case tensor_role::activation: return "activation";
    case tensor_role::gradient: return "gradient";
  }
  return "?";
}

constexpr std::optional<tensor_role> parse_tensor_role(std::string_view s) noexcept {
  for (auto r : {tensor_role::weight, tensor_role::activation, tensor_role::gradient})
    if (to_string(r) == s) return r;
  return std::nullopt;
}

/// The HiF8 guard default of a role: 11 for weights, 10 for activations and gradients.
constexpr int default_n_guard(tensor_role r) noexcept { return r == tensor_role::weight ? 11 : 10; }

}  // namespace minifloat
