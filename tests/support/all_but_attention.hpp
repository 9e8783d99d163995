#pragma once
// minifloat/all.hpp without attention/: the tests that do not exercise attention include this, so
// a change to an attention header recompiles only the attention tests (in every CI preset) and not
// the codec, GEMM and recipe tests too. attention/ sits above quant/ and nothing here needs it.
#include <minifloat/minifloat.hpp>

#include <minifloat/analysis/analysis.hpp>
#include <minifloat/backend/cpu.hpp>
#include <minifloat/formats/mx_block.hpp>
#include <minifloat/formats/mx_scale.hpp>
#include <minifloat/formats/packed.hpp>
#include <minifloat/gemm/gemm.hpp>
#include <minifloat/io/npy.hpp>
#include <minifloat/io/safetensors.hpp>
#include <minifloat/io/tensor_files.hpp>
#include <minifloat/quant/mx_tensor.hpp>
#include <minifloat/quant/quantized_tensor.hpp>
#include <minifloat/quant/scheme.hpp>
#include <minifloat/quant/scheme_string.hpp>
#include <minifloat/recipes/recipes.hpp>
#include <minifloat/simd/bulk.hpp>
#include <minifloat/simd/mx.hpp>
#include <minifloat/simd/threads.hpp>
