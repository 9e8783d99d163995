"""ml_dtypes' behaviours that are part of the numpy contract, for every minifloat float dtype:
printing (scalar and array str / repr, format specs), casts from and to complex with numpy's
ComplexWarning, the np.can_cast (safe casting) table, astype from many Python threads at once, and
the np.save / np.load recipe of docs/python.md.

The expected values are written from ml_dtypes' registration code and tests (v0.5.x): scalars print
through a C++ stream (printf's %g, 6 significant digits, NaN without a sign), safe casts are
{bool, int8, uint8} -> dtype and dtype -> {float32, float64, longdouble, complex64, complex128,
clongdouble}, nothing else. The dtype list is built from minifloat.formats, so formats added there
are covered without a change here."""
import io
import math
import threading
import warnings

import numpy as np
import pytest

import minifloat as mf

# The float dtypes of the package: minifloat.formats minus numpy's own float16, plus ml_dtypes'
# float names in case a build registers one before it is listed.
_ML_DTYPES_FLOATS = ("bfloat16", "float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn",
                     "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float6_e2m3fn", "float6_e3m2fn",
                     "float4_e2m1fn", "float8_e8m0fnu")
FLOATS = [n for n in dict.fromkeys(tuple(mf.formats) + _ML_DTYPES_FLOATS) if n != "float16" and hasattr(mf, n)]

ComplexWarning = getattr(getattr(np, "exceptions", np), "ComplexWarning", None) or np.ComplexWarning


def code_dtype(name):
    return np.uint16 if np.dtype(name).itemsize == 2 else np.uint8


def all_values(name):
    """Every code of the format as an array of the dtype (bfloat16: every 16-bit code)."""
    bits = int(mf.finfo(name).bits)
    return np.arange(1 << bits, dtype=code_dtype(name)).view(getattr(mf, name))


def ml_dtypes_text(v):
    """How ml_dtypes prints a value: a C++ stream of the float (printf's %g), NaN unsigned."""
    return "nan" if math.isnan(v) else "%g" % v


# --- 1. printing ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name", FLOATS)
def test_scalar_str_and_repr_of_every_code(name):
    t = getattr(mf, name)
    values = all_values(name)
    floats = values.astype(np.float32).tolist()
    for x, v in zip(values, floats):
        assert type(x) is t
        assert str(x) == ml_dtypes_text(v), (hex(x.code), v)
        assert repr(x) == str(x)


def test_known_texts():
    assert str(mf.bfloat16(0.1)) == "0.100098" and repr(mf.bfloat16(0.1)) == "0.100098"
    assert str(mf.bfloat16(-0.0)) == "-0" and str(mf.bfloat16(3e38)) == "3.00406e+38"
    assert str(mf.bfloat16(1e-7)) == "1.00117e-07" and str(mf.bfloat16(float("-inf"))) == "-inf"
    assert str(mf.float8_e4m3fn(448)) == "448" and str(mf.float8_e4m3fn(-500)) == "nan"  # no "-nan"
    assert str(mf.float8_e5m2(1e6)) == "inf" and str(mf.hifloat8(3.3)) == "3.25"
    assert str(mf.float8_e8m0fnu(2.0 ** 127)) == "1.70141e+38"


@pytest.mark.parametrize("name", FLOATS)
def test_array_str_and_repr(name):
    x = np.array([[1, 2, 4]], dtype=name)
    assert str(x) == "[[1 2 4]]"
    # numpy writes the dtype name bare when it is alphanumeric, else quoted (its rule, for
    # ml_dtypes' dtypes too): dtype=bfloat16, dtype='float8_e4m3fn'
    assert repr(x) == "array([[1, 2, 4]], dtype=%s)" % (name if name.isalnum() else repr(name))
    assert str(np.array([0.5, 4], dtype=name)) == "[0.5 4]"
    finfo = mf.finfo(name)
    specials = [float(finfo.max)]
    if np.isnan(np.array(np.nan, np.float32).astype(name).astype(np.float32)):
        specials.append(np.nan)
    if np.isinf(np.array(np.inf, np.float32).astype(name).astype(np.float32)):
        specials.append(-np.inf)
    y = np.array(specials, np.float32).astype(name)
    assert str(y) == "[" + " ".join(ml_dtypes_text(v) for v in y.astype(np.float32).tolist()) + "]"


@pytest.mark.parametrize("name", FLOATS)
def test_format_specs_and_fstrings(name):
    # __format__ formats the value as a Python float, as ml_dtypes does: an empty spec is str(float)
    x = getattr(mf, name)(2.0)
    assert format(x, ".3f") == "2.000" and f"{x:.2e}" == "2.00e+00" and f"{x:>6}" == "   2.0"
    assert f"{x}" == "2.0" and "%s" % x == "2"
    with pytest.raises(TypeError):
        format(x, 3)


# --- 2. complex casts ----------------------------------------------------------------------------

COMPLEX = [np.complex64, np.complex128, np.clongdouble]


def warnings_of(f):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        result = f()
    return result, [x.category for x in w]


@pytest.mark.parametrize("ctype", COMPLEX, ids=lambda c: c.__name__)
@pytest.mark.parametrize("name", FLOATS)
def test_complex_to_minifloat_is_the_real_part(name, ctype):
    real = np.array([1, -3, 0.3, 100, 1e-3, -0.0, np.inf, np.nan, 7e5], np.float64)
    c = (real + 1j * np.arange(real.size)).astype(ctype)
    with pytest.warns(ComplexWarning):
        y = c.astype(name)
    expected = c.real.astype(np.longdouble if ctype is np.clongdouble else np.float64).astype(name)
    assert np.array_equal(y.view(code_dtype(name)), expected.view(code_dtype(name)))
    with pytest.warns(ComplexWarning):  # a complex numpy scalar: numpy's float() rule
        assert getattr(mf, name)(ctype(2 + 5j)) == getattr(mf, name)(2.0)
    with pytest.raises(TypeError):  # a Python complex, as np.float32(1 + 2j)
        getattr(mf, name)(1 + 2j)


@pytest.mark.parametrize("ctype", COMPLEX, ids=lambda c: c.__name__)
@pytest.mark.parametrize("name", FLOATS)
def test_minifloat_to_complex_has_imaginary_zero(name, ctype):
    x = all_values(name)
    z, caught = warnings_of(lambda: x.astype(ctype))
    assert caught == [] and z.dtype == ctype
    assert np.array_equal(z.real, x.astype(np.float32).astype(z.real.dtype), equal_nan=True)
    assert not np.any(z.imag) and not np.any(np.signbit(z.imag))


@pytest.mark.parametrize("name", ["float8_e4m3fn", "bfloat16", "hifloat8"])
def test_complex_warning_count_matches_numpy(name):
    # numpy warns once per complex -> float32 cast however the cast is split (rows, strides,
    # assignment); the minifloat casts do the same.
    base = np.ones((40, 3), np.complex128)
    cases = {
        "contiguous": lambda d: base.astype(d),
        "strided": lambda d: base[:, ::2].astype(d),
        "transposed": lambda d: base.T.astype(d),
        "assign": lambda d: np.empty((40, 3), d).__setitem__(Ellipsis, base),
        "large": lambda d: np.ones(300_000, np.complex64).astype(d),
    }
    for label, f in cases.items():
        _, numpy_warnings = warnings_of(lambda: f(np.float32))
        _, ours = warnings_of(lambda: f(np.dtype(name)))
        assert ours == numpy_warnings == [ComplexWarning], label


def test_complex_warning_as_error_raises_it():
    # Under an "error" filter the warning is the exception astype raises (not a SystemError).
    with warnings.catch_warnings():
        warnings.simplefilter("error", ComplexWarning)
        for c in (np.ones(4, np.complex64), np.ones((8, 3), np.complex128)[:, ::2], np.ones(100_000, np.complex64)):
            with pytest.raises(ComplexWarning):
                c.astype(mf.float8_e5m2)
        with pytest.raises(ComplexWarning):
            np.zeros(3, mf.bfloat16)[:] = np.ones(3, np.complex64)
    assert str(np.ones(2, np.float32).astype(mf.float8_e5m2)) == "[1 1]"  # nothing left behind


def test_empty_complex_cast_does_not_warn():
    # Deliberate difference (docs/python.md, "Deviations from ml_dtypes"): numpy warns for an
    # empty complex -> float32 cast too; a legacy cast function is never called for zero elements,
    # so an empty cast to a minifloat dtype gives no warning.
    _, numpy_warnings = warnings_of(lambda: np.ones(0, np.complex64).astype(np.float32))
    y, ours = warnings_of(lambda: np.ones(0, np.complex64).astype(mf.bfloat16))
    assert numpy_warnings == [ComplexWarning] and ours == [] and y.shape == (0,)


# --- 3. np.can_cast ------------------------------------------------------------------------------

NUMPY_TYPES = [np.bool_, np.float16, np.float32, np.float64, np.longdouble, np.int8, np.int16, np.int32, np.int64,
               np.complex64, np.complex128, np.clongdouble, np.uint8, np.uint16, np.uint32, np.uint64, np.intc,
               np.int_, np.longlong, np.uintc, np.ulonglong]
# ml_dtypes' RegisterFloatCasts: the same table for every float dtype (float8_e8m0fnu included).
SAFE_INTO = {np.bool_, np.int8, np.uint8}
SAFE_FROM = {np.float32, np.float64, np.longdouble, np.complex64, np.complex128, np.clongdouble}


@pytest.mark.parametrize("name", FLOATS)
def test_can_cast_numpy_types(name):
    # hifloat8 (not in ml_dtypes) takes the same table. Every hifloat8 value is a float16
    # (test_hifloat8_values_are_float16), yet hifloat8 -> float16 is not safe: ml_dtypes keeps
    # float8_e4m3fn -> float16 unsafe although its values are float16 too, and one rule for every
    # minifloat dtype keeps `x + np.float16(...)` promoting the same way (to float32) for all.
    t = getattr(mf, name)
    for d in NUMPY_TYPES:
        assert np.can_cast(t, d) == (d in SAFE_FROM), d.__name__
        assert np.can_cast(d, t) == (d in SAFE_INTO), d.__name__
        assert np.can_cast(np.dtype(t), np.dtype(d)) == (d in SAFE_FROM)
    assert np.can_cast(t, t)


@pytest.mark.parametrize("name", FLOATS)
def test_can_cast_between_minifloat_dtypes(name):
    # ml_dtypes registers no safe cast between its float dtypes, but numpy 1.x's legacy rule
    # calls two user dtypes of the same kind and size equivalent, so np.can_cast answers True for
    # every pair of 1-byte kind-'V' dtypes (ml_dtypes' included) and False across sizes. One
    # deliberate difference (docs/python.md): ml_dtypes registers float8_e5m2 with kind 'f', so
    # there float8_e5m2 pairs with no other dtype; here it is kind 'V' like the rest.
    size = np.dtype(name).itemsize
    for other in FLOATS:
        same_size = np.dtype(other).itemsize == size
        assert np.can_cast(getattr(mf, name), getattr(mf, other)) == same_size, other
        assert np.dtype(other).kind == "V"
    # "Equivalent" or not, a cast between two dtypes converts values, never reinterprets codes.
    x = np.array([1, 2, 0.5], np.float32)
    for other in FLOATS:
        y = x.astype(name).astype(other, copy=False)
        assert np.array_equal(y.astype(np.float32), x.astype(name).astype(np.float32).astype(other).astype(np.float32))
        assert np.array_equal(np.asarray(x.astype(name), dtype=other).view(code_dtype(other)),
                              y.view(code_dtype(other)))
    if size == 2:  # bfloat16 with a 1-byte dtype: no common dtype, a ufunc computes in float32
        other = "float8_e4m3fn"
        with pytest.raises(TypeError):
            np.result_type(np.ones(2, name), np.ones(2, other))
        assert (np.ones(2, name) + np.ones(2, other)).dtype == np.float32


def test_hifloat8_values_are_float16():
    x = all_values("hifloat8").astype(np.float32)
    finite = x[np.isfinite(x)]
    assert np.array_equal(finite.astype(np.float16).astype(np.float32), finite)


def test_promotion_follows_the_table():
    assert (np.ones(2, mf.float8_e4m3fn) + np.ones(2, np.float32)).dtype == np.float32
    assert (np.ones(2, mf.hifloat8) * np.ones(2, np.float64)).dtype == np.float64
    assert np.result_type(mf.bfloat16, np.complex64) == np.complex64
    assert np.result_type(np.int8, mf.float8_e5m2) == np.dtype(mf.float8_e5m2)
    assert np.result_type(np.bool_, mf.hifloat8) == np.dtype(mf.hifloat8)


# --- 4. astype from many Python threads ------------------------------------------------------------

SIZES = (7, 1000, 70_000, 300_000)  # 300 000 is above the bulk split (256 Ki): the thread pool runs


def _inputs():
    rng = np.random.default_rng(36)
    out = {}
    for n in SIZES:
        x = (rng.standard_normal(n) * rng.choice([1e-4, 1, 30, 1e4], n)).astype(np.float32)
        x[:: 97] = np.nan
        out[n] = x
    return out


def test_astype_from_many_threads_gives_the_single_threaded_bits():
    inputs = _inputs()
    # The work of one thread: every dtype, both directions, float32 and float64 sources, a strided view.
    jobs = []
    for name in FLOATS:
        for n, x in inputs.items():
            jobs.append((name, n, "f32"))
            jobs.append((name, n, "f64"))
        jobs.append((name, 70_000, "strided"))

    def run(job):
        name, n, kind = job
        x = inputs[n]
        if kind == "f64":
            codes = x.astype(np.float64).astype(name)
        elif kind == "strided":
            codes = x[::3].astype(name)
        else:
            codes = x.astype(name)
        back = codes.astype(np.float32)
        return codes.view(code_dtype(name)).copy(), back.view(np.uint32).copy()

    expected = [run(j) for j in jobs]
    errors = []
    start = threading.Barrier(8)

    def worker(k):
        try:
            start.wait()
            idx = list(range(len(jobs)))  # threads walk the jobs in different orders
            order = idx[k % 2::2] + idx[1 - k % 2::2]
            for i in order:
                codes, back = run(jobs[i])
                if not (np.array_equal(codes, expected[i][0]) and np.array_equal(back, expected[i][1])):
                    errors.append((k, jobs[i]))
        except BaseException as e:  # reported by the main thread
            errors.append((k, repr(e)))

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_thread_pool_under_concurrent_callers():
    # Large casts split over the package's pool (set_num_threads(2)); concurrent callers find it
    # busy and run their chunks on their own threads: every result must still be exact.
    x = _inputs()[300_000]
    want = {n: x.astype(n).view(code_dtype(n)).copy() for n in FLOATS}
    saved = mf.get_num_threads()
    mf.set_num_threads(2)
    try:
        bad = []

        def worker(k):
            for name in FLOATS[k % len(FLOATS):] + FLOATS[:k % len(FLOATS)]:
                if not np.array_equal(x.astype(name).view(code_dtype(name)), want[name]):
                    bad.append((k, name))

        threads = [threading.Thread(target=worker, args=(k,)) for k in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert bad == []
    finally:
        mf.set_num_threads(saved)


# --- 5. np.save / np.load --------------------------------------------------------------------------

@pytest.mark.parametrize("name", FLOATS)
def test_save_load_recipe(name, tmp_path):
    # docs/python.md: the .npy header stores a void dtype ('<V1' / '<V2'), np.load gives a void
    # array of the same bytes (no pickle involved), .view(dtype) restores the values.
    x = all_values(name)
    path = tmp_path / "x.npy"
    np.save(path, x)
    loaded = np.load(path)
    assert loaded.dtype == np.dtype("V%d" % x.itemsize) and loaded.shape == x.shape
    restored = loaded.view(getattr(mf, name))
    assert restored.dtype == x.dtype
    assert np.array_equal(restored.view(code_dtype(name)), x.view(code_dtype(name)))
    restored = np.load(path, allow_pickle=False).view(name)  # the same without pickle, by name
    assert np.array_equal(restored.view(code_dtype(name)), x.view(code_dtype(name)))
    buf = io.BytesIO()
    np.savez(buf, x=x)
    buf.seek(0)
    assert np.array_equal(np.load(buf)["x"].view(name).view(code_dtype(name)), x.view(code_dtype(name)))
