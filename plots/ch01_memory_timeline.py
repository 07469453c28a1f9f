#!/usr/bin/env python3
"""Chapter 01: the memory profile of the first training steps, as the playbook draws it.

Reads <in>/memory_timeline.csv (written by ch01_memory from the memory tracker: one row per
allocation, release or phase mark, with the bytes in use per category right after it) and
writes <out>/ch01_memory_timeline.png: the bytes of each category stacked over time, with the
phases (forward, backward, optimizer) shaded. Parameters are there from the start; activations
climb through each forward and fall through backward; gradients appear in the first backward;
the optimizer states appear at the first optimizer step and stay.

    python3 plots/ch01_memory_timeline.py --in out/01_memory --out plots/out
"""
import csv
import os
import sys

from figure_io import parse_args, plt, save  # noqa: E402

CATEGORIES = ["parameter", "gradient", "optimizer_state", "activation", "temporary", "comm_buffer"]
COLOURS = {
    "parameter": "tab:blue",
    "gradient": "tab:orange",
    "optimizer_state": "tab:green",
    "activation": "tab:red",
    "temporary": "tab:gray",
    "comm_buffer": "tab:purple",
}
PHASE_COLOURS = {"forward": "#dde8f7", "backward": "#f7e3dd", "optimizer": "#e2f2dc"}


def read_timeline(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    needed = ["time_s", "event"] + CATEGORIES
    if not rows or any(c not in rows[0] for c in needed):
        sys.exit(f"{path}: expected the columns {','.join(needed)}")
    return rows


def main():
    args = parse_args(__doc__, "out/01_memory", "folder with memory_timeline.csv")
    rows = read_timeline(os.path.join(args.inp, "memory_timeline.csv"))

    t = [float(r["time_s"]) for r in rows]
    mib = {c: [int(r[c]) / 2**20 for r in rows] for c in CATEGORIES}
    used = [c for c in CATEGORIES if max(mib[c]) > 0]

    fig, ax = plt.subplots(figsize=(10, 4.8))
    # Phases: a mark row's event names the phase that starts there.
    marks = [(float(r["time_s"]), r["event"]) for r in rows if r["event"] not in ("alloc", "free")]
    for (start, name), (end, _) in zip(marks, marks[1:] + [(t[-1], "")]):
        if name in PHASE_COLOURS:
            ax.axvspan(start, end, color=PHASE_COLOURS[name], lw=0)
    ax.stackplot(t, [mib[c] for c in used], labels=used, colors=[COLOURS[c] for c in used], step="post", alpha=0.9)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("memory (MiB)")
    ax.set_title("Memory profile of the first training steps (tracker timeline)")
    handles, labels = ax.get_legend_handles_labels()
    from matplotlib.patches import Patch

    handles += [Patch(color=c, label=n) for n, c in PHASE_COLOURS.items()]
    ax.legend(handles=handles, loc="upper left", fontsize=8, ncol=2)
    ax.set_xlim(t[0], t[-1])
    save(fig, args.out, "ch01_memory_timeline.png")


if __name__ == "__main__":
    main()
