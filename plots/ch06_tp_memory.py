#!/usr/bin/env python3
"""Chapter 06: per-GPU memory of Llama 3.1 70B with tensor parallelism TP = 1, 8, 16, without and
with sequence parallelism, vs sequence length (the playbook's TP / SP memory figure).

Reads tp_memory.csv, the calculator's sweep (common/calc/memory_sweep.hpp; written by
ch06_tensor_parallel into its out folder, or by `usp_calc --sweep tp --csv FILE`), and writes
<out>/ch06_tp_memory.png: one panel per layout (TP 1, TP 8, TP 8 + SP, TP 16, TP 16 + SP), for
each sequence length a stack of parameters, gradients, optimizer states and activations, with
the 80 GB of an H100 as a dashed line. TP splits every linear weight (and the vocabulary) t ways;
its activations per layer are s·b·h·(10 + 24/t + 5·a·s/(h·t)): the 10·s·b·h of the LayerNorm
and dropout regions stay whole on every rank. SP splits those along the sequence too:
s·b·h·(34/t + 5·a·s/(h·t)), and leaves the states as TP alone has them. Rows drawn: the first
model found, mixed precision, no recomputation, dp = cp = pp = 1. Values are analytic, bytes per
rank divided by 2^30: GiB (the playbook labels the same numbers "GB"); each panel has its own
scale, and the number above a bar is its total.

    python3 plots/ch06_tp_memory.py --in out/06_tensor_parallel --out plots/out
    python3 plots/ch06_tp_memory.py --in tp_memory.csv
"""
import sys

from figure_io import plt, save  # noqa: E402

from calc_sweep import legend_handles, read_sweep, stack_bars  # noqa: E402

CSV_NAME = "tp_memory.csv"


def selected(rows):
    """The first model, mixed precision, no recomputation, no DP/CP/PP:
    (model, {(tp, sp): [row, ...] by seq}), layouts ordered by (tp, sp)."""
    panels, model = {}, None
    for r in rows:
        if r["precision"] != "mixed" or r["recompute"] != "none":
            continue
        if any(int(r[k]) != 1 for k in ("dp", "cp", "pp")):
            continue
        model = model or r["model"]
        if r["model"] == model:
            panels.setdefault((int(r["tp"]), int(r["sp"])), []).append(r)
    for layout in panels:
        panels[layout].sort(key=lambda r: int(r["seq"]))
    return model, dict(sorted(panels.items()))


def layout_name(tp, sp):
    return "no TP" if tp == 1 and not sp else f"TP {tp}" + (" + SP" if sp else "")


def main():
    args, path, rows = read_sweep(__doc__, "out/06_tensor_parallel", CSV_NAME, "tp")
    model, panels = selected(rows)
    if not panels:
        sys.exit(f"{path}: no rows with mixed precision, no recomputation and dp = cp = pp = 1")

    fig, axes = plt.subplots(1, len(panels), figsize=(3.9 * len(panels), 4.6), squeeze=False)
    for ax, ((tp, sp), rows) in zip(axes[0], panels.items()):
        stack_bars(ax, rows, 7)
        ax.set_xticklabels([r["seq"] for r in rows], fontsize=8)
        ax.set_xlabel("sequence length")
        ax.set_title(layout_name(tp, sp), fontsize=10)
        ax.margins(y=0.08)
        ax.grid(True, axis="y", alpha=0.3)
    axes[0][0].set_ylabel("memory per GPU (GiB)")
    axes[0][0].legend(handles=legend_handles(), fontsize=7.5, loc="upper left")
    any_row = next(iter(panels.values()))[0]
    fig.suptitle(f"{model} ({int(any_row['num_parameters']) / 1e9:.1f}B) per GPU with tensor parallelism, without "
                 "and with sequence parallelism — mixed precision, no recomputation, b = 1", fontsize=11)
    save(fig, args.out, "ch06_tp_memory.png", rect=(0, 0, 1, 0.95))


if __name__ == "__main__":
    main()
