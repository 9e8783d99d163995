"""An independent Python oracle for the formats: decode from the bit layouts, encode by choosing
between the two neighbouring values in exact rational arithmetic. Written from the format
definitions (docs/formats/ocp_fp8.md, docs/formats/mx.md, docs/formats/hifloat8.md,
docs/formats/fp8_variants.md; the rounding
rules of include/minifloat/core/policy.hpp), not from the C++ code, so the extension is checked
against a second implementation.

Encoding rule. A finite magnitude a lies between lo, the largest value <= a, and hi, the next value
of the format's grid above lo; past the largest finite value the grid goes on one step (the
"virtual" value max + step of the top binade), and landing there is an overflow. Nearest modes pick
the nearer neighbour; ties go away from zero (nearest_away, and hifloat8's own nearest) or to the
neighbour whose code is even (nearest_even; every format's code parity is its significand's, except
float8_e8m0fnu whose significand is always 1: there a tie goes up). Directed modes pick lo or hi by
the sign. Stochastic: with f = (a - lo) / (hi - lo) and F = floor(f * 2^32), round up iff
F + r >= 2^32 for the 32 random bits r.
"""
import bisect
import math
from fractions import Fraction

MASK64 = (1 << 64) - 1


def random_bits(seed, index):
    """SplitMix64's finaliser over (seed, index): the 32 bits element `index` uses."""
    z = (seed + (index + 1) * 0x9E3779B97F4A7C15) & MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    z ^= z >> 31
    return z >> 32


class Format:
    """name, bits, decode(code) -> float, and the constants encode needs."""

    def __init__(self, name, bits, decoder, *, signed, has_zero, has_inf, has_nan, nan_code, inf_code,
                 max_code, top_step, nearest, signed_zero, even_rule="code"):
        self.name = name
        self.bits = bits
        self.decode = decoder
        self.signed = signed
        self.has_zero = has_zero
        self.has_inf = has_inf
        self.has_nan = has_nan
        self.nan_code = nan_code
        self.inf_code = inf_code
        self.max_code = max_code
        self.sign_mask = (1 << (bits - 1)) if signed else 0
        self.nearest = nearest
        self.signed_zero = signed_zero
        self.even_rule = even_rule
        self.max = Fraction(decoder(max_code))
        self.beyond = self.max + top_step  # the first grid point past max: overflow
        self.beyond_even = (max_code + 1) % 2 == 0 if even_rule == "code" else True
        positive = {}
        for c in range(1 << bits):
            if c & self.sign_mask:
                continue
            v = decoder(c)
            if math.isfinite(v) and (v > 0 or (v == 0 and has_zero)):
                positive.setdefault(v, c)
        self.values = sorted(positive)  # exact doubles
        self.code_of = positive
        self.min_value = self.values[0]

    # -- encode ------------------------------------------------------------------------------
    def encode(self, x, rnd="nearest", ovf="non_saturating", r=0):
        """The code of float x (a Python float = an exact double)."""
        sat = ovf != "non_saturating" or not (self.has_inf or self.has_nan)
        if math.isnan(x):
            if not self.has_nan or ovf == "saturate_nan_to_zero":
                return 0
            return self.nan_code
        neg = math.copysign(1.0, x) < 0
        if not self.signed:
            if (neg and x != 0) or (not self.has_zero and x == 0):
                return 0 if sat else self.nan_code
        sign = self.sign_mask if neg else 0
        overflow_out = (sign | self.max_code) if sat else (sign | self.inf_code) if self.has_inf else (sign | self.nan_code)
        if math.isinf(x):
            return overflow_out
        if x == 0:
            return sign if self.signed_zero else 0
        a = abs(x)
        if rnd == "nearest":
            rnd = self.nearest
        truncate = rnd == "toward_zero" or (rnd == "upward" and neg) or (rnd == "downward" and not neg)
        away = rnd in ("upward", "downward") and not truncate
        overflow_result = (sign | self.max_code) if truncate else overflow_out
        if a < self.min_value:  # only formats without zero (E8M0): nothing smaller exists
            return self.code_of[self.min_value]
        fa = Fraction(a)
        if fa >= self.beyond:
            return overflow_result
        i = bisect.bisect_right(self.values, a) - 1
        lo = Fraction(self.values[i])
        if fa == lo:
            return sign | self.code_of[self.values[i]]
        hi = Fraction(self.values[i + 1]) if i + 1 < len(self.values) else self.beyond
        if truncate:
            up = False
        elif away:
            up = True
        elif rnd == "stochastic":
            f = (fa - lo) / (hi - lo)
            up = math.floor(f * (1 << 32)) + r >= (1 << 32)
        else:
            d = (fa - lo) - (hi - fa)
            if d != 0:
                up = d > 0
            elif rnd == "nearest_away":
                up = True
            else:  # nearest_even
                up = self._hi_is_even(i, hi)
        if not up:
            v = self.values[i]
        elif hi == self.beyond:
            return overflow_result
        else:
            v = self.values[i + 1]
        if v == 0:
            return sign if self.signed_zero else 0
        return sign | self.code_of[v]

    def _hi_is_even(self, i, hi):
        if self.even_rule == "up":
            return True
        if hi == self.beyond:
            return self.beyond_even
        return self.code_of[self.values[i + 1]] % 2 == 0


def _exmy(name, e, m, bias, specials, signed=True, has_zero=True):
    bits = (1 if signed else 0) + e + m
    sign_mask = (1 << (bits - 1)) if signed else 0
    emask = (1 << e) - 1

    def decode(c):
        neg = bool(c & sign_mask)
        ef = (c >> m) & emask
        mf = c & ((1 << m) - 1)
        mag = c & ~sign_mask
        if specials == "ieee" and ef == emask:
            v = math.inf if mf == 0 else math.nan
        elif specials == "nan_only" and mag == (1 << (e + m)) - 1:
            v = math.nan
        elif specials == "fnuz" and c == sign_mask:  # the -0 code is the one NaN
            v = math.nan
        elif ef == 0 and has_zero:
            v = math.ldexp(mf, 1 - bias - m)
        else:
            v = math.ldexp((1 << m) | mf, ef - bias - m)
        return -v if neg else v

    if specials == "ieee":
        max_code = (emask << m) - 1
        nan_code = (emask << m) | (1 << (m - 1))
        inf_code = emask << m
    elif specials == "nan_only":
        max_code = (1 << (e + m)) - 2
        nan_code = (1 << (e + m)) - 1
        inf_code = None
    elif specials == "fnuz":
        max_code = (1 << (e + m)) - 1
        nan_code = sign_mask
        inf_code = None
    else:
        max_code = (1 << (e + m)) - 1
        nan_code = inf_code = None
    max_exp = (max_code >> m) - bias
    return Format(name, bits, decode, signed=signed, has_zero=has_zero, has_inf=specials == "ieee",
                  has_nan=specials != "none", nan_code=nan_code, inf_code=inf_code, max_code=max_code,
                  top_step=Fraction(2) ** (max_exp - m), nearest="nearest_even",
                  signed_zero=signed and has_zero and specials != "fnuz", even_rule="code" if m > 0 else "up")


def _hifloat8():
    # Dot prefix -> (exponent field width D, mantissa width w); see docs/formats/hifloat8.md.
    def decode(c):
        neg = bool(c & 0x80)
        c7 = c & 0x7F
        if c == 0x80:
            return math.nan
        if c7 == 0x6F:
            return -math.inf if neg else math.inf
        if c7 < 0x08:
            v = 0.0 if c7 == 0 else math.ldexp(1.0, c7 - 23)
            return -v if neg else v
        if c7 < 0x10:
            d, w, field = 0, 3, 0
        elif c7 < 0x20:
            d, w, field = 1, 3, (c7 >> 3) & 1
        elif c7 < 0x40:
            d, w, field = 2, 3, (c7 >> 3) & 3
        elif c7 < 0x60:
            d, w, field = 3, 2, (c7 >> 2) & 7
        else:
            d, w, field = 4, 1, (c7 >> 1) & 15
        if d == 0:
            exp = 0
        else:  # sign-magnitude with the top bit of |E| hidden
            mag = (field & ((1 << (d - 1)) - 1)) | (1 << (d - 1))
            exp = -mag if field >> (d - 1) else mag
        mant = c7 & ((1 << w) - 1)
        v = math.ldexp((1 << w) | mant, exp - w)
        return -v if neg else v

    return Format("hifloat8", 8, decode, signed=True, has_zero=True, has_inf=True, has_nan=True, nan_code=0x80,
                  inf_code=0x6F, max_code=0x6E, top_step=Fraction(2) ** 14, nearest="nearest_away",
                  signed_zero=False)


FORMATS = {
    "hifloat8": _hifloat8(),
    "float8_e4m3fn": _exmy("float8_e4m3fn", 4, 3, 7, "nan_only"),
    "float8_e5m2": _exmy("float8_e5m2", 5, 2, 15, "ieee"),
    "float8_e8m0fnu": _exmy("float8_e8m0fnu", 8, 0, 127, "nan_only", signed=False, has_zero=False),
    "float6_e3m2fn": _exmy("float6_e3m2fn", 3, 2, 3, "none"),
    "float6_e2m3fn": _exmy("float6_e2m3fn", 2, 3, 1, "none"),
    "float4_e2m1fn": _exmy("float4_e2m1fn", 2, 1, 1, "none"),
    "bfloat16": _exmy("bfloat16", 8, 7, 127, "ieee"),
    "float16": _exmy("float16", 5, 10, 15, "ieee"),
    "float8_e4m3fnuz": _exmy("float8_e4m3fnuz", 4, 3, 8, "fnuz"),
    "float8_e5m2fnuz": _exmy("float8_e5m2fnuz", 5, 2, 16, "fnuz"),
    "float8_e4m3b11fnuz": _exmy("float8_e4m3b11fnuz", 4, 3, 11, "fnuz"),
    "float8_e3m4": _exmy("float8_e3m4", 3, 4, 3, "ieee"),
    "float8_e4m3": _exmy("float8_e4m3", 4, 3, 7, "ieee"),
}
