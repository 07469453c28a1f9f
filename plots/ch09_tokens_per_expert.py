#!/usr/bin/env python3
"""Chapter 09: tokens per expert over the training steps, with and without the load-balancing loss.

Reads <in>/tokens_per_expert.csv (written by ch09_expert_parallel: per variant, step, layer and
expert, the assignments the router made over all ranks and those computed within the capacity)
and writes <out>/ch09_tokens_per_expert.png: for the largest ep, one panel with the aux loss and
one without, each expert's computed tokens in layer 0 per step as a stacked area (equal bands =
balanced), and below them the imbalance max/mean over experts per step (the mean over layers) of
both runs on one axis. Without the loss a few experts take most tokens; with it the bands even out.

    python3 plots/ch09_tokens_per_expert.py --in out/09_expert_parallel --out plots/out
"""
import os
import sys
from collections import defaultdict

from figure_io import parse_args, plt, read_csv, save  # noqa: E402

NEEDED = ["variant", "ep", "aux", "step", "layer", "expert", "routed", "kept"]


def main():
    args = parse_args(__doc__, "out/09_expert_parallel", "folder with tokens_per_expert.csv")
    path = os.path.join(args.inp, "tokens_per_expert.csv")
    rows = read_csv(path, NEEDED, "ch09_expert_parallel")
    ep = max(int(r["ep"]) for r in rows)
    # kept[aux][step][layer][expert]
    kept = {0: defaultdict(lambda: defaultdict(dict)), 1: defaultdict(lambda: defaultdict(dict))}
    for r in rows:
        if int(r["ep"]) == ep:
            kept[int(r["aux"])][int(r["step"])][int(r["layer"])][int(r["expert"])] = int(r["kept"])
    runs = [(aux, title) for aux, title in [(1, "with the load-balancing loss"), (0, "without it")] if kept[aux]]
    if not runs:
        sys.exit(f"{path}: no rows for ep = {ep}")
    fig = plt.figure(figsize=(6 * len(runs), 7))
    grid = fig.add_gridspec(2, len(runs), height_ratios=[3, 2])
    top = [fig.add_subplot(grid[0, c]) for c in range(len(runs))]
    bottom = fig.add_subplot(grid[1, :])
    for col, (aux, title) in enumerate(runs):
        steps = sorted(kept[aux])
        experts = sorted(kept[aux][steps[0]][0])
        bands = [[kept[aux][s][0][e] for s in steps] for e in experts]
        top[col].stackplot(steps, bands, labels=[f"expert {e}" for e in experts])
        top[col].set_title(f"EP {ep}, {title}: layer 0", fontsize=10)
        top[col].set_xlabel("step")
        top[col].set_ylabel("tokens computed (all ranks)")
        imbalance = []
        for s in steps:
            per_layer = []
            for layer, counts in kept[aux][s].items():
                total = sum(counts.values())
                per_layer.append(max(counts.values()) * len(counts) / total if total else 1.0)
            imbalance.append(sum(per_layer) / len(per_layer))
        bottom.plot(steps, imbalance, label=title, color="tab:green" if aux else "tab:red")
    top[0].legend(loc="upper left", fontsize=7, ncol=2)
    bottom.axhline(1.0, color="gray", linewidth=0.8, linestyle=":")
    bottom.set_xlabel("step")
    bottom.set_ylabel("imbalance: max / mean\ntokens per expert (all layers)")
    bottom.legend(fontsize=8)
    save(fig, args.out, "ch09_tokens_per_expert.png")


if __name__ == "__main__":
    main()
