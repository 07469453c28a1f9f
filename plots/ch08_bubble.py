#!/usr/bin/env python3
"""Chapter 08: the pipeline bubble over the number of micro-batches, simulated and by formula.

Reads <in>/bubble_sweep.csv (written by ch08_pipeline_parallel --sweep:
schedule,p,m,v,bubble,formula,step_time,peak_in_flight; the bubble is the simulator's idle time
over busy time, summed over the ranks, the formula the playbook's (p-1)/m for AFAB and 1F1B,
(p-1)/(v·m) for interleaved 1F1B, the zero-bubble paper's (p-1)(t_F+t_B-t_W)/(m(t_F+t_B+t_W))
for ZB-H1). Writes <out>/ch08_bubble.png: left, the bubble over m, the simulated points on the
formula's lines (like the playbook's bubble-size figure); right, the peak activations in flight
(the largest over the ranks, in chunk activations) over m, the price of each schedule.

    python3 plots/ch08_bubble.py --in out/08_pipeline_parallel --out plots/out
"""
import csv
import os
import sys

from figure_io import parse_args, plt, save  # noqa: E402

COLUMNS = ["schedule", "p", "m", "v", "bubble", "formula", "step_time", "peak_in_flight"]
# Each schedule its own colour, marker and size. With t_B = t_W, ZB-H2's bubble equals ZB-H1's
# ((p-1)·t_F per rank both), so its points are drawn larger, under ZB-H1's, and said so.
STYLE = {"afab": ("AFAB", "tab:blue", "o", 4, 2), "1f1b": ("1F1B", "tab:orange", "s", 4, 2),
         "interleaved": ("interleaved 1F1B", "tab:green", "^", 4, 2), "zb-h1": ("ZB-H1", "tab:red", "D", 4, 4),
         "zb-h2": ("ZB-H2 (= ZB-H1 when t_B = t_W)", "tab:purple", "o", 8, 3),
         "dualpipev": ("DualPipeV", "tab:brown", "P", 4, 3)}


def read_sweep(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows or any(c not in rows[0] for c in COLUMNS):
        sys.exit(f"{path}: expected the columns {','.join(COLUMNS)} and at least one row")
    return [{"schedule": r["schedule"], "p": int(r["p"]), "m": int(r["m"]), "v": int(r["v"]),
             "bubble": float(r["bubble"]), "formula": float(r["formula"]),
             "peak": int(r["peak_in_flight"])} for r in rows]


def series(rows):
    """{(schedule, v): rows sorted by m}, in the order the schedules first appear."""
    out = {}
    for r in rows:
        out.setdefault((r["schedule"], r["v"]), []).append(r)
    return {k: sorted(v, key=lambda r: r["m"]) for k, v in out.items()}


def main():
    args = parse_args(__doc__, "out/08_pipeline_parallel", "folder with bubble_sweep.csv")
    path = os.path.join(args.inp, "bubble_sweep.csv")
    if not os.path.exists(path):
        sys.exit(f"{path} not found: run ch08_pipeline_parallel --sweep first")
    rows = read_sweep(path)
    p = rows[0]["p"]
    fig, (ax, mem) = plt.subplots(1, 2, figsize=(12, 4.5))
    for (schedule, v), pts in series(rows).items():
        name, colour, marker, size, z = STYLE.get(schedule, (schedule, "tab:gray", "x", 4, 2))
        label = f"{name}, v = {v}" if schedule == "interleaved" else name
        style = "--" if schedule == "interleaved" and v > 2 else "-"
        ms = [r["m"] for r in pts]
        ax.plot(ms, [r["formula"] for r in pts], style, color=colour, zorder=z, label=f"{label} (formula)")
        ax.plot(ms, [r["bubble"] for r in pts], marker, color=colour, markersize=size, zorder=z + 1,
                markerfacecolor="none", label=f"{label} (simulated)")
        mem.plot(ms, [r["peak"] / r["v"] for r in pts], style, marker=marker, markersize=3.5, color=colour, zorder=z,
                 markerfacecolor="none", label=label)
    ax.set_xlabel("micro-batches m")
    ax.set_ylabel("bubble = idle / busy time")
    ax.set_yscale("log")
    ax.set_title(f"Pipeline bubble, p = {p} ranks (t_B = t_W = t_F)")
    ax.legend(fontsize=7, ncol=2, loc="upper right")
    ax.grid(alpha=0.3, which="both")
    mem.set_xlabel("micro-batches m")
    mem.set_ylabel("peak activations in flight (micro-batches)")
    mem.set_title("Activation memory: the largest rank's peak")
    mem.legend(fontsize=7)
    mem.grid(alpha=0.3)
    save(fig, args.out, "ch08_bubble.png")


if __name__ == "__main__":
    main()
