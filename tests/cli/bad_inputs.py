#!/usr/bin/python3
"""The bad-input catalogue of the `minifloat` CLI (docs/errors.md): every case is one command
line with its expected exit code and a fragment of its one-line message, run against the real
binary.

Usage: bad_inputs.py PATH/TO/minifloat        (tests/cli/bad_inputs.sh runs it under ctest)
       bad_inputs.py PATH/TO/minifloat --list (the table: class, id, exit code, fragment)

Besides its own exit code and message, every case is checked for the four failures that must
never happen, and the summary counts them (all must be 0):
  crash           killed by a signal, or a sanitizer report on stderr
  hang            still running after the time limit
  data loss       a file that existed before the command (an input, an old output) changed,
                  vanished or lost its inode/device node
  silent garbage  exit 0 with an output that is wrong (a case's output check fails), a failed
                  command that leaves a new file behind (a partial output or a temporary file),
                  or a message that is not one line
Cases whose outcome depends on the quantize engine accept either correct behaviour (a clear
error naming the value, or a valid result) so they stay right before and after engine fixes.
"""
import json
import os
import shutil
import stat
import struct
import subprocess
import sys
import tempfile

import numpy as np

# TIME_LIMIT: seconds per case (ASan + UBSan Debug builds are slow, but never this slow)
from catalogue import TIME_LIMIT, crashed, snapshot


# --- fixtures ------------------------------------------------------------------------------------

def npy_bytes(descr, shape, data=b"", fortran=False, version=(1, 0), extra_header=""):
    """A .npy file with a hand-made header: it may lie about the data on purpose."""
    shape_text = "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"
    header = "{'descr': %r, 'fortran_order': %s, 'shape': %s, %s}" % (descr, fortran, shape_text, extra_header)
    return raw_npy(header, data, version)


def raw_npy(header_text, data=b"", version=(1, 0)):
    h = header_text.encode("latin-1")
    pre = 10 if version[0] == 1 else 12
    pad = 64 - (pre + len(h) + 1) % 64
    h = h + b" " * pad + b"\n"
    length = struct.pack("<H", len(h)) if version[0] == 1 else struct.pack("<I", len(h))
    return b"\x93NUMPY" + bytes(version) + length + h + data


def safetensors_bytes(header, data=b"", raw_header=None):
    text = raw_header if raw_header is not None else json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + data


def make_fixtures(d):
    """Writes every input file into d; returns nothing (cases name them by file name)."""
    def save(name, array):
        np.save(os.path.join(d, name), array)

    def put(name, data):
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)

    rng = np.random.default_rng(13)
    x = (rng.standard_normal((6, 70)) * np.exp2(rng.uniform(-8, 4, (6, 70)))).astype(np.float32)
    save("x.npy", x)
    save("x1d.npy", x[0])
    save("x3d.npy", x.reshape(2, 3, 70))
    save("x4d.npy", x.reshape(6, 7, 5, 2))
    save("x64.npy", x.astype(np.float64))
    save("x16.npy", x.astype(np.float16))
    save("scalar.npy", np.array(1.5, dtype=np.float32))
    save("odd33.npy", x[:, :33].copy())
    save("one.npy", np.array([0.75], dtype=np.float32))
    save("nan.npy", np.full((4, 8), np.nan, dtype=np.float32))
    save("inf.npy", np.array([[np.inf, -np.inf], [np.inf, np.inf]], dtype=np.float32))
    save("nan_mix.npy", np.array([np.nan, 1.0, np.inf, -2.0, -np.inf, 0.0], dtype=np.float32))
    save("zeros.npy", np.zeros((3, 5), dtype=np.float32))
    save("denormal.npy", np.array([1e-45, -1e-44, 1e-40, 2.0**-126, -2.0**-149], dtype=np.float32))
    save("big.npy", np.array([3.3e38, 1.0, -3.4e38], dtype=np.float32))
    save("big64.npy", np.array([1e300, -1e300, 1.0], dtype=np.float64))  # overflows float32
    save("maxf.npy", np.array([np.finfo(np.float32).max, 1.0], dtype=np.float32))
    save("empty.npy", np.zeros((0, 3), dtype=np.float32))
    save("empty1d.npy", np.zeros((0,), dtype=np.float32))
    save("u8.npy", np.arange(6, dtype=np.uint8).reshape(2, 3))
    save("u8big.npy", np.array([3, 200], dtype=np.uint8))
    save("u16.npy", np.array([0x3F80, 0x4040], dtype=np.uint16))
    save("i32.npy", np.arange(4, dtype=np.int32))
    save("i8.npy", np.arange(4, dtype=np.int8))
    save("codes_e2m1.npy", np.array([1, 15, 16], dtype=np.uint8))
    save("codes_e3m2.npy", np.array([1, 63, 64], dtype=np.uint8))
    save("bool.npy", np.array([True, False]))
    save("c8.npy", np.array([1 + 2j], dtype=np.complex64))
    save("f16le.npy", np.array([1.5], dtype="<f2"))
    save("be.npy", np.array([1.0, 2.0], dtype=">f4"))
    save("fortran.npy", np.asfortranarray(np.ones((2, 3), dtype=np.float32)))
    save("structured.npy", np.zeros(2, dtype=[("a", "<f4"), ("b", "<i4")]))
    save("unicode.npy", np.array(["ab"]))
    save("longdouble.npy", np.array([1.0], dtype=np.longdouble))
    save("i64.npy", np.arange(3, dtype=np.int64))
    # Lying and broken .npy files
    good = open(os.path.join(d, "one.npy"), "rb").read()
    put("magic.npy", b"\x93NUMPX" + good[6:])
    put("text.npy", b"this is not a numpy file at all")
    put("empty_file.npy", b"")
    put("tiny.npy", b"\x93NUM")
    put("preamble.npy", good[:9])
    put("version9.npy", good[:6] + b"\x09\x00" + good[8:])
    put("version21.npy", good[:6] + b"\x02\x01" + good[8:])
    put("header_cut.npy", good[:40])
    put("data_cut.npy", good[:-1])
    put("trailing.npy", good + b"\x00\x00\x00\x00")
    f4 = struct.pack("<2f", 1.0, 2.0)
    put("lie_more.npy", npy_bytes("<f4", (4,), f4))
    put("lie_less.npy", npy_bytes("<f4", (1,), f4))
    put("lie_dtype.npy", npy_bytes("<f8", (2,), f4[:4] + b"\x00" * 4 + f4[4:] + b"\x00" * 4)[:-4])
    put("huge_shape.npy", npy_bytes("<f4", (1 << 30, 1 << 20), f4))
    put("huge_overflow.npy", npy_bytes("<f4", (1 << 62, 1 << 62), f4))
    put("dim_too_big.npy", npy_bytes("<f4", (99999999999999999999999,), f4))
    put("negative_dim.npy", raw_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", f4))
    put("dims65.npy", npy_bytes("<f4", (1,) * 65, f4[:4]))
    put("empty_huge_rows.npy", npy_bytes("<f4", (1 << 40, 0)))
    put("empty_huge_cols.npy", npy_bytes("<f4", (0, 1 << 40)))
    put("empty_huge_3d.npy", npy_bytes("<f4", (1 << 40, 1 << 40, 0)))
    put("empty_2p63.npy", npy_bytes("<f4", (1 << 63, 2, 0)))
    put("empty_u8_huge.npy", npy_bytes("|u1", (1 << 40, 0)))
    put("empty_f16_huge.npy", npy_bytes("<f2", (1 << 40, 0)))
    put("no_descr.npy", raw_npy("{'fortran_order': False, 'shape': (2,), }", f4))
    put("no_shape.npy", raw_npy("{'descr': '<f4', 'fortran_order': False, }", f4))
    put("extra_key.npy", raw_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1, }", f4))
    put("dup_key.npy", raw_npy("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", f4))
    put("not_dict.npy", raw_npy("['descr', '<f4']", f4))
    put("bad_bool.npy", raw_npy("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,), }", f4))
    put("int_shape.npy", raw_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2), }", f4))
    put("float_shape.npy", raw_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2.0,), }", f4))
    put("unterminated.npy", raw_npy("{'descr': '<f4, 'fortran_order': False, 'shape': (2,), }", f4))
    put("ctrl_header.npy", raw_npy("{'descr': '\x1b[31m', 'fortran_order': False, 'shape': (2,), }", f4))
    put("header_len_lie.npy", good[:8] + struct.pack("<H", 60000) + good[10:])
    put("garbage_after.npy", raw_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), } junk", f4))
    put("v2.npy", npy_bytes("<f4", (2,), f4, version=(2, 0)))
    put("v3.npy", npy_bytes("<f4", (2,), f4, version=(3, 0)))
    put("pad_f4.npy", npy_bytes("|f4", (2,), f4))
    put("eq_f4.npy", npy_bytes("=f4", (2,), f4))
    put("f128.npy", npy_bytes("<f16", (1,), b"\x00" * 16))
    put("u4.npy", npy_bytes("<u4", (1,), b"\x00" * 4))
    put("V1.npy", npy_bytes("|V1", (2,), b"\x00\x01"))
    # safetensors
    e4 = bytes(range(0, 256, 16))
    st = {
        "good.safetensors": safetensors_bytes(
            {"__metadata__": {"format": "pt"},
             "w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
             "ids": {"dtype": "I64", "shape": [2], "data_offsets": [24, 40]}},
            struct.pack("<6f", 1, 2, 3, 4, 5, 6) + b"\x00" * 16),
        "fp8.safetensors": safetensors_bytes(
            {"e4": {"dtype": "F8_E4M3", "shape": [16], "data_offsets": [0, 16]},
             "e5": {"dtype": "F8_E5M2", "shape": [16], "data_offsets": [16, 32]}}, e4 + e4),
        "ints_only.safetensors": safetensors_bytes({"ids": {"dtype": "I32", "shape": [2], "data_offsets": [0, 8]}},
                                                   b"\x00" * 8),
        "empty_header.safetensors": safetensors_bytes({}),
        "st_nan.safetensors": safetensors_bytes({"n": {"dtype": "F32", "shape": [3], "data_offsets": [0, 12]}},
                                                struct.pack("<3f", float("nan"), float("nan"), float("nan"))),
        "st_huge_empty.safetensors": safetensors_bytes(
            {"e": {"dtype": "F32", "shape": [1 << 40, 0], "data_offsets": [0, 0]}}),
        "st_escape.safetensors": safetensors_bytes(
            {"\x1b[2J\x1b[31mred": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, struct.pack("<2f", 1, 2)),
        "st_shape_overflow.safetensors": safetensors_bytes(
            {"w": {"dtype": "F32", "shape": [1 << 62, 1 << 62], "data_offsets": [0, 8]}}, b"\x00" * 8),
        "st_missing_key.safetensors": safetensors_bytes({"w": {"dtype": "F32", "shape": [2]}}, b"\x00" * 8),
        "st_float_offset.safetensors": safetensors_bytes(None, b"\x00" * 8,
            raw_header=b'{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8.0]}}'),
        "st_deep.safetensors": safetensors_bytes(None, b"",
            raw_header=b'{"w":{"dtype":"F32","shape":[0],"data_offsets":[0,0],"x":' + b"[" * 100 + b"]" * 100 + b"}}"),
        "st_len_zero.safetensors": struct.pack("<Q", 0),
        "st_meta_not_str.safetensors": safetensors_bytes(None, b"", raw_header=b'{"__metadata__":{"a":1}}'),
        "st_bad_escape.safetensors": safetensors_bytes(None, b"", raw_header=b'{"a\\q":{}}'),
        "st_lone_surrogate.safetensors": safetensors_bytes(None, b"", raw_header=b'{"\\ud800":{}}'),
        "st_dtype_number.safetensors": safetensors_bytes(None, b"\x00" * 4,
            raw_header=b'{"w":{"dtype":4,"shape":[1],"data_offsets":[0,4]}}'),
        "st_neg_offset.safetensors": safetensors_bytes(None, b"\x00" * 4,
            raw_header=b'{"w":{"dtype":"F32","shape":[1],"data_offsets":[-4,4]}}'),
        "st_end_before_begin.safetensors": safetensors_bytes(
            {"w": {"dtype": "F32", "shape": [0], "data_offsets": [4, 0]}}, b"\x00" * 4),
    }
    for name, data in st.items():
        put(name, data)
    os.makedirs(os.path.join(d, "folder"))
    shutil.copy(os.path.join(d, "x.npy"), os.path.join(d, "folder", "a.npy"))
    shutil.copy(os.path.join(d, "nan.npy"), os.path.join(d, "folder", "b.npy"))
    os.makedirs(os.path.join(d, "no_tensors"))
    open(os.path.join(d, "no_tensors", "notes.txt"), "w").write("nothing here")
    os.makedirs(os.path.join(d, "dir.npy"))
    os.mkfifo(os.path.join(d, "fifo.npy"))
    os.mkfifo(os.path.join(d, "fifo.safetensors"))
    os.symlink("x.npy", os.path.join(d, "link_to_x.npy"))
    os.symlink("missing_target.npy", os.path.join(d, "dangling.npy"))
    os.link(os.path.join(d, "x.npy"), os.path.join(d, "hardlink_x.npy"))
    os.symlink("x3d.npy", os.path.join(d, "link_to_x3d.npy"))
    os.link(os.path.join(d, "x3d.npy"), os.path.join(d, "hardlink_x3d.npy"))
    put("notes.txt", b"not a tensor")
    # float64 beyond float32 as gemm (2-D) and attention (3-D) operands
    big = np.ones((2, 32))
    big[1, 3] = 1e300
    save("big64_2d.npy", big)
    # finite A and B whose exact product lies beyond float32 (3e38 * 2)
    ga = np.zeros((2, 8), np.float32)
    ga[0, 5] = 3e38
    save("gemm_huge_a.npy", ga)
    save("gemm_twos_b.npy", np.full((3, 8), 2.0, np.float32))
    save("big64_3d.npy", big.reshape(1, 2, 32))
    # MX blocks holding NaN / Inf: (2, 64), block (0, 0:32) has a NaN, block (1, 32:64) an Inf
    m = rng.standard_normal((2, 64)).astype(np.float32)
    m[0, 5], m[1, 40] = np.nan, -np.inf
    save("nan_blocks.npy", m)
    # 2-D MX tiles: 40 x 70 -> a 2 x 3 grid of 32x32 tiles (partial edge tiles)
    save("tiles.npy", (rng.standard_normal((40, 70)) * np.exp2(rng.uniform(-6, 6, (40, 70)))).astype(np.float32))


# --- one case ------------------------------------------------------------------------------------

class Case:
    """cmd: arguments after the program name; {F} is the fixtures folder, {W} the case's own
    empty work folder (created fresh), {FULL} a device whose writes fail (ENOSPC).
    exit: the expected exit code; frag: a fragment of the one-line message (exit != 0) or of
    stdout (exit 0). pre: files to create in {W} first (name -> bytes): they must survive a
    failing command unchanged. check: for exit 0, a function(work_dir, stdout) returning an
    error string or None. either: (exit, frag) of a second accepted outcome."""

    def __init__(self, cls, cid, cmd, exit, frag, pre=None, check=None, either=None, help_text=False):
        self.cls, self.id, self.cmd, self.exit, self.frag = cls, cid, cmd, exit, frag
        self.pre, self.check, self.either, self.help_text = pre or {}, check, either, help_text


def run_case(mf, case, fixtures, work_root, full):
    w = os.path.join(work_root, case.id)
    os.makedirs(w)
    for name, data in case.pre.items():
        p = os.path.join(w, name)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(data)
    args = [a.replace("{F}", fixtures).replace("{W}", w).replace("{FULL}", full) for a in case.cmd]
    before_f, before_w = snapshot(fixtures), snapshot(w)
    full_before = os.lstat(full)
    problems = []  # (kind, text)
    try:
        p = subprocess.run([mf] + args, stdin=subprocess.DEVNULL, capture_output=True, timeout=TIME_LIMIT)
    except subprocess.TimeoutExpired:
        return [("hang", "no result after %d s" % TIME_LIMIT)], None
    out, err = p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
    if crashed(p.returncode, err):
        problems.append(("crash", "rc %d: %s" % (p.returncode, err[-400:])))
    # data loss: the fixtures never change; pre-existing work files survive a failure
    after_f, after_w = snapshot(fixtures), snapshot(w)
    if after_f != before_f:
        changed = sorted(k for k in set(before_f) | set(after_f) if before_f.get(k) != after_f.get(k))
        problems.append(("data loss", "fixtures changed: %s" % changed[:5]))
    try:
        fs = os.lstat(full)
        intact = stat.S_ISCHR(fs.st_mode) and fs.st_rdev == full_before.st_rdev
    except FileNotFoundError:
        intact = False
    if not intact:
        problems.append(("data loss", "the device %s was removed or replaced" % full))
        if os.path.lexists(full):
            os.remove(full)
        os.mknod(full, 0o666 | stat.S_IFCHR, full_before.st_rdev)
    outcomes = [(case.exit, case.frag)] + ([case.either] if case.either else [])
    matched = None
    for code, frag in outcomes:
        text = err if code != 0 and not case.help_text else out
        if p.returncode == code and frag in text:
            matched = code
    if p.returncode != 0:
        for k, v in before_w.items():
            if after_w.get(k) != v:
                problems.append(("data loss", "%s changed although the command failed" % k))
        new = sorted(set(after_w) - set(before_w))
        if new:
            problems.append(("silent garbage", "a failed command left %s" % new))
        lines = err.strip("\n").split("\n")
        if not case.help_text and (len(lines) != 1 or "error" not in lines[0]):
            problems.append(("silent garbage", "expected a one-line error message, got %r" % err[-300:]))
    temps = [k for k in after_w if ".tmp-" in k] + [k for k in after_f if ".tmp-" in k]
    if temps:
        problems.append(("silent garbage", "temporary files left: %s" % temps))
    if matched is None:
        kind = "wrong exit" if p.returncode not in [c for c, _ in outcomes] else "wrong message"
        problems.append((kind, "exit %d (expected %s), stderr %r, stdout %r" % (
            p.returncode, " or ".join(str(c) for c, _ in outcomes), err[-300:], out[-200:])))
    elif matched == 0 and case.check:
        why = case.check(w, out)
        if why:
            problems.append(("silent garbage", why))
    return problems, p.returncode


# --- output checks -------------------------------------------------------------------------------

def npy_check(name, shape=None, dtype=None, finite_like=None, fixtures=None):
    def check(w, _out):
        p = os.path.join(w, name)
        if not os.path.exists(p):
            return "%s was not written" % name
        a = np.load(p)
        if shape is not None and a.shape != tuple(shape):
            return "%s has shape %s, expected %s" % (name, a.shape, tuple(shape))
        if dtype is not None and a.dtype != np.dtype(dtype):
            return "%s has dtype %s, expected %s" % (name, a.dtype, dtype)
        if finite_like is not None:
            x = np.load(os.path.join(FIXTURES, finite_like)).astype(np.float32)
            bad = np.isfinite(x.reshape(a.shape)) & ~np.isfinite(a)
            if bad.any():
                return "finite inputs came back non-finite in %s: %s" % (name, a[bad][:4])
        return None
    return check


def all_checks(*checks):
    def check(w, out):
        for c in checks:
            why = c(w, out)
            if why:
                return why
        return None
    return check


def stdout_has(*frags):
    def check(_w, out):
        for f in frags:
            if f not in out:
                return "stdout lacks %r" % f
        return None
    return check


def json_check(name, predicate, what):
    def check(w, _out):
        rep = json.load(open(os.path.join(w, name)))
        return None if predicate(rep) else what
    return check


def files_exist(*names):
    def check(w, _out):
        for n in names:
            if not os.path.exists(os.path.join(w, n)):
                return "%s was not written" % n
        return None
    return check


def e4m3_decode(c):
    c = c.astype(np.int64)
    sign = np.where(c & 0x80, -1.0, 1.0)
    e, m = (c >> 3) & 0xF, c & 0x7
    v = np.where(e == 0, m / 8.0 * 2.0**-6, (1 + m / 8.0) * np.exp2(e - 7.0))
    return np.where((c & 0x7F) == 0x7F, np.nan, sign * v)


def mx_tiles_check(w, _out):
    """--granularity mx --block 32x32 on tiles.npy: one E8M0 scale per 32x32 tile, the OCP floor
    rule (2^(floor(log2 amax) - 8) for E4M3), and OUT = scale x decode(code) element by element."""
    x = np.load(os.path.join(FIXTURES, "tiles.npy"))
    y, c, s = (np.load(os.path.join(w, n)) for n in ("o.npy", "c.npy", "s.npy"))
    if s.shape != (2, 3) or s.dtype != np.uint8:
        return "scales %s %s, expected (2, 3) uint8 (ceil(40/32), ceil(70/32))" % (s.shape, s.dtype)
    for i in range(2):
        for j in range(3):
            amax = np.abs(x[32 * i:32 * i + 32, 32 * j:32 * j + 32]).max()
            want = int(np.floor(np.log2(amax))) - 8 + 127
            if int(s[i, j]) != want:
                return "tile (%d, %d): E8M0 code %d, expected %d" % (i, j, s[i, j], want)
    scale = np.exp2(np.repeat(np.repeat(s.astype(np.float64) - 127, 32, 0), 32, 1)[:40, :70])
    if not (e4m3_decode(c) * scale == y.astype(np.float64)).all():
        return "OUT is not scale x decode(code) per 32x32 tile"
    return None


def nan_blocks_check(w, _out):
    y = np.load(os.path.join(w, "o.npy"))
    if not (np.isnan(y[0, :32]).all() and np.isnan(y[1, 32:]).all()):
        return "the blocks holding NaN/Inf are not all NaN: %s" % y[0, :4]
    if not (np.isfinite(y[0, 32:]).all() and np.isfinite(y[1, :32]).all()):
        return "a block without NaN/Inf came back non-finite"
    return None


# --- the catalogue -------------------------------------------------------------------------------

def catalogue():
    C = []
    add = lambda *a, **k: C.append(Case(*a, **k))
    Q = ["quantize", "{F}/x.npy", "{W}/o.npy"]
    QH = Q + ["--format", "hifloat8", "--granularity", "tensor"]
    QE = Q + ["--format", "float8_e4m3fn"]

    # 1. usage: the command line itself is wrong (exit 2), nothing is read
    u = "usage"
    add(u, "no-args", [], 2, "usage: minifloat COMMAND", help_text=True)  # the help on stdout, exit 2
    add(u, "unknown-command", ["frobnicate"], 2, "unknown command 'frobnicate'")
    add(u, "unknown-command-escape", ["\x1b[31mx"], 2, "unknown command '\\x1b[31mx'")
    add(u, "formats-extra-arg", ["formats", "x"], 2, "expected 0 argument(s), got 1")
    add(u, "table-no-format", ["table"], 2, "expected 1 argument(s), got 0")
    add(u, "table-unknown-format", ["table", "float7"], 2, "unknown format 'float7'")
    add(u, "table-option", ["table", "hifloat8", "--round", "x"], 2, "unknown option --round")
    add(u, "encode-missing-out", ["encode", "hifloat8", "{F}/x.npy"], 2, "expected 3 argument(s), got 2")
    add(u, "encode-unknown-format", ["encode", "hifloat9", "{F}/x.npy", "{W}/o.npy"], 2, "unknown format 'hifloat9'")
    add(u, "encode-bad-round", ["encode", "hifloat8", "{F}/x.npy", "{W}/o.npy", "--round", "sideways"], 2,
        "unknown rounding mode 'sideways'")
    add(u, "encode-bad-overflow", ["encode", "hifloat8", "{F}/x.npy", "{W}/o.npy", "--overflow", "wrap"], 2,
        "unknown overflow policy 'wrap'")
    add(u, "encode-saturate-and-overflow", ["encode", "hifloat8", "{F}/x.npy", "{W}/o.npy", "--saturate",
                                            "--overflow", "saturate"], 2, "give --saturate or --overflow, not both")
    add(u, "encode-saturate-value", ["encode", "hifloat8", "{F}/x.npy", "{W}/o.npy", "--saturate=yes"], 2,
        "option --saturate takes no value")
    add(u, "encode-seed-without-stochastic", ["encode", "hifloat8", "{F}/x.npy", "{W}/o.npy", "--seed", "3"], 2,
        "--seed is only used with --round stochastic")
    add(u, "encode-seed-not-integer", ["encode", "hifloat8", "{F}/x.npy", "{W}/o.npy", "--round", "stochastic",
                                       "--seed", "x1"], 2, "--seed must be an integer from 0 to 18446744073709551615, got 'x1'")
    add(u, "encode-seed-negative", ["encode", "hifloat8", "{F}/x.npy", "{W}/o.npy", "--round", "stochastic",
                                    "--seed", "-1"], 2, "--seed must be an integer")
    add(u, "encode-seed-overflow", ["encode", "hifloat8", "{F}/x.npy", "{W}/o.npy", "--round", "stochastic",
                                    "--seed", "99999999999999999999999"], 2, "--seed must be an integer")
    add(u, "encode-bad-input-kind", ["encode", "hifloat8", "{F}/x.npy", "{W}/o.npy", "--input", "int8"], 2,
        "--input must be auto or bfloat16")
    add(u, "encode-option-twice", ["encode", "hifloat8", "{F}/x.npy", "{W}/o.npy", "--round", "upward", "--round",
                                   "downward"], 2, "option --round given twice")
    add(u, "encode-option-no-value", ["encode", "hifloat8", "{F}/x.npy", "{W}/o.npy", "--round"], 2,
        "option --round needs a value")
    add(u, "decode-extra-arg", ["decode", "hifloat8", "{F}/u8.npy", "{W}/o.npy", "{W}/p.npy"], 2,
        "expected 3 argument(s), got 4")
    add(u, "decode-unknown-option", ["decode", "hifloat8", "{F}/u8.npy", "{W}/o.npy", "--bogus"], 2,
        "unknown option --bogus")
    add(u, "quantize-no-format", Q + ["--granularity", "tensor"], 2, "--format is required")
    add(u, "quantize-no-granularity", Q + ["--format", "hifloat8"], 2, "--granularity is required")
    add(u, "quantize-one-positional", ["quantize", "{F}/x.npy", "--format", "hifloat8", "--granularity", "tensor"], 2,
        "expected 2 argument(s), got 1")
    add(u, "quantize-unknown-format", Q + ["--format", "fp8", "--granularity", "tensor"], 2, "unknown format 'fp8'")
    add(u, "quantize-unknown-granularity", Q + ["--format", "hifloat8", "--granularity", "row"], 2,
        "unknown granularity 'row'")
    add(u, "quantize-mx-hifloat8", Q + ["--format", "hifloat8", "--granularity", "mx"], 2,
        "granularity mx needs an MX element format")
    add(u, "quantize-mx-bfloat16", Q + ["--format", "bfloat16", "--granularity", "mx"], 2,
        "granularity mx needs an MX element format")
    add(u, "quantize-mx-rule-max", QE + ["--granularity", "mx", "--scale-rule", "max"], 2,
        "granularity mx takes scale rule floor, rceil, ceil or even")
    add(u, "quantize-fp32-rule-floor", QE + ["--granularity", "tensor", "--scale-rule", "floor"], 2,
        "is an MX (E8M0) rule")
    add(u, "quantize-unknown-rule", QE + ["--granularity", "tensor", "--scale-rule", "biggest"], 2,
        "unknown --scale-rule 'biggest'")
    add(u, "quantize-e8m0-element", Q + ["--format", "float8_e8m0fnu", "--granularity", "tensor"], 2,
        "float8_e8m0fnu is a scale format")
    add(u, "quantize-block-not-rxc", QE + ["--granularity", "block", "--block", "12"], 2, "--block must look like RxC")
    add(u, "quantize-block-zero", QE + ["--granularity", "block", "--block", "0x128"], 2,
        "--block sizes must be at least 1")
    add(u, "quantize-block-garbage", QE + ["--granularity", "block", "--block", "ax4"], 2,
        "--block rows must be an integer")
    add(u, "quantize-block-overflow", QE + ["--granularity", "block", "--block", "1x99999999999999999999999"], 2,
        "--block cols must be an integer")
    add(u, "quantize-block-wrong-granularity", QE + ["--granularity", "tensor", "--block", "1x128"], 2,
        "--block applies to --granularity block or mx")
    add(u, "quantize-axis-2", QE + ["--granularity", "mx", "--axis", "2"], 2, "--axis must be 0 or 1")
    add(u, "quantize-axis-not-mx", QE + ["--granularity", "channel", "--axis", "0"], 2,
        "--axis applies to --granularity mx only")
    add(u, "quantize-axis-text", QE + ["--granularity", "mx", "--axis", "one"], 2, "--axis must be an integer")
    add(u, "quantize-target-and-guard", QH + ["--target", "3", "--n-guard", "11"], 2,
        "give --target or --n-guard, not both")
    add(u, "quantize-target-not-pow2", QE + ["--granularity", "tensor", "--target", "3"], 2,
        "--target/--n-guard apply to --scale-rule pow2 only")
    add(u, "quantize-target-range", QH + ["--target", "500"], 2, "pow2 target T must lie in [-126, 127]")
    add(u, "quantize-n-guard-99", QH + ["--n-guard", "99"], 2, "every value would flush to zero")
    add(u, "quantize-n-guard-minus-5", QH + ["--n-guard", "-5"], 2, "values near the amax would be clipped")
    add(u, "quantize-n-guard-int-min", QH + ["--n-guard", "-2147483648"], 2, "outside every format's range")
    add(u, "quantize-n-guard-overflow", QH + ["--n-guard", "99999999999"], 2, "--n-guard must be an integer")
    add(u, "quantize-target-e4m3-low", QE + ["--granularity", "tensor", "--scale-rule", "pow2", "--target", "-30"], 2,
        "outside the binades of float8_e4m3fn")
    add(u, "quantize-mx-toward-zero", QE + ["--granularity", "mx", "--round", "toward_zero"], 2,
        "MX elements are rounded to nearest even")
    add(u, "quantize-mx-stochastic", QE + ["--granularity", "mx", "--round", "stochastic"], 2,
        "MX elements are rounded to nearest even")
    add(u, "quantize-bad-round", QH + ["--round", "nearest_odd"], 2, "unknown rounding mode 'nearest_odd'")
    add(u, "quantize-seed-not-stochastic", QH + ["--seed", "1"], 2, "--seed is only used with --round stochastic")
    add(u, "quantize-bad-flatten", QH + ["--flatten", "middle"], 2, "--flatten must be last or first")
    add(u, "quantize-quiet-value", QH + ["--quiet=1"], 2, "option --quiet takes no value")
    add(u, "analyze-no-path", ["analyze"], 2, "expected at least one PATH")
    add(u, "analyze-bogus-option", ["analyze", "{F}/x.npy", "--bogus"], 2, "unknown option --bogus")
    add(u, "analyze-unknown-scheme", ["analyze", "{F}/x.npy", "--schemes", "hifloat9/tensor"], 2,
        "unknown format or alias 'hifloat9'")
    add(u, "analyze-no-granularity", ["analyze", "{F}/x.npy", "--schemes", "hifloat8"], 2,
        "a granularity must follow the format")
    add(u, "analyze-bad-granularity", ["analyze", "{F}/x.npy", "--schemes", "hifloat8/rows"], 2,
        "unknown granularity 'rows'")
    add(u, "analyze-axis-not-mx", ["analyze", "{F}/x.npy", "--schemes", "hifloat8/tensor/axis=0"], 2,
        "axis= applies to granularity mx only")
    add(u, "analyze-duplicate-scheme", ["analyze", "{F}/x.npy", "--schemes", "mxfp4,float4_e2m1fn/mx"], 2, "twice")
    add(u, "analyze-empty-entry", ["analyze", "{F}/x.npy", "--schemes", "mxfp4,"], 2, "empty entry")
    add(u, "analyze-not-key-value", ["analyze", "{F}/x.npy", "--schemes", "hifloat8/tensor/pow2"], 2,
        "'pow2' is not key=value")
    add(u, "analyze-unknown-key", ["analyze", "{F}/x.npy", "--schemes", "hifloat8/tensor/color=red"], 2,
        "unknown option 'color'")
    add(u, "analyze-key-twice", ["analyze", "{F}/x.npy", "--schemes", "hifloat8/tensor/target=3/n-guard=11"], 2,
        "given twice")
    add(u, "analyze-round-stochastic", ["analyze", "{F}/x.npy", "--schemes", "hifloat8/tensor/round=stochastic"], 2,
        "unknown round 'stochastic'")
    add(u, "analyze-n-guard-99", ["analyze", "{F}/x.npy", "--schemes", "hifloat8/tensor/n-guard=99"], 2,
        "every value would flush to zero")
    add(u, "analyze-mx-round", ["analyze", "{F}/x.npy", "--schemes", "mxfp8_e4m3/round=upward"], 2,
        "MX elements are rounded to nearest even")
    add(u, "analyze-block-zero", ["analyze", "{F}/x.npy", "--schemes", "float8_e4m3fn/block0"], 2,
        "block size must be at least 1")
    add(u, "analyze-scheme-escape", ["analyze", "{F}/x.npy", "--schemes", "\x1b[31m/tensor"], 2, "\\x1b[31m")
    add(u, "analyze-empty-json", ["analyze", "{F}/x.npy", "--json="], 2, "an output path is empty")

    # 2. output is an input, or two outputs are one file (exit 2, nothing written)
    o = "output is an input"
    add(o, "decode-out-is-in", ["decode", "hifloat8", "{F}/u8.npy", "{F}/u8.npy"], 2, "is the same file as IN")
    add(o, "encode-out-is-in", ["encode", "hifloat8", "{F}/x.npy", "{F}/x.npy"], 2, "is the same file as IN")
    add(o, "encode-out-is-in-dotted", ["encode", "hifloat8", "{F}/x.npy", "{F}/./folder/../x.npy"], 2,
        "is the same file as IN")
    add(o, "encode-out-is-hardlink", ["encode", "hifloat8", "{F}/x.npy", "{F}/hardlink_x.npy"], 2,
        "is the same file as IN")
    add(o, "encode-out-is-symlink", ["encode", "hifloat8", "{F}/x.npy", "{F}/link_to_x.npy"], 2,
        "is the same file as IN")
    add(o, "quantize-out-is-in", ["quantize", "{F}/x.npy", "{F}/x.npy", "--format", "hifloat8", "--granularity",
                                  "tensor"], 2, "is the same file as IN")
    add(o, "quantize-codes-is-in", QH + ["--codes", "{F}/x.npy"], 2, "--codes '")
    add(o, "quantize-scales-is-in", QH + ["--scales", "{F}/x.npy"], 2, "is the same file as IN")
    add(o, "quantize-codes-is-out", QH + ["--codes", "{W}/o.npy"], 2, "is the same file as OUT",
        pre={"o.npy": b"old output"})
    add(o, "quantize-scales-is-codes", QH + ["--codes", "{W}/c.npy", "--scales", "{W}/./c.npy"], 2,
        "is the same file as --codes")
    add(o, "analyze-json-is-input", ["analyze", "{F}/x.npy", "--json", "{F}/x.npy"], 2, "is the same file as the input")
    add(o, "analyze-csv-is-input-in-folder", ["analyze", "{F}/folder", "--csv", "{F}/folder/b.npy"], 2,
        "is the same file as the input")
    add(o, "analyze-json-is-csv", ["analyze", "{F}/x.npy", "--json", "{W}/r", "--csv", "{W}/r"], 2,
        "is the same file as --json")
    add(o, "analyze-json-in-svg-dir", ["analyze", "{F}/x.npy", "--schemes", "hifloat8/tensor", "--json",
                                       "{W}/p/sqnr.svg", "--svg", "{W}/p"], 2, "is the same file as --json")

    # 3. missing inputs and inputs that are not regular files (exit 1)
    m = "missing input"
    for cmd in (["encode", "hifloat8"], ["decode", "hifloat8"]):
        add(m, cmd[0] + "-missing", cmd + ["{F}/nothing.npy", "{W}/o.npy"], 1, "nothing.npy: cannot open for reading")
    add(m, "quantize-missing", ["quantize", "{F}/nothing.npy", "{W}/o.npy", "--format", "hifloat8", "--granularity",
                                "tensor"], 1, "cannot open for reading")
    add(m, "analyze-missing", ["analyze", "{F}/nothing.npy"], 1, "no such file or directory")
    add(m, "analyze-missing-folder", ["analyze", "{F}/no_such_folder"], 1, "no such file or directory")
    add(m, "analyze-empty-folder", ["analyze", "{F}/no_tensors"], 1, "holds no .npy or .safetensors file")
    add(m, "analyze-unknown-extension", ["analyze", "{F}/notes.txt"], 1, "unknown file type")
    add(m, "encode-dangling-link", ["encode", "hifloat8", "{F}/dangling.npy", "{W}/o.npy"], 1, "cannot open for reading")
    n = "not a regular file"
    add(n, "quantize-fifo", ["quantize", "{F}/fifo.npy", "{W}/o.npy", "--format", "hifloat8", "--granularity",
                             "tensor"], 1, "is a FIFO (named pipe), not a regular file")
    add(n, "encode-fifo", ["encode", "hifloat8", "{F}/fifo.npy", "{W}/o.npy"], 1, "is a FIFO")
    add(n, "decode-fifo", ["decode", "hifloat8", "{F}/fifo.npy", "{W}/o.npy"], 1, "is a FIFO")
    add(n, "analyze-fifo", ["analyze", "{F}/fifo.npy"], 1, "is a FIFO")
    add(n, "analyze-fifo-safetensors", ["analyze", "{F}/fifo.safetensors"], 1, "is a FIFO")
    add(n, "encode-dev-zero", ["encode", "hifloat8", "/dev/zero", "{W}/o.npy"], 1, "is a character device")
    add(n, "encode-directory", ["encode", "hifloat8", "{F}/dir.npy", "{W}/o.npy"], 1, "is a directory")
    add(n, "decode-dev-null", ["decode", "hifloat8", "/dev/null", "{W}/o.npy"], 1, "is a character device")

    # 4. broken and lying .npy files (exit 1, the message names the file and the problem)
    b = "bad .npy file"
    for name, frag in [
        ("magic.npy", "bad magic"), ("text.npy", "bad magic"), ("empty_file.npy", "truncated preamble"),
        ("tiny.npy", "truncated preamble"), ("preamble.npy", "truncated preamble"),
        ("version9.npy", "unsupported .npy format version 9.0"), ("version21.npy", "unsupported .npy format version 2.1"),
        ("header_cut.npy", "truncated header"), ("header_len_lie.npy", "truncated header"),
        ("data_cut.npy", "truncated data"), ("trailing.npy", "unexpected trailing bytes"),
        ("lie_more.npy", "truncated data: only 8 bytes follow the header; expected 16"),
        ("lie_less.npy", "4 unexpected trailing bytes"), ("lie_dtype.npy", "truncated data"),
        ("huge_shape.npy", "truncated data"), ("huge_overflow.npy", "overflows std::size_t"),
        ("dim_too_big.npy", "does not fit in std::size_t"), ("negative_dim.npy", "negative dimension"),
        ("dims65.npy", "more than 64 dimensions"), ("no_descr.npy", "lacks 'descr'"), ("no_shape.npy", "lacks 'shape'"),
        ("extra_key.npy", "unexpected key 'x'"), ("dup_key.npy", "duplicate key 'descr'"),
        ("not_dict.npy", "expected '{' opening the header dict"), ("bad_bool.npy", "True or False"),
        ("int_shape.npy", "(n,) is a 1-D shape"), ("float_shape.npy", "malformed header"),
        ("unterminated.npy", "malformed header"), ("ctrl_header.npy", "\\x1b"),
        ("garbage_after.npy", "after the closing '}'"),
    ]:
        add(b, "npy-" + name[:-4], ["encode", "hifloat8", "{F}/" + name, "{W}/o.npy"], 1, name + ": ")
        add(b, "npy-" + name[:-4] + "-message", ["quantize", "{F}/" + name, "{W}/o.npy", "--format", "hifloat8",
                                                 "--granularity", "tensor"], 1, frag)
    add(b, "analyze-npy-bad-in-folder-list", ["analyze", "{F}/x.npy", "{F}/lie_more.npy"], 1, "lie_more.npy")

    # 5. wrong dtype (exit 1)
    d = "wrong dtype"
    for name, frag in [("c8.npy", "unsupported dtype '<c8'"), ("bool.npy", "unsupported dtype '|b1'"),
                       ("structured.npy", "structured (record) descr"), ("unicode.npy", "unsupported dtype '<U2'"),
                       ("longdouble.npy", "unsupported dtype '<f16'"), ("i64.npy", "unsupported dtype '<i8'"),
                       ("be.npy", "big-endian not supported"), ("fortran.npy", "Fortran order not supported"),
                       ("f128.npy", "unsupported dtype '<f16'"), ("u4.npy", "unsupported dtype '<u4'"),
                       ("V1.npy", "unsupported dtype '|V1'")]:
        add(d, "encode-" + name[:-4], ["encode", "hifloat8", "{F}/" + name, "{W}/o.npy"], 1, frag)
    add(d, "encode-int32", ["encode", "hifloat8", "{F}/i32.npy", "{W}/o.npy"], 1, "unsupported input dtype '<i4'")
    add(d, "encode-uint8", ["encode", "hifloat8", "{F}/u8.npy", "{W}/o.npy"], 1, "unsupported input dtype '|u1'")
    add(d, "encode-bf16-from-float", ["encode", "hifloat8", "{F}/x.npy", "{W}/o.npy", "--input", "bfloat16"], 1,
        "--input bfloat16 expects uint16")
    add(d, "decode-float-codes", ["decode", "hifloat8", "{F}/x.npy", "{W}/o.npy"], 1, "must be uint8 ('|u1'), got '<f4'")
    add(d, "decode-16bit-from-u8", ["decode", "float16", "{F}/u8.npy", "{W}/o.npy"], 1, "must be uint16")
    add(d, "decode-int8", ["decode", "hifloat8", "{F}/i8.npy", "{W}/o.npy"], 1, "got '|i1'")
    add(d, "decode-e2m1-code-16", ["decode", "float4_e2m1fn", "{F}/codes_e2m1.npy", "{W}/o.npy"], 1,
        "code 16 at index 2 does not fit the 4-bit format")
    add(d, "decode-e3m2-code-64", ["decode", "float6_e3m2fn", "{F}/codes_e3m2.npy", "{W}/o.npy"], 1,
        "code 64 at index 2 does not fit the 6-bit format")
    add(d, "quantize-uint8", ["quantize", "{F}/u8.npy", "{W}/o.npy", "--format", "hifloat8", "--granularity", "tensor"],
        1, "u8.npy: dtype '|u1' (uint8) is not floating point")
    add(d, "quantize-int32", ["quantize", "{F}/i32.npy", "{W}/o.npy", "--format", "hifloat8", "--granularity",
                              "tensor"], 1, "i32.npy: dtype '<i4' (int32) is not floating point")
    add(d, "analyze-int-npy", ["analyze", "{F}/i32.npy"], 1, "is not floating point")
    add(d, "analyze-ints-only-safetensors", ["analyze", "{F}/ints_only.safetensors"], 1,
        "no floating-point tensor found")
    add(d, "analyze-empty-safetensors", ["analyze", "{F}/empty_header.safetensors"], 1, "no floating-point tensor")

    # 6. broken safetensors files (exit 1)
    s = "bad .safetensors file"
    fix = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "safetensors")
    for name, frag in [
        ("bad_duplicate_name", "duplicate tensor name"), ("bad_gap", "leave a gap"),
        ("bad_huge_length", "exceeds 100000000 bytes"), ("bad_json", "bad header"),
        ("bad_negative_shape", "is negative"), ("bad_not_object", "does not start with '{'"),
        ("bad_offsets_past_end", "data_offsets [0, 80)"), ("bad_overlap", "overlap"),
        ("bad_short", "expected at least 8"), ("bad_size_mismatch", "need"), ("bad_trailing", "end exactly"),
        ("bad_truncated_data", "run past"), ("bad_truncated_header", "runs past the end"),
        ("bad_unknown_dtype", "unknown dtype"), ("bad_utf8", "invalid UTF-8"),
    ]:
        add(s, "st-" + name[4:], ["analyze", os.path.join(fix, name + ".safetensors")], 1, frag)
    for name, frag in [
        ("st_shape_overflow", "shape overflows 64 bits"), ("st_missing_key", "lacks \"data_offsets\""),
        ("st_float_offset", "is not an integer"), ("st_deep", "nesting deeper than 64 levels"),
        ("st_len_zero", "does not start with '{'"), ("st_meta_not_str", "not a string"),
        ("st_bad_escape", "unknown escape"), ("st_lone_surrogate", "lone high surrogate"),
        ("st_dtype_number", "dtype"), ("st_neg_offset", "is negative"), ("st_end_before_begin", "end before begin"),
    ]:
        add(s, "st-" + name[3:], ["analyze", "{F}/" + name + ".safetensors"], 1, frag)

    # 7. huge and empty shapes: valid empty tensors give empty outputs at once; a matrix view that
    # does not fit in 64 bits is a clear error
    h = "huge or empty shape"
    for gran in ("tensor", "channel", "token"):
        add(h, "quantize-empty-2p40x0-" + gran, ["quantize", "{F}/empty_huge_rows.npy", "{W}/o.npy", "--format",
                                                 "hifloat8", "--granularity", gran, "--codes", "{W}/c.npy",
                                                 "--scales", "{W}/s.npy"], 0, "1099511627776x0",
            check=all_checks(npy_check("o.npy", shape=(1 << 40, 0), dtype="float32"),
                             npy_check("c.npy", shape=(1 << 40, 0), dtype="uint8"), files_exist("s.npy")))
    add(h, "quantize-empty-2p40x0-block", ["quantize", "{F}/empty_huge_rows.npy", "{W}/o.npy", "--format",
                                           "float8_e4m3fn", "--granularity", "block", "--block", "1x1"], 0, "SQNR n/a",
        check=npy_check("o.npy", shape=(1 << 40, 0)))
    add(h, "quantize-empty-2p40x0-mx-axis0", ["quantize", "{F}/empty_huge_rows.npy", "{W}/o.npy", "--format",
                                              "float4_e2m1fn", "--granularity", "mx", "--axis", "0", "--codes",
                                              "{W}/c.npy"], 0, "SQNR n/a",
        check=all_checks(npy_check("o.npy", shape=(1 << 40, 0)), npy_check("c.npy", shape=(1 << 40, 0))))
    add(h, "quantize-empty-0x2p40", ["quantize", "{F}/empty_huge_cols.npy", "{W}/o.npy", "--format", "hifloat8",
                                     "--granularity", "channel", "--scales", "{W}/s.npy"], 0, "0x1099511627776",
        check=all_checks(npy_check("o.npy", shape=(0, 1 << 40)), npy_check("s.npy", shape=(0, 0))))
    add(h, "quantize-empty-16bit-codes", ["quantize", "{F}/empty_f16_huge.npy", "{W}/o.npy", "--format", "bfloat16",
                                          "--granularity", "channel", "--codes", "{W}/c.npy"], 0, "SQNR n/a",
        check=npy_check("c.npy", shape=(1 << 40, 0), dtype="uint16"))
    add(h, "quantize-empty-0x3", ["quantize", "{F}/empty.npy", "{W}/o.npy", "--format", "hifloat8", "--granularity",
                                  "tensor"], 0, "0x3", check=npy_check("o.npy", shape=(0, 3)))
    add(h, "quantize-empty-1d", ["quantize", "{F}/empty1d.npy", "{W}/o.npy", "--format", "float8_e4m3fn",
                                 "--granularity", "mx"], 0, "1x0", check=npy_check("o.npy", shape=(0,)))
    add(h, "quantize-rows-overflow", ["quantize", "{F}/empty_huge_3d.npy", "{W}/o.npy", "--format", "hifloat8",
                                      "--granularity", "tensor"], 1, "does not fit in a 64-bit size")
    add(h, "quantize-rows-overflow-2p63", ["quantize", "{F}/empty_2p63.npy", "{W}/o.npy", "--format", "hifloat8",
                                           "--granularity", "tensor"], 1, "does not fit in a 64-bit size")
    add(h, "quantize-flatten-first-overflow", ["quantize", "{F}/empty_huge_3d.npy", "{W}/o.npy", "--format",
                                               "hifloat8", "--granularity", "tensor", "--flatten", "first"], 0,
        "1099511627776x0")
    add(h, "encode-empty-huge", ["encode", "hifloat8", "{F}/empty_huge_rows.npy", "{W}/o.npy"], 0, "",
        check=npy_check("o.npy", shape=(1 << 40, 0), dtype="uint8"))
    add(h, "decode-empty-huge", ["decode", "hifloat8", "{F}/empty_u8_huge.npy", "{W}/o.npy"], 0, "",
        check=npy_check("o.npy", shape=(1 << 40, 0), dtype="float32"))
    add(h, "analyze-empty-huge", ["analyze", "{F}/empty_huge_rows.npy", "--json", "{W}/r.json"], 0, "n/a",
        check=json_check("r.json", lambda r: r["tensors"][0]["results"]["hifloat8/tensor"]["sqnr_db"] is None,
                         "sqnr of an empty tensor should be null"))
    add(h, "analyze-safetensors-empty-huge", ["analyze", "{F}/st_huge_empty.safetensors"], 0, "n/a")
    add(h, "analyze-empty-2p63", ["analyze", "{F}/empty_2p63.npy"], 1, "does not fit in a 64-bit size")

    # 8. shapes that do not divide the blocks: valid, the edge blocks are partial
    v = "non-divisible shape"
    add(v, "quantize-mx-33-cols", ["quantize", "{F}/odd33.npy", "{W}/o.npy", "--format", "float8_e4m3fn",
                                   "--granularity", "mx", "--scales", "{W}/s.npy"], 0, "6x33",
        check=all_checks(npy_check("o.npy", shape=(6, 33), finite_like="odd33.npy"),
                         npy_check("s.npy", shape=(6, 2), dtype="uint8")))
    add(v, "quantize-mx-axis0-6-rows", ["quantize", "{F}/x.npy", "{W}/o.npy", "--format", "float6_e2m3fn",
                                        "--granularity", "mx", "--axis", "0", "--scales", "{W}/s.npy"], 0, "6x70",
        check=npy_check("s.npy", shape=(1, 70)))
    add(v, "quantize-fp4-odd-cols", ["quantize", "{F}/odd33.npy", "{W}/o.npy", "--format", "float4_e2m1fn",
                                     "--granularity", "mx", "--codes", "{W}/c.npy"], 0, "6x33",
        check=npy_check("c.npy", shape=(6, 17), dtype="uint8"))
    add(v, "quantize-block-128-on-6x70", ["quantize", "{F}/x.npy", "{W}/o.npy", "--format", "float8_e4m3fn",
                                          "--granularity", "block", "--scales", "{W}/s.npy"], 0, "6x70",
        check=npy_check("s.npy", shape=(1, 1)))
    add(v, "quantize-block-4x32", ["quantize", "{F}/x.npy", "{W}/o.npy", "--format", "hifloat8", "--granularity",
                                   "block", "--block", "4x32", "--scales", "{W}/s.npy"], 0, "6x70",
        check=npy_check("s.npy", shape=(2, 3)))
    add(v, "quantize-block-larger-than-tensor", ["quantize", "{F}/one.npy", "{W}/o.npy", "--format", "float8_e5m2",
                                                 "--granularity", "block", "--block", "1000x1000"], 0, "1x1",
        check=npy_check("o.npy", shape=(1,)))
    add(v, "quantize-4d-flatten-first", ["quantize", "{F}/x4d.npy", "{W}/o.npy", "--format", "float4_e2m1fn",
                                         "--granularity", "channel", "--flatten", "first", "--codes", "{W}/c.npy"], 0,
        "6x70", check=all_checks(npy_check("o.npy", shape=(6, 7, 5, 2)), npy_check("c.npy", shape=(6, 35))))
    add(v, "quantize-scalar", ["quantize", "{F}/scalar.npy", "{W}/o.npy", "--format", "float8_e4m3fn",
                               "--granularity", "mx", "--codes", "{W}/c.npy"], 0, "1x1",
        check=npy_check("o.npy", shape=()))
    add(v, "quantize-3d-token", ["quantize", "{F}/x3d.npy", "{W}/o.npy", "--format", "hifloat8", "--granularity",
                                 "token", "--scales", "{W}/s.npy"], 0, "6x70", check=npy_check("s.npy", shape=(6, 1)))
    add(v, "analyze-4d", ["analyze", "{F}/x4d.npy", "--schemes", "mxfp4,float8_e4m3fn/block32"], 0, "6x7x5x2")

    # 9. NaN, Inf, denormals: counted, never silently "exact"; finite input never comes back Inf
    f = "NaN, Inf, denormal"
    add(f, "quantize-all-nan", ["quantize", "{F}/nan.npy", "{W}/o.npy", "--format", "hifloat8", "--granularity",
                                "tensor"], 0, "SQNR n/a (no finite value)", check=npy_check("o.npy", shape=(4, 8)))
    add(f, "quantize-all-inf", ["quantize", "{F}/inf.npy", "{W}/o.npy", "--format", "float8_e4m3fn", "--granularity",
                                "channel"], 0, "SQNR n/a")
    add(f, "quantize-all-nan-mx", ["quantize", "{F}/nan.npy", "{W}/o.npy", "--format", "float8_e5m2",
                                   "--granularity", "mx"], 0, "SQNR n/a")
    add(f, "quantize-nan-mix", ["quantize", "{F}/nan_mix.npy", "{W}/o.npy", "--format", "hifloat8", "--granularity",
                                "tensor"], 0, "dB", check=npy_check("o.npy", finite_like="nan_mix.npy"))
    add(f, "quantize-zeros", ["quantize", "{F}/zeros.npy", "{W}/o.npy", "--format", "hifloat8", "--granularity",
                              "channel"], 0, "SQNR inf dB", check=npy_check("o.npy", finite_like="zeros.npy"))
    add(f, "quantize-denormals", ["quantize", "{F}/denormal.npy", "{W}/o.npy", "--format", "hifloat8",
                                  "--granularity", "tensor"], 0, "dB", check=npy_check("o.npy", finite_like="denormal.npy"))
    add(f, "quantize-denormals-e4m3-max", ["quantize", "{F}/denormal.npy", "{W}/o.npy", "--format", "float8_e4m3fn",
                                           "--granularity", "tensor"], 0, "dB",
        check=npy_check("o.npy", finite_like="denormal.npy"))
    add(f, "quantize-denormals-mx", ["quantize", "{F}/denormal.npy", "{W}/o.npy", "--format", "float4_e2m1fn",
                                     "--granularity", "mx"], 0, "dB", check=npy_check("o.npy", finite_like="denormal.npy"))
    for fmt, gran, extra in [("hifloat8", "tensor", []), ("hifloat8", "channel", []),
                             ("float8_e5m2", "tensor", ["--scale-rule", "pow2"]),
                             ("float8_e4m3fn", "tensor", ["--scale-rule", "pow2", "--target", "8"]),
                             ("hifloat8", "block", ["--block", "1x2"])]:
        # pow2 scale 2^123 times a code near 2^15 overflows float32: a clear error naming the
        # value (the CLI's check, or the engine's own once it refuses such scales) or a result
        # that stays finite (an engine whose scale rule avoids the overflow)
        add(f, "quantize-pow2-overflow-%s-%s" % (fmt, gran), ["quantize", "{F}/big.npy", "{W}/o.npy", "--format", fmt,
                                                              "--granularity", gran] + extra, 1, "3.29999997e+38",
            either=(0, "dB"), check=npy_check("o.npy", finite_like="big.npy"))
    add(f, "quantize-max-rule-huge", ["quantize", "{F}/maxf.npy", "{W}/o.npy", "--format", "float8_e4m3fn",
                                      "--granularity", "tensor"], 0, "dB", check=npy_check("o.npy", finite_like="maxf.npy"))
    add(f, "quantize-mx-huge", ["quantize", "{F}/maxf.npy", "{W}/o.npy", "--format", "float8_e4m3fn",
                                "--granularity", "mx"], 0, "dB", check=npy_check("o.npy", finite_like="maxf.npy"))
    add(f, "quantize-none-rule-huge", ["quantize", "{F}/big.npy", "{W}/o.npy", "--format", "bfloat16",
                                       "--granularity", "tensor", "--scale-rule", "none"], 0, "dB",
        check=npy_check("o.npy", finite_like="big.npy"))
    add(f, "quantize-float64-overflow", ["quantize", "{F}/big64.npy", "{W}/o.npy", "--format", "float8_e4m3fn",
                                         "--granularity", "tensor"], 1, "float64 value 1e+300 at element 0 does not fit float32")
    add(f, "analyze-float64-overflow", ["analyze", "{F}/big64.npy", "--json", "{W}/r.json"], 0, "big64",
        check=json_check("r.json", lambda r: r["tensors"][0]["float32_overflows"] == 2,
                         "float64 values beyond float32 must be counted"))
    add(f, "encode-float64-huge", ["encode", "float8_e4m3fn", "{F}/big64.npy", "{W}/o.npy", "--saturate"], 0, "",
        check=npy_check("o.npy", shape=(3,), dtype="uint8"))
    add(f, "encode-nan-inf", ["encode", "float8_e4m3fn", "{F}/nan_mix.npy", "{W}/o.npy"], 0, "",
        check=npy_check("o.npy", shape=(6,), dtype="uint8"))
    add(f, "encode-big-saturate", ["encode", "hifloat8", "{F}/big.npy", "{W}/o.npy", "--saturate"], 0, "",
        check=npy_check("o.npy", shape=(3,)))
    add(f, "analyze-all-nan", ["analyze", "{F}/nan.npy", "--json", "{W}/r.json", "--csv", "{W}/r.csv"], 0,
        "1 without a finite value (SQNR n/a)",
        check=json_check("r.json", lambda r: r["summary"]["hifloat8/tensor"]["na_tensors"] == 1 and
                         r["tensors"][0]["results"]["mxfp4"]["sqnr_db"] is None, "n/a must be null and counted"))
    add(f, "analyze-all-inf", ["analyze", "{F}/inf.npy"], 0, "n/a")
    add(f, "analyze-folder-with-nan", ["analyze", "{F}/folder", "--schemes", "hifloat8/tensor"], 0,
        "1 of 2 tensors hold no finite value")
    add(f, "analyze-safetensors-nan", ["analyze", "{F}/st_nan.safetensors"], 0, "n/a")
    add(f, "analyze-denormals", ["analyze", "{F}/denormal.npy", "--schemes", "hifloat8/tensor,mxfp4"], 0, "denormal")

    # 10. outputs that cannot be written: an error, no output changed, no device destroyed
    w = "unwritable output"
    old = {"o.npy": b"OLD OUTPUT", "c.npy": b"OLD CODES", "s.npy": b"OLD SCALES"}
    add(w, "encode-dev-full", ["encode", "hifloat8", "{F}/x.npy", "{FULL}"], 1, "write failed (No space left on device)")
    add(w, "decode-dev-full", ["decode", "hifloat8", "{F}/u8.npy", "{FULL}"], 1, "No space left on device")
    add(w, "quantize-dev-full", Q[:2] + ["{FULL}", "--format", "hifloat8", "--granularity", "tensor"], 1,
        "No space left on device")
    add(w, "quantize-codes-dev-full-keeps-out", QH + ["--codes", "{FULL}", "--scales", "{W}/s.npy"], 1,
        "No space left on device", pre=old)
    add(w, "quantize-scales-dev-full-keeps-out", QH + ["--codes", "{W}/c.npy", "--scales", "{FULL}"], 1,
        "No space left on device", pre=old)
    add(w, "quantize-codes-no-folder", QH + ["--codes", "{W}/no/such/c.npy"], 1, "cannot open for writing",
        pre=old)
    add(w, "quantize-out-is-directory", ["quantize", "{F}/x.npy", "{W}", "--format", "hifloat8", "--granularity",
                                         "tensor"], 1, "is a directory")
    add(w, "quantize-out-under-a-file", ["quantize", "{F}/x.npy", "{W}/o.npy/x.npy", "--format", "hifloat8",
                                         "--granularity", "tensor"], 1, "cannot open for writing", pre=old)
    add(w, "encode-out-in-proc", ["encode", "hifloat8", "{F}/x.npy", "/proc/minifloat_test.npy"], 1,
        "cannot open for writing")
    add(w, "analyze-csv-dev-full", ["analyze", "{F}/x.npy", "--schemes", "hifloat8/tensor", "--csv", "{FULL}"], 1,
        "No space left on device")
    add(w, "analyze-json-dev-full-keeps-csv", ["analyze", "{F}/x.npy", "--schemes", "hifloat8/tensor", "--csv",
                                               "{W}/r.csv", "--json", "{FULL}"], 1, "No space left on device",
        pre={"r.csv": b"OLD CSV"})
    add(w, "analyze-svg-dir-is-file", ["analyze", "{F}/x.npy", "--schemes", "hifloat8/tensor", "--svg", "{W}/r.csv",
                                       "--json", "{W}/r.json"], 1, "cannot create the folder", pre={"r.csv": b"OLD"})
    add(w, "analyze-svg-dev-full-removes-new-folder", ["analyze", "{F}/x.npy", "--schemes", "hifloat8/tensor",
                                                       "--svg", "{W}/plots", "--json", "{FULL}"], 1,
        "No space left on device")
    add(w, "analyze-json-no-folder", ["analyze", "{F}/x.npy", "--json", "{W}/no/r.json"], 1, "cannot open for writing")
    # ... and outputs that can: devices are written, not replaced
    add(w, "encode-to-dev-null", ["encode", "hifloat8", "{F}/x.npy", "/dev/null"], 0, "")
    add(w, "analyze-json-to-dev-null", ["analyze", "{F}/x.npy", "--schemes", "mxfp4", "--json", "/dev/null",
                                        "--quiet"], 0, "")
    add(w, "quantize-replaces-old-out", QH + ["--codes", "{W}/c.npy", "--scales", "{W}/s.npy", "--quiet"], 0, "",
        pre=old, check=all_checks(npy_check("o.npy", shape=(6, 70)), npy_check("c.npy", shape=(6, 70)),
                                  npy_check("s.npy", shape=(1, 1))))
    add(w, "analyze-all-outputs", ["analyze", "{F}/folder", "--json", "{W}/r.json", "--csv", "{W}/r.csv", "--svg",
                                   "{W}/plots", "--quiet"], 0, "",
        check=files_exist("r.json", "r.csv", "plots/sqnr.svg", "plots/precision_mxfp4.svg"))

    # 11. odd but valid inputs: decoded through the library's own types
    g = "valid edge input"
    add(g, "analyze-fp8-safetensors", ["analyze", "{F}/fp8.safetensors", "--schemes", "hifloat8/tensor"], 0, "e5")
    add(g, "analyze-escape-names", ["analyze", "{F}/st_escape.safetensors", "--schemes", "hifloat8/tensor"], 0,
        "\\x1b[2J\\x1b[31mred")
    add(g, "analyze-skips-ints", ["analyze", "{F}/good.safetensors", "--schemes", "hifloat8/tensor"], 0, "w")
    add(g, "encode-float16", ["encode", "float8_e4m3fn", "{F}/x16.npy", "{W}/o.npy"], 0, "",
        check=npy_check("o.npy", shape=(6, 70)))
    add(g, "encode-float64", ["encode", "hifloat8", "{F}/x64.npy", "{W}/o.npy"], 0, "",
        check=npy_check("o.npy", shape=(6, 70)))
    add(g, "encode-bf16-bits", ["encode", "hifloat8", "{F}/u16.npy", "{W}/o.npy", "--input", "bfloat16"], 0, "",
        check=npy_check("o.npy", shape=(2,)))
    add(g, "quantize-v2-header", ["quantize", "{F}/v2.npy", "{W}/o.npy", "--format", "hifloat8", "--granularity",
                                  "tensor"], 0, "1x2")
    add(g, "quantize-v3-header", ["quantize", "{F}/v3.npy", "{W}/o.npy", "--format", "hifloat8", "--granularity",
                                  "tensor"], 0, "1x2")
    add(g, "quantize-pipe-descr", ["quantize", "{F}/pad_f4.npy", "{W}/o.npy", "--format", "hifloat8",
                                   "--granularity", "tensor"], 0, "1x2")
    add(g, "quantize-symlink-input", ["quantize", "{F}/link_to_x.npy", "{W}/o.npy", "--format", "hifloat8",
                                      "--granularity", "tensor"], 0, "6x70")
    add(g, "quantize-16bit-codes", ["quantize", "{F}/x.npy", "{W}/o.npy", "--format", "float16", "--granularity",
                                    "channel", "--codes", "{W}/c.npy"], 0, "6x70",
        check=npy_check("c.npy", shape=(6, 70), dtype="uint16"))
    add(g, "quantize-stochastic", ["quantize", "{F}/x.npy", "{W}/o.npy", "--format", "hifloat8", "--granularity",
                                   "channel", "--round", "stochastic", "--seed", "5"], 0, "stochastic")
    add(g, "table-exact-2^-22", ["table", "hifloat8"], 0, "1,0x01,2.384185791015625e-07,subnormal")
    add(g, "table-bfloat16-max", ["table", "bfloat16"], 0, "32639,0x7f7f,338953138925153547590470800371487866880,normal")
    add(g, "table-e2m1", ["table", "float4_e2m1fn"], 0, "15,0xf,-6,normal")
    add(g, "help", ["--help"], 0, "Exit codes: 0 success")
    add(g, "version", ["--version"], 0, "minifloat ")

    # 12. help: every command answers --help and -h (and `help CMD`) on stdout, exit 0, nothing run
    hp = "help"
    for cmd in ("formats", "table", "encode", "decode", "quantize", "analyze", "attention", "gemm"):
        add(hp, cmd + "-help", [cmd, "--help"], 0, "usage: minifloat " + cmd, help_text=True)
    add(hp, "quantize-h", ["quantize", "-h"], 0, "--granularity", help_text=True)
    add(hp, "gemm-h-with-args", ["gemm", "{F}/x.npy", "{F}/x.npy", "{F}/x.npy", "-h"], 0, "--a-scheme",
        help_text=True)
    add(hp, "help-quantize", ["help", "quantize"], 0, "usage: minifloat quantize", help_text=True)
    add(hp, "help-attention", ["help", "attention"], 0, "--softmax-scale", help_text=True)
    add(hp, "help-unknown", ["help", "frobnicate"], 2, "unknown command 'frobnicate'")

    # 13. gemm and attention hold the same contracts as the other commands (issue 35)
    G = ["gemm", "{F}/x.npy", "{F}/x.npy"]
    GS = ["--a-scheme", "hifloat8/tensor", "--b-scheme", "float8_e4m3fn/channel"]
    A3 = ["attention", "{F}/x3d.npy", "{F}/x3d.npy", "{F}/x3d.npy"]
    add(u, "gemm-unknown-option", G + ["{W}/o.npy"] + GS + ["--bogus"], 2, "unknown option --bogus")
    add(u, "gemm-no-a-scheme", G + ["{W}/o.npy", "--b-scheme", "mxfp4"], 2, "--a-scheme is required")
    add(u, "gemm-threads-negative", G + ["{W}/o.npy"] + GS + ["--threads", "-1"], 2, "--threads must be an integer from 0 to 4096, got '-1'")
    add(u, "gemm-threads-huge", G + ["{W}/o.npy"] + GS + ["--threads", "5000"], 2, "--threads must be an integer from 0 to 4096, got '5000'")
    add(u, "gemm-a-scheme-n-guard-38", G + ["{W}/o.npy", "--a-scheme", "hifloat8/tensor/n-guard=38", "--b-scheme",
                                            "mxfp4"], 2, "every value would flush to zero")
    add(u, "gemm-b-scheme-mx-round", G + ["{W}/o.npy", "--a-scheme", "mxfp4", "--b-scheme", "mxfp8_e4m3/round=upward"],
        2, "MX elements are rounded to nearest even")
    add(u, "attention-k-scheme-n-guard-38", A3 + ["{W}/o.npy", "--k-scheme", "hifloat8/tensor/n-guard=38"], 2,
        "every value would flush to zero")
    add(u, "attention-v-scheme-unknown", A3 + ["{W}/o.npy", "--v-scheme", "hifloat9/tensor"], 2, "hifloat9")
    for v in ("nan", "inf", "-inf", "1e39"):
        add(u, "attention-softmax-scale-" + v, A3 + ["{W}/o.npy", "--softmax-scale", v], 2, "--softmax-scale " + v)
    add(u, "attention-softmax-scale-text", A3 + ["{W}/o.npy", "--softmax-scale", "half"], 2,
        "--softmax-scale must be a number, got 'half'")
    add(u, "attention-p-scale-underflow", A3 + ["{W}/o.npy", "--p-format", "float8_e4m3fn", "--p-scale", "1e-50"], 2,
        "--p-scale 1e-50 is not a positive normal float32")
    add(u, "attention-p-scale-nan", A3 + ["{W}/o.npy", "--p-format", "float8_e4m3fn", "--p-scale", "nan"], 2,
        "--p-scale nan")
    add(u, "attention-threads-text", A3 + ["{W}/o.npy", "--path", "fast", "--threads", "two"], 2,
        "--threads must be an integer from 0 to 4096, got 'two'")
    add(u, "attention-rotation-seed-negative", A3 + ["{W}/o.npy", "--hadamard", "--rotation-seed", "-3"], 2,
        "--rotation-seed must be an integer")
    add(u, "attention-causal-value", A3 + ["{W}/o.npy", "--causal=1"], 2, "option --causal takes no value")
    add(u, "attention-stats-twice", A3 + ["{W}/o.npy", "--stats", "{W}/a.npy", "--stats", "{W}/b.npy"], 2,
        "option --stats given twice")
    add(u, "quantize-mx-block-64", QE + ["--granularity", "mx", "--block", "64x64"], 2,
        "expected 32x32 (one E8M0 scale per 32x32 tile)")
    add(u, "quantize-mx-block-and-axis", QE + ["--granularity", "mx", "--block", "32x32", "--axis", "0"], 2,
        "not both")
    add(o, "gemm-out-is-a", G + ["{F}/x.npy"] + GS, 2, "OUT '")
    add(o, "gemm-out-is-b", ["gemm", "{F}/x1d.npy", "{F}/x.npy", "{F}/x.npy"] + GS, 2, "is the same file as B")
    add(o, "gemm-out-is-symlink", G + ["{F}/link_to_x.npy"] + GS, 2, "is the same file as A")
    add(o, "gemm-out-is-hardlink", G + ["{F}/hardlink_x.npy"] + GS, 2, "is the same file as A")
    add(o, "gemm-out-is-dotted", G + ["{F}/./folder/../x.npy"] + GS, 2, "is the same file as A")
    add(o, "attention-out-is-q", A3 + ["{F}/x3d.npy"], 2, "is the same file as Q")
    add(o, "attention-out-is-v-symlink", ["attention", "{F}/x.npy", "{F}/x.npy", "{F}/x3d.npy",
                                          "{F}/link_to_x3d.npy"], 2, "is the same file as V")
    add(o, "attention-out-is-hardlink", A3 + ["{F}/hardlink_x3d.npy"], 2, "is the same file as Q")
    add(o, "attention-stats-is-k", A3 + ["{W}/o.npy", "--stats", "{F}/./folder/../x3d.npy"], 2,
        "--stats '")
    add(o, "attention-stats-is-out", A3 + ["{W}/o.npy", "--stats", "{W}/./o.npy"], 2, "is the same file as OUT",
        pre={"o.npy": b"OLD OUTPUT"})
    add(w, "attention-stats-dev-full-keeps-out", A3 + ["{W}/o.npy", "--stats", "{FULL}"], 1, "No space left on device",
        pre={"o.npy": b"OLD OUTPUT"})
    add(w, "attention-stats-no-folder-keeps-out", A3 + ["{W}/o.npy", "--stats", "{W}/no/s.npy"], 1,
        "cannot open for writing", pre={"o.npy": b"OLD OUTPUT"})
    add(w, "attention-out-and-stats", A3 + ["{W}/o.npy", "--stats", "{W}/s.npy"], 0, "", pre={"o.npy": b"OLD"},
        check=all_checks(npy_check("o.npy", shape=(2, 3, 70), dtype="float32"), npy_check("s.npy", shape=(2, 3, 2))))
    add(w, "gemm-dev-full", G + ["{FULL}"] + GS, 1, "No space left on device")
    add(w, "gemm-writes", G + ["{W}/o.npy"] + GS, 0, "", check=npy_check("o.npy", shape=(6, 6), dtype="float32"))
    for order in ("exact", "fast"):
        add(f, "gemm-exact-result-overflows-" + order, ["gemm", "{F}/gemm_huge_a.npy", "{F}/gemm_twos_b.npy", "{W}/o.npy",
                                                        "--a-scheme", "hifloat8/tensor", "--b-scheme",
                                                        "float8_e4m3fn/channel", "--order", order], 1,
            "OUT[0, 0] of finite A and B is inf")
    for flag in ("causal", "hadamard"):
        add(u, "attention-flag-twice-" + flag, A3 + ["{W}/o.npy", "--" + flag, "--" + flag], 2,
            "option --%s given twice" % flag)
    add(u, "quantize-quiet-twice", QE + ["--granularity", "tensor", "--quiet", "--quiet"], 2,
        "option --quiet given twice")
    add(u, "attention-fast-v-mx-along-d", A3 + ["{W}/o.npy", "--v-scheme", "mxfp8_e4m3", "--path", "fast"], 2,
        "puts MX blocks along d")
    # FLT_MAX spelt with float32's shortest digits is FLT_MAX, not a double just above it
    add(w, "attention-softmax-scale-flt-max-digits", A3 + ["{W}/o.npy", "--softmax-scale", "3.4028235e38"], 0, "",
        check=npy_check("o.npy", shape=(2, 3, 70), dtype="float32"))
    add(u, "attention-p-scale-flt-max-digits", A3 + ["{W}/o.npy", "--p-format", "float8_e4m3fn", "--p-scale",
                                                     "3.5e38"], 2, "--p-scale 3.5e38 is not a positive normal float32")
    add(f, "gemm-float64-overflow", ["gemm", "{F}/big64_2d.npy", "{F}/big64_2d.npy", "{W}/o.npy"] + GS, 1,
        "float64 value 1e+300 at element 35 does not fit float32")
    add(f, "attention-float64-overflow", ["attention", "{F}/big64_3d.npy", "{F}/big64_3d.npy", "{F}/big64_3d.npy",
                                          "{W}/o.npy"], 1, "big64_3d.npy: float64 value 1e+300 at element 35")
    add(f, "gemm-int-input", ["gemm", "{F}/u8.npy", "{F}/u8.npy", "{W}/o.npy"] + GS, 1, "is not floating point")
    for fmt in ("float8_e4m3fn", "float4_e2m1fn"):
        add(f, "quantize-mx-nan-blocks-" + fmt, ["quantize", "{F}/nan_blocks.npy", "{W}/o.npy", "--format", fmt,
                                                 "--granularity", "mx"], 0, "dB", check=nan_blocks_check)
    add(g, "quantize-mx-32x32-tiles", ["quantize", "{F}/tiles.npy", "{W}/o.npy", "--format", "float8_e4m3fn",
                                       "--granularity", "mx", "--block", "32x32", "--codes", "{W}/c.npy", "--scales",
                                       "{W}/s.npy"], 0, "40x70 -> float8_e4m3fn mx 32x32", check=mx_tiles_check)
    add(g, "quantize-mx-block-1x32-is-axis-1", ["quantize", "{F}/x.npy", "{W}/o.npy", "--format", "float8_e4m3fn",
                                                "--granularity", "mx", "--block", "1x32", "--scales", "{W}/s.npy"], 0,
        "axis=1", check=npy_check("s.npy", shape=(6, 3)))
    return C


FIXTURES = None


def main():
    global FIXTURES
    mf = os.path.abspath(sys.argv[1])
    cases = catalogue()
    ids = [c.id for c in cases]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        sys.exit("duplicate case ids: %s" % dup)
    # docs/errors.md lists every class with its case count: keep the two in step.
    doc = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "errors.md")
    documented = {}
    for line in open(doc, encoding="utf-8"):
        cells = [c.strip() for c in line.split("|")]
        if len(cells) > 3 and cells[2].isdigit():
            documented[cells[1]] = int(cells[2])
    actual = {}
    for c in cases:
        actual[c.cls] = actual.get(c.cls, 0) + 1
    if documented != actual:
        sys.exit("docs/errors.md lists the classes %s, the catalogue has %s" % (documented, actual))
    if "--list" in sys.argv:
        for c in cases:
            print("%-24s %-48s %d  %s" % (c.cls, c.id, c.exit, c.frag))
        return 0
    tmp = tempfile.mkdtemp(prefix="minifloat_bad_inputs_")
    try:
        FIXTURES = os.path.join(tmp, "fixtures")
        os.makedirs(FIXTURES)
        make_fixtures(FIXTURES)
        work = os.path.join(tmp, "work")
        os.makedirs(work)
        # A device whose writes fail: our own node when we may create one (as root a failing
        # command could otherwise destroy /dev/full itself), else /dev/full (then safe anyway).
        full = os.path.join(tmp, "full")
        try:
            os.mknod(full, 0o666 | stat.S_IFCHR, os.makedev(1, 7))
        except OSError:
            full = "/dev/full"
        counts = {}
        failed = []
        per_class = {}
        for c in cases:
            problems, _rc = run_case(mf, c, FIXTURES, work, full)
            if any(kind == "data loss" and "fixtures" in text for kind, text in problems):
                # a regression destroyed an input: rebuild them so later cases stay meaningful
                shutil.rmtree(FIXTURES)
                os.makedirs(FIXTURES)
                make_fixtures(FIXTURES)
            per_class.setdefault(c.cls, [0, 0])[0] += 1
            if problems:
                per_class[c.cls][1] += 1
                failed.append(c)
                for kind, text in problems:
                    counts[kind] = counts.get(kind, 0) + 1
                    print("FAIL %s [%s] %s: %s" % (c.id, c.cls, kind, text))
        print("\nbad-input catalogue: %d cases" % len(cases))
        for cls, (n, bad) in per_class.items():
            print("  %-24s %3d cases, %d failed" % (cls, n, bad))
        print("crash %d, hang %d, data loss %d, silent garbage %d, wrong exit %d, wrong message %d" % tuple(
            counts.get(k, 0) for k in ("crash", "hang", "data loss", "silent garbage", "wrong exit", "wrong message")))
        if failed:
            print("%d of %d cases failed" % (len(failed), len(cases)))
            return 1
        print("bad_inputs: all %d cases passed" % len(cases))
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
