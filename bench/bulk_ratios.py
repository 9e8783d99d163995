#!/usr/bin/env python3
"""Ratio table of bench_bulk_codecs (bench/bulk_codecs.cpp) from its JSON output (bench/README.md explains the targets).

    build/bench/bench/bulk_codecs --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
        --benchmark_format=json > bulk.json
    python3 bench/bulk_ratios.py bulk.json [more.json ...]

Each input file is one run of the binary; items/s is the median over its repetitions. With several
files, every ratio is computed per run and the median ratio over the runs is printed.

    python3 bench/bulk_ratios.py --compare old1.json old2.json old3.json -- new1.json new2.json new3.json

prints, for every row present in both sets, the median items/s over the runs of each set and
new / old (e.g. the main branch's binary against this one, run alternately in one session).
A leading --cpu (either mode) uses items per second of CPU time instead of real time: on a
machine shared with other jobs, time slicing inflates real time (single-thread rows only).
"""
import json
import statistics
import sys

K64, M64 = 65536, 67108864


CPU = False  # --cpu: items per second of CPU time (time-slicing on a loaded machine inflates real time)


def load(path):
    with open(path) as f:
        data = json.load(f)
    rates = {}
    for b in data["benchmarks"]:
        if b.get("aggregate_name", "median") != "median" or b.get("error_occurred") or "items_per_second" not in b:
            continue
        name = b["run_name"] if "run_name" in b else b["name"]
        name = name.replace("/real_time", "")
        rate = b["items_per_second"]
        if CPU:
            if "threads:" in name or not b.get("cpu_time"):
                continue  # the CPU time of the main thread alone says nothing about a split call
            rate *= b["real_time"] / b["cpu_time"]
        rates[name] = rate
    return rates


def find(rates, prefix, n, extra=""):
    key = f"{prefix}/{n}{extra}"
    return rates.get(key)


def rows(rates):
    """(label, value, baseline, target) tuples for one run."""
    out = []
    s64k, s64m = find(rates, "baseline/stream_f32_to_u8", K64), find(rates, "baseline/stream_f32_to_u8", M64)
    d64k, d64m = find(rates, "baseline/stream_u8_to_f32", K64), find(rates, "baseline/stream_u8_to_f32", M64)
    p64k, p64m = find(rates, "baseline/plain_f32_to_u8", K64), find(rates, "baseline/plain_f32_to_u8", M64)
    q64k, q64m = find(rates, "baseline/plain_u8_to_f32", K64), find(rates, "baseline/plain_u8_to_f32", M64)
    fmts8 = ["hifloat8", "float8_e4m3fn", "float8_e5m2", "float6_e3m2fn", "float6_e2m3fn", "float4_e2m1fn",
             "float8_e8m0fnu"]
    for f in fmts8 + ["bfloat16", "float16"]:
        e64k, e64m = find(rates, f"encode/{f}/simd", K64), find(rates, f"encode/{f}/simd", M64)
        sc = find(rates, f"encode/{f}/scalar", K64)
        tgt = 0.25 if f in ("float8_e4m3fn", "float8_e5m2") else 0.15 if f == "hifloat8" else None
        out.append((f"encode {f} / stream f32->u8, 64K", e64k, s64k, tgt))
        out.append((f"encode {f} / stream f32->u8, 64M", e64m, s64m, 0.75))
        out.append((f"encode {f} / plain (SSE2) stream f32->u8, 64K", e64k, p64k, tgt))
        out.append((f"encode {f} / scalar reference, 64K", e64k, sc, 25.0))
        t2 = find(rates, f"encode/{f}/simd/threads:2", M64, "/2")
        if t2 is not None:
            out.append((f"encode {f} 2 threads / stream f32->u8 1 thread, 64M", t2, s64m, 0.9))
    for f in fmts8 + ["bfloat16", "float16"]:
        out.append((f"decode {f} / stream u8->f32, 64K", find(rates, f"decode/{f}/simd", K64), d64k,
                    0.4 if f in fmts8 else None))
        out.append((f"decode {f} / stream u8->f32, 64M", find(rates, f"decode/{f}/simd", M64), d64m,
                    0.85 if f in fmts8 else None))
        out.append((f"decode {f} / plain (SSE2) stream u8->f32, 64K", find(rates, f"decode/{f}/simd", K64), q64k,
                    0.4 if f in fmts8 else None))
    # The AVX-512 path (issue 18 targets) and the AVX2 path, each against the same run's streams.
    for path in ("avx512", "avx2"):
        for f in fmts8 + ["bfloat16", "float16"]:
            tgt = None
            if path == "avx512":
                tgt = 0.40 if f in ("float8_e4m3fn", "float8_e5m2") else 0.25 if f == "hifloat8" else None
            out.append((f"encode {f} {path} / stream f32->u8, 64K", find(rates, f"encode/{f}/{path}", K64), s64k, tgt))
            out.append((f"encode {f} {path} / stream f32->u8, 64M", find(rates, f"encode/{f}/{path}", M64), s64m,
                        0.9 if path == "avx512" and f in fmts8 else None))
        for f in fmts8 + ["bfloat16", "float16"]:
            is8 = path == "avx512" and f in fmts8
            out.append((f"decode {f} {path} / stream u8->f32, 64K", find(rates, f"decode/{f}/{path}", K64), d64k,
                        0.55 if is8 else None))
            out.append((f"decode {f} {path} / stream u8->f32, 64M", find(rates, f"decode/{f}/{path}", M64), d64m,
                        0.9 if is8 else None))
    for f in ["float8_e4m3fn", "float4_e2m1fn"]:
        out.append((f"mx_quantize {f} / stream f32->u8, 64K", find(rates, f"mx_quantize/{f}/simd", K64), s64k, 0.12))
        out.append((f"mx_quantize {f} / stream f32->u8, 64M", find(rates, f"mx_quantize/{f}/simd", M64), s64m, 0.6))
        out.append((f"mx_quantize {f} / plain (SSE2) stream f32->u8, 64K", find(rates, f"mx_quantize/{f}/simd", K64), p64k,
                    0.12))
    # MX on each ISA path (issue 18: AVX-512 MX quantize >= 0.20 at 64K, >= 0.9 at 64M).
    for path in ("avx512", "avx2"):
        for f in ["float8_e4m3fn", "float4_e2m1fn"]:
            q = f"mx_quantize/{f}/{path}"
            out.append((f"mx_quantize {f} {path} / stream f32->u8, 64K", find(rates, q, K64), s64k,
                        0.20 if path == "avx512" else None))
            out.append((f"mx_quantize {f} {path} / stream f32->u8, 64M", find(rates, q, M64), s64m,
                        0.9 if path == "avx512" else None))
            d = f"mx_dequantize/{f}/{path}"
            out.append((f"mx_dequantize {f} {path} / stream u8->f32, 64K", find(rates, d, K64), d64k, None))
            out.append((f"mx_dequantize {f} {path} / stream u8->f32, 64M", find(rates, d, M64), d64m, None))
        for tile in ("col32", "square32"):
            out.append((f"mx_quantize float8_e4m3fn {tile} {path} / stream f32->u8, 64K",
                        find(rates, f"mx_quantize/float8_e4m3fn/{tile}/{path}", K64), s64k, None))
    return out


def compare(old_paths, new_paths):
    old = [load(p) for p in old_paths]
    new = [load(p) for p in new_paths]
    names = [n for n in old[0] if all(n in r for r in old + new)]
    print("| row | old items/s (median) | new items/s (median) | new / old |")
    print("|---|---|---|---|")
    for n in names:
        o = statistics.median(r[n] for r in old)
        w = statistics.median(r[n] for r in new)
        print(f"| {n} | {o / 1e9:.3g} G | {w / 1e9:.3g} G | {w / o:.3f} |")


def main(paths):
    global CPU
    if paths and paths[0] == "--cpu":
        CPU, paths = True, paths[1:]
    if paths and paths[0] == "--compare":
        sep = paths.index("--")
        compare(paths[1:sep], paths[sep + 1:])
        return
    runs = [rows(load(p)) for p in paths]
    print("| ratio | median | target | met |")
    print("|---|---|---|---|")
    for i, (label, _, _, tgt) in enumerate(runs[0]):
        vals = [r[i][1] / r[i][2] for r in runs if r[i][1] and r[i][2]]
        if not vals:
            continue
        med = statistics.median(vals)
        met = "" if tgt is None else ("yes" if med >= tgt else "**no**")
        t = "" if tgt is None else f">= {tgt:g}"
        print(f"| {label} | {med:.3g} | {t} | {met} |")


if __name__ == "__main__":
    main(sys.argv[1:])
