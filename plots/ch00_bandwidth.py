#!/usr/bin/env python3
"""Chapter 00: bus bandwidth vs message size, one line per collective.

Reads <in>/bandwidth.csv (written by ch00_collectives: collective,impl,bytes,time_us,algbw_GBps,
busbw_GBps) and writes <out>/ch00_bandwidth.png. The hand-written ring all-reduce is drawn
dashed in the library all-reduce's colour, so the two can be compared at a glance. Small
messages sit on the left, where latency dominates and bandwidth is low; the curves flatten
to the right once the per-message cost is paid off.

    python3 plots/ch00_bandwidth.py --in out/00_collectives --out plots/out
"""
import csv
import json
import os
import sys

from figure_io import parse_args, plt, save  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402

# Drawing order and colours; the ring shares the library all-reduce's colour.
COLLECTIVES = ["all_reduce", "reduce_scatter", "all_gather", "all_to_all", "broadcast"]
COLOURS = {
    "all_reduce": "tab:blue",
    "reduce_scatter": "tab:orange",
    "all_gather": "tab:green",
    "all_to_all": "tab:purple",
    "broadcast": "tab:brown",
}


def read_rows(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    expected = ["collective", "impl", "bytes", "time_us", "algbw_GBps", "busbw_GBps"]
    if not rows or list(rows[0].keys()) != expected:
        sys.exit(f"{path}: expected the columns {','.join(expected)}")
    return rows


def series(rows, collective, impl):
    """(bytes, busbw) points of one collective and implementation, by size."""
    points = sorted((int(r["bytes"]), float(r["busbw_GBps"]))
                    for r in rows if r["collective"] == collective and r["impl"] == impl)
    return [p[0] for p in points], [p[1] for p in points]


def size_label(b, _pos=None):
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if b >= scale:
            return f"{b / scale:g}{unit}"
    return f"{b:g}"


def world_size(in_dir):
    try:
        with open(os.path.join(in_dir, "summary.json")) as f:
            return json.load(f).get("world_size")
    except (OSError, ValueError):
        return None


def main():
    args = parse_args(__doc__, "out/00_collectives", "folder with bandwidth.csv")

    rows = read_rows(os.path.join(args.inp, "bandwidth.csv"))
    fig, ax = plt.subplots(figsize=(8, 5))
    for collective in COLLECTIVES:
        x, y = series(rows, collective, "library")
        if x:
            ax.plot(x, y, marker="o", ms=3, color=COLOURS[collective], label=collective)
        x, y = series(rows, collective, "ring")
        if x:
            ax.plot(x, y, marker="s", ms=3, ls="--", color=COLOURS[collective],
                    label=f"{collective} (hand-written ring)")

    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(FuncFormatter(size_label))
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("bus bandwidth (GB/s)")
    n = world_size(args.inp)
    ranks = f" — {n} ranks" if n else ""
    ax.set_title(f"Collective bus bandwidth vs message size{ranks}")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    save(fig, args.out, "ch00_bandwidth.png")


if __name__ == "__main__":
    main()
