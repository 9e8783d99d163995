"""Issue 35 item 8: one scheme validation. A pow2 target outside the format's binades
(`hifloat8/tensor/n-guard=38`) is refused by every Python entry point with the command line's
text, because all of them go through the library's quant_scheme::validate(); issue 35 items
5c and 7 as they reach Python (a caller scale that would make Inf, a size that would wrap)."""
import re

import numpy as np
import pytest

import minifloat as mf

HIF8_38 = ("pow2 target T = -23 (N_guard 38) puts the amax at 2^-23, outside the binades of hifloat8 "
           "(2^-22 .. 2^15): every value would flush to zero; expected T from -22 to 15 (N_guard from 0 to 37)")


def test_quantize_refuses_n_guard_38_with_the_cli_text():
    x = np.ones((2, 8), np.float32)
    with pytest.raises(ValueError, match=re.escape(HIF8_38)):
        mf.quantize(x, "hifloat8/tensor/n-guard=38")
    with pytest.raises(ValueError, match=re.escape(HIF8_38)):
        mf.parse_scheme("hifloat8/tensor/n-guard=38")
    with pytest.raises(ValueError, match=re.escape(HIF8_38)):
        mf.quantize_with_scales(x, "hifloat8/tensor/n-guard=38", np.ones((1, 1), np.float32))


def test_range_ends_and_other_formats():
    x = np.linspace(-3, 3, 64, dtype=np.float32).reshape(2, 32)
    for ok in ("hifloat8/tensor/n-guard=37", "hifloat8/channel/n-guard=0",
               "float8_e4m3fn/tensor/scale-rule=pow2/target=8"):
        q = mf.quantize(x, ok)
        assert np.all(np.isfinite(q.dequantize()))
    with pytest.raises(ValueError, match=r"outside the binades of float8_e4m3fn \(2\^-9 \.\. 2\^8\).*clipped"):
        mf.quantize(x, "float8_e4m3fn/tensor/scale-rule=pow2/target=9")
    with pytest.raises(ValueError, match=r"N_guard -1\).*clipped to its max"):
        mf.quantize(x, "hifloat8/tensor/n-guard=-1")


def test_caller_scale_that_makes_inf_is_refused():
    big = np.float32(2.0 ** 127)
    x = np.array([[1.0, 0.0], [np.finfo(np.float32).max, -np.finfo(np.float32).max]], np.float32)
    with pytest.raises(ValueError, match="overflows float32"):
        mf.quantize_with_scales(x, "hifloat8/tensor", np.full((1, 1), big, np.float32))
    # the same scale on values it keeps finite is accepted
    q = mf.quantize_with_scales(np.ones((2, 2), np.float32), "hifloat8/tensor", np.full((1, 1), big, np.float32))
    assert np.all(np.isfinite(q.dequantize()))


def test_from_parts_size_that_would_wrap_is_refused():
    with pytest.raises(ValueError):
        mf.QuantizedTensor.from_parts("bfloat16/tensor", [1, 2 ** 62], np.zeros(0, np.uint8), np.ones((1, 1), np.float32))
