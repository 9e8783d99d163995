#pragma once
// The attention entry points, declared: the fast forward and backward, the decode step over a
// KV cache, and their double-precision references. The definitions live with their loops
// (forward.hpp, backward.hpp, kv_cache.hpp, reference.hpp): inline in header-only mode, compiled
// once into minifloat::kernels in compiled-kernels mode (core/config.hpp). Shapes, recipes and
// options: recipe.hpp; the cache: kv_cache.hpp.
#include <cstddef>
#include <span>

#include "../core/config.hpp"
#include "recipe.hpp"

namespace minifloat::attention {

class kv_cache;       // kv_cache.hpp
struct decode_recipe;  // kv_cache.hpp

/// The fast forward (see the header comment); same arguments, checks and result as
/// attention_reference.
[[nodiscard]] MINIFLOAT_KERNEL_API attention_result attention_forward(std::span<const float> q, std::span<const float> k,
                                                        std::span<const float> v, const attention_shape& s,
                                                        const attention_recipe& r, const attention_options& opt = {});

/// attention_reference or attention_forward.
[[nodiscard]] MINIFLOAT_KERNEL_API attention_result attention(std::span<const float> q, std::span<const float> k, std::span<const float> v,
                                                const attention_shape& s, const attention_recipe& r,
                                                const attention_options& opt = {}, attention_path path = attention_path::fast);

/// Gradients for upstream d_out (shape of out). `fwd` is the forward's result for the same
/// q, k, v, shape, recipe and options (attention_forward or attention_reference).
[[nodiscard]] MINIFLOAT_KERNEL_API attention_grads attention_backward(std::span<const float> q, std::span<const float> k,
                                                        std::span<const float> v, std::span<const float> d_out,
                                                        const attention_result& fwd, const attention_shape& s,
                                                        const attention_recipe& r, const attention_options& opt = {});

/// The double-precision reference of a decode step: the reference forward (reference.hpp) on
/// the cache's dequantized contents, with Q and P quantized by the recipe.
[[nodiscard]] MINIFLOAT_KERNEL_API attention_result decode_reference(const kv_cache& c, std::span<const float> q, std::size_t q_heads,
                                                       std::size_t n, const decode_recipe& r, const attention_options& opt = {});

/// One decode step: n query tokens per query head, q (Hq, n, d), against every cached token
/// (causal among the n new tokens when opt.mask is causal: they are the cache's last n). Out
/// (Hq, n, dv) and m, l per (head, token). Non-finite cache contents or queries, or an fp32
/// overflow of the kernel on finite ones: the reference.
[[nodiscard]] MINIFLOAT_KERNEL_API attention_result decode_step(const kv_cache& c, std::span<const float> q, std::size_t q_heads,
                                                  std::size_t n, const decode_recipe& r, const attention_options& opt = {});

/// The reference forward: out (B, Hq, Tq, dv) rounded once to float32, and m, l per row.
[[nodiscard]] MINIFLOAT_KERNEL_API attention_result attention_reference(std::span<const float> q, std::span<const float> k,
                                                          std::span<const float> v, const attention_shape& s,
                                                          const attention_recipe& r, const attention_options& opt = {});

/// The reference backward: dQ, dK, dV (shapes of Q, K, V) for the upstream gradient d_out
/// (shape of out), rounded once to float32.
[[nodiscard]] MINIFLOAT_KERNEL_API attention_grads attention_backward_reference(std::span<const float> q, std::span<const float> k,
                                                                  std::span<const float> v, std::span<const float> d_out,
                                                                  const attention_shape& s, const attention_recipe& r,
                                                                  const attention_options& opt = {});

}  // namespace minifloat::attention
