"""minifloat.finfo: numpy.finfo for the minifloat dtypes (numpy's own types pass through).

Every field comes from the C++ format definition (std::numeric_limits of the format, see
include/minifloat/formats/numeric_limits.hpp) and from decoding the format's codes, so it cannot
disagree with the conversions. The instances are also placed in numpy.finfo's cache, so
``np.finfo(minifloat.float8_e4m3fn)`` works too (as it does with ml_dtypes).

Conventions where numpy's definitions do not say:
  bits        the logical width (4 for float4_e2m1fn, 6 for the FP6 formats), not itemsize * 8
  nexp        exponent field width; for hifloat8 (tapered: its exponent field is 1 to 4 bits wide)
              5, the width of an IEEE exponent with the same normal range 2^-15 .. 2^15
  nmant       significand bits below the leading one at full precision (hifloat8: 3, around 1.0)
  min         the most negative finite value (float8_e8m0fnu, unsigned: its smallest value)
  precision   1 for the 8-bit formats, 0 for FP6 / FP4, numpy's int(-log10(eps)) otherwise (the
              values ml_dtypes reports); resolution = the dtype's value nearest 10**-precision
"""
import math

import numpy as np

from . import _minifloat as _ext

_FORMATS = (
    _ext.hifloat8,
    _ext.float8_e4m3fn,
    _ext.float8_e5m2,
    _ext.float8_e8m0fnu,
    _ext.float6_e3m2fn,
    _ext.float6_e2m3fn,
    _ext.float4_e2m1fn,
    _ext.bfloat16,
    _ext.float8_e4m3fnuz,
    _ext.float8_e5m2fnuz,
    _ext.float8_e4m3b11fnuz,
    _ext.float8_e3m4,
    _ext.float8_e4m3,
)


def _exponent_bits(name):
    return {
        "hifloat8": 5,
        "float8_e4m3fn": 4,
        "float8_e5m2": 5,
        "float8_e8m0fnu": 8,
        "float6_e3m2fn": 3,
        "float6_e2m3fn": 2,
        "float4_e2m1fn": 2,
        "bfloat16": 8,
        "float8_e4m3fnuz": 4,
        "float8_e5m2fnuz": 5,
        "float8_e4m3b11fnuz": 4,
        "float8_e3m4": 3,
        "float8_e4m3": 4,
    }[name]


class _MachArLike:
    """What np.finfo's smallest_normal / tiny properties read."""

    def __init__(self, smallest_normal, smallest_subnormal):
        self.smallest_normal = smallest_normal
        self.smallest_subnormal = smallest_subnormal


def _make(cls, scalar_type):
    lim = _ext._limits(scalar_type)
    dtype = np.dtype(scalar_type)
    codes = np.arange(1 << (8 * dtype.itemsize), dtype=np.uint16 if dtype.itemsize == 2 else np.uint8)
    values = codes.view(dtype).astype(np.float64)
    below_one = values[np.isfinite(values) & (values < 1.0)]
    epsneg = 1.0 - float(below_one.max())
    eps = float(lim["epsilon"])
    bits = int(lim["bits"])
    if bits == 8:
        precision = 1
    elif bits < 8:
        precision = 0
    else:
        precision = int(-math.log10(eps))

    def fmt(v):
        return "%12.4e" % float(v) if bits > 8 else "%6.2e" % float(v) if bits == 8 else str(float(v))

    obj = object.__new__(cls)
    obj.dtype = dtype
    obj.bits = bits
    obj.eps = scalar_type(eps)
    obj.epsneg = scalar_type(epsneg)
    obj.machep = int(round(math.log2(eps)))
    obj.negep = int(round(math.log2(epsneg)))
    obj.max = scalar_type(lim["max"])
    obj.min = scalar_type(lim["lowest"])
    obj.nexp = _exponent_bits(lim["name"])
    obj.iexp = obj.nexp
    obj.nmant = int(lim["digits"]) - 1
    obj.maxexp = int(lim["max_exponent"])
    obj.minexp = int(lim["min_exponent"]) - 1
    obj.precision = precision
    obj.resolution = scalar_type(10.0 ** -precision)
    obj._machar = _MachArLike(scalar_type(lim["min_normal"]), scalar_type(lim["denorm_min"]))
    obj.smallest_subnormal = obj._machar.smallest_subnormal
    obj._str_tiny = fmt(lim["min_normal"])
    obj._str_smallest_normal = fmt(lim["min_normal"])
    obj._str_smallest_subnormal = fmt(lim["denorm_min"])
    obj._str_max = fmt(lim["max"])
    obj._str_epsneg = fmt(epsneg)
    obj._str_eps = fmt(eps)
    obj._str_resolution = fmt(float(obj.resolution))
    return obj


class finfo(np.finfo):  # noqa: N801 (numpy's spelling)
    """Machine limits of a floating-point dtype: numpy.finfo, extended to the minifloat dtypes.

    Fields: bits, eps, epsneg, max, min, tiny = smallest_normal, smallest_subnormal, nmant, nexp,
    iexp, machep, negep, minexp, maxexp, precision, resolution (numpy's meanings; the module
    docstring lists the conventions for the formats numpy does not have)."""

    _minifloat_cache = {}

    def __new__(cls, dtype):
        if hasattr(dtype, "dtype") and isinstance(dtype.dtype, np.dtype):
            dtype = dtype.dtype  # an array (Array API: finfo(x))
        try:
            key = np.dtype(dtype)
        except TypeError:
            key = np.dtype(type(dtype))  # a scalar value
        hit = cls._minifloat_cache.get(key)
        if hit is not None:
            return hit
        return np.finfo(key)


for _t in _FORMATS:
    _obj = _make(finfo, _t)
    finfo._minifloat_cache[np.dtype(_t)] = _obj
    if hasattr(np.finfo, "_finfo_cache"):
        np.finfo._finfo_cache[np.dtype(_t)] = _obj
del _t, _obj
