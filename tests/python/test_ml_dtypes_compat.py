"""ml_dtypes compatibility: the documented cases of the shared formats, written from the OCP
specifications (docs/formats/ocp_fp8.md, docs/formats/mx.md), and a test written the way an
ml_dtypes user writes one. `dtypes` is minifloat; when ml_dtypes is installed the same test body
also runs against it, which shows the swap `import ml_dtypes` -> `import minifloat` is drop-in for
the shared names."""
import importlib

import numpy as np
import pytest

import minifloat

MODULES = [minifloat]
try:  # not in Debian bookworm; used when present
    MODULES.append(importlib.import_module("ml_dtypes"))
except ImportError:
    pass

SHARED = ["float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu", "float6_e2m3fn", "float6_e3m2fn", "float4_e2m1fn",
          "bfloat16", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e4m3b11fnuz", "float8_e3m4", "float8_e4m3"]


def f32(*v):
    return np.array(v, dtype=np.float32)


@pytest.mark.parametrize("dtypes", MODULES, ids=lambda m: m.__name__)
def test_e4m3fn_overflow_boundary(dtypes):
    # 464 is the tie between 448 (mantissa 110, even) and the NaN code: it rounds down
    y = f32(448, 464, 465, 480, -464, -465, np.inf).astype(dtypes.float8_e4m3fn).astype(np.float32)
    assert y[0] == 448 and y[1] == 448 and y[4] == -448
    assert np.isnan(y[2]) and np.isnan(y[3]) and np.isnan(y[5]) and np.isnan(y[6])


@pytest.mark.parametrize("dtypes", MODULES, ids=lambda m: m.__name__)
def test_e5m2_overflow_boundary(dtypes):
    # 61440 is the tie between 57344 (mantissa 11, odd) and 65536 (even): it overflows
    y = f32(57344, 61439, 61440, -61440, 1e6).astype(dtypes.float8_e5m2).astype(np.float32)
    assert y[0] == 57344 and y[1] == 57344
    assert y[2] == np.inf and y[3] == -np.inf and y[4] == np.inf


@pytest.mark.parametrize("dtypes", MODULES, ids=lambda m: m.__name__)
def test_fp4_fp6_saturate(dtypes):
    assert f32(100, -100, np.inf).astype(dtypes.float4_e2m1fn).astype(np.float32).tolist() == [6, -6, 6]
    assert f32(100, -100).astype(dtypes.float6_e2m3fn).astype(np.float32).tolist() == [7.5, -7.5]
    assert f32(100, -100).astype(dtypes.float6_e3m2fn).astype(np.float32).tolist() == [28, -28]
    # ties to even on the E2M1 grid 0, 0.5, 1, 1.5, 2, 3, 4, 6
    assert f32(0.25, 0.75, 2.5, 5).astype(dtypes.float4_e2m1fn).astype(np.float32).tolist() == [0, 1, 2, 4]


@pytest.mark.parametrize("dtypes", MODULES, ids=lambda m: m.__name__)
def test_e8m0_rounding(dtypes):
    y = f32(1.5, 2.9, 3, 1, 0.75).astype(dtypes.float8_e8m0fnu).astype(np.float32)
    assert y.tolist() == [2, 2, 4, 1, 1]
    z = f32(0, -1).astype(dtypes.float8_e8m0fnu).astype(np.float32)
    assert np.isnan(z).all()


@pytest.mark.parametrize("dtypes", MODULES, ids=lambda m: m.__name__)
def test_written_like_an_ml_dtypes_test(dtypes):
    """Only the names ml_dtypes has; nothing minifloat-specific."""
    for name in SHARED:
        t = getattr(dtypes, name)
        assert np.dtype(name) == np.dtype(t)
        fi = dtypes.finfo(t)
        x = np.array([0.0, 1.0, -2.0, 0.5], dtype=np.float32)
        if name == "float8_e8m0fnu":
            x = np.array([1.0, 2.0, 0.5, 4.0], dtype=np.float32)
        y = x.astype(t)
        assert y.dtype == t and y.itemsize == (2 if name == "bfloat16" else 1)
        np.testing.assert_array_equal(y.astype(np.float32), x)
        np.testing.assert_array_equal(y.view(np.uint16 if name == "bfloat16" else np.uint8).view(t).astype(np.float32), x)
        assert float(fi.max) == float(np.array([fi.max], dtype=t).astype(np.float32)[0])
        assert float(fi.eps) > 0 and float(fi.tiny) > 0 and float(fi.smallest_subnormal) > 0
        assert float(t(1.0)) == 1.0
        assert np.all(np.isfinite(y)) and not np.any(np.isnan(y))
        if name != "float8_e8m0fnu":
            np.testing.assert_array_equal((y + y).astype(np.float32), (x + x).astype(t).astype(np.float32))
            assert (y < t(0.75)).tolist() == (x < 0.75).tolist()
    assert dtypes.finfo(dtypes.float8_e4m3fn).max == 448
    assert dtypes.finfo(dtypes.float8_e5m2).max == 57344
    assert dtypes.finfo(dtypes.float4_e2m1fn).max == 6
    assert float(dtypes.finfo(dtypes.bfloat16).eps) == 2.0 ** -7
    assert dtypes.finfo(dtypes.float8_e4m3fn).nmant == 3 and dtypes.finfo(dtypes.float8_e5m2).nexp == 5
    assert dtypes.finfo(dtypes.float8_e4m3fnuz).max == 240 and dtypes.finfo(dtypes.float8_e4m3b11fnuz).max == 30
    assert dtypes.finfo(dtypes.float8_e3m4).max == 15.5 and dtypes.finfo(dtypes.float8_e4m3).max == 240
    for name in ("int2", "int4", "uint2", "uint4"):
        t = getattr(dtypes, name)
        ii = dtypes.iinfo(t)
        assert (int(ii.min), int(ii.max)) == {"int2": (-2, 1), "int4": (-8, 7), "uint2": (0, 3), "uint4": (0, 15)}[name]
        assert np.array([ii.min, ii.max], dtype=t).astype(np.int32).tolist() == [ii.min, ii.max]


@pytest.mark.parametrize("dtypes", MODULES, ids=lambda m: m.__name__)
def test_fnuz_formats_have_one_nan_and_no_negative_zero(dtypes):
    for name, big in (("float8_e4m3fnuz", 248), ("float8_e5m2fnuz", 61440), ("float8_e4m3b11fnuz", 31)):
        t = getattr(dtypes, name)
        codes = f32(-0.0, -1e-30, np.nan, big, -np.inf, 1.0).astype(t).view(np.uint8).tolist()
        assert codes[:5] == [0x00, 0x00, 0x80, 0x80, 0x80], (name, codes)


def test_hifloat8_beyond_ml_dtypes():
    # HiF8 (not in ml_dtypes): ties away from zero on the tapered grid; overflow from 40960 (1.25 * 2^15)
    y = f32(32768, 40959, 40960, 1.0625, 1.1875, 2.0 ** -23, 2.0 ** -24).astype(minifloat.hifloat8).astype(np.float32)
    assert y.tolist()[:2] == [32768, 32768] and y[2] == np.inf
    assert y[3] == 1.125 and y[4] == 1.25  # ties away: 1.0625 -> 1.125, 1.1875 -> 1.25
    assert y[5] == 2.0 ** -22 and y[6] == 0
