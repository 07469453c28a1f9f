#!/usr/bin/env python3
"""Chapter 01: training memory vs sequence length for Llama 3.1 8B / 70B / 405B (the playbook's
"memory usage" figure), one panel per model, stacked bars of parameters, gradients, optimizer
states and activations.

Reads memory_vs_seq.csv, the calculator's sweep (common/calc/memory_sweep.hpp; written by
ch01_memory into its out folder, or by `usp_calc --sweep memory_vs_seq --csv FILE`), and writes
<out>/ch01_memory_vs_seq.png. Rows drawn: mixed precision, no recomputation, one rank (dp = tp =
cp = pp = 1), b = 1. Values are analytic, bytes per rank divided by 2^30: GiB (the playbook labels
the same numbers "GB"). Activations follow the playbook's per-layer formula
s·b·h·(34 + 5·a·s/h) times L, without the embedding and head; the quadratic attention term is
what makes them overtake the model states as s grows.

    python3 plots/ch01_memory_vs_seq.py --in out/01_memory --out plots/out
    python3 plots/ch01_memory_vs_seq.py --in memory_vs_seq.csv
"""
import sys

from figure_io import plt, save  # noqa: E402

from calc_sweep import CATEGORIES, GIB, read_sweep, single_rank  # noqa: E402

CSV_NAME = "memory_vs_seq.csv"


def selected(rows):
    """Mixed precision, no recomputation, one rank: {model: [row, ...] by seq}, in file order."""
    keep = {}
    for r in rows:
        if single_rank(r) and r["precision"] == "mixed" and r["recompute"] == "none":
            keep.setdefault(r["model"], []).append(r)
    for model in keep:
        keep[model].sort(key=lambda r: int(r["seq"]))
    return keep


def model_title(row):
    return f"{row['model']} ({int(row['num_parameters']) / 1e9:.1f}B parameters)"


def main():
    args, path, rows = read_sweep(__doc__, "out/01_memory", CSV_NAME, "memory_vs_seq")
    by_model = selected(rows)
    if not by_model:
        sys.exit(f"{path}: no rows with mixed precision, no recomputation and a single rank")

    fig, axes = plt.subplots(1, len(by_model), figsize=(5.2 * len(by_model), 4.8), squeeze=False)
    for ax, (model, rows) in zip(axes[0], by_model.items()):
        x = range(len(rows))
        bottom = [0.0] * len(rows)
        for column, label, colour in CATEGORIES:
            heights = [int(r[column]) / GIB for r in rows]
            ax.bar(x, heights, 0.7, bottom=bottom, color=colour, label=label)
            bottom = [b + h for b, h in zip(bottom, heights)]
        for xi, total in zip(x, bottom):
            ax.annotate(f"{total:,.0f}", (xi, total), ha="center", va="bottom", fontsize=7,
                        xytext=(0, 2), textcoords="offset points")
        ax.set_xticks(list(x))
        ax.set_xticklabels([r["seq"] for r in rows])
        ax.set_xlabel("sequence length")
        ax.set_ylabel("memory (GiB)")
        ax.set_title(model_title(rows[0]), fontsize=10)
        ax.margins(y=0.08)
        ax.grid(True, axis="y", alpha=0.3)
    axes[0][0].legend(fontsize=8, loc="upper left")
    fig.suptitle("Memory of a training step on one GPU vs sequence length — mixed precision, no recomputation, b = 1")
    save(fig, args.out, "ch01_memory_vs_seq.png")


if __name__ == "__main__":
    main()
