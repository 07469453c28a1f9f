#!/usr/bin/env python3
"""Chapter 14: one model trained in fp32, bf16, fp16 and fp16 with dynamic loss scaling.

Reads <in>/loss_curves.csv and <in>/grad_histogram.csv (written by ch14_mixed_precision) and
writes <out>/ch14_loss_curves.png: the loss per step of each recipe (skipped steps of the scaled
run marked), the loss scale per step, and the first step's gradients by binade as each recipe
stores them, with fp16's smallest subnormal and smallest normal: unscaled fp16 piles them into
its subnormals (or zero), the scaled run lifts them clear. The zeros, infinities and NaNs, which
have no binade, are counted in each recipe's legend entry (a scale too large for fp16 shows there
as inf and NaN).

    python3 plots/ch14_loss_curves.py --in out/14_mixed_precision --out plots/out
"""
import os

from figure_io import parse_args, plt, read_csv, save  # noqa: E402

COLORS = {"fp32": "black", "bf16": "tab:blue", "fp16": "tab:orange", "fp16+scaling": "tab:green"}


def main():
    args = parse_args(__doc__, "out/14_mixed_precision", "folder with loss_curves.csv and grad_histogram.csv")
    rows = read_csv(os.path.join(args.inp, "loss_curves.csv"),
                    ["recipe", "step", "loss", "scale", "applied"], "ch14_mixed_precision")
    hist = read_csv(os.path.join(args.inp, "grad_histogram.csv"), ["recipe", "log2_low", "count"],
                    "ch14_mixed_precision")
    fig, (ax_l, ax_s, ax_h) = plt.subplots(1, 3, figsize=(15, 4))
    for recipe, color in COLORS.items():
        mine = [r for r in rows if r["recipe"] == recipe]
        if not mine:
            continue
        steps = [int(r["step"]) for r in mine]
        ax_l.plot(steps, [float(r["loss"]) for r in mine], "-", color=color, label=recipe, linewidth=1.2)
        skipped = [r for r in mine if r["applied"] == "0"]
        if skipped:
            ax_l.scatter([int(r["step"]) for r in skipped], [float(r["loss"]) for r in skipped], marker="x",
                         color=color, label=f"{recipe}: skipped step", zorder=3)
        if recipe == "fp16+scaling":
            ax_s.step(steps, [float(r["scale"]) for r in mine], where="post", color=color)
        apart = {"zero": 0, "inf": 0, "nan": 0}  # the classes with no binade
        counts = {}
        for r in hist:
            if r["recipe"] != recipe:
                continue
            if r["log2_low"] in apart:
                apart[r["log2_low"]] = int(r["count"])
            else:
                counts[int(r["log2_low"])] = int(r["count"])
        if counts:
            xs = sorted(counts)
            label = f"{recipe} (zero {apart['zero']}, inf {apart['inf']}, NaN {apart['nan']})"
            ax_h.plot(xs, [counts[x] for x in xs], "o-", color=color, markersize=3, label=label)
    ax_l.set_xlabel("step")
    ax_l.set_ylabel("training loss")
    ax_l.legend(fontsize=8)
    ax_l.set_title("the same model and data under each recipe", fontsize=10)
    ax_s.set_yscale("log", base=2)
    ax_s.set_xlabel("step")
    ax_s.set_ylabel("loss scale S")
    ax_s.set_title("dynamic loss scaling: grow, overflow, halve", fontsize=10)
    for x, label in ((-24, "fp16 smallest subnormal"), (-14, "fp16 smallest normal")):
        ax_h.axvline(x, color="gray", linestyle="--", linewidth=1)
        ax_h.annotate(label, (x, 0), xycoords=("data", "axes fraction"), xytext=(3, 60), textcoords="offset points",
                      rotation=90, fontsize=7)
    ax_h.set_xlabel("log2 |gradient| as stored (first step)")
    ax_h.set_ylabel("elements (log)")
    ax_h.set_yscale("log")
    ax_h.legend(fontsize=8)
    ax_h.set_title("where the gradients sit", fontsize=10)
    save(fig, args.out, "ch14_loss_curves.png")


if __name__ == "__main__":
    main()
