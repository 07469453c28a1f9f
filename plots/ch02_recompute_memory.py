#!/usr/bin/env python3
"""Chapter 02: training memory vs sequence length with activation recomputation none / selective
/ full, for Llama 3.2 1B / 3B and Llama 3.1 8B / 70B / 405B (the playbook's recomputation
figure), one panel per model.

Reads recompute_memory.csv, the calculator's sweep (common/calc/memory_sweep.hpp; written by
ch02_recomputation into its out folder, or by `usp_calc --sweep recompute --csv FILE`), and
writes <out>/ch02_recompute_memory.png. For each sequence length three bars stand side by side,
none, selective and full (hatched lighter to darker), each a stack of parameters, gradients,
optimizer states and activations. Rows drawn: mixed precision, one rank (dp = tp = cp = pp = 1),
b = 1. Values are analytic, bytes divided by 2^30: GiB (the playbook labels the same numbers
"GB"). Per layer the activations are s·b·h·(34 + 5·a·s/h) (none), 34·s·b·h (selective: the
attention scores are dropped and recomputed) and 2·s·b·h (full: only the layer input).

    python3 plots/ch02_recompute_memory.py --in out/02_recomputation --out plots/out
    python3 plots/ch02_recompute_memory.py --in recompute_memory.csv
"""
import sys

from figure_io import plt, save  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from calc_sweep import CATEGORIES, GIB, read_sweep, single_rank  # noqa: E402

CSV_NAME = "recompute_memory.csv"
MODES = [("none", ""), ("selective", "//"), ("full", "xx")]  # recompute mode, hatch


def selected(rows):
    """Mixed precision, one rank: {model: {(seq, mode): row}}, models in file order."""
    keep = {}
    for r in rows:
        if single_rank(r) and r["precision"] == "mixed":
            keep.setdefault(r["model"], {})[(int(r["seq"]), r["recompute"])] = r
    return keep


def draw_model(ax, model, table):
    seqs = sorted({seq for seq, _ in table})
    width = 0.27
    for m, (mode, hatch) in enumerate(MODES):
        rows = [table.get((seq, mode)) for seq in seqs]
        x = [i + (m - 1) * width for i, r in enumerate(rows) if r]
        rows = [r for r in rows if r]
        bottom = [0.0] * len(rows)
        for column, _label, colour in CATEGORIES:
            heights = [int(r[column]) / GIB for r in rows]
            ax.bar(x, heights, width * 0.95, bottom=bottom, color=colour, hatch=hatch, edgecolor="white",
                   linewidth=0.3)
            bottom = [b + h for b, h in zip(bottom, heights)]
    ax.set_xticks(range(len(seqs)))
    ax.set_xticklabels([str(s) for s in seqs], fontsize=8)
    ax.set_xlabel("sequence length")
    ax.set_ylabel("memory (GiB)")
    any_row = next(iter(table.values()))
    ax.set_title(f"{model} ({int(any_row['num_parameters']) / 1e9:.1f}B)", fontsize=10)
    ax.grid(True, axis="y", alpha=0.3)


def main():
    args, path, rows = read_sweep(__doc__, "out/02_recomputation", CSV_NAME, "recompute")
    by_model = selected(rows)
    if not by_model:
        sys.exit(f"{path}: no rows with mixed precision and a single rank")

    # Two rows of three panels; the last free panel holds the legend.
    cols = min(3, len(by_model) + 1)
    nrows = -(-(len(by_model) + 1) // cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(5.0 * cols, 4.2 * nrows), squeeze=False)
    flat = [ax for row in axes for ax in row]
    for ax, (model, table) in zip(flat, by_model.items()):
        draw_model(ax, model, table)
    handles = [Patch(color=colour, label=label) for _c, label, colour in CATEGORIES]
    handles += [Patch(facecolor="white", hatch=hatch, edgecolor="dimgrey", label=f"recompute {mode}")
                for mode, hatch in MODES]
    for ax in flat[len(by_model):]:
        ax.axis("off")
    flat[len(by_model)].legend(handles=handles, loc="center", fontsize=10, frameon=False,
                               title="bars left to right: none, selective, full")
    fig.suptitle("Memory of a training step on one GPU with activation recomputation (mixed precision, b = 1)")
    save(fig, args.out, "ch02_recompute_memory.png")


if __name__ == "__main__":
    main()
