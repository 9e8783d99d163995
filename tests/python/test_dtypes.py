"""The numpy dtypes: registration, codes, every code's round trip, casts to and from numpy's
types, ufuncs, scalars, printing and finfo."""
import math
import pickle

import numpy as np
import pytest

import minifloat as mf
import oracle

OWN = ["hifloat8", "float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu", "float6_e3m2fn", "float6_e2m3fn",
       "float4_e2m1fn", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e4m3b11fnuz", "float8_e3m4", "float8_e4m3",
       "bfloat16"]
EIGHT_BIT = OWN[:-1]


def code_dtype(name):
    return np.uint16 if name == "bfloat16" else np.uint8


def all_codes(name):
    """Every valid code of the format, as the dtype (FP6/FP4: the low bits only)."""
    bits = oracle.FORMATS[name].bits
    return np.arange(1 << bits, dtype=code_dtype(name)).view(np.dtype(name))


@pytest.mark.parametrize("name", OWN)
def test_registered_by_name(name):
    t = getattr(mf, name)
    assert np.dtype(name) == np.dtype(t)
    assert np.dtype(name).type is t
    assert t.dtype == np.dtype(name)
    assert np.dtype(name).itemsize == (2 if name == "bfloat16" else 1)
    assert np.dtype(name).name == name
    assert t.__module__ == "minifloat" and t.__name__ == name
    assert issubclass(t, np.generic)


@pytest.mark.parametrize("name", OWN)
def test_every_code_decodes_as_the_spec_says(name):
    fmt = oracle.FORMATS[name]
    got = all_codes(name).astype(np.float64)
    want = np.array([fmt.decode(c) for c in range(1 << fmt.bits)])
    np.testing.assert_array_equal(got, want)
    # float32 decode agrees (every value is a float32)
    np.testing.assert_array_equal(all_codes(name).astype(np.float32), want.astype(np.float32))


@pytest.mark.parametrize("name", OWN)
def test_every_code_round_trips(name):
    """code -> float32 -> code (default conversion) gives the code back, except that NaN codes give
    the format's canonical NaN (and the formats with one zero have no second one)."""
    fmt = oracle.FORMATS[name]
    codes = all_codes(name)
    back = codes.astype(np.float32).astype(np.dtype(name)).view(code_dtype(name))
    raw = codes.view(code_dtype(name))
    values = codes.astype(np.float64)
    nan = np.isnan(values)
    np.testing.assert_array_equal(back[~nan], raw[~nan])
    if nan.any():
        assert (back[nan] == fmt.nan_code).all()
    # the same through float64, float16 (where the values fit) and the bfloat16 dtype
    np.testing.assert_array_equal(codes.astype(np.float64).astype(np.dtype(name)).view(code_dtype(name))[~nan],
                                  raw[~nan])
    if name not in ("float8_e8m0fnu", "bfloat16"):
        np.testing.assert_array_equal(codes.astype(np.float16).astype(np.dtype(name)).view(code_dtype(name))[~nan],
                                      raw[~nan])
    if name != "bfloat16":
        np.testing.assert_array_equal(codes.astype(mf.bfloat16).astype(np.dtype(name)).view(code_dtype(name))[~nan],
                                      raw[~nan])


@pytest.mark.parametrize("name", OWN)
def test_view_uint8_and_back(name):
    x = np.linspace(0.25 if name == "float8_e8m0fnu" else -4, 4, 37).astype(np.float32).astype(np.dtype(name))
    codes = x.view(code_dtype(name))
    assert codes.dtype == code_dtype(name) and codes.shape == x.shape
    assert np.shares_memory(codes, x)
    y = codes.view(np.dtype(name))
    np.testing.assert_array_equal(y.astype(np.float32), x.astype(np.float32))
    # the scalar's code property and from_code
    t = getattr(mf, name)
    assert t.from_code(int(codes[3])).code == int(codes[3])
    assert float(t.from_code(int(codes[3]))) == float(x[3])


def test_codes_are_the_documented_bits():
    one = np.array([1.0], np.float32)
    assert one.astype(mf.float8_e4m3fn).view(np.uint8)[0] == 0x38
    assert one.astype(mf.float8_e5m2).view(np.uint8)[0] == 0x3C
    assert one.astype(mf.hifloat8).view(np.uint8)[0] == 0x08
    assert one.astype(mf.float8_e8m0fnu).view(np.uint8)[0] == 0x7F
    assert one.astype(mf.float4_e2m1fn).view(np.uint8)[0] == 0x2
    assert one.astype(mf.bfloat16).view(np.uint16)[0] == 0x3F80
    assert np.array([-6.0], np.float32).astype(mf.float4_e2m1fn).view(np.uint8)[0] == 0xF


@pytest.mark.parametrize("name", OWN)
@pytest.mark.parametrize("src", [np.float32, np.float64, np.float16])
def test_astype_is_the_default_conversion(name, src):
    fmt = oracle.FORMATS[name]
    rng = np.random.default_rng(5)
    x = (rng.standard_normal(2000) * np.exp2(rng.integers(-12, 12, 2000))).astype(src)
    x[:4] = [np.nan, np.inf, -np.inf, 0]
    got = x.astype(np.dtype(name)).view(code_dtype(name))
    want = [fmt.encode(float(v)) for v in x]
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", OWN)
def test_integer_and_bool_casts(name):
    ints = np.array([0, 1, 2, 3, 7, -1, -5, 100, 1000, 40000], dtype=np.int64)
    for t in (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64):
        v = ints.astype(t)
        got = v.astype(np.dtype(name)).view(code_dtype(name))
        want = [oracle.FORMATS[name].encode(float(i)) for i in v]
        np.testing.assert_array_equal(got, want)
    b = np.array([True, False])
    np.testing.assert_array_equal(b.astype(np.dtype(name)).view(code_dtype(name)),
                                  [oracle.FORMATS[name].encode(1.0), oracle.FORMATS[name].encode(0.0)])
    # to integers: truncation toward zero; NaN -> 0 and saturation at the type's range
    vals = np.array([2.5, -1.5, 0.75, np.nan, np.inf, -np.inf], np.float32).astype(np.dtype(name))
    f = vals.astype(np.float64)
    for t in (np.int8, np.uint8, np.int32, np.int64, np.uint64):
        got = vals.astype(t)
        info = np.iinfo(t)
        want = [0 if math.isnan(v) else info.max if v >= info.max else info.min if v <= info.min else int(v) for v in f]
        np.testing.assert_array_equal(got, np.array(want, dtype=t))
    np.testing.assert_array_equal(vals.astype(bool), f != 0)


def test_casts_between_minifloat_dtypes_round_once():
    rng = np.random.default_rng(2)
    x = rng.standard_normal(500).astype(np.float32)
    for a in OWN:
        xa = x.astype(np.dtype(a))
        for b in OWN:
            got = xa.astype(np.dtype(b)).view(code_dtype(b))
            want = xa.astype(np.float32).astype(np.dtype(b)).view(code_dtype(b))
            np.testing.assert_array_equal(got, want)


def test_promotion_goes_through_float32():
    h = np.array([1.5, 2.0], mf.hifloat8)
    assert np.result_type(mf.hifloat8, np.float32) == np.float32
    assert np.result_type(mf.float8_e4m3fn, np.float64) == np.float64
    assert (h + np.array([1.0, 1.0], np.float32)).dtype == np.float32
    assert np.can_cast(mf.float8_e4m3fn, np.float32)
    assert not np.can_cast(np.float32, mf.float8_e4m3fn)


@pytest.mark.parametrize("name", OWN)
def test_arithmetic_in_float32_rounded_back(name):
    fmt = oracle.FORMATS[name]
    rng = np.random.default_rng(11)
    a = rng.standard_normal(3000).astype(np.float32).astype(np.dtype(name))
    b = (rng.standard_normal(3000) * 4).astype(np.float32).astype(np.dtype(name))
    fa, fb = a.astype(np.float32), b.astype(np.float32)
    with np.errstate(all="ignore"):
        for op in (np.maximum, np.minimum, np.fmax, np.fmin):  # by value: numpy's own loops pick either zero
            got = op(a, b)
            assert got.dtype == np.dtype(name), op
            np.testing.assert_array_equal(got.astype(np.float32), op(fa, fb), err_msg=op.__name__)
        for op in (np.add, np.subtract, np.multiply, np.divide, np.copysign, np.power, np.hypot):
            got = op(a, b)
            assert got.dtype == np.dtype(name), op
            want = op(fa, fb).astype(np.float32)
            np.testing.assert_array_equal(got.view(code_dtype(name)),
                                          [fmt.encode(float(v)) for v in want], err_msg=op.__name__)
        for op in (np.negative, np.absolute, np.sqrt, np.square, np.exp, np.floor, np.ceil, np.rint, np.trunc,
                   np.sign, np.reciprocal, np.tanh, np.log):
            got = op(a)
            assert got.dtype == np.dtype(name), op
            np.testing.assert_array_equal(got.view(code_dtype(name)),
                                          [fmt.encode(float(v)) for v in op(fa)], err_msg=op.__name__)
    # operators, in-place and strided operands
    np.testing.assert_array_equal((a + b).view(code_dtype(name)), np.add(a, b).view(code_dtype(name)))
    c = a.copy()
    c += b
    np.testing.assert_array_equal(c.view(code_dtype(name)), np.add(a, b).view(code_dtype(name)))
    np.testing.assert_array_equal((a[::3] * b[1::3]).view(code_dtype(name)),
                                  [fmt.encode(float(v)) for v in fa[::3] * fb[1::3]])


@pytest.mark.parametrize("name", OWN)
def test_comparisons_and_classification(name):
    codes = all_codes(name)
    v = codes.astype(np.float32)
    other = codes[::-1].copy()
    w = other.astype(np.float32)
    # no RuntimeWarning for NaN operands (pytest.ini turns warnings into errors), as for float32
    for op in (np.equal, np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal):
        np.testing.assert_array_equal(op(codes, other), op(v, w), err_msg=op.__name__)
    np.testing.assert_array_equal(codes == other, v == w)
    np.testing.assert_array_equal(codes < other, v < w)
    np.testing.assert_array_equal(np.maximum(codes, other).astype(np.float32), np.maximum(v, w))
    np.testing.assert_array_equal(np.fmin(codes, other).astype(np.float32), np.fmin(v, w))
    np.testing.assert_array_equal(np.isnan(codes), np.isnan(v))
    np.testing.assert_array_equal(np.isinf(codes), np.isinf(v))
    np.testing.assert_array_equal(np.isfinite(codes), np.isfinite(v))
    np.testing.assert_array_equal(np.signbit(codes), np.signbit(v))
    np.testing.assert_array_equal(np.logical_not(codes), v == 0)


def test_hifloat8_compares_by_value_not_by_code():
    # 0x70 = 2^-8 has a larger code than 0x6E = 2^15 but a smaller value
    small, big = mf.hifloat8.from_code(0x70), mf.hifloat8.from_code(0x6E)
    assert float(small) == 2.0 ** -8 and float(big) == 2.0 ** 15
    assert small < big
    arr = np.array([big, small], dtype=mf.hifloat8)
    assert arr.argmin() == 1 and arr.argmax() == 0
    np.testing.assert_array_equal(np.sort(arr).astype(np.float32), [2.0 ** -8, 2.0 ** 15])


@pytest.mark.parametrize("name", OWN)
def test_reductions_sort_and_arange(name):
    x = np.array([3.0, -1.0, 0.5, 2.0, 0.25], np.float32)
    if name == "float8_e8m0fnu":
        x = np.abs(x)
    a = x.astype(np.dtype(name))
    fa = a.astype(np.float32)
    assert float(a.max()) == fa.max() and float(a.min()) == fa.min()
    assert a.argmax() == fa.argmax() and a.argmin() == fa.argmin()
    np.testing.assert_array_equal(np.sort(a).astype(np.float32), np.sort(fa))
    # sum accumulates in the format (each step rounded), as ml_dtypes does
    acc = getattr(mf, name)(0.0) if name != "float8_e8m0fnu" else None
    if acc is not None:
        for v in a:
            acc = acc + v
        assert float(a.sum()) == float(acc)
    r = np.arange(0, 4, 0.5, dtype=np.dtype(name)) if name != "float8_e8m0fnu" else None
    if r is not None:
        np.testing.assert_array_equal(r.view(code_dtype(name)),
                                      np.arange(0, 4, 0.5, dtype=np.float32).astype(name).view(code_dtype(name)))
    if name != "float8_e8m0fnu":
        np.testing.assert_array_equal(np.ones(3, dtype=np.dtype(name)).astype(np.float32), [1, 1, 1])
        np.testing.assert_array_equal(np.zeros(2, dtype=np.dtype(name)).astype(np.float32), [0, 0])
    assert float(np.dot(a[:2], a[:2])) == float(getattr(mf, name)(float(fa[0] * fa[0] + fa[1] * fa[1])))


@pytest.mark.parametrize("name", OWN)
def test_scalars(name):
    t = getattr(mf, name)
    v = 2.0 if name == "float8_e8m0fnu" else 1.5
    x = t(v)
    assert isinstance(x, t) and isinstance(x, np.generic)
    assert float(x) == v and int(t(2.0)) == 2
    assert repr(x) == "%g" % v and str(x) == "%g" % v and f"{x:.3f}" == "%.3f" % v
    assert t(x) is x
    assert t("2") == t(2.0) == t(np.float64(2.0)) == t(np.float32(2.0)) == t(np.array(2.0))
    assert t(mf.bfloat16(2.0)) == t(2.0)
    assert bool(t(1.0)) and hash(t(2.0)) == hash(2.0)
    assert pickle.loads(pickle.dumps(x)) == x
    assert np.array([x, t(2.0)]).dtype == np.dtype(name)
    assert np.array([v, 2], dtype=name)[0] == x
    y = np.array([1.0, 2.0], dtype=name)
    assert type(y[0]) is t and y.tolist() == [1.0, 2.0] and y.item(1) == 2.0
    if name != "float8_e8m0fnu":
        assert float(t(1.0) + t(0.5)) == 1.5 and float(t(2.0) * t(2.0)) == 4.0
        assert float(t(1.0) - t(1.0)) == 0.0 and float(t(1.0) / t(2.0)) == 0.5
        assert float(-t(1.0)) == -1.0 and float(abs(t(-1.0))) == 1.0
        assert t(1.0) < t(2.0) and t(1.0) == t(1.0) and t(1.0) != t(2.0)
        assert float(t(1.0) + 1.0) == 2.0  # mixed: numpy's promotion
    with pytest.raises(TypeError):
        t(1.0, 2.0)
    with pytest.raises(TypeError):
        t(object())
    with pytest.raises(ValueError):
        t.from_code(1 << 16)


@pytest.mark.parametrize("name", OWN)
def test_printing_shows_values(name):
    # ml_dtypes' printing: each element as the C++ stream prints a float (6 significant digits)
    a = np.array([1.0, 0.5, 4.0], np.float32).astype(np.dtype(name))
    shown = name if name.isalnum() else repr(name)  # numpy quotes a dtype name that is not alphanumeric
    assert repr(a) == "array([1, 0.5, 4], dtype=%s)" % shown, repr(a)
    assert str(a) == "[1 0.5 4]", str(a)


def test_printing_nan_inf():
    a = np.array([np.nan, np.inf, -2.0], np.float32).astype(mf.hifloat8)
    assert repr(a) == "array([nan, inf, -2], dtype=hifloat8)", repr(a)


FINFO = {
    # name: bits, eps, max, smallest_normal, smallest_subnormal, nmant, nexp, minexp, maxexp
    "float8_e4m3fn": (8, 2.0 ** -3, 448.0, 2.0 ** -6, 2.0 ** -9, 3, 4, -6, 9),
    "float8_e5m2": (8, 2.0 ** -2, 57344.0, 2.0 ** -14, 2.0 ** -16, 2, 5, -14, 16),
    "float8_e8m0fnu": (8, 1.0, 2.0 ** 127, 2.0 ** -127, 2.0 ** -127, 0, 8, -127, 128),
    "float6_e3m2fn": (6, 0.25, 28.0, 0.25, 0.0625, 2, 3, -2, 5),
    "float6_e2m3fn": (6, 0.125, 7.5, 1.0, 0.125, 3, 2, 0, 3),
    "float4_e2m1fn": (4, 0.5, 6.0, 1.0, 0.5, 1, 2, 0, 3),
    "hifloat8": (8, 0.125, 32768.0, 2.0 ** -15, 2.0 ** -22, 3, 5, -15, 16),
    "bfloat16": (16, 2.0 ** -7, float.fromhex("0x1.FEp127"), 2.0 ** -126, 2.0 ** -133, 7, 8, -126, 128),
    "float8_e4m3fnuz": (8, 2.0 ** -3, 240.0, 2.0 ** -7, 2.0 ** -10, 3, 4, -7, 8),
    "float8_e5m2fnuz": (8, 2.0 ** -2, 57344.0, 2.0 ** -15, 2.0 ** -17, 2, 5, -15, 16),
    "float8_e4m3b11fnuz": (8, 2.0 ** -3, 30.0, 2.0 ** -10, 2.0 ** -13, 3, 4, -10, 5),
    "float8_e3m4": (8, 2.0 ** -4, 15.5, 2.0 ** -2, 2.0 ** -6, 4, 3, -2, 4),
    "float8_e4m3": (8, 2.0 ** -3, 240.0, 2.0 ** -6, 2.0 ** -9, 3, 4, -6, 8),
}


@pytest.mark.parametrize("name", sorted(FINFO))
def test_finfo(name):
    bits, eps, mx, tiny, sub, nmant, nexp, minexp, maxexp = FINFO[name]
    for fi in (mf.finfo(name), mf.finfo(getattr(mf, name)), mf.finfo(np.dtype(name)), np.finfo(getattr(mf, name)),
               mf.finfo(np.zeros(2, dtype=name))):
        assert fi.bits == bits
        assert float(fi.eps) == eps
        assert float(fi.max) == mx
        assert float(fi.min) == (2.0 ** -127 if name == "float8_e8m0fnu" else -mx)
        assert float(fi.tiny) == float(fi.smallest_normal) == tiny
        assert float(fi.smallest_subnormal) == sub
        assert (fi.nmant, fi.nexp, fi.minexp, fi.maxexp) == (nmant, nexp, minexp, maxexp)
        assert fi.dtype == np.dtype(name)
        assert isinstance(fi.precision, int) and float(fi.resolution) > 0
        assert 2.0 ** fi.machep == eps
    assert "Machine parameters" in str(mf.finfo(name))
    assert mf.finfo(np.float32) == np.finfo(np.float32)
    assert mf.finfo(np.float16).max == np.finfo(np.float16).max


def test_finfo_epsneg_and_precision_match_ml_dtypes_values():
    assert float(mf.finfo(mf.float8_e4m3fn).epsneg) == 2.0 ** -4
    assert float(mf.finfo(mf.float6_e3m2fn).epsneg) == 0.125
    assert float(mf.finfo(mf.float4_e2m1fn).epsneg) == 0.5
    assert float(mf.finfo(mf.float8_e8m0fnu).epsneg) == 0.5
    assert mf.finfo(mf.float8_e4m3fn).precision == 1
    assert mf.finfo(mf.float4_e2m1fn).precision == 0
    assert mf.finfo(mf.bfloat16).precision == 2
