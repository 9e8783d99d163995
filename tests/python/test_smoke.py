import numpy as np
import minifloat


def test_import():
    assert np.dtype("hifloat8") == np.dtype(minifloat.hifloat8)
