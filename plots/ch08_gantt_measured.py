#!/usr/bin/env python3
"""Chapter 08: what the executor really ran next to what the simulator predicts, per schedule.

Reads <in>/gantt_measured_<schedule>.csv (the last training step on the MPI ranks: every compute
op's start and end in ms from the step's common start) and <in>/gantt_predicted_<schedule>.csv
(the simulator on the same lists, each op lasting its stage's measured mean), both written by
ch08_pipeline_parallel on W > 1 ranks, and writes <out>/ch08_gantt_measured.png: one row of two
panels per schedule, the real chart on the left, the prediction on the right, on one time axis.
White is idle time: the bubble, plus on the left whatever the rank did besides computing
(posting sends, copying messages).

    python3 plots/ch08_gantt_measured.py --in out/08_pipeline_parallel --out plots/out
"""
import os
import sys

from ch08_gantt import COLOURS, SCHEDULES, draw, read_gantt  # noqa: E402
from figure_io import parse_args, plt, save  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402


def main():
    args = parse_args(__doc__, "out/08_pipeline_parallel", "folder with gantt_measured_<schedule>.csv")
    found = [(name, title) for name, title in SCHEDULES
             if os.path.exists(os.path.join(args.inp, f"gantt_measured_{name}.csv"))
             and os.path.exists(os.path.join(args.inp, f"gantt_predicted_{name}.csv"))]
    if not found:
        sys.exit(f"no gantt_measured_<schedule>.csv in {args.inp}: run ch08_pipeline_parallel on several ranks "
                 "(mpirun -np 2, or ./usp run 08)")
    fig, axes = plt.subplots(len(found), 2, figsize=(14, 1.6 + 1.3 * len(found)), squeeze=False)
    for row, (name, title) in enumerate(found):
        measured = read_gantt(os.path.join(args.inp, f"gantt_measured_{name}.csv"))
        predicted = read_gantt(os.path.join(args.inp, f"gantt_predicted_{name}.csv"))
        longest = max(max(o["end"] for o in measured), max(o["end"] for o in predicted))
        draw(axes[row, 0], measured, f"{title}, measured (ms)")
        draw(axes[row, 1], predicted, f"{title}, simulated from the measured op times (ms)")
        for ax in axes[row]:
            ax.set_xlim(0, longest)
    for ax in axes[-1]:
        ax.set_xlabel("time (ms)")
    fig.legend(handles=[Patch(color=c, label=k) for k, c in COLOURS.items()], loc="upper right", ncol=4, fontsize=8)
    save(fig, args.out, "ch08_gantt_measured.png", rect=(0, 0, 1, 0.95))


if __name__ == "__main__":
    main()
