#!/usr/bin/env bash
# Syntax-only compile time of every public header (g++ -std=c++20 -fsyntax-only, one TU that
# includes just that header), next to a baseline TU of <vector> <string> <span> <algorithm>
# measured in the same run. Prints a Markdown table (median of N runs, default 3) for
# docs/compile_times.md. Usage: bash scripts/compile_times.sh [runs] [compiler]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
runs="${1:-3}"
cxx="${2:-g++}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
measure() {  # measure <tu> -> median seconds
  local tu="$1" i t
  for ((i = 0; i < runs; ++i)); do
    /usr/bin/time -f "%e" -o "$tmp/t" "$cxx" -std=c++20 -fsyntax-only -Iinclude "$tu" >/dev/null 2>&1
    tail -n 1 "$tmp/t"
  done | median
}

printf '#include <vector>\n#include <string>\n#include <span>\n#include <algorithm>\n' > "$tmp/baseline.cpp"
base=$(measure "$tmp/baseline.cpp")
echo "| header | seconds | x baseline |"
echo "|---|---|---|"
echo "| \`<vector>\` \`<string>\` \`<span>\` \`<algorithm>\` (baseline) | $base | 1.00 |"
while IFS= read -r h; do
  rel="${h#include/}"
  case "$rel" in minifloat/fmt.hpp|minifloat/backend/ascend/*) continue ;; esac  # need fmt / CANN
  printf '#include <%s>\n' "$rel" > "$tmp/tu.cpp"
  t=$(measure "$tmp/tu.cpp")
  echo "| \`$rel\` | $t | $(awk -v a="$t" -v b="$base" 'BEGIN {printf "%.2f", a / b}') |"
done < <(find include/minifloat -name '*.hpp' | sort)
