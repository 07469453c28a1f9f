#!/usr/bin/env python3
"""Chapter 12: naive vs flash attention on the CPU, time and memory against the sequence length.

Reads <in>/attention_vs_seq.csv (written by ch12_flash_attention: causal attention, forward +
backward, per sequence length and variant: the times and the tracker's peak memory above the
inputs and outputs) and writes <out>/ch12_attention_vs_seq.png: two panels on log-log axes,
time (forward + backward) and memory. Naive attention keeps S and P, [B, H, T, T]: its memory
grows as T². Flash attention keeps tiles and the log-sum-exp: its memory is flat.

    python3 plots/ch12_attention_vs_seq.py --in out/12_flash_attention --out plots/out
"""
import os

from figure_io import MIB, parse_args, plt, read_csv, save  # noqa: E402

NEEDED = ["seq", "variant", "forward_ms", "backward_ms", "memory_bytes"]
COLORS = {"naive": "tab:red", "flash": "tab:blue"}


def main():
    args = parse_args(__doc__, "out/12_flash_attention", "folder with attention_vs_seq.csv")
    rows = read_csv(os.path.join(args.inp, "attention_vs_seq.csv"), NEEDED, "ch12_flash_attention")
    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(10, 4))
    for variant, color in COLORS.items():
        mine = [r for r in rows if r["variant"] == variant]
        seq = [int(r["seq"]) for r in mine]
        ax_t.plot(seq, [float(r["forward_ms"]) + float(r["backward_ms"]) for r in mine], "o-", color=color,
                  label=variant)
        ax_m.plot(seq, [max(float(r["memory_bytes"]) / MIB, 1e-3) for r in mine], "o-", color=color, label=variant)
    for ax in (ax_t, ax_m):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("sequence length T")
        ax.legend()
    ax_t.set_ylabel("forward + backward (ms, one CPU core)")
    ax_t.set_title("time: both O(T²) FLOPs", fontsize=10)
    ax_m.set_ylabel("memory above inputs and outputs (MiB)")
    ax_m.set_title("memory: naive O(T²), flash flat", fontsize=10)
    save(fig, args.out, "ch12_attention_vs_seq.png")


if __name__ == "__main__":
    main()
