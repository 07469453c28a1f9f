#!/usr/bin/env python3
"""Chapter 06: one decoder layer's saved activations per rank against the TP degree t, with and without SP.

Reads <in>/tp_variants.csv (written by ch06_tensor_parallel: one row per layout and rank, with
layer_activation_measured, the tracker's Activation growth while the first decoder layer ran
forward, and layer_activation_formula, the course's count for that layout) and writes
<out>/ch06_activation_vs_t.png: for TP and TP+SP, the measured bytes (markers, one per rank:
they coincide) and the formula (line) against t, over a grey band at t = 1's bytes divided by t.

Tensor parallelism splits only what the column blocks produce (q, k, v, the attention output,
gate, up, SwiGLU's output and the attention probabilities); the residual stream's tensors (the
layer input, the two norms' inputs and outputs) stay whole on every rank, so TP alone levels
off above 1/t. Sequence parallelism splits those by rows: the whole layer falls as 1/t.

    python3 plots/ch06_activation_vs_t.py --in out/06_tensor_parallel --out plots/out
"""
import os
import sys

from figure_io import parse_args, plt, read_csv, save  # noqa: E402

KIB = 1024.0
NEEDED = ["tp", "sp", "rank", "layer_activation_measured", "layer_activation_formula"]
STYLES = {0: ("TP", "tab:blue", "o"), 1: ("TP + SP", "tab:green", "s")}


def main():
    args = parse_args(__doc__, "out/06_tensor_parallel", "folder with tp_variants.csv")
    path = os.path.join(args.inp, "tp_variants.csv")
    rows = read_csv(path, NEEDED, "ch06_tensor_parallel")

    # t = 1 splits nothing: it is the first point of both lines.
    points = {0: {}, 1: {}}  # sp -> t -> (measured per rank, formula)
    for r in rows:
        t, sp = int(r["tp"]), int(r["sp"])
        for line in ([0, 1] if t == 1 else [sp]):
            measured, formula = points[line].setdefault(t, ([], int(r["layer_activation_formula"])))
            measured.append(int(r["layer_activation_measured"]) / KIB)
    if not any(len(p) > 1 for p in points.values()):
        sys.exit(f"{path}: only one TP degree; run ch06_tensor_parallel on several ranks (mpirun -np 4 ...)")

    fig, ax = plt.subplots(figsize=(8, 5))
    ts = sorted({t for p in points.values() for t in p})
    one = [p[1][1] for p in points.values() if 1 in p]
    if one:  # a broad band underneath: SP's line runs inside it
        ax.plot(ts, [one[0] / KIB / t for t in ts], color="grey", linewidth=7, alpha=0.25,
                label="t = 1's bytes divided by t")
    for sp, (label, colour, marker) in STYLES.items():
        p = points[sp]
        if len(p) < 2 and 1 in p:
            continue  # this mode did not run (--sp off or on)
        xs = sorted(p)
        ax.plot(xs, [p[t][1] / KIB for t in xs], color=colour, label=f"{label}: the course's formula")
        for t in xs:
            ax.scatter([t] * len(p[t][0]), p[t][0], color=colour, marker=marker, s=40, zorder=3,
                       label=f"{label}: measured (every rank)" if t == xs[0] else None)
    ax.set_xscale("log", base=2)
    ax.set_xticks(ts)
    ax.set_xticklabels([str(t) for t in ts])
    ax.set_xlabel("tensor-parallel degree t")
    ax.set_ylabel("KiB saved by one decoder layer, per rank")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=9)
    ax.set_title("One layer's activations per rank: TP splits the blocks' tensors, SP the stream's too", fontsize=10)
    save(fig, args.out, "ch06_activation_vs_t.png")


if __name__ == "__main__":
    main()
