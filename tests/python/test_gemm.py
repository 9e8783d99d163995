"""minifloat.gemm on quantized operands: the exact order against float64 arithmetic, the fast path
bit-identical to fp32_blocks, layouts, bias, bfloat16 output, errors."""
import numpy as np
import pytest

import minifloat as mf
from qhelpers import exact_gemm


def operands(m, n, k, sa, sb, layout="nk", seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(np.float32)
    w = rng.standard_normal((n, k)).astype(np.float32)
    qa = mf.quantize(a, sa)
    qb = mf.quantize(w if layout == "nk" else np.ascontiguousarray(w.T), sb)
    return qa, qb


PAIRS = [("mxfp8_e4m3", "mxfp8_e4m3"), ("mxfp4", "mxfp4"), ("mxfp8_e5m2", "mxfp6_e2m3"), ("hifloat8/tensor", "hifloat8/channel"),
         ("float8_e4m3fn/token", "float8_e4m3fn/channel"), ("float8_e4m3fn/block/block=1x128", "float8_e4m3fn/block128")]


@pytest.mark.parametrize("sa,sb", PAIRS)
def test_exact_order_is_the_correctly_rounded_sum(sa, sb):
    qa, qb = operands(5, 7, 96, sa, sb)
    got = mf.gemm(qa, qb, order="exact")
    assert got.shape == (5, 7) and got.dtype == np.float32
    np.testing.assert_array_equal(got, exact_gemm(qa, qb))


@pytest.mark.parametrize("sa,sb", PAIRS)
@pytest.mark.parametrize("m", [1, 5, 40])
def test_fast_is_bit_identical_to_fp32_blocks(sa, sb, m):
    qa, qb = operands(m, 70, 320, sa, sb, seed=m)
    ref = mf.gemm(qa, qb, order="fp32_blocks")
    for threads in (1, 2):
        for isa in mf.available_isas():
            np.testing.assert_array_equal(mf.gemm(qa, qb, order="fast", threads=threads, isa=isa), ref)
    exact = mf.gemm(qa, qb, order="exact")
    assert np.max(np.abs(ref - exact)) <= 1e-4 * np.max(np.abs(exact))


def test_layout_kn_and_bias_and_bf16():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((4, 64)).astype(np.float32)
    w = rng.standard_normal((64, 9)).astype(np.float32)  # (K, N)
    qa = mf.quantize(a, "mxfp8_e4m3")
    qb = mf.quantize(w, "mxfp8_e4m3/axis=0")
    bias = rng.standard_normal(9).astype(np.float32)
    exact = mf.gemm(qa, qb, layout="kn", order="exact", bias=bias)
    want = (qa.dequantize().astype(np.float64) @ qb.dequantize().astype(np.float64) + bias).astype(np.float32)
    np.testing.assert_allclose(exact, want, rtol=1e-6, atol=1e-6)
    bf = mf.gemm(qa, qb, layout="kn", order="exact", bias=bias, out_dtype=mf.bfloat16)
    assert bf.dtype == mf.bfloat16 and bf.shape == (4, 9)
    np.testing.assert_allclose(bf.astype(np.float32), exact, rtol=2 ** -8)
    fast = mf.gemm(qa, qb, layout="kn", bias=bias, out_dtype="bfloat16")
    np.testing.assert_array_equal(fast.view(np.uint16),
                                  mf.gemm(qa, qb, layout="kn", bias=bias, order="fp32_blocks").astype(mf.bfloat16).view(np.uint16))


def test_gemm_errors():
    qa, qb = operands(3, 5, 64, "mxfp8_e4m3", "mxfp8_e4m3")
    qc = mf.quantize(np.ones((5, 32), np.float32), "mxfp8_e4m3")
    with pytest.raises(ValueError, match="K must agree"):
        mf.gemm(qa, qc)
    with pytest.raises(ValueError, match="order"):
        mf.gemm(qa, qb, order="fastest")
    with pytest.raises(ValueError, match="layout"):
        mf.gemm(qa, qb, layout="mn")
    with pytest.raises(ValueError, match="bias"):
        mf.gemm(qa, qb, bias=np.ones(4, np.float32))
    with pytest.raises(ValueError, match="axis"):
        mf.gemm(qa, mf.quantize(np.ones((5, 64), np.float32), "mxfp8_e4m3/axis=0"))
    with pytest.raises(TypeError):
        mf.gemm(qa, np.ones((5, 64), np.float32))
    with pytest.raises(TypeError, match="out_dtype"):
        mf.gemm(qa, qb, out_dtype=np.float16)
    with pytest.raises(ValueError, match="bfloat16"):
        mf.gemm(mf.quantize(np.ones((2, 8), np.float32), "bfloat16/tensor"), mf.quantize(np.ones((2, 8), np.float32), "bfloat16/tensor"))
