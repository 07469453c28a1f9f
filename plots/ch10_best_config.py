#!/usr/bin/env python3
"""Chapter 10: the best configuration the planner finds for each model and node count (a heatmap).

Reads <in>/campaign.csv (written by ch10_5d_parallelism: per model and node count, the best
layout of common/plan's search and its predicted MFU) and writes <out>/ch10_best_config.png: one
row per model, one column per node count, each cell coloured by the predicted MFU and labelled
with the layout (dp·tp·pp, ZeRO stage, micro-batch, recomputation); grey where nothing fits in
the GPUs' memory. A cell whose best layout is tied with layouts of another mesh (tied_meshes > 1:
other (tp, pp, cp) predict an MFU within the step model's own error of it) is outlined in red and
labelled "~N/M": N layouts of M meshes the model cannot rank. The playbook draws the same map from its measured campaign.

    python3 plots/ch10_best_config.py --in out/10_5d_parallelism --out plots/out
"""
import os

from figure_io import parse_args, plt, read_csv, save  # noqa: E402

NEEDED = ["model", "nodes", "fitting", "dp", "tp", "pp", "cp", "zero", "mbs", "recompute", "schedule", "mfu",
          "tied_with_best", "tied_meshes"]


def main():
    args = parse_args(__doc__, "out/10_5d_parallelism", "folder with campaign.csv")
    rows = read_csv(os.path.join(args.inp, "campaign.csv"), NEEDED, "ch10_5d_parallelism")
    models = list(dict.fromkeys(r["model"] for r in rows))
    nodes = sorted({int(r["nodes"]) for r in rows})
    grid = [[float("nan")] * len(nodes) for _ in models]
    fig, ax = plt.subplots(figsize=(1.6 * len(nodes) + 2, 1.3 * len(models) + 1.5))
    for r in rows:
        i, j = models.index(r["model"]), nodes.index(int(r["nodes"]))
        if int(r["fitting"]) == 0:
            ax.text(j, i, "does not fit", ha="center", va="center", fontsize=7, color="dimgray")
            continue
        grid[i][j] = 100 * float(r["mfu"])
        mesh = f"{r['dp']}·{r['tp']}·{r['pp']}" + (f"·cp{r['cp']}" if r["cp"] != "1" else "")
        sched = " zb" if r["schedule"] == "zb-h1" else ""
        tied, meshes = int(r["tied_with_best"]), int(r["tied_meshes"])
        label = (f"{grid[i][j]:.1f}%" + (f" ~{tied}/{meshes}" if meshes > 1 else "") + f"\n{mesh}{sched}\nZ{r['zero']} b{r['mbs']} "
                 f"{ {'none': 'no rc', 'selective': 'sel', 'full': 'full'}[r['recompute']] }")
        if meshes > 1:  # a tie between meshes: the step model cannot rank the best against the others
            ax.add_patch(plt.Rectangle((j - 0.48, i - 0.48), 0.96, 0.96, fill=False, edgecolor="red", linewidth=1.5))
        ax.text(j, i, label, ha="center", va="center", fontsize=7, color="white" if grid[i][j] < 25 else "black")
    image = ax.imshow(grid, cmap="viridis", aspect="auto")
    ax.set_xticks(range(len(nodes)))
    ax.set_xticklabels([str(n) for n in nodes])
    ax.set_yticks(range(len(models)))
    ax.set_yticklabels(models)
    ax.set_xlabel("nodes of 8 GPUs")
    ax.set_title("best layout found by the planner (dp·tp·pp[·cp] [zb: ZB-H1], ZeRO, micro-batch, recomputation) and its predicted MFU;\n"
                 "red outline, ~N/M: N layouts of M meshes within the model's own error of the best (a tie it cannot break)", fontsize=9)
    fig.colorbar(image, ax=ax, label="predicted MFU (%)")
    save(fig, args.out, "ch10_best_config.png")


if __name__ == "__main__":
    main()
