#!/usr/bin/env python3
"""Where a training step's GPU time goes, from Nsight Compute's per-kernel summary.

Take the summary of one step (no warm-up, so every kernel of the step is counted once):

    ncu --clock-control none --metrics gpu__time_duration.sum --csv --print-summary per-kernel \\
        build/bin/bench_train_throughput <shape flags> --device cuda --precision bf16 \\
        --steps 1 --warmup 0 > step.csv
    python3 bench/kernel_profile.py step.csv [--step-ms 309]

and this prints one row per family of kernels (launches, milliseconds, share of the kernel time):
cuBLAS's GEMMs split by whether they ran on the tensor cores (bf16/f16 operands) or on the CUDA
cores (fp32), and the course's own kernels by name. With --step-ms (the step's wall-clock time
from an unprofiled run) it also says how much of the step the kernels fill.
"""
import argparse
import csv
import re
import sys


def family(name: str) -> str:
    """The row a kernel is counted in."""
    if "nvjet" in name or re.search(r"gemm.*(bf16|f16|_h_)", name):
        return "GEMM, tensor cores (16-bit operands)"
    if "sgemm" in name or "f32f32" in name or "splitKreduce" in name:
        return "GEMM, CUDA cores (fp32; with cuBLAS's split-K reductions)"
    m = re.search(r"usp::(?:[\w<>]+::)*?(\w+_kernel)", name)
    if m:
        return m.group(1)
    return "other: " + name.split("(")[0][:60]


def read_summary(path: str):
    """Rows (kernel name, launches, mean ns) of an ncu --csv --print-summary per-kernel file."""
    with open(path, newline="") as f:
        lines = [l for l in f if l.startswith('"')]  # ncu's own messages are not CSV
    rows = list(csv.reader(lines))
    if not rows or "Kernel Name" not in rows[0]:
        sys.exit(f"kernel_profile: {path} is not an ncu per-kernel summary (--csv --print-summary per-kernel)")
    head = rows[0]
    name, calls, metric, mean = (head.index(k) for k in ("Kernel Name", "Invocations", "Metric Name", "Average"))
    out = []
    for r in rows[1:]:
        if r[metric] != "gpu__time_duration.sum":
            continue
        out.append((r[name], int(r[calls]), float(r[mean].replace(",", ""))))
    if not out:
        sys.exit(f"kernel_profile: {path} has no gpu__time_duration.sum rows (--metrics gpu__time_duration.sum)")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("summary", help="ncu --csv --print-summary per-kernel output")
    ap.add_argument("--step-ms", type=float, default=0.0, help="the step's wall-clock time, unprofiled")
    a = ap.parse_args()
    groups = {}
    for kname, calls, mean_ns in read_summary(a.summary):
        g = groups.setdefault(family(kname), [0, 0.0])
        g[0] += calls
        g[1] += calls * mean_ns / 1e6
    total = sum(ms for _, ms in groups.values())
    launches = sum(n for n, _ in groups.values())
    print("| kernels | launches | ms | share |")
    print("|---|---:|---:|---:|")
    for k, (n, ms) in sorted(groups.items(), key=lambda kv: -kv[1][1]):
        print(f"| {k} | {n:,} | {ms:.1f} | {100 * ms / total:.1f} % |")
    print(f"| all | {launches:,} | {total:.1f} | 100 % |")
    if a.step_ms > 0:
        print(f"kernel time {total:.1f} ms of a {a.step_ms:.1f} ms step ({100 * total / a.step_ms:.0f} %): "
              + ("the GPU is the limit" if total > 0.8 * a.step_ms else "the host leaves the GPU idle"))


if __name__ == "__main__":
    main()
