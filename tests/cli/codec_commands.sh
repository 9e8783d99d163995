#!/usr/bin/env bash
# End-to-end checks of `minifloat formats|table|encode|decode` (issue contract), with numpy as
# the independent reader/writer of .npy files. Usage: codec_commands.sh PATH/TO/minifloat
set -euo pipefail
MF="$1"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
PY=${PYTHON:-/usr/bin/python3}  # Debian python3-numpy lives there, not in a pyenv python
fail() { echo "FAIL: $*" >&2; exit 1; }

# formats: one name per line
[ "$("$MF" formats | wc -l)" -eq 14 ] || fail "formats should list 14 names"
for f in float8_e4m3fnuz float8_e5m2fnuz float8_e4m3b11fnuz float8_e3m4 float8_e4m3; do
  "$MF" formats | grep -qx "$f" || fail "formats lacks $f"
done
"$MF" formats | grep -qx hifloat8 || fail "formats lacks hifloat8"

# table: CSV header + one row per code
"$MF" table hifloat8 > "$T/h.csv"
[ "$(head -1 "$T/h.csv")" = "code,hex,value,class" ] || fail "table header"
[ "$(wc -l < "$T/h.csv")" -eq 257 ] || fail "hifloat8 table rows"
grep -qx "110,0x6e,32768,normal" "$T/h.csv" || fail "hifloat8 max row"
grep -qx "111,0x6f,inf,infinite" "$T/h.csv" || fail "hifloat8 inf row"
grep -qx "128,0x80,nan,nan" "$T/h.csv" || fail "hifloat8 nan row"
[ "$("$MF" table float4_e2m1fn | wc -l)" -eq 17 ] || fail "e2m1 table rows"
# the fnuz formats: code 0x80 is the one NaN (no -0); e3m4 has Inf at 0x70
"$MF" table float8_e4m3fnuz > "$T/fnuz.csv"
[ "$(wc -l < "$T/fnuz.csv")" -eq 257 ] || fail "e4m3fnuz table rows"
[ "$(grep -ci ',nan' "$T/fnuz.csv")" -eq 1 ] || fail "e4m3fnuz: exactly one NaN code"
grep -i '^128,0x80,.*,nan$' "$T/fnuz.csv" > /dev/null || fail "e4m3fnuz: 0x80 is NaN"
grep -i '^112,0x70,inf' <("$MF" table float8_e3m4) > /dev/null || fail "e3m4: 0x70 is Inf"

"$PY" - "$T" <<'PY'
import numpy as np, sys
t = sys.argv[1]
np.save(f"{t}/x32.npy", np.array([[0, 1, 448, 464, 465], [-1e-40, 40960, 3.0, -0.0, np.inf]], dtype=np.float32))
np.save(f"{t}/x64.npy", np.array([1.0625 + 2.0**-40], dtype=np.float64))
np.save(f"{t}/x16.npy", np.array([1.5, -2.0, 65504], dtype=np.float16))
np.save(f"{t}/bf.npy", np.array([0x3F80, 0x4040], dtype=np.uint16))
np.save(f"{t}/sr.npy", np.full(10000, 1.0625, dtype=np.float32))
np.save(f"{t}/fortran.npy", np.asfortranarray(np.ones((2, 3), dtype=np.float32)))
np.save(f"{t}/ints.npy", np.arange(4, dtype=np.int32))
np.save(f"{t}/badcodes.npy", np.array([3, 31], dtype=np.uint8))
PY

"$MF" encode float8_e4m3fn "$T/x32.npy" "$T/e.npy"
"$MF" encode float8_e4m3fn "$T/x32.npy" "$T/es.npy" --saturate
"$MF" encode hifloat8 "$T/x32.npy" "$T/h.npy"
"$MF" encode float8_e4m3fn "$T/x64.npy" "$T/e64.npy"
"$MF" encode float4_e2m1fn "$T/x16.npy" "$T/f4.npy"
"$MF" encode float16 "$T/x32.npy" "$T/f16.npy"
"$MF" encode hifloat8 "$T/bf.npy" "$T/hbf.npy" --input bfloat16
"$MF" encode float8_e4m3fn "$T/sr.npy" "$T/sr1.npy" --round stochastic --seed 7
"$MF" encode float8_e4m3fn "$T/sr.npy" "$T/sr2.npy" --round stochastic --seed 7
"$MF" encode float8_e4m3fn "$T/x32.npy" "$T/tz.npy" --round toward_zero
"$MF" decode float8_e4m3fn "$T/e.npy" "$T/d.npy"
"$MF" encode float8_e4m3fnuz "$T/x32.npy" "$T/fnuz.npy"
"$MF" encode float8_e4m3fnuz "$T/x32.npy" "$T/fnuzs.npy" --saturate
"$MF" decode float8_e4m3fnuz "$T/fnuz.npy" "$T/dfnuz.npy"
"$MF" decode float16 "$T/f16.npy" "$T/d16.npy"

"$PY" - "$T" <<'PY'
import numpy as np, sys
t = sys.argv[1]
def load(n): return np.load(f"{t}/{n}")
e = load("e.npy"); assert e.dtype == np.uint8 and e.shape == (2, 5), (e.dtype, e.shape)
assert e.tolist() == [[0x00, 0x38, 0x7E, 0x7E, 0x7F], [0x80, 0x7F, 0x44, 0x80, 0x7F]], e.tolist()
assert load("es.npy").tolist() == [[0x00, 0x38, 0x7E, 0x7E, 0x7E], [0x80, 0x7E, 0x44, 0x80, 0x7E]]
assert load("tz.npy")[0].tolist() == [0x00, 0x38, 0x7E, 0x7E, 0x7E]
h = load("h.npy"); assert h.tolist() == [[0x00, 0x08, 0x62, 0x62, 0x62], [0x00, 0x6F, 0x14, 0x00, 0x6F]], h.tolist()
assert load("e64.npy").tolist() == [0x39], "double input must be rounded once"
assert load("f4.npy").tolist() == [0x3, 0xC, 0x7]
f16 = load("f16.npy"); assert f16.dtype == np.uint16
x = np.load(f"{t}/x32.npy"); assert (f16.view(np.float16) == x.astype(np.float16)).all() and (np.signbit(f16.view(np.float16)) == np.signbit(x)).all()
assert load("hbf.npy").tolist() == [0x08, 0x14]
s1, s2 = load("sr1.npy"), load("sr2.npy")
assert (s1 == s2).all(), "stochastic rounding must be reproducible for a seed"
frac_up = (s1 == 0x39).mean()   # 1.0625 is halfway between 1.0 (0x38) and 1.125 (0x39)
assert set(np.unique(s1).tolist()) == {0x38, 0x39} and 0.47 < frac_up < 0.53, frac_up
d = load("d.npy"); assert d.dtype == np.float32 and d.shape == (2, 5)
assert np.isnan(d[0, 4]) and d[0, 2] == 448 and d[1, 2] == 3.0 and np.signbit(d[1, 3])
assert (load("d16.npy") == x.astype(np.float16).astype(np.float32)).all()
# float8_e4m3fnuz: bias 8, max 240; -0 and -1e-40 give +0 (0x80 is the NaN), overflow and Inf the NaN
assert load("fnuz.npy").tolist() == [[0x00, 0x40, 0x80, 0x80, 0x80], [0x00, 0x80, 0x4C, 0x00, 0x80]], load("fnuz.npy").tolist()
assert load("fnuzs.npy").tolist() == [[0x00, 0x40, 0x7F, 0x7F, 0x7F], [0x00, 0x7F, 0x4C, 0x00, 0x7F]]
df = load("dfnuz.npy"); assert df[0, 1] == 1.0 and np.isnan(df[0, 2]) and df[1, 2] == 3.0 and not np.signbit(df[1, 3])
PY

# Errors: one line on stderr, non-zero exit (2 = command line, 1 = input)
expect_error() {
  local code=$1; shift
  set +e; "$MF" "$@" > "$T/out" 2> "$T/err"; local rc=$?; set -e
  [ "$rc" -eq "$code" ] || fail "$* exited $rc, expected $code"
  [ "$(wc -l < "$T/err")" -eq 1 ] || fail "$*: expected a one-line message, got: $(cat "$T/err")"
  grep -q "error" "$T/err" || fail "$*: message lacks 'error'"
}
printf 'not a numpy file at all' > "$T/bad.npy"
expect_error 2 encode nosuchformat "$T/x32.npy" "$T/o.npy"
expect_error 2 encode hifloat8 "$T/x32.npy"
expect_error 2 encode hifloat8 "$T/x32.npy" "$T/o.npy" --round sideways
expect_error 2 encode hifloat8 "$T/x32.npy" "$T/o.npy" --bogus
expect_error 1 encode hifloat8 "$T/bad.npy" "$T/o.npy"
expect_error 1 encode hifloat8 "$T/fortran.npy" "$T/o.npy"
expect_error 1 encode hifloat8 "$T/ints.npy" "$T/o.npy"
expect_error 1 encode hifloat8 "$T/missing.npy" "$T/o.npy"
expect_error 1 decode float4_e2m1fn "$T/badcodes.npy" "$T/o.npy"
expect_error 1 decode float16 "$T/e.npy" "$T/o.npy"
grep -q "Fortran\|fortran" <("$MF" encode hifloat8 "$T/fortran.npy" "$T/o.npy" 2>&1 || true) || fail "fortran message"
echo "codec_commands: all checks passed"
