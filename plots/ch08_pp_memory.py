#!/usr/bin/env python3
"""Chapter 08: per-GPU memory of Llama 3.1 8B with pipeline parallelism PP = 1, 2, 4, 8, vs sequence length.

Reads pp_memory.csv, the calculator's sweep (common/calc/memory_sweep.hpp; written by
ch08_pipeline_parallel into its out folder, or by `usp_calc --sweep pp --csv FILE`), and writes
<out>/ch08_pp_memory.png: one row of panels per recomputation mode (selective, full), one panel per PP
degree, for each sequence length a stack of parameters, gradients, optimizer states and
activations of the FIRST stage (the one holding the most), with the 80 GB of an H100 dashed. The
states fall by p (a stage holds L/p layers); the activations do not: under 1F1B the first stage
keeps p micro-batches of its L/p layers in flight, p · L/p = L layers' worth. Values are
analytic, bytes per rank divided by 2^30: GiB; every panel shares one scale.

    python3 plots/ch08_pp_memory.py --in out/08_pipeline_parallel --out plots/out
    python3 plots/ch08_pp_memory.py --in pp_memory.csv
"""
from calc_sweep import main_by_degree  # noqa: E402

if __name__ == "__main__":
    main_by_degree(__doc__, "out/08_pipeline_parallel", "pp_memory.csv", "pp", "PP",
                   "with pipeline parallelism (the first stage)", "ch08_pp_memory.png")
