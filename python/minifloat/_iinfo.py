"""minifloat.iinfo: numpy.iinfo for the narrow integer dtypes (numpy's own integers pass through).

The narrow integers (int2, int4, uint2, uint4) are numpy user dtypes of kind 'V' (as in ml_dtypes),
which numpy.iinfo refuses; this class answers for them and delegates every other type to
numpy.iinfo, so ``minifloat.iinfo`` works wherever ``ml_dtypes.iinfo`` does. ``bits`` is the
logical width (4 for int4), not itemsize * 8.
"""
import numpy as np

from . import _minifloat as _ext

# name -> (kind, bits); min and max follow from them.
_NARROW = {"int2": ("i", 2), "int4": ("i", 4), "uint2": ("u", 2), "uint4": ("u", 4)}
_DTYPES = {np.dtype(getattr(_ext, name)): spec for name, spec in _NARROW.items()}


class iinfo:  # noqa: N801 (numpy's spelling)
    """Machine limits of an integer dtype: kind ('i' or 'u'), bits, min, max, dtype."""

    kind: str
    bits: int
    min: int
    max: int
    dtype: np.dtype

    def __init__(self, int_type):
        # An array (or anything with a dtype) stands for its dtype, as the array API asks.
        if not isinstance(int_type, np.dtype) and isinstance(getattr(int_type, "dtype", None), np.dtype):
            int_type = int_type.dtype
        try:
            dtype = np.dtype(int_type)
        except TypeError:
            dtype = None
        spec = _DTYPES.get(dtype) if dtype is not None else None
        if spec is None:
            ii = np.iinfo(int_type)  # ValueError / TypeError for what is not an integer type
            self.dtype, self.kind, self.bits, self.min, self.max = ii.dtype, ii.kind, ii.bits, int(ii.min), int(ii.max)
            return
        self.dtype = dtype
        self.kind, self.bits = spec
        if self.kind == "i":
            self.min, self.max = -(1 << (self.bits - 1)), (1 << (self.bits - 1)) - 1
        else:
            self.min, self.max = 0, (1 << self.bits) - 1

    def __repr__(self):
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"

    __str__ = __repr__
