#!/usr/bin/env python3
"""Chapter 11: GFLOP/s of each matmul rung against cuBLAS, measured in the same run.

Reads <in>/kernels.csv (written by ch11_gpu_primer: kernel,M,N,K,time_ms,gflops,pct_of_cublas,
max_abs_err, then precision,worst_err_over_tol,verified) and writes <out>/ch11_kernels.png:
  left   GFLOP/s against the matrix size, one line per rung, cuBLAS dashed in black (fp32) and
         grey (bf16); a rung whose output was wrong is drawn with hollow markers
  right  % of cuBLAS of the same precision at the largest size: the ladder, rung by rung

    python3 plots/ch11_kernels.py --in out/11_gpu_primer --out plots/out
"""
import csv
import json
import os
import sys

from figure_io import distinct, parse_args, plt, save  # noqa: E402

REQUIRED = ["kernel", "M", "N", "K", "time_ms", "gflops", "pct_of_cublas", "max_abs_err"]
BASELINES = {"cublas_sgemm": "black", "cublas_bf16": "grey"}


def read_rows(path):
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        sys.exit(f"{path}: {e.strerror} (run the chapter first: ./usp run 11)")
    if not rows:
        sys.exit(f"{path}: no rows")
    missing = [c for c in REQUIRED if c not in rows[0]]
    if missing:
        sys.exit(f"{path}: missing the columns {','.join(missing)}")
    for r in rows:
        for c in ("M", "N", "K"):
            r[c] = int(r[c])
        for c in ("time_ms", "gflops", "pct_of_cublas", "max_abs_err"):
            r[c] = float(r[c])
        r["verified"] = r.get("verified", "1") not in ("0", "false", "False")
    return rows


def device_name(in_dir):
    try:
        with open(os.path.join(in_dir, "summary.json")) as f:
            return json.load(f).get("device")
    except (OSError, ValueError):
        return None


def main():
    args = parse_args(__doc__, "out/11_gpu_primer", "folder with kernels.csv")

    rows = read_rows(os.path.join(args.inp, "kernels.csv"))
    kernels = distinct(rows, "kernel")  # in the order of the CSV: the ladder's order
    rungs = [k for k in kernels if k not in BASELINES]
    colours = plt.get_cmap("viridis")

    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 5.2), gridspec_kw={"width_ratios": [3, 2]})
    for i, kernel in enumerate(kernels):
        points = sorted((r["M"], r["gflops"], r["verified"]) for r in rows if r["kernel"] == kernel)
        x = [p[0] for p in points]
        y = [p[1] for p in points]
        if kernel in BASELINES:
            style = dict(color=BASELINES[kernel], ls="--", lw=2, marker="s", ms=4)
        else:
            style = dict(color=colours(rungs.index(kernel) / max(1, len(rungs) - 1)), marker="o", ms=4)
        left.plot(x, y, label=kernel, **style)
        wrong = [(p[0], p[1]) for p in points if not p[2]]
        if wrong:
            left.plot([w[0] for w in wrong], [w[1] for w in wrong], ls="none", marker="o", ms=9, mfc="none",
                      mec="red", label=f"{kernel}: WRONG output")
    left.set_xscale("log", base=2)
    left.set_yscale("log")
    left.set_xlabel("matrix size (M = N = K)")
    left.set_ylabel("GFLOP/s (2·M·N·K / time)")
    left.set_title("Throughput per rung")
    left.grid(True, which="both", alpha=0.3)
    left.legend(fontsize=7, loc="lower right")

    largest = max(r["M"] for r in rows)
    at_largest = {r["kernel"]: r for r in rows if r["M"] == largest}
    names = [k for k in rungs if k in at_largest]
    pct = [at_largest[k]["pct_of_cublas"] for k in names]
    bars = right.barh(range(len(names)), pct,
                      color=[colours(rungs.index(k) / max(1, len(rungs) - 1)) for k in names])
    for bar, k, p in zip(bars, names, pct):
        note = "" if at_largest[k]["verified"] else "  WRONG"
        right.text(bar.get_width(), bar.get_y() + bar.get_height() / 2, f" {p:.1f}%{note}", va="center", fontsize=8)
    right.set_yticks(range(len(names)))
    right.set_yticklabels(names, fontsize=8)
    right.invert_yaxis()
    right.axvline(100, color="black", ls="--", lw=1)
    right.set_xlim(0, max([110.0] + [p * 1.25 for p in pct]))
    right.set_xlabel("% of cuBLAS of the same precision")
    right.set_title(f"At {largest}×{largest}×{largest}")

    device = device_name(args.inp)
    fig.suptitle("Matmul ladder vs cuBLAS" + (f" — {device}" if device else ""))
    save(fig, args.out, "ch11_kernels.png")


if __name__ == "__main__":
    main()
