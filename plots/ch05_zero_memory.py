#!/usr/bin/env python3
"""Chapter 05: per-GPU memory of Llama 3.1 8B at DP = 8 with plain data parallelism and ZeRO-1 / 2
/ 3, vs sequence length (the playbook's ZeRO figure).

Reads zero_memory.csv, the calculator's sweep (common/calc/memory_sweep.hpp; written by ch05_zero
into its out folder, or by `usp_calc --sweep zero --csv FILE`), and writes
<out>/ch05_zero_memory.png. For each sequence length four bars stand side by side (DP, ZeRO-1,
ZeRO-2, ZeRO-3), each a stack of parameters, gradients, optimizer states and activations. With
N_d = 8 and k = 12 (fp32 master + Adam), the states per GPU are 2N+2N+12N, 2N+2N+12N/N_d,
2N+14N/N_d and 16N/N_d; the activations are not sharded by ZeRO, so they are the same in all
four bars. Rows drawn: the model with dp > 1 (the first found), mixed precision, no
recomputation, tp = cp = pp = 1. Values are analytic, bytes divided by 2^30: GiB (the playbook labels
the same numbers "GB").

    python3 plots/ch05_zero_memory.py --in out/05_zero --out plots/out
    python3 plots/ch05_zero_memory.py --in zero_memory.csv
"""
import sys

from figure_io import plt, save  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from calc_sweep import CATEGORIES, GIB, read_sweep  # noqa: E402

CSV_NAME = "zero_memory.csv"
STAGES = ["DP", "ZeRO-1", "ZeRO-2", "ZeRO-3"]


def selected(rows):
    """The first model with dp > 1, mixed precision, no recomputation, no TP/CP/PP:
    (model, dp, {(seq, stage): row})."""
    table, model, dp = {}, None, None
    for r in rows:
        if r["precision"] != "mixed" or r["recompute"] != "none" or int(r["dp"]) < 2:
            continue
        if any(int(r[k]) != 1 for k in ("tp", "cp", "pp")):
            continue
        if model is None:
            model, dp = r["model"], int(r["dp"])
        if (r["model"], int(r["dp"])) == (model, dp):
            table[(int(r["seq"]), int(r["zero"]))] = r
    return model, dp, table


def main():
    args, path, rows = read_sweep(__doc__, "out/05_zero", CSV_NAME, "zero")
    model, dp, table = selected(rows)
    if not table:
        sys.exit(f"{path}: no rows with dp > 1, mixed precision and no recomputation")

    seqs = sorted({seq for seq, _ in table})
    width = 0.2
    fig, ax = plt.subplots(figsize=(10, 5.2))
    for stage, name in enumerate(STAGES):
        rows = [(i, table.get((seq, stage))) for i, seq in enumerate(seqs)]
        rows = [(i, r) for i, r in rows if r]
        x = [i + (stage - 1.5) * width for i, _ in rows]
        bottom = [0.0] * len(rows)
        for column, _label, colour in CATEGORIES:
            heights = [int(r[column]) / GIB for _, r in rows]
            ax.bar(x, heights, width * 0.92, bottom=bottom, color=colour)
            bottom = [b + h for b, h in zip(bottom, heights)]
        for xi, total in zip(x, bottom):  # stage name above each bar
            ax.annotate(name, (xi, total), ha="center", va="bottom", fontsize=6.5, rotation=90,
                        xytext=(0, 2), textcoords="offset points")
    ax.set_xticks(range(len(seqs)))
    ax.set_xticklabels([str(s) for s in seqs])
    ax.set_xlabel("sequence length")
    ax.set_ylabel("memory per GPU (GiB)")
    ax.margins(y=0.12)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(handles=[Patch(color=colour, label=label) for _c, label, colour in CATEGORIES], fontsize=8,
              loc="upper left")
    any_row = next(iter(table.values()))
    ax.set_title(f"{model} ({int(any_row['num_parameters']) / 1e9:.1f}B) at DP = {dp}: plain DP and ZeRO-1/2/3 — "
                 "mixed precision, no recomputation, b = 1", fontsize=10)
    save(fig, args.out, "ch05_zero_memory.png")


if __name__ == "__main__":
    main()
