#!/usr/bin/env python3
"""Chapter 03: peak activation memory of k accumulated micro-batches vs one big batch.

Reads <in>/accumulation.csv (written by ch03_grad_accumulation: for each k, one step on k
micro-batches of b samples and one on a single batch of k·b samples, from the same weights)
and writes <out>/ch03_accumulation.png: the peak activation memory of both against the global
batch size. The big batch grows linearly; accumulation stays at one micro-batch's peak. The
title reports the largest parameter difference after the step (fp32 rounding only).

    python3 plots/ch03_accumulation.py --in out/03_grad_accumulation --out plots/out
"""
import csv
import os
import sys

from figure_io import parse_args, plt, save  # noqa: E402


def main():
    args = parse_args(__doc__, "out/03_grad_accumulation", "folder with accumulation.csv")
    path = os.path.join(args.inp, "accumulation.csv")
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    needed = ["k", "global_batch", "peak_activation_accumulated", "peak_activation_big", "max_param_diff_conditioned"]
    if not rows or any(c not in rows[0] for c in needed):
        sys.exit(f"{path}: expected the columns {','.join(needed)}")
    batch = [int(r["global_batch"]) for r in rows]
    acc = [int(r["peak_activation_accumulated"]) / 2**20 for r in rows]
    big = [int(r["peak_activation_big"]) / 2**20 for r in rows]
    worst = max(float(r["max_param_diff_conditioned"]) for r in rows)

    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.plot(batch, big, "o-", color="tab:red", label="one batch of k·b samples")
    ax.plot(batch, acc, "s-", color="tab:blue", label="k micro-batches of b (accumulated)")
    for b, k in zip(batch, [r["k"] for r in rows]):
        ax.annotate(f"k={k}", (b, 0), textcoords="offset points", xytext=(0, 4), ha="center", fontsize=8)
    ax.set_xlabel("global batch (samples)")
    ax.set_ylabel("peak activation memory (MiB)")
    # Two lines, so the title fits the figure's width.
    ax.set_title(f"Gradient accumulation: the same update, flat memory\n"
                 f"max |Δw| = {worst:.1e} where |g| ≥ 1e-3·max|g|", fontsize=10)
    # Linear axes on both sides: the big batch's peak grows linearly with the batch, and reads
    # as a straight line (a log x-axis would bend it into an exponential-looking curve).
    ax.set_xlim(left=0)
    ax.set_xticks(batch)
    ax.set_ylim(bottom=0)
    ax.legend()
    save(fig, args.out, "ch03_accumulation.png")


if __name__ == "__main__":
    main()
