#!/usr/bin/env python3
"""Ratio tables for bench/README.md "## GEMM" from one or more bench_gemm (bench/gemm.cpp) JSON runs.

    build/bench/bench/gemm --benchmark_min_time=0.2 --benchmark_format=json > run1.json   # x3
    python3 bench/gemm_ratios.py run1.json run2.json run3.json
    python3 bench/gemm_ratios.py --cpu run1.json run2.json run3.json

Each run reports a "best" aggregate per case (fastest of its repetitions); the tables use the
median of those over the runs. Ratio = OpenBLAS time / our time (> 1: we are faster).
--cpu compares CPU time instead of wall time: on a shared machine a process that waits for a
core is not slower, so single-thread ratios taken under load are closer to the idle ones. It
only means something for 1 thread (Google Benchmark counts the main thread's CPU time only),
so the 2-thread columns are left out.
"""
import json
import re
import statistics
import sys

UNIT_MS = {"ms": 1.0, "us": 1e-3, "ns": 1e-6, "s": 1e3}


def best_times(path, column):
    with open(path) as f:
        run = json.load(f)
    out = {}
    for b in run["benchmarks"]:
        if b.get("aggregate_name") == "best":
            name = re.sub(r"/repeats:\d+.*$", "", b["run_name"])
            out[name] = b[column] * UNIT_MS[b["time_unit"]]
    return out


def main(paths):
    cpu = "--cpu" in paths
    paths = [p for p in paths if p != "--cpu"]
    runs = [best_times(p, "cpu_time" if cpu else "real_time") for p in paths]
    names = sorted(set().union(*runs))
    med = {n: statistics.median([r[n] for r in runs if n in r]) for n in names}

    def get(name):
        return med.get(name)

    print("| GEMM recipe | size | path | 1 thread ours / sgemm ms | ratio | 2 threads ours / sgemm ms | ratio | our 2-thread speed-up |")
    print("|---|---|---|---|---|---|---|---|")
    # gemm/ is the default path; gemm_avx2/, gemm_avx512_fp32/, gemm_bf16/ the same call pinned
    # to one kernel (bench/gemm.cpp).
    families = sorted({n.split("/")[0] for n in names if n.startswith("gemm")},
                      key=lambda f: (f != "gemm", f))
    recipes = sorted({n.split("/")[1] for n in names if n.startswith("gemm")})
    for rcp in recipes:
        for size in (512, 1024, 2048):
            for fam in families:
                o1, o2 = get(f"{fam}/{rcp}/size:{size}/threads:1"), get(f"{fam}/{rcp}/size:{size}/threads:2")
                s1, s2 = get(f"sgemm/size:{size}/threads:1"), get(f"sgemm/size:{size}/threads:2")
                if None in (o1, o2, s1, s2):
                    continue
                two = "- | - | -" if cpu else f"{o2:.2f} / {s2:.2f} | **{s2 / o2:.2f}** | {o1 / o2:.2f}x"
                print(f"| {rcp} | {size} | {fam} | {o1:.2f} / {s1:.2f} | **{s1 / o1:.2f}** | {two} |")
    print()
    print("| GEMV 1 x 4096 x N | N | path | 1 thread ours / sgemv ms | ratio | 2 threads ours / sgemv ms | ratio |")
    print("|---|---|---|---|---|---|---|")
    gemv = sorted({(n.split("/")[0], n.split("/")[1]) for n in names if n.startswith("gemv")})
    for family, rcp in gemv:
        for n in (4096, 11008):
            o1, o2 = get(f"{family}/{rcp}/N:{n}/threads:1"), get(f"{family}/{rcp}/N:{n}/threads:2")
            s1, s2 = get(f"sgemv/N:{n}/threads:1"), get(f"sgemv/N:{n}/threads:2")
            if None in (o1, o2, s1, s2):
                continue
            two = "- | -" if cpu else f"{o2:.3f} / {s2:.3f} | **{s2 / o2:.2f}**"
            print(f"| {rcp} | {n} | {family} | {o1:.3f} / {s1:.3f} | **{s1 / o1:.2f}** | {two} |")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
