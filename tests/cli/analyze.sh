#!/usr/bin/env bash
# End-to-end checks of `minifloat analyze` (issue 4): the table on the shipped PP-OCRv4 tensors,
# deterministic JSON, CSV and SVG outputs, an independent numpy check of two metrics, the 1:1
# mapping of scheme strings onto `minifloat quantize` options, safetensors input and clear errors.
# Usage: analyze.sh PATH/TO/minifloat   (run from tests/cli, as ctest does)
set -euo pipefail
MF="$1"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$HERE/../.."
DATA="$ROOT/data/ppocrv4"
FIX="$ROOT/tests/data/safetensors"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
PY=${PYTHON:-/usr/bin/python3}  # Debian python3-numpy lives there, not in a pyenv python
fail() { echo "FAIL: $*" >&2; exit 1; }

# --- the demo: table on stdout ----------------------------------------------------------------
"$MF" analyze "$DATA/weights" "$DATA/activations" --json "$T/a.json" --csv "$T/a.csv" --svg "$T/svg" > "$T/table.txt"
grep -q "^minifloat analyze: 24 tensors (924496 values) x 7 schemes" "$T/table.txt" || fail "summary line"
head -6 "$T/table.txt" > "$T/header.txt"  # (files, not pipes into grep -q: no SIGPIPE under pipefail)
for col in "hifloat8" "float8_e4m3fn" "mxfp8_e4m3" "mxfp8_e5m2" "mxfp4" "block128" "channel"; do
  grep -q -- "$col" "$T/header.txt" || fail "table header lacks $col"
done
grep -q "^median " "$T/table.txt" || fail "no median row"
grep -q "^worst " "$T/table.txt" || fail "no worst row"
grep -q "^rec.conv2d_106.w_0 " "$T/table.txt" || fail "no row for rec.conv2d_106.w_0"
grep -q "^line0.svtr0.q_scaled " "$T/table.txt" || fail "no row for line0.svtr0.q_scaled"
# conv2d_106 holds 46 % values below 2^-30: every 8-bit scheme flushes a large share of them.
grep "^rec.conv2d_106.w_0 " "$T/table.txt" > "$T/row.txt" || fail "no conv2d_106 row"
grep -q "46.34" "$T/row.txt" || fail "conv2d_106 zero-rate under hifloat8/tensor"

# --- deterministic JSON ---------------------------------------------------------------------------
"$MF" analyze "$DATA/weights" "$DATA/activations" --json "$T/b.json" --quiet > "$T/quiet.txt"
[ ! -s "$T/quiet.txt" ] || fail "--quiet printed something"
cmp -s "$T/a.json" "$T/b.json" || fail "JSON differs between two runs"

# --- JSON content, and an independent numpy check of E4M3 per tensor and MXFP8 -------------------
"$PY" - "$T/a.json" "$DATA" <<'PY'
import json, sys
import numpy as np
rep = json.load(open(sys.argv[1]))
data = sys.argv[2]
names = [s["name"] for s in rep["schemes"]]
assert names == ["hifloat8/tensor", "hifloat8/channel", "float8_e4m3fn/tensor", "mxfp8_e4m3", "mxfp8_e5m2",
                 "mxfp4", "float8_e4m3fn/block128"], names
assert len(rep["tensors"]) == 24
keys = {"sqnr_db", "mse", "max_abs_error", "max_rel_error", "zero_rate", "zero_count", "nonzero_count",
        "overflow_count", "underflow_count", "nan_count", "classes", "scaled_exponents"}
for t in rep["tensors"]:
    assert set(t["results"]) == set(names), t["name"]
    for r in t["results"].values():
        assert keys <= set(r), set(r)
        share = sum(c["share"] for c in r["classes"].values())
        assert r["nonzero_count"] == 0 or abs(share - 1) < 1e-12, share
    assert sum(t["exponents"].values()) + t["zeros"] + t["nonfinite"] == t["matrix"][0] * t["matrix"][1]
assert set(rep["summary"]) == set(names)

def e4m3(v):  # OCP E4M3 round-to-nearest-even, saturating, subnormals down to 2^-9
    a = np.abs(v).astype(np.float64)
    e = np.maximum(np.floor(np.log2(np.where(a > 0, a, 1.0))), -6)
    step = 2.0 ** (e - 3)
    return np.sign(v) * np.minimum(np.round(a / step) * step, 448.0)

def sqnr(x, q):
    x = x.astype(np.float64)
    return 10 * np.log10((x * x).sum() / ((x - q) ** 2).sum())

res = {t["name"]: t["results"] for t in rep["tensors"]}
for name, path in [("rec.linear_77.w_0", "weights"), ("line0.svtr0.fc2_in", "activations")]:
    x = np.load(f"{data}/{path}/{name}.npy")
    s = np.float32(np.abs(x).max()) / np.float32(448)           # the max rule, in float32
    q = (e4m3((x / s).astype(np.float32)) * np.float64(s)).astype(np.float32)
    got = res[name]["float8_e4m3fn/tensor"]["sqnr_db"]
    assert abs(sqnr(x, q) - got) < 1e-9, (name, sqnr(x, q), got)
    # MXFP8 E4M3, blocks of 32 along rows, floor rule: 2^(floor(log2 amax) - 8)
    qm = np.zeros(x.shape)
    for i in range(x.shape[0]):
        for b in range(0, x.shape[1], 32):
            blk = x[i, b:b + 32].astype(np.float64)
            amax = np.abs(blk).max()
            if amax > 0:
                sc = 2.0 ** (np.floor(np.log2(amax)) - 8)
                qm[i, b:b + 32] = e4m3(blk / sc) * sc
    got = res[name]["mxfp8_e4m3"]["sqnr_db"]
    assert abs(sqnr(x, qm) - got) < 1e-9, (name, sqnr(x, qm), got)
print("json ok")
PY

# --- CSV: header + 24 x 7 rows ----------------------------------------------------------------------
[[ "$(head -1 "$T/a.csv")" == tensor,file,tensor_name,dtype,shape,rows,cols,scheme,scheme_string,* ]] || fail "CSV header"
[ "$(tail -n +2 "$T/a.csv" | wc -l)" -eq 168 ] || fail "CSV should have 24 x 7 rows"

# --- SVG: every plot is well-formed XML (and renders, when rsvg-convert is installed) -----------
for f in sqnr zero_rate significand_bits precision_hifloat8_tensor precision_mxfp8_e4m3 precision_float8_e4m3fn_block128; do
  [ -s "$T/svg/$f.svg" ] || fail "missing $f.svg"
done
"$PY" -c "
import sys, glob, xml.etree.ElementTree as ET
files = glob.glob(sys.argv[1] + '/*.svg')
assert len(files) == 10, files
for f in files:
    root = ET.parse(f).getroot()
    assert root.tag == '{http://www.w3.org/2000/svg}svg', f
" "$T/svg"
if command -v rsvg-convert >/dev/null 2>&1; then
  rsvg-convert "$T/svg/sqnr.svg" -o "$T/sqnr.png" || fail "rsvg-convert sqnr.svg"
fi

# --- scheme strings map 1:1 onto quantize options: same SQNR from both commands -------------------
SCHEMES="hifloat8/tensor,hifloat8/channel/n-guard=9,float8_e4m3fn/block/block=1x128,mxfp8_e4m3/axis=0/scale-rule=rceil,float8_e5m2/token/scale-rule=pow2/target=12,mxfp4"
X="$DATA/weights/rec.linear_79.w_0.npy"
"$MF" analyze "$X" --schemes "$SCHEMES" --json "$T/s.json" --quiet
"$PY" - "$T/s.json" > "$T/opts.txt" <<'PY'
import json, sys
rep = json.load(open(sys.argv[1]))
res = rep["tensors"][0]["results"]
for s in rep["schemes"]:
    print(f'{res[s["name"]]["sqnr_db"]:.2f}|{s["quantize_options"]}')
PY
[ "$(wc -l < "$T/opts.txt")" -eq 6 ] || fail "six schemes expected"
while IFS='|' read -r want opts; do
  # shellcheck disable=SC2086  # the options are meant to split into words
  got=$("$MF" quantize "$X" "$T/q.npy" $opts | sed -E 's/.*SQNR ([-0-9.a-z]+) dB.*/\1/')
  [ "$got" = "$want" ] || fail "quantize $opts: SQNR $got, analyze says $want"
done < "$T/opts.txt"

# --- safetensors input: float tensors analysed, others skipped with a note ------------------------
"$MF" analyze "$FIX/good_mixed.safetensors" --schemes hifloat8/tensor > "$T/st.txt" 2> "$T/st.err"
for t in weight half brain double; do grep -q "^$t " "$T/st.txt" || fail "safetensors tensor $t not analysed"; done
grep -q "skipped .*ids (I64)" "$T/st.err" || fail "I64 tensor not reported as skipped"

# --- errors: exit 1 for bad files (message names the file), 2 for bad command lines --------------
expect() {  # expect CODE PATTERN -- command...
  local code="$1" pattern="$2"; shift 3
  local rc=0
  "$@" > "$T/out" 2> "$T/err" || rc=$?
  [ "$rc" -eq "$code" ] || fail "'$*' exited $rc, expected $code: $(cat "$T/err")"
  grep -q -- "$pattern" "$T/err" || fail "'$*' error lacks '$pattern': $(cat "$T/err")"
}
expect 1 "bad_overlap.safetensors.*overlap" -- "$MF" analyze "$FIX/bad_overlap.safetensors"
expect 1 "unknown dtype" -- "$MF" analyze "$FIX/bad_unknown_dtype.safetensors"
expect 1 "runs past the end" -- "$MF" analyze "$FIX/bad_truncated_header.safetensors"
expect 1 "bad_truncated_f4.npy" -- "$MF" analyze "$ROOT/tests/data/npy/bad_truncated_f4.npy"
expect 1 "unknown file type" -- "$MF" analyze "$FIX/make_fixtures.py"
expect 1 "no such file" -- "$MF" analyze "$T/nothing.npy"
expect 2 "unknown format or alias 'hifloat9'" -- "$MF" analyze "$X" --schemes hifloat9/tensor
expect 2 "axis= applies to granularity mx only" -- "$MF" analyze "$X" --schemes hifloat8/tensor/axis=0
expect 2 "twice" -- "$MF" analyze "$X" --schemes mxfp4,float4_e2m1fn/mx
expect 2 "empty entry" -- "$MF" analyze "$X" --schemes mxfp4,
expect 2 "at least one PATH" -- "$MF" analyze
expect 2 "unknown option --bogus" -- "$MF" analyze "$X" --bogus
"$MF" --help > "$T/help.txt"
grep -q "analyze PATH" "$T/help.txt" || fail "--help lacks analyze"
echo "analyze.sh: all checks passed"
