#!/usr/bin/env bash
# The main demo: build the CLI, print the HiF8 code table, then quantize real PP-OCRv4 tensors
# (shipped in data/ppocrv4) under several schemes and report their fidelity.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/install-deps.sh >/dev/null
cmake --preset release >/dev/null
cmake --build --preset release -j"${JOBS:-2}" --target minifloat_cli >/dev/null

MINIFLOAT=build/release/tools/minifloat
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

echo "\$ minifloat table hifloat8      # every code: value and class"
"$MINIFLOAT" table hifloat8

W=data/ppocrv4/weights/rec.linear_77.w_0.npy   # SVTR block 0 attention qkv weight, 120x360
echo
echo "\$ minifloat quantize $W ... # one real weight under several schemes"
for scheme in "hifloat8 tensor" "hifloat8 channel" "float8_e4m3fn tensor" "float8_e4m3fn block" \
              "float8_e4m3fn mx" "float8_e5m2 mx" "float4_e2m1fn mx"; do
  set -- $scheme
  "$MINIFLOAT" quantize "$W" "$TMP/out.npy" --format "$1" --granularity "$2"
done

echo
echo "\$ minifloat analyze data/ppocrv4/weights data/ppocrv4/activations   # every shipped tensor, 7 schemes"
"$MINIFLOAT" analyze data/ppocrv4/weights data/ppocrv4/activations
