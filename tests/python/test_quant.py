"""quantize / dequantize / quantize_with_scales / QuantizedTensor: layouts and invariants, the
invariants also as hypothesis properties."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck
from hypothesis.extra import numpy as hnp

import minifloat as mf

SCALED = ["hifloat8/tensor", "hifloat8/channel", "float8_e4m3fn/tensor", "float8_e5m2/channel",
          "float8_e4m3fn/block128", "float8_e4m3fn/block/block=1x32", "float4_e2m1fn/token",
          "float6_e3m2fn/tensor/scale-rule=pow2", "float8_e4m3fn/tensor/scale-rule=none", "bfloat16/tensor",
          "float16/channel", "float8_e5m2/tensor/round=toward_zero"]
MX = ["mxfp8_e4m3", "mxfp8_e5m2", "mxfp6_e3m2", "mxfp6_e2m3", "mxfp4", "mxfp4/axis=0", "mxfp8_e4m3/scale-rule=rceil",
      "float4_e2m1fn/mx/scale-rule=even"]


from qhelpers import element_values, scale_of_each, requant_exact


def data(rows, cols, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((rows, cols)) * np.exp2(rng.integers(-4, 4, (rows, 1)))).astype(np.float32)


@pytest.mark.parametrize("scheme", SCALED + MX)
def test_layout_and_dequantize_definition(scheme):
    x = data(70, 100, seed=1)
    q = mf.quantize(x, scheme)
    assert q.shape == (70, 100) and q.rows == 70 and q.cols == 100
    info = mf.parse_scheme(scheme)
    assert q.scheme == info["name"] and q.scheme_string == info["string"] and q.format == info["format"]
    if q.format == "float4_e2m1fn":
        assert q.codes.shape == (70, 50) and q.codes.dtype == np.uint8
    elif q.format in ("bfloat16", "float16"):
        assert q.codes.shape == (70, 100) and q.codes.dtype == np.uint16
    else:
        assert q.codes.shape == (70, 100) and q.codes.dtype == np.uint8
    if info["granularity"] == "mx":
        assert q.scales.dtype == mf.float8_e8m0fnu
        assert q.scales.shape == ((70, 4) if info["axis"] == 1 else (3, 100))
    else:
        assert q.scales.dtype == np.float32
    y = q.dequantize()
    assert y.shape == x.shape and y.dtype == np.float32
    # dequantize is decode(code) * scale, one float32 multiply
    np.testing.assert_array_equal(y, element_values(q) * scale_of_each(q))
    assert not q.codes.flags.writeable and not q.scales.flags.writeable
    np.testing.assert_array_equal(mf.dequantize(q), y)
    assert "QuantizedTensor" in repr(q) and q.nbytes > 0


@pytest.mark.parametrize("scheme", ["mxfp4", "float4_e2m1fn/tensor"])
def test_fp4_nibble_order(scheme):
    x = np.array([[0.5, 1.0, 1.5, 2.0, 3.0]], np.float32) * (1.0 if scheme == "mxfp4" else 2.0)
    q = mf.quantize(x, scheme)
    c = q.codes[0]
    assert c.shape == (3,)
    # element 2i in the low nibble, 2i+1 in the high nibble; an odd row ends with a zero high nibble
    un = mf.unpack_fp4(q.codes, 5).view(np.uint8)[0]
    assert (c[0] & 0xF) == un[0] and (c[0] >> 4) == un[1] and (c[2] >> 4) == 0
    np.testing.assert_array_equal(mf.pack_fp4(un[None, :]), q.codes)


def test_pack_unpack_fp4():
    codes = np.arange(16, dtype=np.uint8)
    packed = mf.pack_fp4(codes)
    assert packed.tolist() == [0x10, 0x32, 0x54, 0x76, 0x98, 0xBA, 0xDC, 0xFE]
    back = mf.unpack_fp4(packed, 16)
    assert back.dtype == mf.float4_e2m1fn and back.view(np.uint8).tolist() == list(range(16))
    assert mf.pack_fp4(codes[:3]).tolist() == [0x10, 0x02]
    assert mf.pack_fp4(back.reshape(2, 8)).shape == (2, 4)


@pytest.mark.parametrize("scheme", [s for s in SCALED if requant_exact(s)])
def test_requantize_with_its_scales_reproduces_the_codes(scheme):
    x = data(33, 257, seed=2)
    q = mf.quantize(x, scheme)
    q2 = mf.quantize_with_scales(q.dequantize(), scheme, q.scales)
    np.testing.assert_array_equal(q2.codes, q.codes)
    np.testing.assert_array_equal(q2.scales, q.scales)


@pytest.mark.parametrize("scheme", SCALED + MX)
def test_nd_input_is_rows_of_the_last_axis(scheme):
    x = data(6, 64, seed=3)
    q3 = mf.quantize(x.reshape(2, 3, 64), scheme)
    q2 = mf.quantize(x, scheme)
    assert q3.shape == (2, 3, 64) and q3.rows == 6 and q3.cols == 64
    np.testing.assert_array_equal(q3.codes.reshape(q2.codes.shape), q2.codes)
    np.testing.assert_array_equal(q3.dequantize().reshape(6, 64), q2.dequantize())
    q1 = mf.quantize(x[0], scheme)
    assert q1.shape == (64,) and q1.rows == 1
    np.testing.assert_array_equal(q1.dequantize(), mf.quantize(x[:1], scheme).dequantize()[0])


def test_flatten_first():
    w = data(6, 40, seed=9).reshape(6, 10, 2, 2)  # conv weight (O, I, kh, kw)
    q = mf.quantize(w, "hifloat8/channel", flatten="first")
    assert q.rows == 6 and q.cols == 40 and q.codes.shape == (6, 40) and q.scales.shape == (6, 1)
    np.testing.assert_array_equal(q.codes, mf.quantize(w.reshape(6, 40), "hifloat8/channel").codes)
    assert q.dequantize().shape == w.shape
    np.testing.assert_array_equal(q.dequantize().reshape(6, 40), mf.quantize(w.reshape(6, 40), "hifloat8/channel").dequantize())
    last = mf.quantize(w, "hifloat8/channel")
    assert last.rows == 120 and last.codes.shape == (6, 10, 2, 2)
    assert mf.measure(w, q)["count"] == 240
    with pytest.raises(ValueError, match="flatten"):
        mf.quantize(w, "hifloat8/channel", flatten="middle")


def test_strided_rows_are_read_in_place():
    big = data(40, 300, seed=4)
    view = big[5:25, 10:138]  # rows contiguous, row stride 300
    q = mf.quantize(view, "mxfp8_e4m3")
    r = mf.quantize(np.ascontiguousarray(view), "mxfp8_e4m3")
    np.testing.assert_array_equal(q.codes, r.codes)
    np.testing.assert_array_equal(q.scales.view(np.uint8), r.scales.view(np.uint8))
    t = mf.quantize(big.T, "hifloat8/channel")  # columns: copied, same result
    np.testing.assert_array_equal(t.codes, mf.quantize(np.ascontiguousarray(big.T), "hifloat8/channel").codes)


def test_input_dtypes():
    x = data(4, 64, seed=5)
    ref = mf.quantize(x, "mxfp8_e4m3")
    np.testing.assert_array_equal(mf.quantize(x.astype(np.float64), "mxfp8_e4m3").codes, ref.codes)
    h = x.astype(mf.bfloat16)
    np.testing.assert_array_equal(mf.quantize(h, "mxfp8_e4m3").codes, mf.quantize(h.astype(np.float32), "mxfp8_e4m3").codes)


def test_stochastic_rounding_in_quantize():
    x = data(8, 64, seed=6)
    a = mf.quantize(x, "float8_e4m3fn/tensor", round="stochastic", seed=3)
    b = mf.quantize(x, "float8_e4m3fn/tensor", round="stochastic", seed=3)
    c = mf.quantize(x, "float8_e4m3fn/tensor", round="stochastic", seed=4)
    np.testing.assert_array_equal(a.codes, b.codes)
    assert not np.array_equal(a.codes, c.codes)
    # each element is one of the two neighbours of the nearest-rounded code
    n = mf.quantize(x, "float8_e4m3fn/tensor")
    s = float(n.scales[0, 0])
    t = x / np.float32(s)
    lo = mf.cast(t, "float8_e4m3fn", round="toward_zero").astype(np.float32)
    hi = mf.cast(t, "float8_e4m3fn", round="upward", overflow="saturate").astype(np.float32)
    lo2 = mf.cast(t, "float8_e4m3fn", round="downward").astype(np.float32)
    v = element_values(a)
    assert np.all((v == lo) | (v == hi) | (v == lo2))


def test_mx_rounding_must_be_nearest():
    with pytest.raises(ValueError, match="nearest even"):
        mf.quantize(data(2, 32), "mxfp8_e4m3", round="toward_zero")


def test_from_parts_round_trip():
    x = data(10, 70, seed=7)
    for scheme in ("mxfp4", "hifloat8/channel", "float8_e4m3fn/block/block=4x32"):
        q = mf.quantize(x, scheme)
        r = mf.QuantizedTensor.from_parts(q.scheme_string, q.shape, q.codes, q.scales)
        np.testing.assert_array_equal(r.dequantize(), q.dequantize())
    with pytest.raises(ValueError, match="code bytes"):
        mf.QuantizedTensor.from_parts("mxfp4", (10, 70), q.codes[:, :3], q.scales)
    q = mf.quantize(x, "mxfp4")
    with pytest.raises(ValueError, match="scales"):
        mf.QuantizedTensor.from_parts("mxfp4", (10, 70), q.codes, q.scales[:, :1])


matrices = hnp.arrays(np.float32, st.tuples(st.integers(1, 9), st.integers(1, 80)),
                      elements=st.floats(-1e4, 1e4, width=32, allow_subnormal=False))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(matrices, st.sampled_from(SCALED + MX))
def test_property_invariants(x, scheme):
    q = mf.quantize(x, scheme)
    y = q.dequantize()
    assert y.shape == x.shape and np.all(np.isfinite(y))  # finite input never comes back non-finite
    np.testing.assert_array_equal(y, element_values(q) * scale_of_each(q))
    info = mf.parse_scheme(scheme)
    fi = mf.finfo(q.dtype) if q.format != "float16" else np.finfo(np.float16)
    # saturating: |x / s| beyond max becomes max; never a sign flip
    assert np.all((np.sign(y) == np.sign(x)) | (y == 0))
    s = scale_of_each(q)
    assert np.all(np.abs(y) <= float(fi.max) * s)
    if info["granularity"] != "mx" and requant_exact(scheme):
        # quantizing the dequantized tensor with the same scales is the identity on the codes
        q2 = mf.quantize_with_scales(y, scheme, q.scales)
        np.testing.assert_array_equal(q2.codes, q.codes)
    # idempotent: the dequantized tensor quantizes to itself (MX: the block scales cannot grow)
    z = mf.quantize(y, scheme).dequantize()
    if info["granularity"] == "mx":
        np.testing.assert_array_equal(z, y)


@settings(max_examples=60, deadline=None)
@given(matrices)
def test_property_mx_error_bound(x):
    """MXFP8 E4M3 with the floor rule: every element is within half an E4M3 ulp at its binade of
    the block scale (relative 2^-4), or below the block's subnormal step."""
    q = mf.quantize(x, "mxfp8_e4m3")
    y = q.dequantize().astype(np.float64)
    s = scale_of_each(q).astype(np.float64)
    xd = x.astype(np.float64)
    err = np.abs(y - xd)
    bound = np.maximum(np.abs(xd) * 2.0 ** -4, s * 2.0 ** -10)
    # the floor rule puts amax in [256, 512) * s: values past 448 * s saturate to +-448 * s
    clipped = (np.abs(xd) > 448 * s) & (np.abs(y) == 448 * s)
    assert np.all((err <= bound * (1 + 1e-6)) | clipped), float((err / bound).max())
