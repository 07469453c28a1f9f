#!/usr/bin/env python3
"""Chapter 07: the causal mask's chunk blocks coloured by the rank that computed them, contiguous vs zig-zag.

Reads <in>/attention_blocks.csv (written by ch07_context_parallel: one row per block that a cp rank's
attention computed in its last forward: the attention, the layout, the rank, the ring step, the
query chunk and the key chunk, and whether it is the diagonal's triangle) and writes
<out>/ch07_mask_by_rank.png: for one attention (the ring when the run has it, else the first), one
panel per layout. The sequence is cut into the layout's chunks (W contiguous, 2W zig-zag); cell
(query chunk, key chunk) of the mask is coloured by the rank that computed it (a triangle on the
diagonal), and its number is the ring step at which it was computed. Above the diagonal nothing
is visible: those blocks are skipped. Each panel lists how many blocks each rank computed:
contiguous chunks give rank r r + 1 of them (the last rank does W times the first one's work),
zig-zag pairs chunk r with chunk 2W-1-r so that every rank does 2W + 1.

    python3 plots/ch07_mask_by_rank.py --in out/07_context_parallel --out plots/out
"""
import os

from figure_io import parse_args, plt, read_csv, save  # noqa: E402
from matplotlib.patches import Patch, Polygon, Rectangle  # noqa: E402

NEEDED = ["attention", "sharding", "cp", "rank", "step", "q_chunk", "k_chunk", "diagonal"]
LAYOUTS = ["contiguous", "zig-zag"]


def main():
    args = parse_args(__doc__, "out/07_context_parallel", "folder with attention_blocks.csv")
    path = os.path.join(args.inp, "attention_blocks.csv")
    rows = read_csv(path, NEEDED, "ch07_context_parallel")

    attentions = [r["attention"] for r in rows]
    attention = "ring" if "ring" in attentions else attentions[0]
    panels = {s: [r for r in rows if r["attention"] == attention and r["sharding"] == s] for s in LAYOUTS}
    panels = {s: p for s, p in panels.items() if p}
    W = int(next(iter(panels.values()))[0]["cp"])
    colours = plt.get_cmap("tab10")

    fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels), 4.9), squeeze=False)
    for ax, (sharding, blocks) in zip(axes[0], panels.items()):
        chunks = W if sharding == "contiguous" else 2 * W
        per_rank = [0] * W
        for b in blocks:
            q, k, rank = int(b["q_chunk"]), int(b["k_chunk"]), int(b["rank"])
            per_rank[rank] += 1
            colour = colours(rank % 10)
            if int(b["diagonal"]):  # the causal triangle: keys up to the query
                ax.add_patch(Polygon([(k, q), (k, q + 1), (k + 1, q + 1)], closed=True, color=colour))
            else:
                ax.add_patch(Rectangle((k, q), 1, 1, color=colour))
            diagonal = int(b["diagonal"])  # the step's number inside the triangle's lower-left half
            ax.text(k + (0.3 if diagonal else 0.5), q + (0.7 if diagonal else 0.5), b["step"], ha="center",
                    va="center", fontsize=7, color="white")
        for i in range(chunks + 1):
            ax.axhline(i, color="white", linewidth=1)
            ax.axvline(i, color="white", linewidth=1)
        ax.set_xlim(0, chunks)
        ax.set_ylim(chunks, 0)  # query chunk 0 at the top, as the mask is drawn
        ax.set_aspect("equal")
        ax.set_xticks([i + 0.5 for i in range(chunks)])
        ax.set_xticklabels(range(chunks), fontsize=7)
        ax.set_yticks([i + 0.5 for i in range(chunks)])
        ax.set_yticklabels(range(chunks), fontsize=7)
        ax.set_xlabel("key chunk")
        ax.set_ylabel("query chunk")
        ax.set_title(f"{sharding}: blocks per rank " + ", ".join(str(n) for n in per_rank), fontsize=9)
    handles = [Patch(color=colours(r % 10), label=f"rank {r}") for r in range(W)]
    axes[0][-1].legend(handles=handles, fontsize=7.5, loc="upper right")
    fig.suptitle(f"{attention} attention on cp = {W} ranks: who computes which block of the causal mask "
                 "(numbers: the ring step)", fontsize=10)
    save(fig, args.out, "ch07_mask_by_rank.png", rect=(0, 0, 1, 0.94))


if __name__ == "__main__":
    main()
