"""numpy's ufuncs on every minifloat float dtype: the float64 contract and ml_dtypes' code operations.

Oracles, independent of the loops under test:
  - value ufuncs: numpy's own float64 loop on the exactly decoded values, rounded once to the format
    (the float64 -> format cast, itself checked against tests/python/oracle.py in test_cast.py), over
    every pair of codes of each format of at most 8 bits and a sample of bfloat16;
  - nextafter / spacing: the sorted list of the format's values;
  - copysign: the sign bit, with the format's own NaN and zero rules.
Parametrized over every float dtype the module exposes (minifloat.formats but numpy's float16), so a
dtype added to the module is covered without an edit here.
"""
import numpy as np
import pytest

import minifloat as mf

FLOATS = [n for n in mf.formats if n != "float16"]

BINARY = ["add", "subtract", "multiply", "true_divide", "floor_divide", "remainder", "fmod", "power",
          "maximum", "minimum", "fmax", "fmin", "arctan2", "hypot", "logaddexp", "logaddexp2", "heaviside"]
MINMAX = ("maximum", "minimum", "fmax", "fmin")
UNARY = ["negative", "positive", "absolute", "fabs", "sign", "rint", "floor", "ceil", "trunc", "sqrt", "cbrt",
         "square", "reciprocal", "conjugate", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos",
         "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh", "deg2rad",
         "radians", "rad2deg", "degrees"]


def code_type(name):
    return np.uint16 if np.dtype(name).itemsize == 2 else np.uint8


def width(name):
    return mf.finfo(np.dtype(name)).bits


def all_codes(name):
    return np.arange(1 << width(name), dtype=code_type(name)).view(np.dtype(name))


def is_signed(name):
    return bool((all_codes(name).astype(np.float64) < 0).any())


def pair_codes(name):
    """Every pair of codes (formats of at most 8 bits); bfloat16: every code against the special
    values and they against every code, plus random pairs."""
    codes = all_codes(name)
    if width(name) <= 8:
        a, b = np.meshgrid(codes, codes, indexing="ij")
        return a.ravel(), b.ravel()
    rng = np.random.default_rng(36)
    special = np.array([0x0000, 0x8000, 0x0001, 0x8081, 0x3F80, 0xBFC0, 0x7F7F, 0xFF80, 0x7FC0],
                       np.uint16).view(np.dtype(name))
    a1, b1 = np.meshgrid(codes, special, indexing="ij")
    ra = rng.integers(0, 1 << 16, 100_000, dtype=np.uint16).view(np.dtype(name))
    rb = rng.integers(0, 1 << 16, 100_000, dtype=np.uint16).view(np.dtype(name))
    return np.concatenate([a1.ravel(), b1.ravel(), ra]), np.concatenate([b1.ravel(), a1.ravel(), rb])


def f64(x):
    return np.asarray(x).astype(np.float64)


def rounded(v, name):
    """float64 values rounded once to the format."""
    return np.asarray(v, np.float64).astype(np.dtype(name))


def assert_codes(got, want, name, what, inputs=(), either_zero=False):
    """Equal codes, or both NaN (a NaN result is the format's NaN whatever its sign bit); with
    either_zero, -0 and +0 are equal (which zero numpy's float64 maximum picks from (+0, -0) depends
    on its SIMD path)."""
    assert got.dtype == np.dtype(name), what
    g, w = got.view(code_type(name)), want.view(code_type(name))
    ok = (g == w) | (np.isnan(got) & np.isnan(want))
    if either_zero:
        ok |= (f64(got) == 0) & (f64(want) == 0)
    if not ok.all():
        i = np.flatnonzero(~ok)[:5]
        shown = [tuple(f64(x)[j] for x in inputs) for j in i]
        pytest.fail("%s %s: %d mismatches, e.g. inputs %s got %s want %s" % (
            name, what, (~ok).sum(), shown, f64(got)[i], f64(want)[i]))


def finite_values(name):
    """The sorted distinct non-NaN values of the format (-0 folded into +0; Inf included)."""
    v = f64(all_codes(name))
    v = v[~np.isnan(v)]
    return np.unique(v + 0.0)


# --- the new loops: the result is the minifloat dtype ---------------------------------------------


@pytest.mark.parametrize("name", FLOATS)
def test_new_ufuncs_keep_the_dtype(name):
    dt = np.dtype(name)
    x = np.array([1.0, 2.0, 4.0], dt)
    assert np.nextafter(x, x).dtype == dt
    assert np.spacing(x).dtype == dt
    assert np.ldexp(x, np.int32(1)).dtype == dt
    assert np.ldexp(x, np.array([1, 2, 3], np.int64)).dtype == dt
    assert np.ldexp(x, 1).dtype == dt
    m, e = np.frexp(x)
    assert m.dtype == dt and e.dtype == np.int32
    fr, ip = np.modf(x)
    assert fr.dtype == dt and ip.dtype == dt
    q, r = np.divmod(x, x)
    assert q.dtype == dt and r.dtype == dt
    assert np.copysign(x, x).dtype == dt


def test_spacing_of_one_in_e4m3fn():
    s = np.spacing(np.array(1.0, mf.float8_e4m3fn))
    assert s.dtype == np.dtype(mf.float8_e4m3fn) and float(s) == 0.125


# --- value ufuncs: float64 rounded once -----------------------------------------------------------


@pytest.mark.parametrize("name", FLOATS)
def test_binary_ufuncs_are_float64_rounded_once(name):
    a, b = pair_codes(name)
    fa, fb = f64(a), f64(b)
    with np.errstate(all="ignore"):
        for op in BINARY:
            u = getattr(np, op)
            assert_codes(u(a, b), rounded(u(fa, fb), name), name, op, (a, b), either_zero=op in MINMAX)
        # strided and in-place operands take the same path
        got = a[::3].copy()
        np.add(got, b[::3], out=got)
        assert_codes(got, rounded(fa[::3] + fb[::3], name), name, "add in place", (a[::3], b[::3]))
        assert_codes(np.multiply(a[1::4], b[2::4]), rounded(fa[1::4] * fb[2::4], name), name, "multiply strided")


@pytest.mark.parametrize("name", FLOATS)
def test_unary_ufuncs_are_float64_rounded_once(name):
    x = all_codes(name)
    fx = f64(x)
    with np.errstate(all="ignore"):
        for op in UNARY:
            u = getattr(np, op)
            assert_codes(u(x), rounded(u(fx), name), name, op, (x,))


@pytest.mark.parametrize("name", FLOATS)
def test_divmod_floor_divide_remainder_agree(name):
    a, b = pair_codes(name)
    fa, fb = f64(a), f64(b)
    with np.errstate(all="ignore"):
        q, r = np.divmod(a, b)
        wq, wr = np.divmod(fa, fb)
        assert_codes(q, rounded(wq, name), name, "divmod quotient", (a, b))
        assert_codes(r, rounded(wr, name), name, "divmod remainder", (a, b))
        assert_codes(q, np.floor_divide(a, b), name, "divmod vs floor_divide")
        assert_codes(r, np.remainder(a, b), name, "divmod vs remainder")


@pytest.mark.parametrize("name", FLOATS)
def test_floor_divide_by_infinity(name):
    dt = np.dtype(name)
    if not np.isinf(all_codes(name)).any():
        pytest.skip("%s has no Inf" % name)  # the other tests of this file run for it
    one, inf = np.array([1.0, -1.0, 1.0, -1.0], dt), np.array([-np.inf, np.inf, np.inf, -np.inf], dt)
    np.testing.assert_array_equal(f64(np.floor_divide(one, inf)), [-1.0, -1.0, 0.0, 0.0])
    np.testing.assert_array_equal(f64(np.remainder(one, inf)), [-np.inf, np.inf, 1.0, -1.0])
    q, r = np.divmod(one, inf)
    np.testing.assert_array_equal(f64(q), [-1.0, -1.0, 0.0, 0.0])
    np.testing.assert_array_equal(f64(r), [-np.inf, np.inf, 1.0, -1.0])


@pytest.mark.parametrize("name", FLOATS)
def test_division_by_zero_warns_like_float64(name):
    dt = np.dtype(name)
    one, zero = np.array([1.0], dt), np.array([0.0], dt)
    if np.isnan(zero).any():
        pytest.skip("%s has no zero" % name)  # the other tests of this file run for it
    with pytest.warns(RuntimeWarning, match="divide by zero"):
        q = np.floor_divide(one, zero)
    with np.errstate(all="ignore"):
        assert_codes(q, rounded(np.floor_divide(1.0, 0.0), name), name, "1 // 0")
        assert_codes(np.remainder(one, zero), rounded(np.nan, name), name, "1 % 0")
    # copysign, nextafter and spacing work on codes: NaN operands raise nothing
    nan_or_max = np.array([np.nan if np.isnan(all_codes(name)).any() else mf.finfo(dt).max], dt)
    np.copysign(nan_or_max, one)
    np.nextafter(nan_or_max, one)
    np.spacing(nan_or_max)


def raised(f):
    """The floating-point exceptions numpy reports for f() (underflow aside), as a set of names."""
    out = set()
    for kind in ("divide", "over", "invalid"):
        try:
            with np.errstate(all="ignore", **{kind: "raise"}):
                f()
        except FloatingPointError:
            out.add(kind)
    return out


@pytest.mark.parametrize("name", FLOATS)
def test_floating_point_warnings_match_float64(name):
    """A loop raises the exceptions numpy's float64 loop raises on the same values (numpy turns them
    into RuntimeWarnings): over the whole operand set of each ufunc, the same kinds."""
    a, b = pair_codes(name)
    if width(name) > 8:
        a, b = a[::5], b[::5]
    fa, fb = f64(a), f64(b)
    for op in BINARY + ["divmod"]:
        u = getattr(np, op)
        assert raised(lambda: u(a, b)) == raised(lambda: u(fa, fb)), (name, op)
    x = all_codes(name)
    fx = f64(x)
    for op in UNARY + ["frexp", "modf"]:
        u = getattr(np, op)
        assert raised(lambda: u(x)) == raised(lambda: u(fx)), (name, op)


@pytest.mark.parametrize("name", FLOATS)
def test_frexp_and_modf(name):
    x = all_codes(name)
    fx = f64(x)
    with np.errstate(all="ignore"):
        m, e = np.frexp(x)
        wm, we = np.frexp(fx)
        assert_codes(m, rounded(wm, name), name, "frexp mantissa", (x,))
        np.testing.assert_array_equal(e, we)
        fr, ip = np.modf(x)
        wfr, wip = np.modf(fx)
        assert_codes(fr, rounded(wfr, name), name, "modf fraction", (x,))
        assert_codes(ip, rounded(wip, name), name, "modf integral", (x,))


@pytest.mark.parametrize("name", FLOATS)
def test_ldexp_is_exact_then_rounded_once(name):
    x = all_codes(name)
    if width(name) > 8:
        x = x[::7]
    n = np.arange(-40, 41)
    xx, nn = np.meshgrid(x, n, indexing="ij")
    xx, nn = xx.ravel(), nn.ravel()
    with np.errstate(all="ignore"):
        for itype in (np.int32, np.int64):
            want = rounded(np.ldexp(f64(xx), nn), name)
            assert_codes(np.ldexp(xx, nn.astype(itype)), want, name, "ldexp %s" % itype.__name__, (xx, nn))
        # exponents far beyond every format: the same as one far enough (2^+-400 keeps float64 exact)
        for itype, huge in ((np.int32, 2 ** 31 - 1), (np.int64, 2 ** 62)):
            for big in (huge, -huge):
                want = rounded(np.ldexp(f64(x), 400 if big > 0 else -400), name)
                assert_codes(np.ldexp(x, itype(big)), want, name, "ldexp %d" % big, (x,))


# --- code operations ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", FLOATS)
def test_nextafter_against_the_sorted_values(name):
    a, b = pair_codes(name)
    got = np.nextafter(a, b)
    fa, fb = f64(a), f64(b)
    vals = finite_values(name)
    i = np.searchsorted(vals, fa + 0.0)
    nan = np.isnan(fa) | np.isnan(fb)
    same = ~nan & (fa == fb)
    up = ~nan & ~same & (fa < fb)
    down = ~nan & ~same & (fa > fb)
    want = np.full(fa.shape, np.nan)
    want[up] = vals[i[up] + 1]
    want[down] = vals[i[down] - 1]
    # a zero reached from x keeps x's sign (where the format has -0)
    want = np.where(want == 0, np.copysign(0.0, fa), want)
    want = rounded(want, name)
    want[same] = b[same]  # x == y gives y itself (nextafter(+0, -0) is -0)
    assert_codes(got, want, name, "nextafter", (a, b))
    assert (got.view(code_type(name))[same] == b.view(code_type(name))[same]).all()


@pytest.mark.parametrize("name", FLOATS)
def test_nextafter_edges(name):
    dt = np.dtype(name)
    codes = all_codes(name)
    vals = finite_values(name)
    finite = vals[np.isfinite(vals)]
    if 0.0 in finite:
        zero = np.array(0.0, dt)
        smallest = finite[finite > 0][0]
        assert float(np.nextafter(zero, np.array(1.0, dt))) == smallest
        if is_signed(name):
            assert float(np.nextafter(zero, np.array(-1.0, dt))) == -smallest
    if np.isnan(codes).any():
        nan = np.array(np.nan, dt)
        assert np.isnan(np.nextafter(nan, np.array(1.0, dt)))
        assert np.isnan(np.nextafter(np.array(1.0, dt), nan))
    one = np.array(1.0, dt)
    assert float(np.nextafter(one, one)) == 1.0
    above = finite[np.searchsorted(finite, 1.0) + 1]
    assert float(np.nextafter(one, np.array(finite[-1], dt))) == above


@pytest.mark.parametrize("name", FLOATS)
def test_spacing_against_the_sorted_values(name):
    x = all_codes(name)
    fx = f64(x)
    vals = finite_values(name)
    has_inf, has_nan = np.isinf(fx).any(), np.isnan(fx).any()
    top = vals[np.isfinite(vals)][-1]
    got = np.spacing(x)
    assert got.dtype == np.dtype(name)
    i = np.searchsorted(vals, fx + 0.0)
    neg = np.signbit(fx)
    regular = np.isfinite(fx) & (np.abs(fx) != top)
    want = np.full(fx.shape, np.nan)
    r = regular & ~neg
    want[r] = vals[i[r] + 1] - fx[r]
    r = regular & neg
    want[r] = vals[i[r] - 1] - fx[r]  # spacing(-0) is -denorm_min, as ml_dtypes (numpy float64: +)
    at_top = np.abs(fx) == top
    if has_inf:
        want[at_top] = np.copysign(np.inf, fx[at_top])
    elif not has_nan:
        want[at_top] = 0.0
    assert_codes(got, rounded(want, name), name, "spacing", (x,))
    if not has_inf and has_nan:  # a NaN of x's sign, where the format has one
        assert np.isnan(got[at_top]).all()
        nan_signs = np.signbit(fx[np.isnan(fx)])
        if nan_signs.any() and not nan_signs.all():  # NaNs of both signs (not fnuz's single 0x80)
            np.testing.assert_array_equal(np.signbit(got[at_top]), np.signbit(fx[at_top]))
    # spacing agrees with nextafter arithmetic (ml_dtypes' own check)
    with np.errstate(all="ignore"):
        fin = np.isfinite(fx) & ~at_top
        away = np.where(neg, -np.inf if has_inf else -top, np.inf if has_inf else top).astype(np.dtype(name))
        step = f64(np.nextafter(x[fin], away[fin])) - fx[fin]
        np.testing.assert_array_equal(f64(got[fin]), step)


@pytest.mark.parametrize("name", FLOATS)
def test_copysign_is_a_sign_bit_operation(name):
    a, b = pair_codes(name)
    got = np.copysign(a, b)
    fa, fb = f64(a), f64(b)
    negative = np.signbit(fb)
    with np.errstate(all="ignore"):
        want = rounded(np.where(negative, -np.abs(fa), np.abs(fa)), name)  # unsigned: -x has no code
    nan = np.isnan(fa)
    if not is_signed(name):
        want = a  # only + exists: the first operand
    assert_codes(got[~nan], want[~nan], name, "copysign", (a[~nan], b[~nan]))
    # a NaN stays a NaN, with the requested sign bit where that code is a NaN too
    assert np.isnan(got[nan]).all()
    if is_signed(name):
        mask = 1 << (width(name) - 1)
        ca = a.view(code_type(name)).astype(np.int64)
        flipped = ((ca & ~mask) | np.where(negative, mask, 0)).astype(code_type(name)).view(np.dtype(name))
        keeps_nan = nan & np.isnan(flipped)
        np.testing.assert_array_equal(got.view(code_type(name))[keeps_nan], flipped.view(code_type(name))[keeps_nan])
        np.testing.assert_array_equal(got.view(code_type(name))[nan & ~keeps_nan], a.view(code_type(name))[nan & ~keeps_nan])


@pytest.mark.parametrize("name", [n for n in FLOATS if width(n) == 8])
def test_copysign_sets_the_sign_bit_of_every_nonzero_code(name):
    """ml_dtypes' check: copysign(code, -1) is code | 0x80 for the codes 1..127."""
    if not is_signed(name):
        pytest.skip("%s is unsigned" % name)  # copysign(x, y) is x there: test_copysign_is_a_sign_bit_operation
    codes = np.arange(1, 128, dtype=np.uint8)
    got = np.copysign(codes.view(np.dtype(name)), np.array(-1.0, np.dtype(name)))
    np.testing.assert_array_equal(got.view(np.uint8), codes | 0x80)


@pytest.mark.parametrize("name", FLOATS)
def test_copysign_zero_and_nan_without_negative_zero(name):
    dt = np.dtype(name)
    if not is_signed(name):
        x = np.array([mf.finfo(dt).max], dt)
        assert np.copysign(x, x).view(code_type(name))[0] == x.view(code_type(name))[0]
        return
    zero, minus = np.array(0.0, dt), np.array(-1.0, dt)
    z = np.copysign(zero, minus)
    assert float(z) == 0.0 and not np.isnan(z)
    has_negative_zero = np.signbit(f64(all_codes(name))[f64(all_codes(name)) == 0]).any()
    assert bool(np.signbit(z)) == bool(has_negative_zero)
    if np.isnan(all_codes(name)).any():
        nan = np.array(np.nan, dt)
        assert np.isnan(np.copysign(nan, minus)) and np.isnan(np.copysign(nan, np.array(1.0, dt)))


@pytest.mark.parametrize("name", [n for n in FLOATS if width(n) < 8])
def test_code_ufuncs_ignore_bits_above_the_width(name):
    """A uint8 array viewed as a sub-byte format may carry bits above the format's width: the code
    operations read the low bits, as every decoder does (and never index past a per-code table)."""
    raw = np.arange(256, dtype=np.uint8)
    high = raw.view(np.dtype(name))
    low = (raw & ((1 << width(name)) - 1)).view(np.dtype(name))
    one = np.array(1.0, np.dtype(name))
    for got, want in ((np.nextafter(high, one), np.nextafter(low, one)), (np.spacing(high), np.spacing(low)),
                      (np.copysign(high, -one), np.copysign(low, -one)), (np.nextafter(one, high), np.nextafter(one, low))):
        np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


@pytest.mark.parametrize("name", FLOATS)
def test_reductions_round_every_step(name):
    x = all_codes(name)
    x = x[np.isfinite(x)][:40]
    with np.errstate(all="ignore"):
        ops = [np.multiply, np.maximum, np.nextafter, np.copysign]
        if not np.isnan(np.array(0.0, np.dtype(name))):  # numpy starts add.reduce from add's identity 0
            ops.append(np.add)
        for op in ops:
            acc = x[0]
            for v in x[1:]:
                acc = op(acc, v)
            got = op.reduce(x)
            assert got.dtype == np.dtype(name)
            assert np.array(got).view(code_type(name)) == np.array(acc).view(code_type(name)) or (
                np.isnan(got) and np.isnan(acc)), op.__name__
