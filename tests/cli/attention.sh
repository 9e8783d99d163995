#!/usr/bin/env bash
# End-to-end checks of `minifloat attention` (issue 14 contract) against numpy: the reference
# semantics in float64 on operands quantized by `minifloat quantize` (P through encode/decode),
# the fast path, the stats file and the errors. Usage: attention.sh PATH/TO/minifloat
set -euo pipefail
MF="$1"
PY=${PYTHON:-/usr/bin/python3}  # Debian python3-numpy lives there, not in a pyenv python
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$PY" - "$T" <<'PY'
import numpy as np, sys
t = sys.argv[1]
rng = np.random.default_rng(14)
np.save(f"{t}/q.npy", rng.standard_normal((4, 5, 40)).astype(np.float32))       # Hq=4, Tq=5, d=40
np.save(f"{t}/k.npy", rng.standard_normal((2, 64, 40)).astype(np.float32))      # Hkv=2, Tk=64
np.save(f"{t}/v.npy", rng.standard_normal((2, 64, 24)).astype(np.float32))      # dv=24
np.save(f"{t}/qb.npy", rng.standard_normal((2, 4, 3, 32)).astype(np.float32))   # batch 2
np.save(f"{t}/kb.npy", rng.standard_normal((2, 1, 9, 32)).astype(np.float32))
np.save(f"{t}/vb.npy", rng.standard_normal((2, 1, 9, 16)).astype(np.float32))
PY

# The numpy model of the reference: out = (P^ V^) / l with P^ read from a file (or P~).
cat > "$T/model.py" <<'PY'
import numpy as np, sys
def scores(q, k, causal, scale=None):
    """S (..., Hq, Tq, Tk) in float64 with -inf on masked keys; q (B,Hq,Tq,d), k (B,Hkv,Tk,d)."""
    g = q.shape[1] // k.shape[1]
    kk = np.repeat(k.astype(np.float64), g, axis=1)
    s = (scale if scale is not None else 1 / np.sqrt(q.shape[-1])) * q.astype(np.float64) @ kk.swapaxes(-1, -2)
    tq, tk = q.shape[2], k.shape[2]
    if causal:
        vis = np.arange(tk)[None, :] <= np.arange(tq)[:, None] + tk - tq
        s = np.where(vis, s, -np.inf)
    return s
def finish(ph, pt, v):
    g = ph.shape[1] // v.shape[1]
    vv = np.repeat(v.astype(np.float64), g, axis=1)
    l = pt.sum(-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(l > 0, (ph @ vv) / np.where(l > 0, l, 1), 0.0)
    return out
PY

# 1. fp32: the reference against numpy, GQA, causal, Tq != Tk
for causal in "" "--causal"; do
  "$MF" attention "$T/q.npy" "$T/k.npy" "$T/v.npy" "$T/o.npy" $causal
  "$PY" - "$T" "$causal" <<'PY'
import numpy as np, sys
sys.path.insert(0, sys.argv[1]); from model import scores, finish
t, causal = sys.argv[1], sys.argv[2] == "--causal"
L = lambda n: np.load(f"{t}/{n}")[None]
s = scores(L("q.npy"), L("k.npy"), causal)
pt = np.exp(s - s.max(-1, keepdims=True))
want = finish(pt, pt, L("v.npy"))[0]
got = np.load(f"{t}/o.npy")
assert got.dtype == np.float32 and got.shape == (4, 5, 24), got.shape
assert np.allclose(got, want, rtol=2e-7, atol=1e-7), np.abs(got - want).max()
PY
done

# 2. quantized operands and P: Q^, K^, V^ from `minifloat quantize`, P^ through encode/decode
run_quantized() {  # $1 q-scheme flags, $2 k flags, $3 v flags, $4 scheme args of attention, $5 p format, $6 p scale
  "$MF" quantize "$T/q.npy" "$T/qh.npy" $1 --quiet
  "$MF" quantize "$T/k.npy" "$T/kh.npy" $2 --quiet
  "$MF" quantize "$T/v.npy" "$T/vh.npy" $3 --quiet
  "$MF" attention "$T/q.npy" "$T/k.npy" "$T/v.npy" "$T/o.npy" $4 --p-format "$5" --p-scale "$6" --causal
  "$PY" - "$T" "$6" <<'PY'
import numpy as np, sys
sys.path.insert(0, sys.argv[1]); from model import scores
t, ps = sys.argv[1], float(sys.argv[2])
L = lambda n: np.load(f"{t}/{n}")[None]
s = scores(L("qh.npy"), L("kh.npy"), True)
pt = np.exp(s - s.max(-1, keepdims=True))
np.save(f"{t}/pt.npy", pt)
np.save(f"{t}/pin.npy", (pt / ps).astype(np.float32))
PY
  "$MF" encode "$5" "$T/pin.npy" "$T/pc.npy" --saturate
  "$MF" decode "$5" "$T/pc.npy" "$T/pd.npy"
  "$PY" - "$T" "$6" <<'PY'
import numpy as np, sys
sys.path.insert(0, sys.argv[1]); from model import finish
t, ps = sys.argv[1], float(sys.argv[2])
ph = ps * np.load(f"{t}/pd.npy").astype(np.float64)
want = finish(ph, np.load(f"{t}/pt.npy"), np.load(f"{t}/vh.npy")[None])[0]
got = np.load(f"{t}/o.npy")
assert np.allclose(got, want, rtol=2e-7, atol=1e-7), np.abs(got - want).max()
PY
}
run_quantized "--format hifloat8 --granularity tensor" "--format hifloat8 --granularity tensor" \
  "--format hifloat8 --granularity tensor" \
  "--q-scheme hifloat8/tensor --k-scheme hifloat8/tensor --v-scheme hifloat8/tensor" hifloat8 1
run_quantized "--format float8_e4m3fn --granularity mx" "--format float8_e4m3fn --granularity mx" \
  "--format float8_e4m3fn --granularity mx --axis 0" \
  "--q-scheme mxfp8_e4m3 --k-scheme mxfp8_e4m3 --v-scheme mxfp8_e4m3/axis=0" float8_e4m3fn 0.5
run_quantized "--format float8_e4m3fn --granularity tensor" "--format float8_e5m2 --granularity tensor" \
  "--format bfloat16 --granularity tensor --scale-rule none" \
  "--q-scheme float8_e4m3fn/tensor --k-scheme float8_e5m2/tensor --v-scheme bf16" float8_e5m2 0.25

# 3. the fast path: close to the reference (P in 8 bits: quantized against the running max)
A="--q-scheme float8_e4m3fn/tensor --k-scheme float8_e4m3fn/tensor --v-scheme float8_e4m3fn/tensor --causal"
"$MF" attention "$T/q.npy" "$T/k.npy" "$T/v.npy" "$T/r.npy" $A --path reference
"$MF" attention "$T/q.npy" "$T/k.npy" "$T/v.npy" "$T/f.npy" $A --path fast --threads 2
"$MF" attention "$T/q.npy" "$T/k.npy" "$T/v.npy" "$T/s.npy" $A --path fast --isa scalar
"$MF" attention "$T/q.npy" "$T/k.npy" "$T/v.npy" "$T/k2.npy" $A --path fast --kernel avx2
"$MF" attention "$T/q.npy" "$T/k.npy" "$T/v.npy" "$T/ks.npy" $A --path fast --kernel scalar
"$MF" attention "$T/q.npy" "$T/k.npy" "$T/v.npy" "$T/rp.npy" $A --p-format hifloat8
"$MF" attention "$T/q.npy" "$T/k.npy" "$T/v.npy" "$T/fp.npy" $A --p-format hifloat8 --path fast
# the AVX-512 kernel's two forms (fp32 FMAs, bfloat16 pairs) give the same bits
"$MF" attention "$T/q.npy" "$T/k.npy" "$T/v.npy" "$T/fa.npy" $A --p-format hifloat8 --path fast --kernel avx512
"$MF" attention "$T/q.npy" "$T/k.npy" "$T/v.npy" "$T/fb.npy" $A --p-format hifloat8 --path fast --kernel avx512_bf16
cmp "$T/fa.npy" "$T/fb.npy" || fail "--kernel avx512_bf16 differs from --kernel avx512"
"$PY" - "$T" <<'PY'
import numpy as np, sys
t = sys.argv[1]
L = lambda n: np.load(f"{t}/{n}")
for f in ("f.npy", "s.npy", "k2.npy", "ks.npy"):
    assert np.allclose(L(f), L("r.npy"), rtol=1e-5, atol=1e-6), (f, np.abs(L(f) - L("r.npy")).max())
assert np.abs(L("fp.npy") - L("rp.npy")).max() < 0.05 * np.abs(L("rp.npy")).max()
PY

# 4. a batch dimension, the --stats file (row max, row sum), softmax scale
"$MF" attention "$T/qb.npy" "$T/kb.npy" "$T/vb.npy" "$T/ob.npy" --softmax-scale 0.3 --stats "$T/st.npy"
"$PY" - "$T" <<'PY'
import numpy as np, sys
sys.path.insert(0, sys.argv[1]); from model import scores, finish
t = sys.argv[1]
L = lambda n: np.load(f"{t}/{n}")
s = scores(L("qb.npy"), L("kb.npy"), False, 0.3)
m = s.max(-1, keepdims=True); pt = np.exp(s - m)
assert np.allclose(L("ob.npy"), finish(pt, pt, L("vb.npy")), rtol=2e-7, atol=1e-7)
st = L("st.npy")
assert st.shape == (2, 4, 3, 2)
assert np.allclose(st[..., 0], m[..., 0], rtol=1e-6) and np.allclose(st[..., 1], pt.sum(-1), rtol=1e-6)
PY

# 5. errors: exit 1 with the operand and the expected shape; exit 2 for a bad command line
"$PY" -c "import numpy as np; np.save('$T/k3.npy', np.zeros((3, 64, 40), np.float32)); np.save('$T/vbad.npy', np.zeros((2, 63, 24), np.float32))"
set +e
out=$("$MF" attention "$T/q.npy" "$T/k3.npy" "$T/v.npy" "$T/x.npy" 2>&1); rc=$?
[ $rc -eq 1 ] && echo "$out" | grep -q "V is (Hkv, Tk, dv)" || fail "Hkv mismatch: rc=$rc $out"
"$PY" -c "import numpy as np; np.save('$T/v3.npy', np.zeros((3, 64, 24), np.float32))"
out=$("$MF" attention "$T/q.npy" "$T/k3.npy" "$T/v3.npy" "$T/x.npy" 2>&1); rc=$?
[ $rc -eq 1 ] && echo "$out" | grep -q "not a multiple of Hkv = 3" || fail "GQA: rc=$rc $out"
out=$("$MF" attention "$T/q.npy" "$T/k.npy" "$T/vbad.npy" "$T/x.npy" 2>&1); rc=$?
[ $rc -eq 1 ] && echo "$out" | grep -q "expected Hkv = 2 and Tk = 64" || fail "Tk mismatch: rc=$rc $out"
out=$("$MF" attention "$T/q.npy" "$T/k.npy" "$T/v.npy" "$T/x.npy" --v-scheme mxfp8_e4m3 --path fast 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "along T" || fail "MX V along dv: rc=$rc $out"
out=$("$MF" attention "$T/q.npy" "$T/k.npy" "$T/v.npy" "$T/x.npy" --k-scheme nosuch/tensor 2>&1); rc=$?
[ $rc -eq 2 ] || fail "unknown scheme: rc=$rc $out"
out=$("$MF" attention "$T/q.npy" "$T/k.npy" "$T/v.npy" 2>&1); rc=$?
[ $rc -eq 2 ] || fail "missing OUT: rc=$rc"
out=$("$MF" attention "$T/q.npy" "$T/k.npy" "$T/v.npy" "$T/x.npy" --path slow 2>&1); rc=$?
[ $rc -eq 2 ] || fail "bad --path: rc=$rc"
out=$("$MF" attention "$T/q.npy" "$T/k.npy" "$T/v.npy" "$T/x.npy" --path fast --kernel tiles 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "expected automatic, amx, avx512, avx512_bf16, avx2 or scalar" || fail "bad --kernel: rc=$rc $out"
set -e
[ ! -e "$T/x.npy" ] || fail "a failed call wrote its output"
echo "attention.sh: all checks passed"
