"""Helpers shared by the quantization and GEMM tests: element values and per-element scales of a
QuantizedTensor read from its codes and scale grid alone, and exact rounding to float32."""
from fractions import Fraction

import numpy as np

import minifloat as mf


def element_values(q):
    """decode(code) of every element (rows x cols), from the codes alone (FP4 unpacked in the
    documented order: element 2i in the low nibble)."""
    dt = q.dtype
    codes = q.codes.reshape(q.rows, -1)
    if q.format == "float4_e2m1fn":
        lo, hi = codes & 0xF, codes >> 4
        un = np.stack([lo, hi], axis=-1).reshape(q.rows, -1)[:, :q.cols]
        return un.astype(np.uint8).view(dt).astype(np.float32)
    return codes.view(dt).astype(np.float32)


def scale_of_each(q):
    """The scale of every element (rows x cols), from the scale grid and the scheme."""
    s = q.scales.astype(np.float32)
    info = mf.parse_scheme(q.scheme_string)
    if info["granularity"] == "mx":
        if info["axis"] == 1:
            return np.repeat(s, 32, axis=1)[:, :q.cols]
        return np.repeat(s, 32, axis=0)[:q.rows, :]
    if info["granularity"] == "tensor":
        return np.full((q.rows, q.cols), s[0, 0], np.float32)
    if info["granularity"] in ("channel", "token"):
        return np.repeat(s, q.cols, axis=1)
    br, bc = info["block"]
    return np.repeat(np.repeat(s, br, axis=0), bc, axis=1)[:q.rows, :q.cols]


def requant_exact(scheme):
    """Whether quantize_with_scales(dequantize(q), q.scales) must give q's codes back: always with
    nearest rounding; with directed rounding only for power-of-two scales (x * s / s is then exact)."""
    info = mf.parse_scheme(scheme)
    return info["round"] in ("nearest", "nearest_even", "nearest_away") or info["scale_rule"] in ("pow2", "none")


def to_float32(fr):
    """The float32 nearest to the rational fr, ties to even (no double rounding)."""
    d = float(fr)  # correctly rounded double
    f = np.float32(d)
    if Fraction(float(f)) == fr:
        return f
    lo = f if Fraction(float(f)) < fr else np.nextafter(f, np.float32(-np.inf))
    hi = np.nextafter(lo, np.float32(np.inf))
    mid = (Fraction(float(lo)) + Fraction(float(hi))) / 2
    if fr < mid:
        return lo
    if fr > mid:
        return hi
    return lo if (int(lo.view(np.uint32)) & 1) == 0 else hi


def exact_gemm(qa, qb):
    """C = A @ B^T from the elements and scales, in exact rational arithmetic, rounded once to
    float32 (B stored (N, K))."""
    va, sa = element_values(qa).astype(np.float64), scale_of_each(qa).astype(np.float64)
    vb, sb = element_values(qb).astype(np.float64), scale_of_each(qb).astype(np.float64)
    m, k = va.shape
    n = vb.shape[0]
    out = np.empty((m, n), np.float32)
    fa = [[Fraction(va[i, j]) * Fraction(sa[i, j]) for j in range(k)] for i in range(m)]
    fb = [[Fraction(vb[i, j]) * Fraction(sb[i, j]) for j in range(k)] for i in range(n)]
    for i in range(m):
        for j in range(n):
            out[i, j] = to_float32(sum(x * y for x, y in zip(fa[i], fb[j])))
    return out
