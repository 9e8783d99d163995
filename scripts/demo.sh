#!/usr/bin/env bash
# Small demo of the minifloat CLI; extend freely.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release -j"${JOBS:-2}" --target minifloat_cli

MINIFLOAT=build/release/tools/minifloat

echo "\$ minifloat table hifloat8"
"$MINIFLOAT" table hifloat8
