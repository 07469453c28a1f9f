#!/usr/bin/env python3
"""Chapter 07: per-GPU memory of Llama 3.1 8B with context parallelism CP = 1, 2, 4, 8, vs sequence length.

Reads cp_memory.csv, the calculator's sweep (common/calc/memory_sweep.hpp; written by
ch07_context_parallel into its out folder, or by `usp_calc --sweep cp --csv FILE`), and writes
<out>/ch07_cp_memory.png: one row of panels per recomputation mode (selective, full), one panel
per CP degree, for each sequence length (4096 .. 131072) a stack of parameters, gradients,
optimizer states and activations, with the 80 GB of an H100 as a dashed line. Each rank holds s/c
of every sequence, so CP divides every activation by c: selective recomputation keeps
34·(s/c)·b·h bytes per layer, full recomputation the layer's input, 2·(s/c)·b·h. The states stay
whole on every rank (CP splits the tokens, not the model; ZeRO, chapter 05, can shard them over
the dp·cp ranks). Rows drawn: the first model found, mixed precision, dp = tp = pp = 1. Values
are analytic, bytes per rank divided by 2^30: GiB; every panel shares one scale.

    python3 plots/ch07_cp_memory.py --in out/07_context_parallel --out plots/out
    python3 plots/ch07_cp_memory.py --in cp_memory.csv
"""
from calc_sweep import main_by_degree  # noqa: E402

if __name__ == "__main__":
    main_by_degree(__doc__, "out/07_context_parallel", "cp_memory.csv", "cp", "CP", "with context parallelism",
                   "ch07_cp_memory.png")
