#!/usr/bin/env python3
"""Chapter 10: the playbook's 8B model, memory per GPU under each parallelism (the calculator's).

Reads <in>/memory_8b.csv (written by ch10_5d_parallelism from calc::memory_per_rank: the 8.86B
model, s = 4096, one sequence per micro-batch, bf16 with fp32 master weights and Adam, no
recomputation) and writes <out>/ch10_memory_8b.png: stacked bars (parameters, gradients, optimizer
states, activations) for one GPU, ZeRO-1/2/3, TP with SP, PP (the first stage) and CP at degrees 2,
4 and 8, and a DP·TP·PP layout of 8 GPUs, with the 80 GB of an H100 drawn across. ZeRO cuts only the
states, CP only the activations, TP+SP both, PP the layers but keeps p micro-batches in flight.

    python3 plots/ch10_memory_8b.py --in out/10_5d_parallelism --out plots/out
"""
import os

from figure_io import distinct, parse_args, plt, read_csv, save  # noqa: E402

PARTS = [("parameters", "tab:blue"), ("gradients", "tab:orange"), ("optimizer", "tab:green"),
         ("activations", "tab:red")]
NEEDED = ["dimension", "degree"] + [p for p, _ in PARTS]


def main():
    args = parse_args(__doc__, "out/10_5d_parallelism", "folder with memory_8b.csv")
    rows = read_csv(os.path.join(args.inp, "memory_8b.csv"), NEEDED, "ch10_5d_parallelism")
    order = distinct(rows, "dimension")
    # One group of bars per dimension, one bar per degree.
    labels, bars, x, ticks, at = [], [], [], [], 0.0
    for dim in order:
        group = [r for r in rows if r["dimension"] == dim]
        start = at
        for r in group:
            x.append(at)
            bars.append(r)
            labels.append(r["degree"])
            at += 1
        ticks.append(((start + at - 1) / 2, dim))
        at += 0.8
    fig, ax = plt.subplots(figsize=(11, 4.5))
    bottom = [0.0] * len(bars)
    for part, color in PARTS:
        h = [float(r[part]) / 1e9 for r in bars]
        ax.bar(x, h, bottom=bottom, color=color, width=0.8, label=part)
        bottom = [b + v for b, v in zip(bottom, h)]
    ax.axhline(80, color="black", linestyle="--", linewidth=1)
    ax.text(x[-1] + 0.5, 81, "80 GB (H100)", ha="right", va="bottom", fontsize=8)
    for xi, lab in zip(x, labels):
        ax.text(xi, -4, lab, ha="center", va="top", fontsize=7)
    ax.set_xticks([t for t, _ in ticks])
    ax.set_xticklabels([d for _, d in ticks])
    ax.tick_params(axis="x", pad=14)
    ax.set_ylabel("GB per GPU")
    ax.set_ylim(0, max(bottom) * 1.05)
    ax.set_title("8.86B model, s = 4096, mbs 1, mixed precision: one GPU's memory under each parallelism "
                 "(degree under each bar)", fontsize=10)
    ax.legend(fontsize=8, ncol=4, loc="upper right")
    save(fig, args.out, "ch10_memory_8b.png")


if __name__ == "__main__":
    main()
