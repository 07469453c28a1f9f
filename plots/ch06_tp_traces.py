#!/usr/bin/env python3
"""Chapter 06: one training step of TP and of TP+SP at the largest t, compute and communication.

Reads <in>/trace_tp<t>.csv and <in>/trace_tp<t>_sp.csv (written by ch06_tensor_parallel through
write_trace for the last step of each layout: rank,stream,name,start_us,end_us) for the largest t
that has both, and writes <out>/ch06_tp_traces.png: one panel per layout, two rows for one rank
(--rank, default 0):

  compute  each model unit's forward (blue) and backward (orange): embedding, layers, head
  comm     each collective as the communicator ran it: all-reduce (purple), all-gather (green),
           reduce-scatter (red)

The playbook's TP and TP/SP communication diagrams, from a real run: under TP every layer's
forward ends its attention and its MLP with an all-reduce of the stream (and backward starts
each column block's input gradient with one); under TP+SP each all-reduce becomes a
reduce-scatter, and every column block first all-gathers the rows it needs, so the row count of
the norms and residual adds between them is divided by t. A step of several micro-batches
repeats the pattern once per micro-batch: the figure shows the first one (--whole-step: all).

    python3 plots/ch06_tp_traces.py --in out/06_tensor_parallel --out plots/out
"""
import csv
import os
import re
import sys

from figure_io import parse_args, plt, save  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

COLUMNS = ["rank", "stream", "name", "start_us", "end_us"]
COLOURS = {"forward": "tab:blue", "backward": "tab:orange", "all_reduce": "tab:purple", "all_gather": "tab:green",
           "reduce_scatter": "tab:red"}
STREAMS = ["compute", "comm"]


def read_trace(path, rank):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if rows and any(c not in rows[0] for c in COLUMNS):
        sys.exit(f"{path}: expected the columns {','.join(COLUMNS)}")
    spans = [{"stream": r["stream"], "name": r["name"], "start": float(r["start_us"]) / 1e3,
              "end": float(r["end_us"]) / 1e3} for r in rows if int(r["rank"]) == rank]
    if not spans:
        sys.exit(f"{path}: no spans of rank {rank}")
    return spans


def colour(name):
    for k, c in COLOURS.items():
        if name.startswith(k):
            return c
    return None


def largest_pair(inp):
    """The largest t with both trace_tp<t>.csv and trace_tp<t>_sp.csv in inp."""
    ts = []
    for f in os.listdir(inp):
        m = re.fullmatch(r"trace_tp(\d+)_sp\.csv", f)
        if m and os.path.exists(os.path.join(inp, f"trace_tp{m.group(1)}.csv")):
            ts.append(int(m.group(1)))
    return max(ts) if ts else None


def window(spans, whole_step):
    """(start, end, micro-batches): the first micro-batch's time (from its embedding's forward to
    the next one's), or the whole step's."""
    starts = sorted(s["start"] for s in spans if s["stream"] == "compute" and s["name"] == "forward embedding")
    start, end = min(s["start"] for s in spans), max(s["end"] for s in spans)
    if not whole_step and len(starts) > 1:
        end = starts[1]
    return start, end, max(len(starts), 1)


def comm_time(spans, start, end):
    """Milliseconds each collective ran within [start, end)."""
    comm = {}
    for s in spans:
        if s["stream"] == "comm" and start <= s["start"] < end:
            comm[s["name"]] = comm.get(s["name"], 0.0) + s["end"] - s["start"]
    return comm


def main():
    def options(p):
        p.add_argument("--rank", type=int, default=0, help="which rank to draw")
        p.add_argument("--whole-step", action="store_true", help="every micro-batch of the step, not only the first")

    args = parse_args(__doc__, "out/06_tensor_parallel", "folder with trace_tp<t>.csv and trace_tp<t>_sp.csv", options)
    if not os.path.isdir(args.inp):
        sys.exit(f"{args.inp}: not a folder (run ch06_tensor_parallel first)")
    t = largest_pair(args.inp)
    if t is None:
        sys.exit(f"{args.inp}: no trace_tp<t>.csv with its trace_tp<t>_sp.csv "
                 "(run ch06_tensor_parallel on several ranks with --sp both)")
    runs = [(f"TP {t}", read_trace(os.path.join(args.inp, f"trace_tp{t}.csv"), args.rank)),
            (f"TP {t} + SP", read_trace(os.path.join(args.inp, f"trace_tp{t}_sp.csv"), args.rank))]
    windows = {label: window(spans, args.whole_step) for label, spans in runs}
    end = max(w[1] - w[0] for w in windows.values())

    fig, axes = plt.subplots(len(runs), 1, figsize=(14, 1.6 + 1.3 * len(runs)), squeeze=False)
    for ax, (label, spans) in zip(axes[:, 0], runs):
        start, stop, micro = windows[label]
        for y, stream in enumerate(STREAMS):
            for s in spans:
                c = colour(s["name"])
                if s["stream"] != stream or c is None or not start <= s["start"] < stop:
                    continue
                # compute spans touch each other: a thin white edge tells units apart
                edge = dict(edgecolors="white", linewidth=0.4) if stream == "compute" else dict(linewidth=0)
                ax.broken_barh([(s["start"] - start, max(s["end"] - s["start"], 1e-3))], (y - 0.38, 0.76),
                               facecolors=c, **edge)
        ax.set_yticks(range(len(STREAMS)))
        ax.set_yticklabels([f"rank {args.rank} {s}" for s in STREAMS], fontsize=8)
        ax.invert_yaxis()
        ax.set_xlim(0, end)
        ax.set_xlabel("ms")
        busy = ", ".join(f"{k.replace('_', '-')} {v:.1f} ms" for k, v in sorted(comm_time(spans, start, stop).items()))
        what = f"the step's {micro} micro-batches" if args.whole_step or micro == 1 else f"micro-batch 1 of {micro}"
        ax.set_title(f"{label}, {what}: {stop - start:.0f} ms; time in collectives: {busy}", fontsize=10, loc="left")
    handles = [Patch(color=c, label=k.replace("_", "-")) for k, c in COLOURS.items()]
    fig.legend(handles=handles, loc="upper right", ncol=len(handles), fontsize=9)
    fig.suptitle(f"Tensor parallelism at t = {t}, without and with sequence parallelism (one training step)",
                 x=0.01, ha="left")
    save(fig, args.out, "ch06_tp_traces.png", rect=(0, 0, 1, 0.93))


if __name__ == "__main__":
    main()
