#!/usr/bin/env python3
"""Chapter 14: the number formats' range and resolution, from the project's own conversion code.

Reads <in>/formats.csv and <in>/grid_1_2.csv (written by ch14_mixed_precision from
common/float_formats.hpp) and writes <out>/ch14_formats.png: left, each format's range on a log
axis (from the smallest subnormal through the smallest normal to the largest finite value);
right, every value each format can represent between 1 and 2 (fp32's 2^23 + 1 values drawn as
a line).

    python3 plots/ch14_formats.py --in out/14_mixed_precision --out plots/out
"""
import os

from figure_io import parse_args, plt, read_csv, save  # noqa: E402

ORDER = ["f32", "bf16", "f16", "e5m2", "e4m3"]
COLORS = {"f32": "tab:gray", "bf16": "tab:blue", "f16": "tab:orange", "e5m2": "tab:green", "e4m3": "tab:red"}


def main():
    args = parse_args(__doc__, "out/14_mixed_precision", "folder with formats.csv and grid_1_2.csv")
    formats = {r["name"]: r for r in read_csv(os.path.join(args.inp, "formats.csv"),
                                              ["name", "min_subnormal", "min_normal", "max_finite", "epsilon"],
                                              "ch14_mixed_precision")}
    grid = read_csv(os.path.join(args.inp, "grid_1_2.csv"), ["format", "value"], "ch14_mixed_precision")
    fig, (ax_r, ax_g) = plt.subplots(1, 2, figsize=(12, 4))
    for y, name in enumerate(ORDER):
        f = formats[name]
        lo, mid, hi = float(f["min_subnormal"]), float(f["min_normal"]), float(f["max_finite"])
        ax_r.plot([lo, mid], [y, y], color=COLORS[name], linewidth=3, alpha=0.4)
        ax_r.plot([mid, hi], [y, y], color=COLORS[name], linewidth=6)
        ax_r.annotate(f"max {hi:.4g}", (hi, y), textcoords="offset points", xytext=(5, 4), fontsize=7)
        ax_r.annotate(f"{lo:.2g}", (lo, y), textcoords="offset points", xytext=(-5, 4), fontsize=7, ha="right")
        if name == "f32":
            ax_g.plot([1, 2], [y, y], color=COLORS[name], linewidth=1)
        else:
            xs = [float(r["value"]) for r in grid if r["format"] == name]
            ax_g.scatter(xs, [y] * len(xs), marker="|", s=120, color=COLORS[name])
        ax_g.annotate(f"ε = {float(f['epsilon']):.3g}", (2.0, y), textcoords="offset points", xytext=(8, -3),
                      fontsize=7)
    for ax in (ax_r, ax_g):
        ax.set_yticks(range(len(ORDER)))
        ax.set_yticklabels(ORDER)
        ax.set_ylim(-0.6, len(ORDER) - 0.4)
    ax_r.set_xscale("log", base=2)
    ax_r.set_xlabel("|value| (thin: subnormals, thick: normals)")
    ax_r.set_title("range", fontsize=10)
    ax_g.set_xlim(0.95, 2.25)
    ax_g.set_xlabel("the representable values in [1, 2]")
    ax_g.set_title("resolution", fontsize=10)
    save(fig, args.out, "ch14_formats.png")


if __name__ == "__main__":
    main()
