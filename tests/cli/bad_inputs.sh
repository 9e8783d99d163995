#!/usr/bin/env bash
# The bad-input catalogue (docs/errors.md): every case's exit code and message, and no crash,
# hang, data loss or silent garbage anywhere. The table and the checks: bad_inputs.py.
# Usage: bad_inputs.sh PATH/TO/minifloat
set -euo pipefail
PY=${PYTHON:-/usr/bin/python3}  # Debian python3-numpy lives there, not in a pyenv python
exec "$PY" "$(dirname "${BASH_SOURCE[0]}")/bad_inputs.py" "$1"
