#!/usr/bin/env bash
# End-to-end checks of `minifloat quantize` (issue contract), cross-checked with the encode and
# decode commands and with numpy. Usage: quantize_command.sh PATH/TO/minifloat
set -euo pipefail
MF="$1"
PY=${PYTHON:-/usr/bin/python3}  # Debian python3-numpy lives there, not in a pyenv python
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$PY" - "$T" <<'PY'
import numpy as np, sys
t = sys.argv[1]
rng = np.random.default_rng(5)
x = (rng.standard_normal((6, 70)) * np.exp2(rng.uniform(-8, 4, (6, 70)))).astype(np.float32)
np.save(f"{t}/x.npy", x)
np.save(f"{t}/x3d.npy", x.reshape(2, 3, 70))
np.save(f"{t}/x1d.npy", x[0])
np.save(f"{t}/cann.npy", np.array([0, 8, 64, 512], dtype=np.float32))
amax = np.abs(x).max()
s = np.float32(2.0 ** (np.floor(np.log2(amax)) - 4))
np.save(f"{t}/x_over_s.npy", (x / s).astype(np.float32))
np.save(f"{t}/s.npy", np.array([s], dtype=np.float32))
PY

# pow2 per-tensor HiF8 == decode(encode(x / s)) * s with s = 2^(floor(log2 amax) - 4)
"$MF" quantize "$T/x.npy" "$T/q.npy" --format hifloat8 --granularity tensor --codes "$T/c.npy" --scales "$T/sc.npy" --quiet
"$MF" encode hifloat8 "$T/x_over_s.npy" "$T/c_ref.npy" --saturate
"$MF" decode hifloat8 "$T/c_ref.npy" "$T/d_ref.npy"
"$PY" - "$T" <<'PY'
import numpy as np, sys
t = sys.argv[1]
L = lambda n: np.load(f"{t}/{n}")
assert L("sc.npy").shape == (1, 1) and L("sc.npy")[0, 0] == L("s.npy")[0]
assert (L("c.npy") == L("c_ref.npy")).all()
assert (L("q.npy") == L("d_ref.npy") * L("s.npy")[0]).all()
PY

# granularities and options; shapes of OUT, codes and scales
"$MF" quantize "$T/x.npy" "$T/q.npy" --format float8_e4m3fn --granularity channel --scales "$T/sc.npy" --quiet
"$MF" quantize "$T/x.npy" "$T/qb.npy" --format float8_e4m3fn --granularity block --block 2x32 --scales "$T/sb.npy" --quiet
"$MF" quantize "$T/x3d.npy" "$T/q3.npy" --format hifloat8 --granularity token --n-guard 12 --scales "$T/s3.npy" --quiet
"$MF" quantize "$T/x1d.npy" "$T/q1.npy" --format float8_e5m2 --granularity tensor --scale-rule none --quiet
"$MF" encode float8_e5m2 "$T/x1d.npy" "$T/c1.npy" --saturate
"$MF" decode float8_e5m2 "$T/c1.npy" "$T/d1.npy"
"$MF" quantize "$T/x.npy" "$T/qm.npy" --format float4_e2m1fn --granularity mx --codes "$T/cm.npy" --scales "$T/sm.npy" --quiet
"$MF" quantize "$T/x.npy" "$T/qm0.npy" --format float8_e4m3fn --granularity mx --axis 0 --scale-rule rceil --scales "$T/sm0.npy" --quiet
"$MF" quantize "$T/cann.npy" "$T/qc.npy" --format float8_e4m3fn --granularity mx --codes "$T/cc.npy" --scales "$T/scc.npy" --quiet
"$MF" quantize "$T/x3d.npy" "$T/qf.npy" --format float4_e2m1fn --granularity channel --flatten first --codes "$T/cf.npy" --scales "$T/sf.npy" --quiet
out=$("$MF" quantize "$T/x.npy" "$T/q.npy" --format hifloat8 --granularity tensor)
echo "$out" | grep -q "SQNR" || fail "summary line lacks SQNR: $out"
"$PY" - "$T" <<'PY'
import numpy as np, sys
t = sys.argv[1]
L = lambda n: np.load(f"{t}/{n}")
assert L("q.npy").shape == (6, 70) and L("q.npy").dtype == np.float32
assert L("sc.npy").shape == (6, 1)
assert L("sb.npy").shape == (3, 3)
assert L("q3.npy").shape == (2, 3, 70) and L("s3.npy").shape == (6, 1)
x3 = L("x3d.npy").reshape(6, 70); s3 = L("s3.npy")[:, 0]
assert (s3 == np.exp2(np.floor(np.log2(np.abs(x3).max(axis=1))) - 3)).all()   # N_guard 12 -> T = 3
assert (L("q1.npy") == L("d1.npy")).all()
assert L("cm.npy").shape == (6, 35) and L("cm.npy").dtype == np.uint8        # FP4: 70 codes -> 35 bytes a row
assert L("sm.npy").shape == (6, 3) and L("sm.npy").dtype == np.uint8         # ceil(70 / 32) blocks a row
assert L("sm0.npy").shape == (1, 70)
assert L("cc.npy").tolist() == [0, 72, 96, 120], L("cc.npy").tolist()         # CANN doc vector
assert L("scc.npy").tolist() == [[128]]
assert L("sf.npy").shape == (2, 1) and L("cf.npy").shape == (2, 105) and L("qf.npy").shape == (2, 3, 70)
err = np.abs(L("qm.npy") - L("x.npy")).max()
assert err <= np.abs(L("x.npy")).max() / 2, err
PY

expect_error() {
  local code=$1; shift
  set +e; "$MF" "$@" > "$T/out" 2> "$T/err"; local rc=$?; set -e
  [ "$rc" -eq "$code" ] || fail "$* exited $rc, expected $code: $(cat "$T/err")"
  [ "$(wc -l < "$T/err")" -eq 1 ] || fail "$*: expected a one-line message, got: $(cat "$T/err")"
}
expect_error 2 quantize "$T/x.npy" "$T/o.npy" --granularity tensor
expect_error 2 quantize "$T/x.npy" "$T/o.npy" --format hifloat8
expect_error 2 quantize "$T/x.npy" "$T/o.npy" --format hifloat8 --granularity mx
expect_error 2 quantize "$T/x.npy" "$T/o.npy" --format float8_e4m3fn --granularity mx --scale-rule max
expect_error 2 quantize "$T/x.npy" "$T/o.npy" --format float8_e4m3fn --granularity tensor --scale-rule floor
expect_error 2 quantize "$T/x.npy" "$T/o.npy" --format float8_e4m3fn --granularity block --block 12
expect_error 2 quantize "$T/x.npy" "$T/o.npy" --format float8_e4m3fn --granularity tensor --block 1x128
expect_error 2 quantize "$T/x.npy" "$T/o.npy" --format float8_e4m3fn --granularity mx --axis 2
expect_error 2 quantize "$T/x.npy" "$T/o.npy" --format float8_e8m0fnu --granularity tensor
expect_error 2 quantize "$T/x.npy" "$T/o.npy" --format hifloat8 --granularity tensor --flatten middle
expect_error 1 quantize "$T/missing.npy" "$T/o.npy" --format hifloat8 --granularity tensor

# 2-D MX tiles (issue 35): --block 32x32 gives one E8M0 scale per 32x32 tile, a (ceil(R/32),
# ceil(C/32)) grid, and the library's values for that scheme. Every row of each tile here holds
# the tile's amax, so each 1x32 block of that row has the tile's scale: the library's 1-D MX
# (--axis 1) must then give the same values bit for bit and the same scale per row.
"$PY" - "$T" <<'PY'
import numpy as np, sys
r = np.random.default_rng(3)
x = (r.standard_normal((70, 40)) * np.exp2(r.uniform(-6, 6, (70, 40)))).astype(np.float32)
for i in range(0, 70, 32):
    for j in range(0, 40, 32):
        x[i:i + 32, j] = np.abs(x[i:i + 32, j:j + 32]).max()
np.save(f"{sys.argv[1]}/t.npy", x)
PY
"$MF" quantize "$T/t.npy" "$T/t2.npy" --format float8_e4m3fn --granularity mx --block 32x32 --scales "$T/t2_s.npy" --quiet
"$MF" quantize "$T/t.npy" "$T/t1.npy" --format float8_e4m3fn --granularity mx --axis 1 --scales "$T/t1_s.npy" --quiet
"$PY" - "$T" <<'PY'
import numpy as np, sys
t = sys.argv[1]
s2, s1 = np.load(f"{t}/t2_s.npy"), np.load(f"{t}/t1_s.npy")
assert s2.shape == (3, 2) and s2.dtype == np.uint8, (s2.shape, s2.dtype)  # ceil(70/32) x ceil(40/32)
assert s1.shape == (70, 2)
assert (s1 == np.repeat(s2, 32, axis=0)[:70]).all()
assert (np.load(f"{t}/t2.npy") == np.load(f"{t}/t1.npy")).all()
PY
expect_error 2 quantize "$T/x.npy" "$T/o.npy" --format float8_e4m3fn --granularity mx --block 16x16
echo "quantize_command: all checks passed"
