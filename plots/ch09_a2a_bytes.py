#!/usr/bin/env python3
"""Chapter 09: all-to-all bytes and parameters per rank, for each expert-parallel size.

Reads <in>/ep_ranks.csv (written by ch09_expert_parallel: per variant and rank, the bytes its
all-to-alls sent per step, the parameters it holds and its peak memory) and writes
<out>/ch09_a2a_bytes.png: left, the all-to-all MiB each rank sends per step, one group of bars per
variant (ep = 1 sends nothing: every expert is local); right, the MiB of parameters each rank
holds (the experts' share falls as 1/ep, the dense part stays).

    python3 plots/ch09_a2a_bytes.py --in out/09_expert_parallel --out plots/out
"""
import os

from figure_io import MIB, parse_args, plt, read_csv, save  # noqa: E402

NEEDED = ["variant", "ep", "aux", "rank", "a2a_bytes_per_step", "params_held", "peak_total_bytes"]


def main():
    args = parse_args(__doc__, "out/09_expert_parallel", "folder with ep_ranks.csv")
    path = os.path.join(args.inp, "ep_ranks.csv")
    rows = read_csv(path, NEEDED, "ch09_expert_parallel")
    variants = list(dict.fromkeys(r["variant"] for r in rows))
    ranks = sorted({int(r["rank"]) for r in rows})
    width = 0.8 / len(variants)
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4))
    for i, v in enumerate(variants):
        mine = sorted((r for r in rows if r["variant"] == v), key=lambda r: int(r["rank"]))
        xs = [int(r["rank"]) + (i - (len(variants) - 1) / 2) * width for r in mine]
        label = f"EP {mine[0]['ep']}, aux {'on' if mine[0]['aux'] == '1' else 'off'}"
        left.bar(xs, [int(r["a2a_bytes_per_step"]) / MIB for r in mine], width, label=label)
        right.bar(xs, [int(r["params_held"]) * 4 / MIB for r in mine], width, label=label)
    for ax, ylabel in [(left, "all-to-all MiB sent per step"), (right, "parameters held, MiB (fp32)")]:
        ax.set_xticks(ranks)
        ax.set_xticklabels([f"rank {r}" for r in ranks])
        ax.set_ylabel(ylabel)
        ax.legend(fontsize=8)
    left.set_title("token rows to other ranks' experts and back", fontsize=10)
    right.set_title("the experts' share falls as 1/ep", fontsize=10)
    save(fig, args.out, "ch09_a2a_bytes.png")


if __name__ == "__main__":
    main()
