#!/usr/bin/env python3
"""Chapter 14: the model with its linear layers in FP8, scaled three ways, against fp32.

Reads <in>/fp8_curves.csv (written by ch14_mixed_precision: the loss per step of the fp32 run
and of the FP8 runs — no scaling, one scale per tensor, one per tile) and writes
<out>/ch14_fp8.png: the loss curves. Cast without a scale, the gradients flush to zero in e5m2
and the model barely learns; scaled per tensor or per tile it follows fp32.

    python3 plots/ch14_fp8.py --in out/14_mixed_precision --out plots/out
"""
import os

from figure_io import parse_args, plt, read_csv, save  # noqa: E402

COLORS = {"fp32": "black", "fp8 direct": "tab:red", "fp8 per-tensor": "tab:orange", "fp8 tiled": "tab:blue"}


def main():
    args = parse_args(__doc__, "out/14_mixed_precision", "folder with fp8_curves.csv")
    rows = read_csv(os.path.join(args.inp, "fp8_curves.csv"), ["recipe", "step", "loss"], "ch14_mixed_precision")
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for recipe, color in COLORS.items():
        mine = [r for r in rows if r["recipe"] == recipe]
        if mine:
            ax.plot([int(r["step"]) for r in mine], [float(r["loss"]) for r in mine], "-", color=color, label=recipe)
    ax.set_xlabel("step")
    ax.set_ylabel("training loss")
    ax.set_title("attention and MLP matmuls in FP8 (e4m3 forward, e5m2 gradients)", fontsize=10)
    ax.legend(fontsize=8)
    save(fig, args.out, "ch14_fp8.png")


if __name__ == "__main__":
    main()
