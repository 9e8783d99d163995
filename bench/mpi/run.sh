#!/usr/bin/env bash
# The all-reduce benchmark on 2 and 4 ranks of this machine (4 oversubscribes a 2-core VM).
#   bash bench/mpi/run.sh [build dir, default build/bench] [extra args, e.g. --sizes 1M,4M --reps 3]
# Builds bench_mpi_allreduce if needed, prints the uptime (load) before each run, then the tables.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
build="${1:-build/bench}"
shift || true
if [ ! -f "$build/CMakeCache.txt" ]; then cmake --preset bench >/dev/null; fi
cmake --build "$build" --target bench_mpi_allreduce -j"${JOBS:-2}" >/dev/null
bin="$build/bench/mpi/mpi_allreduce"
# Open MPI: running as root and oversubscribing are intended here (ignored by other MPIs).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
for ranks in 2 4; do
  echo "== $ranks ranks; $(uptime)"
  # more ranks than cores: idle ranks must yield, or their busy polling starves the others
  if [ "$ranks" -gt "$(nproc)" ]; then export OMPI_MCA_mpi_yield_when_idle=1; fi
  mpiexec -n "$ranks" "$bin" "$@"
  echo
done
