#!/usr/bin/env python3
"""Chapter 08: the simulated Gantt chart of each pipeline schedule, one panel per schedule.

Reads <in>/gantt_<schedule>.csv for each schedule that ch08_pipeline_parallel wrote
(rank,index,kind,micro_batch,chunk,stage,start,end: every compute op of every rank, in simulated
time units) and writes <out>/ch08_gantt.png: a row per rank, a box per op labelled with its
micro-batch, coloured by kind (F forward, BW whole backward, B input gradient, W weight
gradient; a model chunk c > 0 of interleaved 1F1B drawn lighter), white where the rank idles:
the bubble, as in the playbook's pipeline figures.

    python3 plots/ch08_gantt.py --in out/08_pipeline_parallel --out plots/out
"""
import csv
import os
import sys

from figure_io import parse_args, plt, save  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

SCHEDULES = [("afab", "AFAB"), ("1f1b", "1F1B"), ("interleaved", "interleaved 1F1B"), ("zb-h1", "ZB-H1"), ("zb-h2", "ZB-H2"),
             ("dualpipev", "DualPipeV")]
COLUMNS = ["rank", "index", "kind", "micro_batch", "chunk", "stage", "start", "end"]
COLOURS = {"F": "tab:blue", "BW": "tab:orange", "B": "tab:cyan", "W": "tab:olive"}


def read_gantt(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows or any(c not in rows[0] for c in COLUMNS):
        sys.exit(f"{path}: expected the columns {','.join(COLUMNS)} and at least one row")
    return [{"rank": int(r["rank"]), "kind": r["kind"], "mb": int(r["micro_batch"]), "chunk": int(r["chunk"]),
             "start": float(r["start"]), "end": float(r["end"])} for r in rows]


def draw(ax, ops, title):
    ranks = max(o["rank"] for o in ops) + 1
    step = max(o["end"] for o in ops)
    for o in ops:
        y = ranks - 1 - o["rank"]  # rank 0 on top
        alpha = 1.0 if o["chunk"] == 0 else 0.55
        ax.broken_barh([(o["start"], o["end"] - o["start"])], (y + 0.05, 0.9),
                       facecolors=COLOURS.get(o["kind"], "tab:gray"), alpha=alpha, edgecolor="black", linewidth=0.4)
        if o["end"] - o["start"] >= step / 90:
            ax.text((o["start"] + o["end"]) / 2, y + 0.5, str(o["mb"]), ha="center", va="center", fontsize=6)
    ax.set_yticks([ranks - 1 - r + 0.5 for r in range(ranks)])
    ax.set_yticklabels([f"rank {r}" for r in range(ranks)])
    ax.set_xlim(0, step)
    ax.set_title(f"{title}: step time {step:g}", fontsize=9)


def main():
    args = parse_args(__doc__, "out/08_pipeline_parallel", "folder with gantt_<schedule>.csv")
    found = [(name, title) for name, title in SCHEDULES
             if os.path.exists(os.path.join(args.inp, f"gantt_{name}.csv"))]
    if not found:
        sys.exit(f"no gantt_<schedule>.csv in {args.inp}: run ch08_pipeline_parallel first")
    fig, axes = plt.subplots(len(found), 1, figsize=(12, 1.6 + 1.3 * len(found)), squeeze=False)
    for ax, (name, title) in zip(axes[:, 0], found):
        draw(ax, read_gantt(os.path.join(args.inp, f"gantt_{name}.csv")), title)
    axes[-1, 0].set_xlabel("time (units of t_F)")
    fig.legend(handles=[Patch(color=c, label=k) for k, c in COLOURS.items()], loc="upper right", ncol=4, fontsize=8)
    save(fig, args.out, "ch08_gantt.png", rect=(0, 0, 1, 0.95))


if __name__ == "__main__":
    main()
