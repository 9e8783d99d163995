#!/usr/bin/env bash
# End-to-end checks of `minifloat gemm` (issue 14 contract): exact mode against numpy on
# operands quantized by `minifloat quantize`, fp32_blocks == fast bit for bit, the kn layout,
# and the errors. Usage: gemm.sh PATH/TO/minifloat
set -euo pipefail
MF="$1"
PY=${PYTHON:-/usr/bin/python3}  # Debian python3-numpy lives there, not in a pyenv python
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$PY" - "$T" <<'PY'
import numpy as np, sys
t = sys.argv[1]
rng = np.random.default_rng(15)
a = rng.standard_normal((7, 96)).astype(np.float32)
b = rng.standard_normal((11, 96)).astype(np.float32)
np.save(f"{t}/a.npy", a); np.save(f"{t}/b.npy", b); np.save(f"{t}/bt.npy", np.ascontiguousarray(b.T))
PY

# exact = the float32 rounding of the exact sum of code value x scale products (float64 holds
# these sums exactly: K = 96 products of <= 8 significant bits each, all within 2^40 of each
# other). Power-of-two scales, so the dequantized floats numpy reads are those exact values.
check_exact() {  # $1 a-scheme $2 b-scheme $3 quantize flags of A $4 of B
  "$MF" gemm "$T/a.npy" "$T/b.npy" "$T/c.npy" --a-scheme "$1" --b-scheme "$2"
  "$MF" quantize "$T/a.npy" "$T/ah.npy" $3 --quiet
  "$MF" quantize "$T/b.npy" "$T/bh.npy" $4 --quiet
  "$PY" - "$T" <<'PY'
import numpy as np, sys
t = sys.argv[1]
L = lambda n: np.load(f"{t}/{n}")
want = (L("ah.npy").astype(np.float64) @ L("bh.npy").astype(np.float64).T).astype(np.float32)
got = L("c.npy")
assert got.shape == (7, 11) and got.dtype == np.float32
assert (got == want).all(), np.abs(got - want).max()
PY
}
check_exact hifloat8/tensor float8_e4m3fn/channel/scale-rule=pow2 "--format hifloat8 --granularity tensor" \
  "--format float8_e4m3fn --granularity channel --scale-rule pow2"
check_exact mxfp8_e4m3 mxfp8_e5m2 "--format float8_e4m3fn --granularity mx" "--format float8_e5m2 --granularity mx"

# fp32_blocks and fast are the same order, bit for bit; kn (B stored K x N) gives the same values
"$MF" gemm "$T/a.npy" "$T/b.npy" "$T/c1.npy" --a-scheme mxfp8_e4m3 --b-scheme mxfp8_e4m3 --order fp32_blocks
"$MF" gemm "$T/a.npy" "$T/b.npy" "$T/c2.npy" --a-scheme mxfp8_e4m3 --b-scheme mxfp8_e4m3 --order fast --threads 2
"$MF" gemm "$T/a.npy" "$T/bt.npy" "$T/c3.npy" --a-scheme mxfp8_e4m3 --b-scheme mxfp8_e4m3 --b-layout kn --order fast
"$MF" gemm "$T/a.npy" "$T/b.npy" "$T/e1.npy" --a-scheme mxfp8_e4m3 --b-scheme mxfp8_e4m3
"$MF" gemm "$T/a.npy" "$T/bt.npy" "$T/e2.npy" --a-scheme mxfp8_e4m3 --b-scheme mxfp8_e4m3 --b-layout kn --order exact
"$PY" - "$T" <<'PY'
import numpy as np, sys
t = sys.argv[1]
L = lambda n: np.load(f"{t}/{n}")
assert (L("c1.npy") == L("c2.npy")).all() and (L("c2.npy") == L("c3.npy")).all()
assert (L("e1.npy") == L("e2.npy")).all()
assert np.abs(L("c1.npy") - L("e1.npy")).max() < 1e-4 * np.abs(L("e1.npy")).max()
PY

# errors
set +e
out=$("$MF" gemm "$T/a.npy" "$T/bt.npy" "$T/x.npy" --a-scheme hifloat8/tensor --b-scheme hifloat8/tensor 2>&1); rc=$?
[ $rc -eq 1 ] && echo "$out" | grep -q "expected B (N, 96)" || fail "K mismatch: rc=$rc $out"
out=$("$MF" gemm "$T/a.npy" "$T/b.npy" "$T/x.npy" --a-scheme hifloat8/tensor 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "b-scheme is required" || fail "missing --b-scheme: rc=$rc $out"
out=$("$MF" gemm "$T/a.npy" "$T/b.npy" "$T/x.npy" --a-scheme hifloat8/tensor --b-scheme hifloat8/tensor --order slow 2>&1); rc=$?
[ $rc -eq 2 ] || fail "bad --order: rc=$rc"
out=$("$MF" gemm "$T/a.npy" "$T/b.npy" "$T/x.npy" --a-scheme bfloat16/tensor --b-scheme hifloat8/tensor 2>&1); rc=$?
[ $rc -eq 1 ] || fail "16-bit GEMM element: rc=$rc $out"
set -e
[ ! -e "$T/x.npy" ] || fail "a failed call wrote its output"
echo "gemm.sh: all checks passed"
