#pragma once
// Everything the library offers, for programs that want one include: the value types
// (minifloat.hpp), MX blocks and scales, the SIMD bulk codecs, quantized tensors and the one
// quantize engine, GEMM, attention, scaling recipes, fidelity analysis and the tensor file
// readers. The Ascend backend (backend/ascend/) and fmt support (fmt.hpp) stay opt-in.
#include "minifloat.hpp"

#include "analysis/analysis.hpp"
#include "attention/attention.hpp"
#include "backend/cpu.hpp"
#include "formats/mx_block.hpp"
#include "formats/mx_scale.hpp"
#include "formats/packed.hpp"
#include "gemm/gemm.hpp"
#include "io/npy.hpp"
#include "io/safetensors.hpp"
#include "io/tensor_files.hpp"
#include "quant/mx_tensor.hpp"
#include "quant/quantized_tensor.hpp"
#include "quant/scheme.hpp"
#include "quant/scheme_string.hpp"
#include "recipes/recipes.hpp"
#include "simd/bulk.hpp"
#include "simd/mx.hpp"
#include "simd/threads.hpp"
