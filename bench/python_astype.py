#!/usr/bin/env python3
"""astype throughput of the minifloat dtypes next to numpy's own float32 <-> float16 astype, in the
same run (the issue 17 targets: float32 -> float8_e4m3fn >= 5x numpy's float32 -> float16, and
decode likewise, at 64 Ki and 16 Mi elements).

    PYTHONPATH=build/release/python /usr/bin/python3 bench/python_astype.py [--repeats 3] [--threads N] [--formats all]

Prints one line per (size, conversion): G elements/s (median over repeats of the best of
`inner` timed loops) and the ratio to numpy's float16 conversion in the same direction. With
ml_dtypes importable it is measured too. Note the machine load (uptime) next to the numbers.
"""
import argparse
import os
import statistics
import time

import numpy as np

import minifloat as mf

try:
    import ml_dtypes  # noqa: F401  (not in Debian; measured when present)
except ImportError:
    ml_dtypes = None


def rate(fn, n, inner):
    fn()  # warm up (page faults of the first output, thread pool start)
    best = float("inf")
    for _ in range(inner):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return n / best / 1e9


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3, help="runs; the median is printed (default 3)")
    ap.add_argument("--threads", type=int, default=0, help="minifloat.set_num_threads (0: all hardware threads)")
    ap.add_argument("--formats", default="float8_e4m3fn,hifloat8,float8_e5m2,float4_e2m1fn",
                    help="comma-separated dtype names, or 'all' (every minifloat dtype)")
    args = ap.parse_args()
    mf.set_num_threads(args.threads)
    print("minifloat %s, isa %s, threads %d, numpy %s, load %s" % (
        mf.__version__, mf.simd_isa(), mf.get_num_threads(), np.__version__,
        " ".join("%.2f" % v for v in os.getloadavg())))
    rng = np.random.default_rng(0)
    for n, inner in ((1 << 16, 200), (1 << 24, 5)):
        x = rng.standard_normal(n).astype(np.float32)
        h = x.astype(np.float16)
        cases = [("numpy float32->float16", lambda: x.astype(np.float16), "enc"),
                 ("numpy float16->float32", lambda: h.astype(np.float32), "dec")]
        names = [f for f in mf.formats if f != "float16"] if args.formats == "all" else args.formats.split(",")
        for name in names:
            y = x.astype(name)
            cases.append(("minifloat float32->%s" % name, (lambda name=name: x.astype(name)), "enc"))
            cases.append(("minifloat %s->float32" % name, (lambda y=y: y.astype(np.float32)), "dec"))
        if ml_dtypes is not None:
            e = x.astype(ml_dtypes.float8_e4m3fn)
            cases.append(("ml_dtypes float32->float8_e4m3fn", lambda: x.astype(ml_dtypes.float8_e4m3fn), "enc"))
            cases.append(("ml_dtypes float8_e4m3fn->float32", lambda: e.astype(np.float32), "dec"))
        results = {label: [] for label, _, _ in cases}
        for _ in range(args.repeats):
            for label, fn, _ in cases:
                results[label].append(rate(fn, n, inner))
        base = {"enc": statistics.median(results["numpy float32->float16"]),
                "dec": statistics.median(results["numpy float16->float32"])}
        print("\n%d elements" % n)
        for label, _, kind in cases:
            g = statistics.median(results[label])
            print("  %-40s %7.3f G/s   x%5.1f numpy float16" % (label, g, g / base[kind]))


if __name__ == "__main__":
    main()
