"""minifloat: low-precision number formats for numpy.

numpy dtypes for every format (one byte per element, ``.view(np.uint8)`` gives the codes)::

    hifloat8  float8_e4m3fn  float8_e5m2  float8_e8m0fnu
    float8_e4m3fnuz  float8_e5m2fnuz  float8_e4m3b11fnuz  float8_e3m4  float8_e4m3
    float6_e3m2fn  float6_e2m3fn  float4_e2m1fn  bfloat16      (float16 is numpy's own)

and the narrow integers of ml_dtypes, one value per byte: ``int2 int4 uint2 uint4`` (Python ints
wrap to the width, arithmetic wraps; ``iinfo`` gives their limits).

``x.astype(minifloat.float8_e4m3fn)`` uses the format's default conversion (its own nearest
rounding, non-saturating: the same results as ml_dtypes for the OCP formats); ``cast`` takes every
rounding mode and overflow policy; ``quantize`` / ``gemm`` / ``analyze`` cover scaled and MX
quantization, the quantized GEMM and the fidelity metrics. docs/python.md has the details.
"""
from ._minifloat import (  # noqa: F401
    __version__,
    hifloat8,
    float8_e4m3fn,
    float8_e5m2,
    float8_e8m0fnu,
    float6_e3m2fn,
    float6_e2m3fn,
    float4_e2m1fn,
    bfloat16,
    float8_e4m3fnuz,
    float8_e5m2fnuz,
    float8_e4m3b11fnuz,
    float8_e3m4,
    float8_e4m3,
    int2,
    int4,
    uint2,
    uint4,
    cast,
    pack_fp4,
    unpack_fp4,
    set_num_threads,
    get_num_threads,
    simd_isa,
    available_isas,
    QuantizedTensor,
    quantize,
    quantize_with_scales,
    dequantize,
    gemm,
    sqnr,
    zero_rate,
    error_metrics,
    measure,
    analyze,
    parse_scheme,
    default_schemes,
    amax_scaling,
    step_result,
    current_scaling,
    delayed_scaling,
)
from ._finfo import finfo  # noqa: F401
from ._iinfo import iinfo  # noqa: F401

import numpy as _np

#: numpy's float16, for symmetry with the other dtypes (minifloat's float16 *is* numpy's).
float16 = _np.float16

#: Every format with a numpy dtype, by name.
formats = (
    "hifloat8",
    "float8_e4m3fn",
    "float8_e5m2",
    "float8_e8m0fnu",
    "float6_e3m2fn",
    "float6_e2m3fn",
    "float4_e2m1fn",
    "bfloat16",
    "float16",
    "float8_e4m3fnuz",
    "float8_e5m2fnuz",
    "float8_e4m3b11fnuz",
    "float8_e3m4",
    "float8_e4m3",
)

#: The narrow integer dtypes (ml_dtypes' int2, int4, uint2, uint4), by name.
integer_formats = ("int2", "int4", "uint2", "uint4")

ROUNDING_MODES = ("nearest", "nearest_even", "nearest_away", "toward_zero", "upward", "downward", "stochastic")
OVERFLOW_POLICIES = ("non_saturating", "saturate", "saturate_nan_to_zero")

__all__ = [
    "hifloat8", "float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu", "float6_e3m2fn", "float6_e2m3fn",
    "float4_e2m1fn", "bfloat16", "float16", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e4m3b11fnuz",
    "float8_e3m4", "float8_e4m3", "int2", "int4", "uint2", "uint4", "finfo", "iinfo", "formats",
    "integer_formats", "cast", "pack_fp4", "unpack_fp4",
    "set_num_threads", "get_num_threads", "simd_isa", "available_isas", "QuantizedTensor",
    "quantize", "quantize_with_scales", "dequantize", "gemm", "sqnr", "zero_rate", "error_metrics",
    "measure", "analyze", "parse_scheme", "default_schemes", "amax_scaling", "step_result",
    "current_scaling", "delayed_scaling", "ROUNDING_MODES", "OVERFLOW_POLICIES",
]
