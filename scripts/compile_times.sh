#!/usr/bin/env bash
# Syntax-only compile time of the public headers (g++ -std=c++20 -fsyntax-only), next to a
# baseline TU of <vector> <string> <span> <algorithm> measured in the same run, in both modes
# of core/config.hpp: header-only (the default) and compiled kernels (-DMINIFLOAT_EXTERN_KERNELS=1,
# what a target linking minifloat::kernels compiles). Prints Markdown for docs/compile_times.md:
#   1. the budget line: a TU with <minifloat/gemm/gemm.hpp> and <minifloat/quant/quantized_tensor.hpp>
#      (the target: at most 3x the baseline with compiled kernels); exit status 1 when it is over
#   2. every public header alone, both modes (skipped with --budget-only)
# Median of N runs (default 3). Usage: bash scripts/compile_times.sh [--budget-only] [runs] [compiler]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
budget_only=0
if [ "${1:-}" = "--budget-only" ]; then budget_only=1; shift; fi
runs="${1:-3}"
cxx="${2:-g++}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
measure() {  # measure <tu> [flags...] -> median seconds
  local tu="$1" i
  shift
  for ((i = 0; i < runs; ++i)); do
    if ! /usr/bin/time -f "%e" -o "$tmp/t" "$cxx" -std=c++20 -fsyntax-only -Iinclude "$@" "$tu" >/dev/null 2>"$tmp/err"; then
      echo "compile_times.sh: $tu $* does not compile:" >&2
      cat "$tmp/err" >&2
      exit 2
    fi
    tail -n 1 "$tmp/t"
  done | median
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }

printf '#include <vector>\n#include <string>\n#include <span>\n#include <algorithm>\n' > "$tmp/baseline.cpp"
base=$(measure "$tmp/baseline.cpp")
printf '#include <minifloat/gemm/gemm.hpp>\n#include <minifloat/quant/quantized_tensor.hpp>\n' > "$tmp/budget.cpp"
budget_ho=$(measure "$tmp/budget.cpp")
budget_ck=$(measure "$tmp/budget.cpp" -DMINIFLOAT_EXTERN_KERNELS=1)
budget_ratio=$(ratio "$budget_ck" "$base")
echo "| translation unit | header-only s | x baseline | compiled kernels s | x baseline |"
echo "|---|---|---|---|---|"
echo "| \`<vector>\` \`<string>\` \`<span>\` \`<algorithm>\` (baseline) | $base | 1.00 | $base | 1.00 |"
echo "| \`gemm/gemm.hpp\` + \`quant/quantized_tensor.hpp\` (budget: 3x) | $budget_ho | $(ratio "$budget_ho" "$base") | $budget_ck | $budget_ratio |"
if [ "$budget_only" -eq 0 ]; then
  while IFS= read -r h; do
    rel="${h#include/}"
    # fmt, CANN and MPI are optional; lanes/ holds fragments that only the ISA headers include
    case "$rel" in minifloat/fmt.hpp|minifloat/backend/ascend/*|minifloat/comm/mpi.hpp|minifloat/simd/lanes/*) continue ;; esac
    printf '#include <%s>\n' "$rel" > "$tmp/tu.cpp"
    t=$(measure "$tmp/tu.cpp")
    k=$(measure "$tmp/tu.cpp" -DMINIFLOAT_EXTERN_KERNELS=1)
    echo "| \`$rel\` | $t | $(ratio "$t" "$base") | $k | $(ratio "$k" "$base") |"
  done < <(find include/minifloat -name '*.hpp' | sort)
fi
awk -v r="$budget_ratio" 'BEGIN {exit !(r <= 3.0)}' || {
  echo "compile_times.sh: the compiled-kernels budget TU costs ${budget_ratio}x the baseline (limit 3x)" >&2
  exit 1
}
