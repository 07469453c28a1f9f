#!/usr/bin/env python3
"""Chapter 07: per-GPU memory of Llama 3.1 8B with context parallelism CP = 1, 2, 4, 8, vs sequence length.

Reads cp_memory.csv, the calculator's sweep (common/calc/memory_sweep.hpp; written by
ch07_context_parallel into its out folder, or by `usp_calc --sweep cp --csv FILE`), and writes
<out>/ch07_cp_memory.png: one row of panels per recomputation mode (selective, full), one panel
per CP degree, for each sequence length (4096 .. 131072) a stack of parameters, gradients,
optimizer states and activations, with the 80 GB of an H100 as a dashed line. Each rank holds s/c
of every sequence, so CP divides every activation by c: selective recomputation keeps
34·(s/c)·b·h bytes per layer, full recomputation the layer's input, 2·(s/c)·b·h. The states stay
whole on every rank (CP splits the tokens, not the model; ZeRO, chapter 05, can shard them over
the dp·cp ranks). Rows drawn: the first model found, mixed precision, dp = tp = pp = 1. Values
are analytic, bytes per rank divided by 2^30: GiB; every panel shares one scale.

    python3 plots/ch07_cp_memory.py --in out/07_context_parallel --out plots/out
    python3 plots/ch07_cp_memory.py --in cp_memory.csv
"""
import sys

from figure_io import parse_args, plt, save  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from calc_sweep import CATEGORIES, GIB, csv_path, read_rows  # noqa: E402

CSV_NAME = "cp_memory.csv"
H100_GIB = 80  # an H100's memory, in the unit of the axis (the playbook's "80 GB")


def selected(rows):
    """The first model, mixed precision, no DP/TP/PP: (model, {(recompute, cp): [row, ...] by seq})."""
    panels, model = {}, None
    for r in rows:
        if r["precision"] != "mixed" or any(int(r[k]) != 1 for k in ("dp", "tp", "pp")):
            continue
        model = model or r["model"]
        if r["model"] == model:
            panels.setdefault((r["recompute"], int(r["cp"])), []).append(r)
    for key in panels:
        panels[key].sort(key=lambda r: int(r["seq"]))
    return model, panels


def main():
    args = parse_args(__doc__, "out/07_context_parallel", f"{CSV_NAME} or the folder holding it")

    path = csv_path(args.inp, CSV_NAME)
    model, panels = selected(read_rows(path, "cp"))
    if not panels:
        sys.exit(f"{path}: no rows with mixed precision and dp = tp = pp = 1")
    modes = list(dict.fromkeys(mode for mode, _ in panels))
    cps = sorted({cp for _, cp in panels})

    fig, axes = plt.subplots(len(modes), len(cps), figsize=(3.6 * len(cps), 3.9 * len(modes)), squeeze=False,
                             sharey=True)
    for row, mode in enumerate(modes):
        for col, cp in enumerate(cps):
            ax = axes[row][col]
            rows = panels.get((mode, cp), [])
            x = range(len(rows))
            bottom = [0.0] * len(rows)
            for column, _label, colour in CATEGORIES:
                heights = [int(r[column]) / GIB for r in rows]
                ax.bar(x, heights, 0.7, bottom=bottom, color=colour)
                bottom = [b + h for b, h in zip(bottom, heights)]
            for xi, total in zip(x, bottom):
                ax.annotate(f"{total:,.0f}", (xi, total), ha="center", va="bottom", fontsize=6.5,
                            xytext=(0, 2), textcoords="offset points")
            ax.axhline(H100_GIB, color="black", linestyle="--", linewidth=1)
            ax.set_xticks(list(x))
            ax.set_xticklabels([f"{int(r['seq']) // 1024}k" for r in rows], fontsize=8)
            ax.set_title(f"CP {cp}, {mode} recomputation", fontsize=9)
            ax.grid(True, axis="y", alpha=0.3)
            if row == len(modes) - 1:
                ax.set_xlabel("sequence length")
        axes[row][0].set_ylabel("memory per GPU (GiB)")
    handles = [Patch(color=colour, label=label) for _c, label, colour in CATEGORIES]
    handles.append(Line2D([], [], color="black", linestyle="--", linewidth=1, label=f"H100: {H100_GIB} GB"))
    axes[0][0].legend(handles=handles, fontsize=7.5, loc="upper left")
    any_row = next(iter(panels.values()))[0]
    fig.suptitle(f"{model} ({int(any_row['num_parameters']) / 1e9:.1f}B) per GPU with context parallelism — "
                 "mixed precision, b = 1", fontsize=11)
    save(fig, args.out, "ch07_cp_memory.png", rect=(0, 0, 1, 0.95))


if __name__ == "__main__":
    main()
