#!/usr/bin/env python3
"""Chapter 05: measured memory per rank and bytes sent per step, by ZeRO stage.

Reads <in>/zero_stages.csv (written by ch05_zero: one row per stage and rank, with the memory
tracker's peaks per category, the state kept between steps, the ZeRO formula's count of that
state, and the bytes the rank sent by collective) and writes <out>/ch05_zero_stages.png, two
panels for rank 0:

  left   one bar per stage: the state kept between steps (parameters, gradients, optimizer
         states, solid), then what the stage holds on top of it for a while (hatched, the peak
         minus the kept bytes: ZeRO-2's unit gradients until they are reduce-scattered, ZeRO-3's
         gathered units; grey: communication buffers such as ZeRO-1's reduced gradient shard),
         then the peak activations; a black tick marks the ZeRO formula's total for the kept
         state (it sits exactly on top of the solid part). The categories' peaks need not
         happen at the same moment, so the bar's height bounds the rank's peak from above;
  right  bytes sent per optimizer step, stacked by collective, with the ratio to plain DP.

    python3 plots/ch05_zero_stages.py --in out/05_zero --out plots/out
"""
import csv
import os
import sys

from figure_io import parse_args, plt, read_csv, save  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

MIB = float(1 << 20)
KEPT = [  # (category, legend label, colour)
    ("parameter", "parameters", "tab:blue"),
    ("gradient", "gradients", "tab:orange"),
    ("optimizer_state", "optimizer states", "tab:green"),
]
COMM = [("sent_all_reduce", "all-reduce", "tab:purple"), ("sent_reduce_scatter", "reduce-scatter", "tab:red"),
        ("sent_all_gather", "all-gather", "tab:cyan")]
NEEDED = ["stage", "label", "rank", "steps", "peak_activation", "peak_comm_buffer", "formula_parameter",
          "formula_gradient", "formula_optimizer_state"] + [f"peak_{c}" for c, _, _ in KEPT] + [
    f"resident_{c}" for c, _, _ in KEPT] + [c for c, _, _ in COMM]


def main():
    def options(p):
        p.add_argument("--rank", type=int, default=0, help="which rank to draw")

    args = parse_args(__doc__, "out/05_zero", "folder with zero_stages.csv", options)
    path = os.path.join(args.inp, "zero_stages.csv")
    rows = read_csv(path, NEEDED, "ch05_zero")
    rows = [r for r in rows if int(r["rank"]) == args.rank]
    ranks = 1 + max(int(r["rank"]) for r in csv.DictReader(open(path, newline="")))
    if not rows:
        sys.exit(f"{path}: no rows for rank {args.rank}")

    fig, (ax, cx) = plt.subplots(1, 2, figsize=(13, 5), gridspec_kw={"width_ratios": [3, 2]})
    x = list(range(len(rows)))
    for i, r in enumerate(rows):
        bottom = 0.0
        for cat, _label, colour in KEPT:  # the kept state first, so the formula tick sits on it
            kept = int(r[f"resident_{cat}"]) / MIB
            ax.bar(i, kept, 0.7, bottom=bottom, color=colour)
            bottom += kept
        for cat, _label, colour in KEPT:  # then what is held on top of it for a while
            extra = max(0, int(r[f"peak_{cat}"]) - int(r[f"resident_{cat}"])) / MIB
            if extra > 0:
                ax.bar(i, extra, 0.7, bottom=bottom, color=colour, alpha=0.35, hatch="//", edgecolor=colour)
                bottom += extra
        for cat, colour in (("peak_comm_buffer", "tab:gray"), ("peak_activation", "tab:pink")):
            v = int(r[cat]) / MIB
            ax.bar(i, v, 0.7, bottom=bottom, color=colour, alpha=0.35 if cat == "peak_comm_buffer" else 1.0,
                   hatch="//" if cat == "peak_comm_buffer" else None, edgecolor=colour)
            bottom += v
        formula = sum(int(r[f"formula_{c}"]) for c, _, _ in KEPT) / MIB
        ax.plot([i - 0.4, i + 0.4], [formula, formula], color="black", linewidth=2)
        ax.annotate(f"{formula:.1f}", (i + 0.4, formula), fontsize=7, va="center", xytext=(2, 0),
                    textcoords="offset points")
    ax.set_xticks(x)
    ax.set_xticklabels([r["label"].replace(" (", "\n(") for r in rows], fontsize=8)
    ax.set_ylabel("MiB on this rank")
    ax.grid(True, axis="y", alpha=0.3)
    handles = [Patch(color=c, label=l + " (kept)") for _, l, c in KEPT]
    handles += [Patch(facecolor="white", edgecolor="gray", hatch="//", label="held for a while (peak − kept)"),
                Patch(color="tab:pink", label="activations (peak)"),
                plt.Line2D([0], [0], color="black", linewidth=2, label="ZeRO formula for the kept state")]
    ax.legend(handles=handles, fontsize=7, loc="upper right")
    ax.set_title(f"Memory of rank {args.rank} of {ranks}: kept state and peaks", fontsize=10)

    base = None
    for i, r in enumerate(rows):
        steps = max(1, int(r["steps"]))
        bottom = 0.0
        for col, _label, colour in COMM:
            v = int(r[col]) / steps / MIB
            cx.bar(i, v, 0.7, bottom=bottom, color=colour)
            bottom += v
        if base is None:
            base = bottom
        if base:
            cx.annotate(f"{bottom / base:.2f}×", (i, bottom), ha="center", va="bottom", fontsize=8, xytext=(0, 2),
                        textcoords="offset points")
    cx.set_xticks(x)
    cx.set_xticklabels([r["label"].replace(" (", "\n(") for r in rows], fontsize=8)
    cx.set_ylabel("MiB sent per optimizer step")
    cx.grid(True, axis="y", alpha=0.3)
    cx.margins(y=0.12)
    cx.legend(handles=[Patch(color=c, label=l) for _, l, c in COMM], fontsize=8, loc="upper left")
    cx.set_title(f"Communication of rank {args.rank} (× {rows[0]['label']})", fontsize=10)
    fig.suptitle("ZeRO measured: what each stage keeps, holds and sends", x=0.01, ha="left")
    save(fig, args.out, "ch05_zero_stages.png", rect=(0, 0, 1, 0.96))


if __name__ == "__main__":
    main()
