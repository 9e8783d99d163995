"""Bad arguments raise ValueError / TypeError with messages that say what was expected; the GIL
is released in the kernels; buffers travel without copies (DLPack, the buffer protocol, torch when
it is installed)."""
import threading

import numpy as np
import pytest

import minifloat as mf


def test_cast_argument_errors():
    x = np.ones(4, np.float32)
    with pytest.raises(ValueError, match="unknown format 'float8'.*hifloat8"):
        mf.cast(x, "float8")
    with pytest.raises(TypeError, match="not a minifloat format"):
        mf.cast(x, np.int32)
    with pytest.raises(ValueError, match="unknown rounding 'nearest_odd'.*stochastic"):
        mf.cast(x, "hifloat8", round="nearest_odd")
    with pytest.raises(ValueError, match="unknown overflow 'clip'.*saturate"):
        mf.cast(x, "hifloat8", overflow="clip")
    with pytest.raises(TypeError, match="complex128"):
        mf.cast(np.ones(2, np.complex128), "hifloat8")
    with pytest.raises(TypeError, match="long double"):
        mf.cast(np.ones(2, np.longdouble), "hifloat8")
    with pytest.raises(ValueError, match="isa"):
        mf.cast(x, "hifloat8", isa="sse9")
    with pytest.raises(TypeError, match="expected a dtype"):
        mf.cast(x, object())


def test_quantize_argument_errors():
    x = np.ones((4, 64), np.float32)
    with pytest.raises(ValueError, match="unknown format or alias 'mxfp9'"):
        mf.quantize(x, "mxfp9")
    with pytest.raises(ValueError, match="granularity"):
        mf.quantize(x, "hifloat8/row")
    with pytest.raises(ValueError, match="scale format"):
        mf.quantize(x, "float8_e8m0fnu/tensor")
    with pytest.raises(ValueError, match="MX element format"):
        mf.quantize(x, "hifloat8/mx")
    with pytest.raises(TypeError, match="real floating-point"):
        mf.quantize(np.ones((2, 2), np.complex64), "hifloat8/tensor")
    with pytest.raises(TypeError, match="real floating-point"):
        mf.quantize(np.array(["a"]), "hifloat8/tensor")
    with pytest.raises(ValueError, match="0-d"):
        mf.quantize(np.float32(1.0), "hifloat8/tensor")
    with pytest.raises(ValueError, match="needs 1 scales, got 2"):
        mf.quantize_with_scales(x, "hifloat8/tensor", np.ones(2, np.float32))
    with pytest.raises(ValueError, match="needs 4 scales"):
        mf.quantize_with_scales(x, "hifloat8/channel", np.ones(3, np.float32))
    with pytest.raises(ValueError, match="finite and positive"):
        mf.quantize_with_scales(x, "hifloat8/tensor", np.zeros(1, np.float32))
    with pytest.raises(ValueError, match="mx"):
        mf.quantize_with_scales(x, "mxfp8_e4m3", np.ones(8, np.float32))
    with pytest.raises(ValueError, match="unknown rounding"):
        mf.quantize(x, "hifloat8/tensor", round="up")


def test_fp4_packing_errors():
    with pytest.raises(ValueError, match="need 2 bytes"):
        mf.unpack_fp4(np.zeros(3, np.uint8), 4)
    with pytest.raises(TypeError, match="uint8"):
        mf.pack_fp4(np.zeros(3, np.float32))
    with pytest.raises(ValueError, match="0-d"):
        mf.pack_fp4(np.uint8(3))


def test_parse_scheme():
    d = mf.parse_scheme("float8_e4m3fn/block128")
    assert d["format"] == "float8_e4m3fn" and d["granularity"] == "block" and d["block"] == (128, 128)
    assert mf.parse_scheme("mxfp4")["string"] == "float4_e2m1fn/mx"
    assert mf.parse_scheme("hifloat8/tensor")["target"] == 4
    assert "--format hifloat8" in mf.parse_scheme("hifloat8/tensor")["cli_options"]


def test_kernels_release_the_gil():
    """A second Python thread keeps running while a large cast runs in the other one."""
    x = np.random.default_rng(0).standard_normal(1 << 23).astype(np.float32)
    ticks = []
    stop = threading.Event()

    def ticker():
        while not stop.is_set():
            ticks.append(1)

    t = threading.Thread(target=ticker)
    t.start()
    try:
        before = len(ticks)
        for _ in range(3):
            mf.cast(x, "hifloat8", round="stochastic", threads=1, isa="scalar")
        during = len(ticks) - before
    finally:
        stop.set()
        t.join()
    assert during > 0


def test_zero_copy_views():
    x = np.linspace(-2, 2, 64, dtype=np.float32).astype(mf.float8_e4m3fn)
    codes = x.view(np.uint8)
    assert np.shares_memory(codes, x)
    mv = memoryview(codes)
    assert mv.nbytes == 64 and mv.format == "B"
    d = np.from_dlpack(codes)  # DLPack (numpy >= 1.22): how torch and JAX take the codes
    assert np.shares_memory(d, codes)
    np.testing.assert_array_equal(d.view(mf.float8_e4m3fn).astype(np.float32), x.astype(np.float32))
    q = mf.quantize(np.ones((4, 64), np.float32), "mxfp8_e4m3")
    assert q.codes.base is not None  # a view of the tensor's own buffer, not a copy
    assert np.shares_memory(q.codes, q.codes)


def test_torch_interop_through_uint8():
    torch = pytest.importorskip("torch")
    x = np.linspace(-2, 2, 64, dtype=np.float32).astype(mf.float8_e4m3fn)
    t = torch.from_numpy(x.view(np.uint8))  # torch 1.13 has no float8: codes travel as uint8
    assert t.dtype == torch.uint8 and t.data_ptr() == x.ctypes.data
    back = t.numpy().view(mf.float8_e4m3fn)
    np.testing.assert_array_equal(back.astype(np.float32), x.astype(np.float32))
    d = torch.utils.dlpack.from_dlpack(x.view(np.uint8).__dlpack__())
    assert d.data_ptr() == x.ctypes.data
    f = torch.from_numpy(x.astype(np.float32))
    np.testing.assert_array_equal(mf.cast(f.numpy(), "float8_e4m3fn").view(np.uint8), x.view(np.uint8))
