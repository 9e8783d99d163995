"""Type stubs of the minifloat package (the extension minifloat._minifloat and minifloat.finfo)."""
from typing import Any, ClassVar, Dict, List, Literal, Optional, Sequence, Tuple, Type, Union

import numpy as np
import numpy.typing as npt

__version__: str

Rounding = Literal["nearest", "nearest_even", "nearest_away", "toward_zero", "upward", "downward", "stochastic"]
Overflow = Literal["non_saturating", "saturate", "saturate_nan_to_zero"]
Isa = Literal["automatic", "scalar", "avx2", "avx512", "neon"]
Role = Literal["weight", "activation", "gradient"]
DTypeLike = Union[str, np.dtype, Type[np.generic]]
ArrayLike = npt.ArrayLike

ROUNDING_MODES: Tuple[str, ...]
OVERFLOW_POLICIES: Tuple[str, ...]
formats: Tuple[str, ...]
integer_formats: Tuple[str, ...]

class _minifloat_scalar(np.generic):
    """A scalar of a minifloat format: one code; converts from numbers with the default conversion."""

    dtype: ClassVar[np.dtype]
    def __init__(self, x: Union[float, int, str, np.generic, npt.NDArray[Any]] = ...) -> None: ...
    @property
    def code(self) -> int:
        """The code (bit pattern)."""
    @classmethod
    def from_code(cls, code: int) -> "_minifloat_scalar":
        """The scalar whose code is `code` (ValueError past the format's width)."""
    def __float__(self) -> float: ...
    def __int__(self) -> int: ...
    def __bool__(self) -> bool: ...
    def __add__(self, other: Any) -> Any: ...
    def __sub__(self, other: Any) -> Any: ...
    def __mul__(self, other: Any) -> Any: ...
    def __truediv__(self, other: Any) -> Any: ...
    def __neg__(self) -> "_minifloat_scalar": ...
    def __pos__(self) -> "_minifloat_scalar": ...
    def __abs__(self) -> "_minifloat_scalar": ...
    def __lt__(self, other: Any) -> Any: ...
    def __le__(self, other: Any) -> Any: ...
    def __gt__(self, other: Any) -> Any: ...
    def __ge__(self, other: Any) -> Any: ...

class hifloat8(_minifloat_scalar):
    """Huawei Ascend HiF8: tapered 8-bit float, max 2^15, denormals down to 2^-22, one NaN (0x80),
    +-Inf; default rounding to nearest, ties away from zero."""

class float8_e4m3fn(_minifloat_scalar):
    """OCP FP8 E4M3: max 448, no Inf, NaN 0x7F/0xFF; ties to even; overflow -> NaN."""

class float8_e5m2(_minifloat_scalar):
    """OCP FP8 E5M2: max 57344, IEEE-style Inf/NaN; ties to even; overflow -> Inf."""

class float8_e8m0fnu(_minifloat_scalar):
    """OCP MX scale: unsigned powers of two 2^-127 .. 2^127, NaN 0xFF, no zero."""

class float6_e3m2fn(_minifloat_scalar):
    """OCP MX FP6 E3M2 (one code per byte, low 6 bits): max 28, no Inf/NaN, saturating."""

class float6_e2m3fn(_minifloat_scalar):
    """OCP MX FP6 E2M3 (one code per byte, low 6 bits): max 7.5, no Inf/NaN, saturating."""

class float4_e2m1fn(_minifloat_scalar):
    """OCP MX FP4 E2M1 (one code per byte, low 4 bits; pack_fp4 for two per byte): max 6."""

class bfloat16(_minifloat_scalar):
    """bfloat16 (two bytes): the top half of a float32; ties to even, overflow -> Inf."""

class float8_e4m3fnuz(_minifloat_scalar):
    """FP8 E4M3 FNUZ (bias 8): max 240, one NaN (0x80), no -0, no Inf."""

class float8_e5m2fnuz(_minifloat_scalar):
    """FP8 E5M2 FNUZ (bias 16): max 57344, one NaN (0x80), no -0, no Inf."""

class float8_e4m3b11fnuz(_minifloat_scalar):
    """FP8 E4M3 with bias 11, FNUZ: max 30, one NaN (0x80), no -0, no Inf."""

class float8_e3m4(_minifloat_scalar):
    """IEEE-style FP8 E3M4 (bias 3): max 15.5, Inf and NaN."""

class float8_e4m3(_minifloat_scalar):
    """IEEE-style FP8 E4M3 (bias 7): max 240, Inf and NaN."""

float16 = np.float16

class _narrow_int_scalar(np.generic):
    """A narrow integer (ml_dtypes semantics): one value per byte in the low bits. Python ints and
    strings wrap to the width; floats truncate, NaN raises ValueError, out of range OverflowError;
    arithmetic wraps; // and % by zero raise ZeroDivisionError."""

    dtype: ClassVar[np.dtype]
    def __init__(self, x: Union[int, float, str, bytes, np.generic, npt.NDArray[Any]] = ...) -> None: ...
    def __int__(self) -> int: ...
    def __index__(self) -> int: ...
    def __float__(self) -> float: ...
    def __bool__(self) -> bool: ...
    def __hash__(self) -> int: ...
    def __add__(self, other: Any) -> Any: ...
    def __sub__(self, other: Any) -> Any: ...
    def __mul__(self, other: Any) -> Any: ...
    def __floordiv__(self, other: Any) -> Any: ...
    def __mod__(self, other: Any) -> Any: ...
    def __neg__(self) -> "_narrow_int_scalar": ...
    def __pos__(self) -> "_narrow_int_scalar": ...
    def __abs__(self) -> "_narrow_int_scalar": ...
    def __lt__(self, other: Any) -> Any: ...
    def __le__(self, other: Any) -> Any: ...
    def __gt__(self, other: Any) -> Any: ...
    def __ge__(self, other: Any) -> Any: ...

class int2(_narrow_int_scalar):
    """2-bit signed integer, -2 .. 1."""

class int4(_narrow_int_scalar):
    """4-bit signed integer, -8 .. 7."""

class uint2(_narrow_int_scalar):
    """2-bit unsigned integer, 0 .. 3."""

class uint4(_narrow_int_scalar):
    """4-bit unsigned integer, 0 .. 15."""

class iinfo:
    """numpy.iinfo extended to int2, int4, uint2, uint4 (numpy's own integer types pass through):
    kind ('i' or 'u'), bits (the logical width), min, max, dtype."""

    kind: str
    bits: int
    min: int
    max: int
    dtype: np.dtype
    def __init__(self, int_type: Any) -> None: ...

class finfo(np.finfo):
    """numpy.finfo extended to the minifloat dtypes: bits, eps, epsneg, max, min, tiny,
    smallest_normal, smallest_subnormal, nmant, nexp, iexp, machep, negep, minexp, maxexp,
    precision, resolution."""

    def __new__(cls, dtype: Any) -> "finfo": ...

def cast(
    x: ArrayLike,
    dtype: DTypeLike,
    round: Rounding = "nearest",
    overflow: Overflow = "non_saturating",
    seed: int = 0,
    *,
    isa: Isa = "automatic",
    threads: int = 0,
) -> npt.NDArray[Any]:
    """Rounds x (float32, float64, float16, bfloat16; integers and other minifloat dtypes exactly
    widened first) to `dtype` under the rounding mode and overflow policy; element i of a stochastic
    cast uses random_bits(seed, i). Returns an array of `dtype` with x's shape."""

def pack_fp4(codes: ArrayLike) -> npt.NDArray[np.uint8]:
    """float4_e2m1fn codes (..., n) -> (..., ceil(n / 2)) bytes, element 2i in the low nibble."""

def unpack_fp4(packed: ArrayLike, n: int) -> npt.NDArray[Any]:
    """(..., ceil(n / 2)) bytes -> (..., n) float4_e2m1fn codes."""

def set_num_threads(n: int) -> None:
    """Threads of the bulk kernels for arrays of >= 256 Ki elements (0: all hardware threads)."""

def get_num_threads() -> int: ...
def simd_isa() -> str:
    """The ISA level the kernels run at (MINIFLOAT_MAX_ISA caps it)."""

def available_isas() -> List[str]: ...

class QuantizedTensor:
    """Codes + scales + scheme. codes: uint8 (FP4 packed two per byte, element 2i low nibble; uint16
    for 16-bit formats), the input's shape with the last axis in bytes; scales: float32 grid, or
    float8_e8m0fnu for MX schemes. Read-only views of the tensor's own buffers."""

    @property
    def codes(self) -> npt.NDArray[Any]: ...
    @property
    def scales(self) -> npt.NDArray[Any]: ...
    @property
    def scheme(self) -> str:
        """Short name, e.g. 'mxfp8_e4m3', 'float8_e4m3fn/block128'."""
    @property
    def scheme_string(self) -> str:
        """Long form, e.g. 'float8_e4m3fn/mx'."""
    @property
    def format(self) -> str: ...
    @property
    def dtype(self) -> np.dtype: ...
    @property
    def granularity(self) -> str: ...
    @property
    def shape(self) -> Tuple[int, ...]: ...
    @property
    def rows(self) -> int: ...
    @property
    def cols(self) -> int: ...
    @property
    def nbytes(self) -> int: ...
    def dequantize(self) -> npt.NDArray[np.float32]:
        """decode(code) * scale (one float32 multiply per element), in the input's shape."""
    @staticmethod
    def from_parts(scheme: str, shape: Sequence[int], codes: ArrayLike, scales: ArrayLike) -> "QuantizedTensor":
        """Adopts codes and scales laid out as .codes / .scales are (ValueError if a size is off)."""

def quantize(x: ArrayLike, scheme: str, *, round: Optional[Rounding] = None, seed: int = 0,
             flatten: Literal["last", "first"] = "last") -> QuantizedTensor:
    """Quantizes x (read as float32; N-D as (prod(leading), last), or (first, prod(rest)) with
    flatten='first') under a scheme string of the CLI: 'mxfp8_e4m3', 'mxfp4/axis=0',
    'hifloat8/tensor', 'float8_e4m3fn/block128', ... Saturating."""

def quantize_with_scales(x: ArrayLike, scheme: str, scales: ArrayLike, *,
                         flatten: Literal["last", "first"] = "last") -> QuantizedTensor:
    """Static scaling with the given fp32 scale grid (not for MX)."""

def dequantize(q: QuantizedTensor) -> npt.NDArray[np.float32]: ...
def gemm(
    a: QuantizedTensor,
    b: QuantizedTensor,
    *,
    order: Literal["exact", "fp32_blocks", "fast"] = "fast",
    layout: Literal["nk", "kn"] = "nk",
    bias: Optional[ArrayLike] = None,
    out_dtype: Optional[DTypeLike] = None,
    threads: int = 0,
    isa: Isa = "automatic",
) -> npt.NDArray[Any]:
    """C (M, N) = A (M, K) @ B (+ bias); B stored (N, K) (layout 'nk') or (K, N) ('kn'). 'fast' is
    bit-identical to 'fp32_blocks'; 'exact' rounds the exact sum once. float32 or bfloat16 output."""

def sqnr(x: ArrayLike, y: Union[ArrayLike, QuantizedTensor]) -> float:
    """10 log10(sum x^2 / sum (x - y)^2) dB over the finite x."""

def zero_rate(x: ArrayLike, y: Union[ArrayLike, QuantizedTensor]) -> float: ...
def error_metrics(x: ArrayLike, y: Union[ArrayLike, QuantizedTensor]) -> Dict[str, Any]: ...
def measure(x: ArrayLike, q: QuantizedTensor) -> Dict[str, Any]:
    """Every metric of `minifloat analyze` (precision classes, scaled exponents included)."""

def analyze(x: ArrayLike, schemes: Optional[Sequence[str]] = None, *,
            flatten: Optional[Literal["last", "first"]] = None) -> Dict[str, Dict[str, Any]]:
    """{scheme name: metrics dict} for each scheme (default: the CLI's default set), as `minifloat
    analyze --json`; flatten None is the CLI's rule (4-D by the first axis, others by the last)."""

def parse_scheme(scheme: str) -> Dict[str, Any]: ...
def default_schemes() -> List[str]: ...

class amax_scaling:
    """amax -> fp32 scale s (x ~ s * decode(q)): pow2 (the HiF8 guard rule) or max (FP8, with a margin)."""

    @staticmethod
    def hif8_guard(n_guard: int = 11) -> "amax_scaling": ...
    @staticmethod
    def hif8_role(role: Role) -> "amax_scaling": ...
    @staticmethod
    def fp8_max(format: DTypeLike, margin: int = 0) -> "amax_scaling": ...
    @staticmethod
    def fp8_hybrid(role: Role, margin: int = 0) -> "amax_scaling": ...
    @staticmethod
    def max_to(format: DTypeLike, dst_max: float) -> "amax_scaling": ...
    @staticmethod
    def mindspeed_hif8(role: Role) -> "amax_scaling": ...
    @property
    def format(self) -> str: ...
    @property
    def rule(self) -> str: ...
    n_guard: int
    margin: int
    dst_max: float
    @property
    def target(self) -> int: ...
    def scale(self, amax: float) -> float: ...
    @property
    def scheme(self) -> str: ...
    def describe(self) -> str: ...

class step_result:
    scale: float
    amax: float
    nonfinite: int
    overflow: int
    skip: bool
    current: bool
    updated: bool
    def as_dict(self) -> Dict[str, Any]: ...

class current_scaling:
    def __init__(self, rule: amax_scaling = ...) -> None: ...
    def step(self, x: Optional[ArrayLike] = None, *, amax: Optional[float] = None, nonfinite: int = 0) -> step_result: ...
    def skip_step(self) -> None: ...
    @property
    def rule(self) -> amax_scaling: ...
    @property
    def scheme(self) -> str: ...
    @property
    def counters(self) -> Dict[str, int]: ...
    def quantize(self, x: ArrayLike, result: Union[step_result, float]) -> QuantizedTensor: ...
    def fake_quantize(self, x: ArrayLike, result: Union[step_result, float]) -> npt.NDArray[np.float32]: ...

class delayed_scaling:
    def __init__(self, history_len: int = 128, interval: int = 10, reduction: Literal["max", "most_recent"] = "max",
                 scaling: amax_scaling = ...) -> None: ...
    @staticmethod
    def hif8(role: Role) -> "delayed_scaling": ...
    @staticmethod
    def fp8(role: Role, margin: int = 0) -> "delayed_scaling": ...
    def step(self, x: Optional[ArrayLike] = None, *, amax: Optional[float] = None, nonfinite: int = 0) -> step_result: ...
    def skip_step(self) -> None: ...
    def reset(self) -> None: ...
    def reduced_amax(self) -> float: ...
    @property
    def history(self) -> List[float]: ...
    @property
    def scale(self) -> float: ...
    @property
    def next_is_current(self) -> bool: ...
    @property
    def steps_in_interval(self) -> int: ...
    @property
    def scheme(self) -> str: ...
    def describe(self) -> str: ...
    @property
    def counters(self) -> Dict[str, int]: ...
    def quantize(self, x: ArrayLike, result: Union[step_result, float]) -> QuantizedTensor: ...
    def fake_quantize(self, x: ArrayLike, result: Union[step_result, float]) -> npt.NDArray[np.float32]: ...
