"""minifloat.cast in every rounding mode and overflow policy, against the independent oracle
(oracle.py) on dense edge cases and random inputs, and every ISA path against the others."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import minifloat as mf
import oracle

FORMATS = list(oracle.FORMATS)  # the 8 dtypes and float16
MODES = list(mf.ROUNDING_MODES)
OVERFLOWS = list(mf.OVERFLOW_POLICIES)


def target(name):
    return np.float16 if name == "float16" else np.dtype(name)


def codes_of(a, name):
    return a.view(np.uint16 if oracle.FORMATS[name].bits > 8 else np.uint8)


def edge_cases(name):
    """Every value of the format, its float32 neighbours, the midpoints between consecutive values
    and their neighbours, values past the largest finite one, specials. float32, sorted, unique."""
    fmt = oracle.FORMATS[name]
    vals = np.array(fmt.values, dtype=np.float64)
    if len(vals) > 600:  # 16-bit formats: a spread subset of the binades
        vals = vals[:: len(vals) // 600]
    mids = (vals[:-1] + vals[1:]) / 2
    top = float(fmt.max)
    beyond = float(fmt.beyond)
    extra = np.array([beyond, (top + beyond) / 2, beyond * 2, 1e30, 3e38, 1e-30, 1e-45, float(fmt.min_value) / 2,
                      float(fmt.min_value) / 4], dtype=np.float64)
    with np.errstate(over="ignore"):  # E8M0's 2^128 is past float32
        base = np.concatenate([vals, mids, extra]).astype(np.float32)
    base = base[np.isfinite(base)]
    up = np.nextafter(base, np.float32(np.inf))
    down = np.nextafter(base, np.float32(0))
    x = np.concatenate([base, up, down])
    x = np.concatenate([x, -x, np.array([0.0, -0.0, np.inf, -np.inf, np.nan], np.float32)])
    return x.astype(np.float32)


def expect(name, x, rnd, ovf, seed=0):
    fmt = oracle.FORMATS[name]
    return np.array([fmt.encode(float(v), rnd, ovf, oracle.random_bits(seed, i)) for i, v in enumerate(x.ravel())])


@pytest.mark.parametrize("name", FORMATS)
@pytest.mark.parametrize("ovf", OVERFLOWS)
def test_edge_cases_every_mode(name, ovf):
    x = edge_cases(name)
    for rnd in MODES:
        got = codes_of(mf.cast(x, target(name), round=rnd, overflow=ovf, seed=3), name)
        want = expect(name, x, rnd, ovf, seed=3)
        bad = np.nonzero(got != want)[0]
        assert bad.size == 0, (rnd, [(float(x[i]), int(got[i]), int(want[i])) for i in bad[:5]])


@pytest.mark.parametrize("name", FORMATS)
def test_random_inputs_every_mode(name):
    rng = np.random.default_rng(17)
    x = (rng.standard_normal(1500) * np.exp2(rng.integers(-40, 40, 1500))).astype(np.float32)
    for rnd in MODES:
        for ovf in OVERFLOWS:
            got = codes_of(mf.cast(x, target(name), round=rnd, overflow=ovf, seed=11), name)
            np.testing.assert_array_equal(got, expect(name, x, rnd, ovf, seed=11), err_msg=f"{rnd} {ovf}")


@pytest.mark.parametrize("name", FORMATS)
def test_every_isa_path_agrees(name):
    """The scalar C++ codec (the reference), the SIMD paths and the threaded split give the same
    bits, in every mode, for float32, float16 and bfloat16 input."""
    rng = np.random.default_rng(23)
    n = 300_001  # odd, above the threading threshold
    x = (rng.standard_normal(n) * np.exp2(rng.integers(-30, 30, n))).astype(np.float32)
    x[:5] = [np.nan, np.inf, -np.inf, 0.0, -0.0]
    small = x[:20_011]
    with np.errstate(over="ignore"):
        inputs = [small, small.astype(np.float16), small.astype(mf.bfloat16)]
    for rnd in MODES:
        for ovf in OVERFLOWS:
            for xi in inputs:
                ref = mf.cast(xi, target(name), round=rnd, overflow=ovf, seed=5, isa="scalar", threads=1)
                for isa in mf.available_isas():
                    got = mf.cast(xi, target(name), round=rnd, overflow=ovf, seed=5, isa=isa)
                    assert np.array_equal(codes_of(got, name), codes_of(ref, name)), (rnd, ovf, isa, xi.dtype)
    # thread splits (large arrays only): stochastic rounding keeps each element's random bits
    for rnd in ("nearest", "stochastic"):
        ref = mf.cast(x, target(name), round=rnd, seed=5, threads=1)
        for threads in (2, 3):
            got = mf.cast(x, target(name), round=rnd, seed=5, threads=threads)
            assert np.array_equal(codes_of(got, name), codes_of(ref, name)), (rnd, threads)
        assert np.array_equal(codes_of(mf.cast(x, target(name), round=rnd, seed=5, isa="scalar", threads=2), name),
                              codes_of(ref, name))


@pytest.mark.parametrize("name", FORMATS)
def test_float16_and_bfloat16_inputs_round_once(name):
    rng = np.random.default_rng(29)
    x32 = (rng.standard_normal(800) * np.exp2(rng.integers(-20, 15, 800))).astype(np.float32)
    for src in (np.float16, mf.bfloat16):
        with np.errstate(over="ignore"):
            x = x32.astype(src)
        wide = x.astype(np.float32)  # exact
        for rnd in ("nearest", "toward_zero", "upward", "stochastic"):
            got = codes_of(mf.cast(x, target(name), round=rnd, overflow="saturate", seed=9), name)
            np.testing.assert_array_equal(got, expect(name, wide, rnd, "saturate", seed=9))


@pytest.mark.parametrize("name", ["float8_e4m3fn", "hifloat8", "float8_e5m2", "float4_e2m1fn", "bfloat16"])
def test_float64_input_rounds_once(name):
    """A double just above a tie rounds up; going through float32 first would make it a tie."""
    fmt = oracle.FORMATS[name]
    vals = fmt.values
    mids = [(vals[i] + vals[i + 1]) / 2 for i in range(len(vals) - 1)][::max(1, len(vals) // 300)]
    x = np.array([math.nextafter(m, math.inf) for m in mids] + [math.nextafter(m, 0) for m in mids])
    assert np.any(x.astype(np.float32).astype(np.float64) != x)
    for rnd in MODES:
        got = codes_of(mf.cast(x, target(name), round=rnd, seed=2), name)
        np.testing.assert_array_equal(got, expect(name, x, rnd, "non_saturating", seed=2), err_msg=rnd)
    # astype from float64 is the same single rounding
    np.testing.assert_array_equal(codes_of(x.astype(target(name)), name), expect(name, x, "nearest", "non_saturating"))


def test_stochastic_is_a_pure_function_of_seed_and_index():
    x = np.full(10000, 1.0 + 1.0 / 32, np.float32)  # between 1 and 1.125 in E4M3
    a = mf.cast(x, mf.float8_e4m3fn, round="stochastic", seed=1)
    b = mf.cast(x, mf.float8_e4m3fn, round="stochastic", seed=1)
    c = mf.cast(x, mf.float8_e4m3fn, round="stochastic", seed=2)
    assert np.array_equal(a.view(np.uint8), b.view(np.uint8))
    assert not np.array_equal(a.view(np.uint8), c.view(np.uint8))
    up = float((a.astype(np.float32) > 1.0).mean())
    assert abs(up - 0.25) < 0.03  # rounds up with probability f = 1/4
    # the same element index gets the same bits whatever the array's shape
    assert np.array_equal(mf.cast(x.reshape(100, 100), mf.float8_e4m3fn, round="stochastic", seed=1).ravel().view(np.uint8),
                          a.view(np.uint8))


def test_shapes_and_layouts():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 8
    y = mf.cast(x, "hifloat8")
    assert y.shape == (2, 3, 4) and y.dtype == mf.hifloat8
    z = mf.cast(x[:, ::2, 1:], "hifloat8")  # non-contiguous input is copied first
    np.testing.assert_array_equal(z.astype(np.float32), y[:, ::2, 1:].astype(np.float32))
    assert mf.cast(np.zeros((0, 3), np.float32), "hifloat8").shape == (0, 3)
    assert mf.cast(np.float32(1.5), "hifloat8").shape == ()
    assert mf.cast([1.0, 2.0], "float8_e4m3fn").dtype == mf.float8_e4m3fn  # lists: read as float64
    big_endian = np.array([1.5, -3.0, 448.0], dtype=">f4")  # byte-swapped input is swapped first
    np.testing.assert_array_equal(mf.cast(big_endian, "float8_e4m3fn").astype(np.float32), [1.5, -3.0, 448.0])
    np.testing.assert_array_equal(big_endian.astype(mf.float8_e4m3fn).astype(np.float32), [1.5, -3.0, 448.0])
    np.testing.assert_array_equal(mf.quantize(big_endian, "float8_e4m3fn/tensor").dequantize(), [1.5, -3.0, 448.0])
    np.testing.assert_array_equal(mf.cast(np.array([1, 2, 3]), "float8_e5m2").astype(np.float32), [1, 2, 3])
    h = mf.cast(np.array([0.3], np.float32), "hifloat8")
    np.testing.assert_array_equal(mf.cast(h, "float8_e4m3fn").view(np.uint8),
                                  mf.cast(h.astype(np.float32), "float8_e4m3fn").view(np.uint8))


def test_cast_to_float16_is_numpy_float16():
    x = np.array([1.0, 65519.0, 65520.0, 1e-8], np.float32)
    y = mf.cast(x, np.float16)
    assert y.dtype == np.float16
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(y, x.astype(np.float16))
    np.testing.assert_array_equal(mf.cast(x, "float16", overflow="saturate"), np.array([1.0, 65504, 65504, 0], np.float16))


finite_f32 = st.floats(width=32, allow_nan=True, allow_infinity=True)


@settings(max_examples=300, deadline=None)
@given(st.lists(finite_f32, min_size=1, max_size=40), st.sampled_from(FORMATS), st.sampled_from(MODES),
       st.sampled_from(OVERFLOWS), st.integers(0, 2 ** 64 - 1))
def test_property_cast_matches_oracle(values, name, rnd, ovf, seed):
    x = np.array(values, np.float32)
    got = codes_of(mf.cast(x, target(name), round=rnd, overflow=ovf, seed=seed), name)
    np.testing.assert_array_equal(got, expect(name, x, rnd, ovf, seed=seed))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False, width=64), min_size=1, max_size=20),
       st.sampled_from(FORMATS), st.sampled_from(MODES))
def test_property_float64_matches_oracle(values, name, rnd):
    x = np.array(values, np.float64)
    got = codes_of(mf.cast(x, target(name), round=rnd, overflow="saturate", seed=4), name)
    np.testing.assert_array_equal(got, expect(name, x, rnd, "saturate", seed=4))
