#!/usr/bin/env python3
"""Chapter 13: unfused vs fused kernels, bytes moved and achieved bandwidth per variant.

Reads <in>/fused_bandwidth.csv (written by ch13_fused_kernels: per chain and variant, the kernels
it launches, the bytes counted from them, the median time and GB/s, and the copy bandwidth
measured in the same run) and writes <out>/ch13_bandwidth.png: two panels, one group of bars per
chain — each variant's time relative to the unfused one (bars) with its bytes relative to the
unfused one (black ticks), and its achieved GB/s with the copy bandwidth as a line. A
memory-bound kernel's bar falls to its tick; a compute-bound one's (exponentials on one CPU core)
stays above it. When the run had a GPU it also wrote fused_bandwidth_gpu.csv: then
<out>/ch13_bandwidth_gpu.png shows the CUDA kernels' GB/s against the device's copy bandwidth.

    python3 plots/ch13_bandwidth.py --in out/13_fused_kernels --out plots/out
"""
import os

from figure_io import distinct, parse_args, plt, read_csv, save  # noqa: E402

NEEDED = ["chain_id", "chain", "variant", "passes", "bytes", "ms", "gb_per_s", "copy_gb_per_s"]
COLORS = {"unfused": "tab:red", "core ops": "tab:gray", "fused": "tab:blue"}


def main():
    args = parse_args(__doc__, "out/13_fused_kernels", "folder with fused_bandwidth.csv")
    rows = read_csv(os.path.join(args.inp, "fused_bandwidth.csv"), NEEDED, "ch13_fused_kernels")
    chains = distinct(rows, "chain")
    fig, (ax_t, ax_g) = plt.subplots(1, 2, figsize=(13, 4.5))
    width = 0.27
    for k, (variant, color) in enumerate(COLORS.items()):
        xs, time_ratio, bytes_ratio, speed = [], [], [], []
        for i, chain in enumerate(chains):
            mine = [r for r in rows if r["chain"] == chain and r["variant"] == variant]
            base = [r for r in rows if r["chain"] == chain and r["variant"] == "unfused"]
            if not mine or not base:
                continue
            xs.append(i + (k - 1) * width)
            time_ratio.append(float(mine[0]["ms"]) / float(base[0]["ms"]))
            bytes_ratio.append(float(mine[0]["bytes"]) / float(base[0]["bytes"]))
            speed.append(float(mine[0]["gb_per_s"]))
        ax_t.bar(xs, time_ratio, width, color=color, label=variant)
        ax_t.scatter(xs, bytes_ratio, marker="_", s=250, color="black", zorder=3,
                     label="bytes / unfused bytes" if k == 0 else None)
        ax_g.bar(xs, speed, width, color=color, label=variant)
    copy = float(rows[0]["copy_gb_per_s"])
    ax_g.axhline(copy, color="black", linestyle="--", linewidth=1, label=f"copy {copy:.1f} GB/s")
    for ax in (ax_t, ax_g):
        ax.set_xticks(range(len(chains)))
        ax.set_xticklabels(chains, rotation=25, ha="right", fontsize=8)
    ax_t.set_ylim(0, 1.4)
    ax_t.legend(fontsize=8, loc="upper center", ncol=4)
    ax_g.legend(fontsize=8)
    ax_t.set_ylabel("time / unfused time")
    ax_t.set_title("time falls with the bytes where memory is the limit", fontsize=10)
    ax_g.set_ylabel("achieved GB/s (bytes / time)")
    ax_g.set_title("bandwidth against the copy bandwidth", fontsize=10)
    save(fig, args.out, "ch13_bandwidth.png")

    gpu_csv = os.path.join(args.inp, "fused_bandwidth_gpu.csv")
    if os.path.exists(gpu_csv):
        draw_gpu(read_csv(gpu_csv, NEEDED, "ch13_fused_kernels on a GPU"), args.out)


def draw_gpu(rows, out):
    """One horizontal bar per CUDA variant: its GB/s, with the device-to-device copy as the line."""
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(rows) + 1.5))
    labels = [f'{r["chain"]}, {r["variant"]} ({r["passes"]} launch{"es" if r["passes"] != "1" else ""})' for r in rows]
    ys = list(range(len(rows)))[::-1]
    ax.barh(ys, [float(r["gb_per_s"]) for r in rows], color=[COLORS.get(r["variant"], "tab:gray") for r in rows])
    copy = float(rows[0]["copy_gb_per_s"])
    ax.axvline(copy, color="black", linestyle="--", linewidth=1, label=f"device copy {copy:.0f} GB/s")
    ax.set_yticks(ys)
    ax.set_yticklabels(labels, fontsize=8)
    ax.set_xlabel("achieved GB/s (bytes / time)")
    ax.set_title("the CUDA kernels against the GPU's copy bandwidth", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    save(fig, out, "ch13_bandwidth_gpu.png")

if __name__ == "__main__":
    main()
