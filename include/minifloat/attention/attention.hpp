#pragma once
// Quantized attention (umbrella): recipe.hpp (shapes, recipes, options), reference.hpp (the
// double-precision definition, forward and backward), forward.hpp (the fast tiled forward),
// backward.hpp (the fp32 backward), kv_cache.hpp (KV cache and decode step), merged_kv.hpp
// (one cache as K and V). docs/attention.md.
#include "backward.hpp"
#include "forward.hpp"
#include "kv_cache.hpp"
#include "merged_kv.hpp"
#include "recipe.hpp"
#include "reference.hpp"
