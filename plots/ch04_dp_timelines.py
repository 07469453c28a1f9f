#!/usr/bin/env python3
"""Chapter 04: compute and communication timelines of naive, overlapped and bucketed DP.

Reads <in>/trace_<mode>.csv for mode in naive, overlap, bucketing (written by
ch04_data_parallel through write_trace: rank,stream,name,start_us,end_us; the compute stream
holds each unit's forward and backward and the optimizer step, the comm stream each all-reduce
from when the communicator started it to when it completed) and, if present, <in>/variants.csv
(the fraction of communication hidden behind backward). Writes <out>/ch04_dp_timelines.png:
one panel per variant, like the playbook's three overlap diagrams, with a compute row and a
comm row per rank, over one training step (the last one traced, unless --step says otherwise).

Naive: every all-reduce starts after the last backward span. Overlap: one all-reduce per
parameter, launched while backward runs. Bucketing: fewer, larger all-reduces, same timing.

    python3 plots/ch04_dp_timelines.py --in out/04_data_parallel --out plots/out
"""
import csv
import os
import sys

from figure_io import parse_args, plt, save  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

MODES = ["naive", "overlap", "bucketing"]
COLOURS = {"forward": "tab:blue", "backward": "tab:orange", "optimizer": "tab:green", "comm": "tab:purple"}
COLUMNS = ["rank", "stream", "name", "start_us", "end_us"]


def read_trace(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if rows and any(c not in rows[0] for c in COLUMNS):
        sys.exit(f"{path}: expected the columns {','.join(COLUMNS)}")
    return [
        {"rank": int(r["rank"]), "stream": r["stream"], "name": r["name"],
         "start": float(r["start_us"]) / 1e3, "end": float(r["end_us"]) / 1e3}
        for r in rows
    ]


def kind(span):
    if span["stream"] == "comm":
        return "comm"
    for k in ("forward", "backward", "optimizer"):
        if span["name"].startswith(k):
            return k
    return None


def step_windows(spans):
    """[start, end) of each step: a step ends when the last rank finishes its optimizer step."""
    ranks = sorted({s["rank"] for s in spans})
    per_rank = {r: sorted(s["end"] for s in spans if s["rank"] == r and s["name"] == "optimizer") for r in ranks}
    steps = min(len(v) for v in per_rank.values()) if per_rank else 0
    ends = [max(per_rank[r][i] for r in ranks) for i in range(steps)]
    starts = [min(s["start"] for s in spans)] + ends[:-1]
    return list(zip(starts, ends))


def read_fractions(path):
    if not os.path.exists(path):
        return {}
    with open(path, newline="") as f:
        return {r["mode"]: r for r in csv.DictReader(f)}


def main():
    def options(p):
        p.add_argument("--step", type=int, default=-1, help="which traced step to draw (default: the last)")

    args = parse_args(__doc__, "out/04_data_parallel", "folder with trace_<mode>.csv", options)

    traces = {}
    for mode in MODES:
        path = os.path.join(args.inp, f"trace_{mode}.csv")
        if os.path.exists(path):
            traces[mode] = read_trace(path)
    if not traces:
        sys.exit(f"{args.inp}: no trace_<mode>.csv (run ch04_data_parallel first)")
    info = read_fractions(os.path.join(args.inp, "variants.csv"))

    fig, axes = plt.subplots(len(traces), 1, figsize=(12, 2.2 + 1.3 * len(traces) * 2), squeeze=False)
    for ax, (mode, spans) in zip(axes[:, 0], traces.items()):
        windows = step_windows(spans)
        if not windows:
            ax.set_title(f"{mode}: no complete step in the trace")
            continue
        lo, hi = windows[args.step]
        ranks = sorted({s["rank"] for s in spans})
        labels = []
        for i, r in enumerate(ranks):
            for j, stream in enumerate(("compute", "comm")):
                y = 2 * i + j
                labels.append((y, f"rank {r} {stream}"))
                for s in spans:
                    k = kind(s)
                    if s["rank"] != r or k is None or (stream == "comm") != (k == "comm"):
                        continue
                    if s["end"] < lo or s["start"] > hi:
                        continue
                    a, b = max(s["start"], lo), min(s["end"], hi)
                    # Thin white edges separate consecutive units and back-to-back all-reduces.
                    ax.broken_barh([(a - lo, max(b - a, 1e-3))], (y - 0.38, 0.76), facecolors=COLOURS[k],
                                   edgecolors="white", linewidth=0.4)
        ax.set_yticks([y for y, _ in labels])
        ax.set_yticklabels([t for _, t in labels], fontsize=8)
        ax.invert_yaxis()
        ax.set_xlim(0, hi - lo)
        title = f"{mode}"
        if mode in info:
            r = info[mode]
            title += (f" — {r['all_reduces_per_step']} all-reduces/step, step {float(r['step_ms']):.0f} ms, "
                      f"{100 * float(r['hidden_fraction']):.0f}% of comm time hidden behind backward")
        ax.set_title(title, fontsize=10, loc="left")
        ax.set_xlabel("ms since the step started")
    handles = [Patch(color=c, label=k) for k, c in COLOURS.items()]
    fig.legend(handles=handles, loc="upper right", ncol=4, fontsize=9)
    fig.suptitle("Data parallelism: compute and communication per rank, one training step", x=0.01, ha="left")
    save(fig, args.out, "ch04_dp_timelines.png", rect=(0, 0, 1, 0.97))


if __name__ == "__main__":
    main()
