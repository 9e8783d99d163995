#pragma once
// Compiler checks every header relies on.
#include <version>

#if !defined(__cplusplus) || __cplusplus < 202002L
#error "minifloat needs C++20"
#endif
#if !defined(__cpp_lib_bit_cast)
#error "minifloat needs std::bit_cast (<bit>, C++20)"
#endif

// Compiled-kernels mode (docs/architecture.md#compiled-kernels). Header-only is the default:
// every entry point is an inline function whose definition each translation unit sees. With
// MINIFLOAT_EXTERN_KERNELS=1 (the interface definition of the minifloat::kernels library, CMake
// option MINIFLOAT_BUILD_KERNELS) the public headers declare the dispatched entry points (the
// quantize engine, the bulk codecs, GEMM/GEMV, attention forward/decode, the comm codec) and
// include none of the kernels behind them; the library compiles each module's entry points
// once, in the source that defines MINIFLOAT_BUILDING_KERNELS to that module's number. Both
// modes run the same code.
//   MINIFLOAT_KERNEL_API                 what an entry point's declaration and definition start with
//   MINIFLOAT_DEFINE_KERNELS(module)     1 where that module's entry points are defined
#define MINIFLOAT_KERNELS_BULK 1       // simd/bulk.hpp, simd/bulk_dispatch.hpp
#define MINIFLOAT_KERNELS_QUANT 2      // quant/quantized_tensor.hpp, quant/quantize_engine.hpp
#define MINIFLOAT_KERNELS_GEMM 3       // gemm/entry_points.hpp and the files it names
#define MINIFLOAT_KERNELS_ATTENTION 4  // attention/entry_points.hpp and the files it names
#define MINIFLOAT_KERNELS_COMM 5       // comm/codec.hpp
#ifndef MINIFLOAT_EXTERN_KERNELS
#define MINIFLOAT_EXTERN_KERNELS 0
#endif
#if MINIFLOAT_EXTERN_KERNELS
#define MINIFLOAT_KERNEL_API
#ifdef MINIFLOAT_BUILDING_KERNELS
#define MINIFLOAT_DEFINE_KERNELS(module) (MINIFLOAT_BUILDING_KERNELS == (module))
#else
#define MINIFLOAT_DEFINE_KERNELS(module) 0
#endif
#else
#define MINIFLOAT_KERNEL_API inline
#define MINIFLOAT_DEFINE_KERNELS(module) 1
#endif
