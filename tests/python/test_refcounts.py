"""Reference counts across the extension's entry points: every call hands the numpy/Python C API
references it owns (stolen) or keeps (borrowed) correctly, so 10,000 calls leave the dtype
descriptors, scalar types and arguments with the counts they had. A stolen reference given without
its own Py_INCREF drains a static descriptor until numpy frees it and the interpreter aborts."""
import math

import numpy as np
import pytest

import minifloat as mf

from steady import LOOPS, assert_steady

OWN = ["hifloat8", "float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu", "float6_e3m2fn", "float6_e2m3fn",
       "float4_e2m1fn", "bfloat16", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e4m3b11fnuz", "float8_e3m4",
       "float8_e4m3"]


@pytest.mark.parametrize("name", OWN)
def test_dtype_call_on_an_array_keeps_the_descriptor(name):
    t = getattr(mf, name)
    d = np.dtype(t)
    x = np.float32([1, 2])
    assert_steady(lambda: t(x), d, t, x)
    assert t(x).dtype == d


@pytest.mark.parametrize("name", OWN)
def test_scalar_entry_points_keep_their_counts(name):
    t = getattr(mf, name)
    d = np.dtype(t)
    one = t(1.0)
    x = np.array([0.5, 1.0, 2.0], dtype=t)

    def calls():
        t(1.0), t("0.5"), t(np.float64(2.0)), t(np.array(1.5)), t(one)
        float(one), repr(one), str(one), hash(one), bool(one), one + one, one < one, -one, abs(one)
        one.__reduce__(), format(one, ".3f")
        x.astype(np.float32), np.float32([1, 2]).astype(d), x[1], x.tolist(), x.sum(), np.add(x, x)

    assert_steady(calls, d, t, one, x)


@pytest.mark.parametrize("name", OWN)
def test_issue36_entry_points_keep_their_counts(name):
    # The loops and casts added for the ml_dtypes contract: nextafter, spacing, ldexp, frexp, modf,
    # divmod, copysign, complex casts both ways (their ComplexWarning included), printing, finfo.
    import warnings
    t = getattr(mf, name)
    d = np.dtype(t)
    x = np.array([0.5, 1.0, 2.0], dtype=t)
    c = np.array([1 + 2j, 3 - 1j], np.complex64)
    e = np.array([1, -1, 2], np.int32)

    def calls():
        np.nextafter(x, x[::-1]), np.spacing(x), np.ldexp(x, e), np.frexp(x), np.modf(x), np.divmod(x, x)
        np.copysign(x, -x), np.floor_divide(x, x), c.astype(d), x.astype(np.complex128), repr(x), str(x)
        mf.finfo(t)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_steady(calls, d, t, x, c, e, loops=LOOPS // 5)


def test_module_functions_keep_their_counts():
    x = np.linspace(-4, 4, 64, dtype=np.float32).reshape(4, 16)
    w = np.linspace(-1, 1, 64, dtype=np.float32).reshape(4, 16)
    d = np.dtype(mf.float8_e4m3fn)
    f32 = np.dtype(np.float32)

    def calls():
        mf.cast(x, mf.float8_e4m3fn)
        mf.pack_fp4(mf.cast(x, mf.float4_e2m1fn))
        q = mf.quantize(x, "hifloat8/tensor")
        q.dequantize(), q.codes, q.scales
        mf.dequantize(q)
        qa, qw = mf.quantize(x, "float8_e4m3fn/tensor"), mf.quantize(w, "mxfp8_e4m3")
        mf.gemm(qa, qw), mf.gemm(qa, qw, order="exact")
        mf.quantize_with_scales(x, "float8_e4m3fn/tensor", np.float32([[0.5]]))
        mf.sqnr(x, x), mf.sqnr(x, q), mf.error_metrics(x, q), mf.measure(x, q), mf.parse_scheme("mxfp8_e4m3")
        mf.unpack_fp4(np.zeros((2, 3), np.uint8), 5)

    assert_steady(calls, x, w, d, f32, loops=1_000)


@pytest.mark.parametrize("name,nan_code", [("hifloat8", 0x80), ("float8_e4m3fn", 0x7F), ("float8_e5m2", 0x7E),
                                           ("float8_e8m0fnu", 0xFF), ("bfloat16", 0x7FC0), ("float8_e4m3fnuz", 0x80),
                                           ("float8_e5m2fnuz", 0x80), ("float8_e4m3b11fnuz", 0x80),
                                           ("float8_e3m4", 0x78), ("float8_e4m3", 0x7C)])
def test_nan_scalar_hash_is_stable_and_usable_as_a_key(name, nan_code):
    t = getattr(mf, name)
    n = np.array([nan_code], dtype=np.uint16 if name == "bfloat16" else np.uint8).view(np.dtype(t))[0]
    assert math.isnan(float(n))
    assert hash(n) == hash(n) == hash(n)
    assert {n: 1}[n] == 1 and n in {n}
    if name != "float8_e8m0fnu":
        assert hash(t(2.0)) == hash(2.0)
