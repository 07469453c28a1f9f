#!/usr/bin/env python3
"""Chapter 10: the planner's step model against the playbook's measured DP scaling (its calibration).

Reads <in>/calibration.csv (written by ch10_5d_parallelism: the 1.34B model's DP-scaling series,
measured MFU, the MFU the step model predicts with its fitted constants, and each point's
leave-one-out prediction (the model fitted on the other points) before and after the latency and
GEMM-memory terms) and writes <out>/ch10_calibration.png: MFU against the number of GPUs,
measured points, the predicted line and the held-out predictions.
The fall from 39% on one node to 15% on 32 nodes is the gradient all-reduce: it grows with the
nodes the DP group spans while each GPU's compute per step shrinks.

    python3 plots/ch10_calibration.py --in out/10_5d_parallelism --out plots/out
"""
import os

from figure_io import parse_args, plt, read_csv, save  # noqa: E402

NEEDED = ["dp", "mbs", "gas", "measured_mfu", "predicted_mfu", "loo_before_mfu", "loo_after_mfu"]


def main():
    args = parse_args(__doc__, "out/10_5d_parallelism", "folder with calibration.csv")
    rows = read_csv(os.path.join(args.inp, "calibration.csv"), NEEDED, "ch10_5d_parallelism")
    dp = [int(r["dp"]) for r in rows]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(dp, [100 * float(r["predicted_mfu"]) for r in rows], "-", color="tab:blue", label="step model")
    ax.plot(dp, [100 * float(r["measured_mfu"]) for r in rows], "o", color="black", label="measured (playbook)")
    ax.plot(dp, [100 * float(r["loo_before_mfu"]) for r in rows], "x", color="tab:gray",
            label="held out, fitted on the others: before the new terms")
    ax.plot(dp, [100 * float(r["loo_after_mfu"]) for r in rows], "+", color="tab:red", markersize=9,
            label="held out, fitted on the others: after")
    ax.set_xscale("log", base=2)
    ax.set_xticks(dp)
    ax.set_xticklabels([str(d) for d in dp])
    ax.set_xlabel("GPUs (data parallel)")
    ax.set_ylabel("MFU (%)")
    ax.set_ylim(0, None)
    ax.set_title("1.34B model, DP scaling: the planner's calibration set", fontsize=10)
    ax.legend(fontsize=8)
    save(fig, args.out, "ch10_calibration.png")


if __name__ == "__main__":
    main()
