#!/usr/bin/env python3
"""Chapter 07: each cp rank's attention compute time per step, for every attention and layout.

Reads <in>/cp_variants.csv (written by ch07_context_parallel: one row per variant and rank, with
attention_seconds, the rank's forward attention compute per step (the median over the steps), and
attention_blocks, the blocks of the causal mask it computed) and writes
<out>/ch07_attention_time.png: one group of bars per variant, one bar per cp rank of the first
data-parallel replica, labelled with its blocks. With contiguous chunks the time grows with the
rank (rank r computes r + 1 blocks), so every rank waits for the last one; zig-zag levels it.
The all-to-all computes whole sequences of its heads, the same work on every rank.

    python3 plots/ch07_attention_time.py --in out/07_context_parallel --out plots/out
"""
import os

from figure_io import parse_args, plt, read_csv, save  # noqa: E402

NEEDED = ["label", "attention", "sharding", "cp", "dp", "dp_rank", "cp_rank", "attention_seconds", "attention_blocks"]


def main():
    args = parse_args(__doc__, "out/07_context_parallel", "folder with cp_variants.csv")
    path = os.path.join(args.inp, "cp_variants.csv")
    rows = read_csv(path, NEEDED, "ch07_context_parallel")

    variants = {}  # (attention, sharding, dp) -> [(cp rank, ms, blocks)]
    for r in rows:
        if int(r["dp_rank"]) == 0:
            variants.setdefault((r["attention"], r["sharding"], int(r["dp"])), []).append(
                (int(r["cp_rank"]), 1e3 * float(r["attention_seconds"]), int(r["attention_blocks"])))
    W = int(rows[0]["cp"])
    colours = plt.get_cmap("tab10")
    width = 0.8 / W

    fig, ax = plt.subplots(figsize=(max(6.0, 1.6 * len(variants)), 4.4))
    for i, ranks in enumerate(variants.values()):
        for rank, ms, blocks in sorted(ranks):
            x = i - 0.4 + width * (rank + 0.5)
            ax.bar(x, ms, width, color=colours(rank % 10), label=f"rank {rank}" if i == 0 else None)
            ax.annotate(str(blocks), (x, ms), ha="center", va="bottom", fontsize=7, xytext=(0, 2),
                        textcoords="offset points")
    ax.set_xticks(range(len(variants)))
    ax.set_xticklabels([f"{a}\n{s}" + (f"\n(dp {dp})" if dp > 1 else "") for a, s, dp in variants], fontsize=8)
    ax.set_ylabel("forward attention compute per step (ms)")
    ax.grid(True, axis="y", alpha=0.3)
    ax.margins(y=0.12)
    ax.legend(fontsize=8)
    ax.set_title(f"Attention compute per rank of cp = {W} (numbers: blocks of the causal mask computed)", fontsize=9)
    save(fig, args.out, "ch07_attention_time.png")


if __name__ == "__main__":
    main()
