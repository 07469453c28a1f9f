#!/usr/bin/env python3
"""Chapter 05: ZeRO-3 timelines with and without prefetching the next unit's all-gather.

Reads <in>/zero3_prefetch.csv and <in>/zero3_no_prefetch.csv (written by ch05_zero through
write_trace for the last training step of each run: rank,stream,name,start_us,end_us) and, if
present, <in>/summary.json (the step time and the share of communication that ran while the
rank computed). Writes <out>/ch05_zero3_trace.png: one panel per run, three rows per rank:

  compute      each unit's forward (blue) and backward (orange)
  comm window  each collective from when the trainer launched it to when it waited for it
               (all-gathers in the upper half, reduce-scatters in the lower): the time the
               program lets it run beside compute. With prefetch, the gather of unit u+1 is
               launched as unit u starts, so its window covers u's compute.
  comm         when the communicator really ran it (all-gather green, reduce-scatter red).

On a machine with fewer cores than ranks and threads (the course's 2-core CPU with 4 ranks), the
communication thread only gets a core when compute yields one, so the "comm" row may show little
real overlap even when the window allows it: what a GPU's separate copy engines and network
hardware provide, a CPU shared by everything does not.

    python3 plots/ch05_zero3_trace.py --in out/05_zero --out plots/out
"""
import csv
import json
import os
import sys

from figure_io import parse_args, plt, save  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

RUNS = [("zero3_prefetch", "ZeRO-3 with prefetch", True), ("zero3_no_prefetch", "ZeRO-3 without prefetch", False)]
STREAMS = ["compute", "comm window", "comm"]
COLUMNS = ["rank", "stream", "name", "start_us", "end_us"]
COLOURS = {"forward": "tab:blue", "backward": "tab:orange", "all_gather": "tab:green", "reduce_scatter": "tab:red"}


def read_trace(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if rows and any(c not in rows[0] for c in COLUMNS):
        sys.exit(f"{path}: expected the columns {','.join(COLUMNS)}")
    return [{"rank": int(r["rank"]), "stream": r["stream"], "name": r["name"], "start": float(r["start_us"]) / 1e3,
             "end": float(r["end_us"]) / 1e3} for r in rows]


def colour(span):
    for k, c in COLOURS.items():
        if span["name"].startswith(k):
            return c
    return None


def trace_info(inp):
    """{prefetch: {step_ms, all_gather_hidden_fraction, ...}} from summary.json, if any."""
    try:
        with open(os.path.join(inp, "summary.json")) as f:
            stages = json.load(f)["results"]["stages"]
    except (OSError, KeyError, ValueError):
        return {}
    return {s["prefetch"]: s["trace"] for s in stages if s.get("stage") == 3 and "trace" in s}


def main():
    args = parse_args(__doc__, "out/05_zero", "folder with zero3_prefetch.csv, zero3_no_prefetch.csv")
    runs = [(label, prefetch, read_trace(os.path.join(args.inp, f"{name}.csv"))) for name, label, prefetch in RUNS
            if os.path.exists(os.path.join(args.inp, f"{name}.csv"))]
    if not runs:
        sys.exit(f"{args.inp}: no zero3_prefetch.csv or zero3_no_prefetch.csv (run ch05_zero with stage 3)")
    info = trace_info(args.inp)
    end = max(s["end"] for _, _, spans in runs for s in spans)
    ranks = max(len({s["rank"] for s in spans}) for _, _, spans in runs)

    fig, axes = plt.subplots(len(runs), 1, figsize=(13, 1.0 + 0.75 * 3 * ranks * len(runs)), squeeze=False)
    for ax, (label, prefetch, spans) in zip(axes[:, 0], runs):
        labels = []
        for i, r in enumerate(sorted({s["rank"] for s in spans})):
            for j, stream in enumerate(STREAMS):
                y = 3 * i + j
                labels.append((y, f"rank {r} {stream}"))
                for s in spans:
                    c = colour(s)
                    if s["rank"] != r or s["stream"] != stream or c is None:
                        continue
                    lane = (y - 0.38, 0.76)
                    if stream == "comm window":  # gathers in the upper half, reductions in the lower
                        lane = (y - 0.38, 0.38) if c == COLOURS["all_gather"] else (y, 0.38)
                    ax.broken_barh([(s["start"], max(s["end"] - s["start"], 1e-3))], lane, facecolors=c,
                                   alpha=0.5 if stream == "comm window" else 1.0, edgecolors="white", linewidth=0.4)
        ax.set_yticks([y for y, _ in labels])
        ax.set_yticklabels([t for _, t in labels], fontsize=7)
        ax.invert_yaxis()
        ax.set_xlim(0, end)
        ax.set_xlabel("ms since the traced step started")
        title = label
        if prefetch in info:
            t = info[prefetch]
            title += (f" — step {t['step_ms']:.0f} ms; the all-gathers ran while their rank computed "
                      f"{100 * t['all_gather_hidden_fraction']:.0f}% of their time, the reduce-scatters "
                      f"{100 * t['reduce_scatter_hidden_fraction']:.0f}%")
        ax.set_title(title, fontsize=10, loc="left")
    handles = [Patch(color=c, label=k.replace("_", "-")) for k, c in COLOURS.items()]
    fig.legend(handles=handles, loc="upper right", ncol=4, fontsize=9)
    fig.suptitle("ZeRO-3: parameters gathered unit by unit (one training step)", x=0.01, ha="left")
    save(fig, args.out, "ch05_zero3_trace.png", rect=(0, 0, 1, 0.97))


if __name__ == "__main__":
    main()
