"""The narrow integer dtypes int2, int4, uint2, uint4 with ml_dtypes' semantics, checked against
Python-int oracles: construction and wrapping, every cast pair (numpy's numeric types incl. complex,
and every minifloat float dtype), the ufunc loops against int arithmetic wrapped to the width,
np.can_cast against ml_dtypes' table, printing, hashing, iinfo, and reference counts."""
import math
import operator
import pickle
import warnings

import numpy as np
import pytest

import minifloat as mf

ComplexWarning = getattr(getattr(np, "exceptions", np), "ComplexWarning")

# (type, bits, signed)
SPECS = {"int2": (2, True), "int4": (4, True), "uint2": (2, False), "uint4": (4, False)}
INTS = [getattr(mf, n) for n in SPECS]
INT_IDS = list(SPECS)


def spec(t):
    return SPECS[t.__name__]


def lo_hi(t):
    bits, signed = spec(t)
    return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)


def values(t):
    lo, hi = lo_hi(t)
    return list(range(lo, hi + 1))


def wrap(t, v):
    """The oracle: the low `bits` bits of v, as a two's complement or unsigned number."""
    bits, signed = spec(t)
    v &= (1 << bits) - 1
    return v - (1 << bits) if signed and v >= 1 << (bits - 1) else v


def float_oracle(t, f):
    """An array cast from a float: NaN, +-Inf and values outside int32 give 0; else truncate, wrap."""
    if not math.isfinite(f) or f < -(2**31) or f > 2**31 - 1:
        return 0
    return wrap(t, int(f))


# Every float dtype the package exposes (float16 is numpy's own and a numpy type below).
FLOATS = [getattr(mf, n) for n in mf.formats if n != "float16"]
FLOAT_IDS = [f.__name__ for f in FLOATS]


def has_float_cast(t, f):
    """ml_dtypes' list: no cast to the scale format E8M0 (no zero), none between the 4-bit integers
    and FP6 E2M3 (+-7.5 misses -8 and 8..15)."""
    if f.__name__ == "float8_e8m0fnu":
        return False
    return not (f.__name__ == "float6_e2m3fn" and spec(t)[0] == 4)


# --- scalars -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("t", INTS, ids=INT_IDS)
def test_construction_wraps_python_ints_and_strings(t):
    bits, _ = spec(t)
    for v in range(-40, 40):
        assert int(t(v)) == wrap(t, v)
        assert int(t(str(v))) == wrap(t, v)
        assert int(t(str(v).encode())) == wrap(t, v)
    assert int(t(hex(5))) == wrap(t, 5) and int(t("0b11")) == wrap(t, 3)
    assert int(t(True)) == 1 and int(t()) == 0
    assert int(t(1 << 40)) == 0 and int(t((1 << 40) + 1)) == 1
    assert isinstance(t(3), t) and t(t(1)) == t(1)


def test_construction_examples():
    assert mf.int4(9) == mf.int4(-7) and int(mf.int4(9)) == -7
    assert int(mf.uint4(-1)) == 15 and int(mf.int2(2)) == -2 and int(mf.uint2(5)) == 1
    assert int(mf.int4("0x1f")) == -1


@pytest.mark.parametrize("t", INTS, ids=INT_IDS)
def test_construction_from_floats_truncates_and_checks_the_range(t):
    lo, hi = lo_hi(t)
    for f in [lo - 0.0, lo + 0.7, -0.9, -0.0, 0.0, 0.5, hi - 0.5, float(hi)]:
        if not lo <= f <= hi:  # ml_dtypes checks the float itself: uint2(-0.9) is out of range
            with pytest.raises(OverflowError):
                t(f)
            continue
        assert int(t(f)) == int(f), f
        for np_float in (np.float16, np.float32, np.float64, np.longdouble):
            assert int(t(np_float(f))) == int(np_float(f)), (np_float, f)
    with pytest.raises(ValueError):
        t(float("nan"))
    for bad in [float("inf"), float("-inf"), 1e10, hi + 0.5, lo - 0.5]:
        with pytest.raises(OverflowError):
            t(bad)
    for bad in [np.float32("nan"), np.float16("inf"), np.float32(hi + 1)]:
        with pytest.raises(OverflowError):
            t(bad)
    with pytest.raises(ValueError):
        np.array(np.nan, dtype=t)
    with pytest.raises(OverflowError):
        np.array(np.inf, dtype=t)
    with pytest.raises(OverflowError):
        np.array(1e10, dtype=t)


@pytest.mark.parametrize("t", INTS, ids=INT_IDS)
def test_construction_from_numpy_integers_checks_the_range(t):
    lo, hi = lo_hi(t)
    for it in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint64, np.longlong):
        for v in values(t):
            if v >= 0 or np.issubdtype(it, np.signedinteger):
                assert int(t(it(v))) == v
        with pytest.raises(OverflowError):
            t(it(hi + 1))
    with pytest.raises(OverflowError):
        t(np.uint64(2**64 - 1))
    assert int(t(np.bool_(True))) == 1
    other = mf.uint2(1) if t is not mf.uint2 else mf.int2(1)
    assert int(t(other)) == 1


@pytest.mark.parametrize("t", INTS, ids=INT_IDS)
def test_construction_errors(t):
    for bad, exc in [(1j, TypeError), (np.complex64(1), TypeError), ("x", ValueError), ("1.5", ValueError),
                     (None, TypeError), ([1], TypeError), (b"\xff", ValueError)]:
        with pytest.raises(exc):
            t(bad)
    with pytest.raises(TypeError):
        t(1, 2)
    with pytest.raises(TypeError):
        t(x=1)


@pytest.mark.parametrize("t", INTS, ids=INT_IDS)
def test_construction_from_arrays(t):
    a = t(np.array([1.7, 1.0, -0.5, 9.0]))  # an array cast: truncates and wraps, never raises
    assert isinstance(a, np.ndarray) and a.dtype == np.dtype(t) and a.tolist() == [1, 1, 0, wrap(t, 9)]
    s = t(np.array(1.0))  # 0-d: a scalar
    assert isinstance(s, t) and int(s) == 1


@pytest.mark.parametrize("t", INTS, ids=INT_IDS)
def test_str_repr_hash_item_format_pickle(t):
    for v in values(t):
        x = t(v)
        assert str(x) == str(v) and repr(x) == str(v)
        assert hash(x) == hash(v)
        assert x.item() == v and type(x.item()) is int
        assert int(x) == v and float(x) == float(v) and operator.index(x) == v and bool(x) == (v != 0)
        assert format(x, "03d") == format(v, "03d")
        y = pickle.loads(pickle.dumps(x))
        assert type(y) is t and y == x
    assert {t(1): "a"}[1] == "a" and t(1) in {1}
    assert t.__module__ == "minifloat" and t.__name__ in SPECS
    assert (t(1) == "1") is False and (t(1) != None) is True  # noqa: E711


@pytest.mark.parametrize("t", INTS, ids=INT_IDS)
def test_scalar_comparisons(t):
    for a in values(t):
        for b in values(t):
            for op in (operator.lt, operator.le, operator.eq, operator.ne, operator.gt, operator.ge):
                r = op(t(a), t(b))
                assert isinstance(r, np.bool_) and bool(r) == op(a, b)


@pytest.mark.parametrize("t", INTS, ids=INT_IDS)
def test_scalar_arithmetic_wraps(t):
    for a in values(t):
        for op in (operator.neg, operator.pos, operator.abs):
            r = op(t(a))
            assert isinstance(r, t) and int(r) == wrap(t, op(a))
        for b in values(t):
            for op in (operator.add, operator.sub, operator.mul, operator.floordiv, operator.mod):
                if b == 0 and op in (operator.floordiv, operator.mod):
                    with pytest.raises(ZeroDivisionError):
                        op(t(a), t(b))
                    continue
                r = op(t(a), t(b))
                assert isinstance(r, t) and int(r) == wrap(t, op(a, b)), (a, b, op)
    assert int(mf.int4(7) + mf.int4(1)) == -8 and int(mf.int4(-8) // mf.int4(-1)) == -8


# --- dtypes and arrays -------------------------------------------------------------------------------


@pytest.mark.parametrize("t", INTS, ids=INT_IDS)
def test_dtype(t):
    d = np.dtype(t)
    assert d is np.dtype(t.__name__) and d is t.dtype and d.type is t
    assert d.name == t.__name__ and repr(d) == f"dtype({t.__name__})"
    assert d.itemsize == 1 and d.kind == "V"
    assert d.char == {"int2": "c", "uint2": "C", "int4": "a", "uint4": "A"}[t.__name__]  # ml_dtypes' characters
    assert hash(d) == hash(np.dtype(t.__name__))
    assert np.issubdtype(t, np.generic)


@pytest.mark.parametrize("t", INTS, ids=INT_IDS)
def test_array_storage_printing_and_methods(t):
    vs = values(t)
    x = np.array(vs, dtype=t)
    assert x.tolist() == vs
    bits, _ = spec(t)
    assert x.view(np.uint8).tolist() == [v & ((1 << bits) - 1) for v in vs]  # upper bits zero
    assert str(x) == "[" + " ".join(map(str, vs)) + "]"
    assert repr(x) == f"array([{', '.join(map(str, vs))}], dtype={t.__name__})"
    # upper bits of a byte are ignored
    assert np.array([0xF0 | 1], np.uint8).view(t).tolist() == [1]
    assert x[1] == t(vs[1]) and isinstance(x[1], t)
    assert np.array([40, -40], dtype=t).tolist() == [wrap(t, 40), wrap(t, -40)]
    assert np.sort(x[::-1]).tolist() == vs and int(np.argmax(x)) == len(vs) - 1 and int(np.argmin(x)) == 0
    assert np.nonzero(x)[0].tolist() == [i for i, v in enumerate(vs) if v != 0]
    assert np.arange(vs[0], vs[-1] + 1, dtype=t).tolist() == vs
    assert int(np.dot(x, x)) == wrap(t, sum(v * v for v in vs))
    assert pickle.loads(pickle.dumps(x)).tolist() == vs and pickle.loads(pickle.dumps(x)).dtype == x.dtype
    if t is mf.int2:
        assert str(np.array([[-2, 1, 0, 1]], dtype=t)) == "[[-2 1 0 1]]"
    else:
        assert str(np.array([[1, 2, 3]], dtype=t)) == "[[1 2 3]]"


# --- casts -------------------------------------------------------------------------------------------

INT_TYPES = [np.int8, np.int16, np.int32, np.int64, np.longlong, np.uint8, np.uint16, np.uint32, np.uint64,
             np.ulonglong]
FLOAT_TYPES = [np.float16, np.float32, np.float64, np.longdouble]
COMPLEX_TYPES = [np.complex64, np.complex128, np.clongdouble]
NUMPY_TYPES = [np.bool_] + INT_TYPES + FLOAT_TYPES + COMPLEX_TYPES


@pytest.mark.parametrize("t", INTS, ids=INT_IDS)
@pytest.mark.parametrize("other", NUMPY_TYPES, ids=[np.dtype(n).name for n in NUMPY_TYPES])
def test_cast_to_numpy_types(t, other):
    vs = values(t)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = np.array(vs, dtype=t).astype(other)
    assert got.dtype == np.dtype(other)
    want = np.array(vs, dtype=np.int64).astype(other)  # numpy's own cast of the exact values
    assert got.tolist() == want.tolist()


@pytest.mark.parametrize("t", INTS, ids=INT_IDS)
@pytest.mark.parametrize("other", [np.bool_] + INT_TYPES, ids=[np.dtype(n).name for n in [np.bool_] + INT_TYPES])
def test_cast_from_numpy_integers_keeps_the_low_bits(t, other):
    info = np.iinfo(other) if other is not np.bool_ else None
    raw = [-(2**63), -1000, -129, -17, -9, -8, -3, -1, 0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 255, 256, 1000, 2**63 - 1,
           2**64 - 1]
    src = [v for v in raw if info is None and v in (0, 1) or info is not None and info.min <= v <= info.max]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = np.array(src, dtype=other).astype(t)
    assert got.dtype == np.dtype(t)
    assert got.tolist() == [wrap(t, v) for v in src]


FLOAT_INPUTS = [-1e10, -3e9, -300.0, -9.7, -8.5, -8.0, -2.5, -0.5, -0.0, 0.0, 0.7, 1.5, 7.9, 8.0, 15.5, 16.0,
                300.0, 3e9, 1e10, math.inf, -math.inf, math.nan]


@pytest.mark.parametrize("t", INTS, ids=INT_IDS)
@pytest.mark.parametrize("other", FLOAT_TYPES, ids=[np.dtype(n).name for n in FLOAT_TYPES])
def test_cast_from_numpy_floats_truncates_without_warnings(t, other):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # float16 overflows while building the input
        src = np.array(FLOAT_INPUTS, dtype=other)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "invalid value" from NaN / Inf / out of range
        got = src.astype(t)
    assert got.tolist() == [float_oracle(t, float(v)) for v in src]


@pytest.mark.parametrize("t", INTS, ids=INT_IDS)
@pytest.mark.parametrize("other", COMPLEX_TYPES, ids=[np.dtype(n).name for n in COMPLEX_TYPES])
def test_cast_from_complex_takes_the_real_part_with_a_warning(t, other):
    src = np.array([complex(v, 1.5) for v in FLOAT_INPUTS[:-3]], dtype=other)
    with pytest.warns(ComplexWarning):
        got = src.astype(t)
    assert got.tolist() == [float_oracle(t, float(v.real)) for v in src]


@pytest.mark.parametrize("t", INTS, ids=INT_IDS)
@pytest.mark.parametrize("f", FLOATS, ids=FLOAT_IDS)
def test_casts_with_minifloat_floats(t, f):
    vs = values(t)
    if not has_float_cast(t, f):
        with pytest.raises(TypeError):
            np.array(vs, dtype=t).astype(f)
        with pytest.raises(TypeError):
            np.zeros(2, dtype=f).astype(t)
        assert not np.can_cast(t, f)
        return
    # integer -> float: the float dtype's own conversion of the exact value
    got = np.array(vs, dtype=t).astype(f)
    want = np.array(vs, dtype=np.float64).astype(f)
    assert got.dtype == np.dtype(f)
    width = np.dtype(f).itemsize
    code = np.uint8 if width == 1 else np.uint16
    assert got.view(code).tolist() == want.view(code).tolist()
    # float -> integer: every code of a one-byte format (a sample of bfloat16's), like a float cast
    codes = np.arange(256, dtype=np.uint8) if width == 1 else np.arange(0, 65536, 97, dtype=np.uint16)
    x = codes.view(f)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = x.astype(t)
    assert got.tolist() == [float_oracle(t, v) for v in x.astype(np.float64).tolist()]
    assert np.can_cast(t, f)


def test_widening_casts_between_narrow_integers():
    assert np.array(values(mf.int2), mf.int2).astype(mf.int4).tolist() == values(mf.int2)
    assert np.array(values(mf.uint2), mf.uint2).astype(mf.uint4).tolist() == values(mf.uint2)
    for a, b in [(mf.int4, mf.int2), (mf.uint4, mf.uint2), (mf.int4, mf.uint4), (mf.uint2, mf.int2)]:
        with pytest.raises(TypeError):
            np.zeros(1, a).astype(b)


SAFE_TARGETS = [np.int8, np.int16, np.int32, np.int64, np.float16, np.float32, np.float64, np.longdouble,
                np.complex64, np.complex128, np.clongdouble]
UNSIGNED_TARGETS = [np.uint8, np.uint16, np.uint32, np.uint64]
CAN_CAST_OTHERS = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
                   np.intc, np.int_, np.longlong, np.uintc, np.ulonglong, np.float16, np.float32, np.float64,
                   np.longdouble, np.complex64, np.complex128, np.clongdouble] + INTS


def test_can_cast_table_is_ml_dtypes():
    # ml_dtypes registers the sized typenums (int64 is C long here), so np.longlong / np.ulonglong
    # are not safe targets: the same table as ml_dtypes' own test.
    for a in INTS:
        bits, signed = spec(a)
        for b in CAN_CAST_OTHERS:
            want = (b is a or any(b is s for s in SAFE_TARGETS) or (not signed and any(b is s for s in UNSIGNED_TARGETS))
                    or (a, b) in [(mf.int2, mf.int4), (mf.uint2, mf.uint4)])
            assert np.can_cast(a, b, casting="safe") == want, (a, b)
            if b is not a and b not in INTS:
                assert np.can_cast(b, a, casting="safe") == (b is np.bool_), (b, a)


# --- ufuncs ------------------------------------------------------------------------------------------


def floordiv0(a, b):
    return 0 if b == 0 else a // b


def mod0(a, b):
    return 0 if b == 0 else a % b


def lshift(a, b, bits):
    return a << b if 0 <= b < bits else 0


def rshift(a, b, bits):
    return a >> b if 0 <= b < bits else (-1 if a < 0 else 0)


# ml_dtypes' five loops: the result keeps the narrow type and wraps.
BINARY = {
    np.add: operator.add, np.subtract: operator.sub, np.multiply: operator.mul, np.floor_divide: floordiv0,
    np.remainder: mod0,
}
# Every other integer ufunc goes through numpy's promotion to a wider integer type, as in ml_dtypes:
# exact Python-int results (4-bit values never wrap in 8 bits for these).
PROMOTED_BINARY = {np.maximum: max, np.minimum: min, np.fmax: max, np.fmin: min, np.bitwise_and: operator.and_,
                   np.bitwise_or: operator.or_, np.bitwise_xor: operator.xor}
UNARY = {np.negative: operator.neg, np.positive: operator.pos, np.absolute: abs,
         np.sign: lambda a: (a > 0) - (a < 0), np.invert: operator.invert, np.square: lambda a: a * a,
         np.conjugate: lambda a: a}
COMPARE = {np.equal: operator.eq, np.not_equal: operator.ne, np.less: operator.lt, np.less_equal: operator.le,
           np.greater: operator.gt, np.greater_equal: operator.ge, np.logical_and: lambda a, b: bool(a and b),
           np.logical_or: lambda a, b: bool(a or b), np.logical_xor: lambda a, b: bool(a) != bool(b)}


def grid(t):
    vs = values(t)
    a = np.array([[v] * len(vs) for v in vs], dtype=t)
    return vs, a, a.T.copy()


@pytest.mark.parametrize("t", INTS, ids=INT_IDS)
@pytest.mark.parametrize("ufunc", list(BINARY), ids=[u.__name__ for u in BINARY])
def test_binary_ufuncs_wrap_like_int_arithmetic(t, ufunc):
    vs, a, b = grid(t)
    with np.errstate(divide="ignore"):
        got = ufunc(a, b)
        strided = ufunc(a[:, ::2], b[:, ::2])
    assert got.dtype == np.dtype(t)
    assert got.tolist() == [[wrap(t, BINARY[ufunc](x, y)) for y in vs] for x in vs]
    assert strided.tolist() == [row[::2] for row in got.tolist()]
    if ufunc in (np.add, np.multiply):
        r = vs[0]
        for v in vs[1:]:
            r = wrap(t, BINARY[ufunc](r, v))
        assert int(ufunc.reduce(np.array(vs, dtype=t))) == r  # the reduction path (output stride 0)


@pytest.mark.parametrize("t", INTS, ids=INT_IDS)
@pytest.mark.parametrize("ufunc", list(PROMOTED_BINARY), ids=[u.__name__ for u in PROMOTED_BINARY])
def test_other_binary_ufuncs_run_in_a_wider_integer_type(t, ufunc):
    vs, a, b = grid(t)
    got = ufunc(a, b)
    assert got.dtype.kind in "iu" and got.dtype.itemsize == 1
    assert got.tolist() == [[PROMOTED_BINARY[ufunc](x, y) for y in vs] for x in vs]


@pytest.mark.parametrize("t", INTS, ids=INT_IDS)
def test_divmod_runs_in_a_wider_integer_type(t):
    vs, a, b = grid(t)
    nz = [v for v in vs if v != 0]
    a, b = np.array([[x] * len(nz) for x in vs], dtype=t), np.array([nz] * len(vs), dtype=t)
    q, r = np.divmod(a, b)
    assert q.dtype == r.dtype and q.dtype.kind in "iu"
    assert q.tolist() == [[x // y for y in nz] for x in vs]
    assert r.tolist() == [[x % y for y in nz] for x in vs]


@pytest.mark.parametrize("t", INTS, ids=INT_IDS)
def test_division_by_zero_follows_errstate(t):
    x, z = np.array([1, 0], dtype=t), np.zeros(2, dtype=t)
    for ufunc in (np.floor_divide, np.remainder):
        with pytest.warns(RuntimeWarning, match="divide by zero"):
            assert ufunc(x, z).tolist() == [0, 0]
        with np.errstate(divide="raise"), pytest.raises(FloatingPointError):
            ufunc(x, z)
        with np.errstate(divide="ignore"), warnings.catch_warnings():
            warnings.simplefilter("error")
            ufunc(x, z)


@pytest.mark.parametrize("t", INTS, ids=INT_IDS)
@pytest.mark.parametrize("ufunc", list(UNARY), ids=[u.__name__ for u in UNARY])
def test_unary_ufuncs_run_in_a_wider_integer_type(t, ufunc):
    # As with ml_dtypes: numpy promotes to its first one-byte integer loop the type casts to safely.
    vs = values(t)
    got = ufunc(np.array(vs, dtype=t))
    assert got.dtype.kind in "iu" and got.dtype.itemsize == 1
    assert got.tolist() == ufunc(np.array(vs, dtype=got.dtype)).tolist()
    if ufunc not in (np.invert, np.square):  # these two wrap in the promoted type (uint4: 15 * 15 in int8)
        assert got.tolist() == [UNARY[ufunc](v) for v in vs]


@pytest.mark.parametrize("t", INTS, ids=INT_IDS)
@pytest.mark.parametrize("ufunc", list(COMPARE) + [np.logical_not],
                         ids=[u.__name__ for u in COMPARE] + ["logical_not"])
def test_predicate_ufuncs(t, ufunc):
    vs, a, b = grid(t)
    if ufunc is np.logical_not:
        got = ufunc(np.array(vs, dtype=t))
        assert got.dtype == np.bool_ and got.tolist() == [v == 0 for v in vs]
        return
    got = ufunc(a, b)
    assert got.dtype == np.bool_
    assert got.tolist() == [[COMPARE[ufunc](x, y) for y in vs] for x in vs]
    assert (np.array(vs, dtype=t) == np.array(vs, dtype=t)).all()


# --- iinfo -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("t", INTS, ids=INT_IDS)
def test_iinfo(t):
    bits, signed = spec(t)
    lo, hi = lo_hi(t)
    for arg in (t, t.__name__, np.dtype(t), np.zeros(1, t)):
        info = mf.iinfo(arg)
        assert (info.min, info.max, info.bits, info.kind, info.dtype) == (lo, hi, bits, "i" if signed else "u",
                                                                          np.dtype(t))
    assert str(mf.iinfo(t)) == repr(mf.iinfo(t)) == f"iinfo(min={lo}, max={hi}, dtype={t.__name__})"


def test_iinfo_passes_numpy_types_through():
    for it in (np.int8, np.uint16, np.int64, "int32"):
        a, b = mf.iinfo(it), np.iinfo(it)
        assert (a.min, a.max, a.bits, a.kind, a.dtype) == (b.min, b.max, b.bits, b.kind, b.dtype)
    for bad in (np.float32, np.complex128, bool, mf.float8_e4m3fn):
        with pytest.raises(ValueError):
            mf.iinfo(bad)


# --- reference counts --------------------------------------------------------------------------------

from steady import LOOPS, assert_steady  # noqa: E402


@pytest.mark.parametrize("t", INTS, ids=INT_IDS)
def test_entry_points_keep_reference_counts(t):
    d = np.dtype(t)
    one = t(1)
    x = np.array(values(t), dtype=t)
    f32 = np.float32([1.5, -1.0])
    zero_d = np.array(1.0)
    c = np.array([1 + 1j])
    f8 = np.zeros(2, mf.float8_e4m3fn)

    def raises(exc, fn, *args):
        try:
            fn(*args)
        except exc:
            pass

    def calls():
        t(1), t(1.0), t("1"), t(b"1"), t(np.int8(1)), t(np.float32(1)), t(one), t(f32), t(zero_d), t()
        raises(ValueError, t, math.nan)
        raises(OverflowError, t, 1e10)
        raises(TypeError, t, None)
        str(one), repr(one), hash(one), int(one), float(one), bool(one), format(one, "d"), one.__reduce__()
        one + one, one - one, one * one, one // one, one % one, -one, +one, abs(one), one < one, one == one
        raises(ZeroDivisionError, operator.floordiv, one, t(0))
        x[1], x.tolist(), x.astype(np.int64), f32.astype(d), x.astype(np.float32), x.astype(mf.float8_e4m3fn)
        f8.astype(d), np.add(x, x), np.equal(x, x), np.negative(x), np.divmod(x, x), x.sum(), np.sort(x)
        mf.iinfo(t)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_steady(calls, d, t, one, x, f32, zero_d, loops=LOOPS // 4)
        assert_steady(lambda: c.astype(d), d, t, c, loops=LOOPS // 4)
    assert_steady(lambda: t(f32), d, t, f32)
    assert_steady(lambda: t(zero_d), d, t, zero_d)
