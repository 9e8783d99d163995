#!/usr/bin/python3
"""Regenerates the .npy fixtures read by tests/unit/io/test_npy.cpp.

Run with a Python that has numpy (here /usr/bin/python3, numpy 1.24):
    /usr/bin/python3 tests/data/npy/make_fixtures.py
Files named good_* must load; files named bad_* must be rejected with minifloat::io_error.
Each file stays under 1 KB. The expected values are repeated in the C++ test, so change both.
"""
import io
import pathlib

import numpy as np
from numpy.lib import format as npy_format

HERE = pathlib.Path(__file__).resolve().parent


def save(name, array, version=None):
    buffer = io.BytesIO()
    npy_format.write_array(buffer, array, version=version, allow_pickle=False)
    write_bytes(name, buffer.getvalue())


def write_bytes(name, data):
    assert len(data) < 1024, name
    (HERE / name).write_bytes(data)


def saved_bytes(array):
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


f4_2x3 = np.array([[0.0, 0.5, -1.25], [3.4028235e38, 1e-45, -0.0]], dtype="<f4")

# Loadable files, one per dtype and the interesting shapes; versions 1.0 (np.save), 2.0 and 3.0.
save("good_v1_f4_2x3.npy", f4_2x3)
save("good_v1_f8_5.npy", np.array([1.0 / 3.0, -2.5, 1e300, np.inf, 5e-324], dtype="<f8"))
save("good_v1_f2_3x3.npy", np.array([[0.0, -0.0, 1.0], [65504.0, 2.0**-24, np.inf],
                                     [-np.inf, np.nan, 0.333]], dtype="<f2"))
save("good_v1_u1_scalar.npy", np.array(200, dtype="|u1"))
save("good_v1_u2_2x2.npy", np.array([[0, 1], [65535, 0x1234]], dtype="<u2"))
save("good_v1_i1_4.npy", np.array([-128, -1, 0, 127], dtype="|i1"))
save("good_v1_i4_2x3x4.npy", (np.arange(24, dtype="<i4") - 12).reshape(2, 3, 4))
save("good_v1_f4_empty.npy", np.zeros((0,), dtype="<f4"))
save("good_v1_f8_0x3.npy", np.zeros((0, 3), dtype="<f8"))
save("good_v2_f4_3.npy", np.array([1.5, -2.0, 3.25], dtype="<f4"), version=(2, 0))
save("good_v3_i4_3.npy", np.array([7, -8, 9], dtype="<i4"), version=(3, 0))

# Files numpy writes but we reject, and damaged files.
save("bad_big_endian_f4.npy", np.array([1.0, 2.0], dtype=">f4"))
save("bad_fortran_f8_2x3.npy", np.asfortranarray(np.arange(6, dtype="<f8").reshape(2, 3)))
save("bad_complex_c8.npy", np.array([1 + 2j], dtype="<c8"))
save("bad_structured.npy", np.zeros(2, dtype=[("a", "<f4")]))
good = saved_bytes(f4_2x3)
write_bytes("bad_truncated_f4.npy", good[:-3])
write_bytes("bad_trailing_f4.npy", good + b"\0\0")
write_bytes("bad_magic.npy", b"\x93NUMPZ" + good[6:])

for path in sorted(HERE.glob("*.npy")):
    print(f"{path.name:28} {path.stat().st_size:4} bytes")
