#!/usr/bin/python3
"""Regenerates the .safetensors fixtures read by tests/unit/io/test_safetensors.cpp and
tests/cli/analyze.sh.

Run with a Python that has numpy (here /usr/bin/python3):
    /usr/bin/python3 tests/data/safetensors/make_fixtures.py
The files are written byte by byte as huggingface/safetensors lays them out (8-byte little-endian
header length, JSON header padded with spaces to a multiple of 8, tensors sorted by descending
item size then name), so no safetensors package is needed. Files named good_* must load; files
named bad_* must be rejected with minifloat::io_error. The expected values are repeated in the
C++ test, so change both.
"""
import json
import pathlib
import struct

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
ITEM = {"F64": 8, "I64": 8, "F32": 4, "F16": 2, "BF16": 2, "U8": 1}


def header_bytes(header):
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text


def layout(tensors, metadata=None):
    """tensors: list of (name, dtype, shape, raw bytes) -> (header dict, data bytes)."""
    order = sorted(tensors, key=lambda t: (-ITEM[t[1]], t[0]))
    header = {}
    if metadata:
        header["__metadata__"] = metadata
    data = b""
    for name, dtype, shape, raw in order:
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    return header, data


def write(name, blob):
    assert len(blob) < 2048, name
    (HERE / name).write_bytes(blob)


def bf16(values):
    bits = np.asarray(values, dtype=np.float32).view(np.uint32) >> 16  # exact for these values
    return bits.astype("<u2").tobytes()


# The good file: 2x3 F32, 4 F16 (one subnormal), 2x2 BF16, 3 F64, and an I64 tensor that readers
# of float tensors skip. C++ expects exactly these values.
F32 = np.array([[1.0, -2.5, 0.125], [3.0e-5, 0.0, 448.0]], dtype="<f4")
F16 = np.array([1.0, -0.5, 65504.0, 2.0**-24], dtype="<f2")
BF16 = [[1.0, -3.0], [0.5, 2.0**100]]
F64 = np.array([0.1, -1.0e300, 2.0**-149], dtype="<f8")
I64 = np.array([7, -7], dtype="<i8")
GOOD = [
    ("weight", "F32", (2, 3), F32.tobytes()),
    ("half", "F16", (4,), F16.tobytes()),
    ("brain", "BF16", (2, 2), bf16(BF16)),
    ("double", "F64", (3,), F64.tobytes()),
    ("ids", "I64", (2,), I64.tobytes()),
]
META = {"format": "pt", "source": "minifloat fixture"}


def main():
    header, data = layout(GOOD, META)
    good = header_bytes(header) + data
    write("good_mixed.safetensors", good)
    write("good_empty.safetensors", header_bytes({}))
    # A scalar (shape []) and a zero-size tensor.
    header, data = layout([("scalar", "F32", (), np.float32(2.0).tobytes()), ("nothing", "F32", (0, 4), b"")])
    write("good_scalar_empty.safetensors", header_bytes(header) + data)

    # --- malformed ---------------------------------------------------------------------------
    write("bad_short.safetensors", b"\x10\x00\x00")                        # < 8 bytes
    write("bad_truncated_header.safetensors", good[:40])                   # N runs past the end
    write("bad_truncated_data.safetensors", good[:-5])                     # data cut off
    write("bad_trailing.safetensors", good + b"\x00" * 4)                  # data beyond the last tensor
    write("bad_huge_length.safetensors", struct.pack("<Q", 2**40) + b"{}")  # N > 100 MB
    header, data = layout([("x", "F32", (2,), F32.tobytes()[:8])])
    header["x"]["dtype"] = "F33"
    write("bad_unknown_dtype.safetensors", header_bytes(header) + data)
    header, data = layout([("a", "F32", (2,), b"\x00" * 8), ("b", "F32", (2,), b"\x00" * 8)])
    header["b"]["data_offsets"] = [4, 12]                                  # overlaps a
    write("bad_overlap.safetensors", header_bytes(header) + data[:12])
    header, data = layout([("a", "F32", (2,), b"\x00" * 8)])
    header["a"]["data_offsets"] = [0, 80]                                  # past the end, and lies about size
    write("bad_offsets_past_end.safetensors", header_bytes(header) + data)
    header, data = layout([("a", "F32", (2,), b"\x00" * 8)])
    header["a"]["shape"] = [3]                                             # shape says 12 bytes, offsets 8
    write("bad_size_mismatch.safetensors", header_bytes(header) + data)
    header, data = layout([("a", "F32", (2,), b"\x00" * 8)])
    header["a"]["data_offsets"] = [4, 12]                                  # gap [0, 4)
    write("bad_gap.safetensors", header_bytes(header) + b"\x00" * 4 + data)
    text = b'{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]'          # unterminated JSON
    write("bad_json.safetensors", struct.pack("<Q", len(text)) + text + b"\x00" * 4)
    text = b'[1,2,3]   '
    write("bad_not_object.safetensors", struct.pack("<Q", len(text)) + text)
    text = b'{"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}'
    write("bad_negative_shape.safetensors", struct.pack("<Q", len(text)) + text + b"\x00" * 4)
    text = b'{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}'
    write("bad_duplicate_name.safetensors", struct.pack("<Q", len(text)) + text + b"\x00" * 8)
    text = b'{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"\xff":{}}'
    write("bad_utf8.safetensors", struct.pack("<Q", len(text)) + text + b"\x00" * 4)


if __name__ == "__main__":
    main()
