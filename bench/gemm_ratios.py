#!/usr/bin/env python3
"""Ratio tables for bench/README.md "## GEMM" from one or more bench_gemm (bench/gemm.cpp) JSON runs.

    build/bench/bench/gemm --benchmark_min_time=0.2 --benchmark_format=json > run1.json   # x3
    python3 bench/gemm_ratios.py run1.json run2.json run3.json
    python3 bench/gemm_ratios.py --cpu run1.json run2.json run3.json

Each run reports a "best" aggregate per case (fastest of its repetitions); the tables use the
median of those over the runs. Ratio = OpenBLAS time / our time (> 1: we are faster).
The baseline is the `sgemm_tuned` / `sgemv_tuned` rows where the runs have them (the default
OpenBLAS core was a generic fallback and the bench ran a tuned copy beside it, see
bench/openblas_baseline.hpp), else `sgemm` / `sgemv`; the first lines name the core of each run
and the measured fp32 FMA peak of one core, and the GEMM table gives each 1-thread row's share
of that peak.
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
    out, peak = {}, None
    for b in run["benchmarks"]:
        if b.get("aggregate_name") == "best":
            name = re.sub(r"/repeats:\d+.*$", "", b["run_name"])
            out[name] = b[column] * UNIT_MS[b["time_unit"]]
            peak = b.get("fma_peak_gflops", peak)
    ctx = run.get("context", {})
    return out, (ctx.get("openblas_core", "?"), ctx.get("openblas_baseline", "(not recorded)")), peak


def main(paths):
    cpu = "--cpu" in paths
    paths = [p for p in paths if p != "--cpu"]
    loaded = [best_times(p, "cpu_time" if cpu else "real_time") for p in paths]
    runs = [r for r, _, _ in loaded]
    for p, (_, (core, note), peak) in zip(paths, loaded):
        print(f"{p}: OpenBLAS core {core}; fp32 FMA peak of one core {peak if peak is None else round(peak, 1)} GFLOP/s; {note}")
    peaks = [pk for _, _, pk in loaded if pk]
    peak = statistics.median(peaks) if peaks else None
    names = sorted(set().union(*runs))
    med = {n: statistics.median([r[n] for r in runs if n in r]) for n in names}
    sgemm = "sgemm_tuned" if any(n.startswith("sgemm_tuned/") for n in names) else "sgemm"
    sgemv = "sgemv_tuned" if any(n.startswith("sgemv_tuned/") for n in names) else "sgemv"
    print(f"baseline rows: {sgemm}/, {sgemv}/" + (f"; median FMA peak {peak:.1f} GFLOP/s" if peak else ""))
    print()

    def get(name):
        return med.get(name)

    def share(ms, size):  # the 1-thread row's GFLOP/s as a fraction of the one-core peak
        return f"{2.0 * size**3 / (ms * 1e-3) * 1e-9 / peak:.2f}" if peak else "-"

    print(f"| GEMM recipe | size | path | 1 thread ours / {sgemm} ms | ratio | ours / {sgemm} of FMA peak | 2 threads ours / {sgemm} ms | ratio | our 2-thread speed-up |")
    print("|---|---|---|---|---|---|---|---|---|")
    # gemm/ is the default path; gemm_avx2/, gemm_avx512_fp32/, gemm_bf16/ the same call pinned
    # to one kernel (bench/gemm.cpp).
    families = sorted({n.split("/")[0] for n in names if n.startswith("gemm")},
                      key=lambda f: (f != "gemm", f))
    recipes = sorted({n.split("/")[1] for n in names if n.startswith("gemm")})
    for rcp in recipes:
        for size in (512, 1024, 2048):
            for fam in families:
                o1, o2 = get(f"{fam}/{rcp}/size:{size}/threads:1"), get(f"{fam}/{rcp}/size:{size}/threads:2")
                s1, s2 = get(f"{sgemm}/size:{size}/threads:1"), get(f"{sgemm}/size:{size}/threads:2")
                if None in (o1, s1):
                    continue
                two = "- | - | -" if cpu or None in (o2, s2) else f"{o2:.2f} / {s2:.2f} | **{s2 / o2:.2f}** | {o1 / o2:.2f}x"
                print(f"| {rcp} | {size} | {fam} | {o1:.2f} / {s1:.2f} | **{s1 / o1:.2f}** | {share(o1, size)} / {share(s1, size)} | {two} |")
    print()
    print(f"| GEMV 1 x 4096 x N | N | path | 1 thread ours / {sgemv} ms | ratio | 2 threads ours / {sgemv} ms | ratio |")
    print("|---|---|---|---|---|---|---|")
    gemv = sorted({(n.split("/")[0], n.split("/")[1]) for n in names if n.startswith("gemv")})
    for family, rcp in gemv:
        for n in (4096, 11008):
            o1, o2 = get(f"{family}/{rcp}/N:{n}/threads:1"), get(f"{family}/{rcp}/N:{n}/threads:2")
            s1, s2 = get(f"{sgemv}/N:{n}/threads:1"), get(f"{sgemv}/N:{n}/threads:2")
            if None in (o1, s1):
                continue
            two = "- | -" if cpu or None in (o2, s2) else f"{o2:.3f} / {s2:.3f} | **{s2 / o2:.2f}**"
            print(f"| {rcp} | {n} | {family} | {o1:.3f} / {s1:.3f} | **{s1 / o1:.2f}** | {two} |")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
