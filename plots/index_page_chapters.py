"""The index page's table: per chapter, the figures it draws (with the playbook figure each one
regenerates) and the numbers that matter, each a path into its summary.json. Read by
plots/index_page.py, which renders it; adding a chapter is one entry in CHAPTERS.
"""


def fig(png, caption, only=None):
    """A figure of the chapter: the PNG's name in plots/out and what it shows; only: when the
    figure is drawn only under some condition ("with a GPU"), so that its absence is not a gap."""
    return {"png": png, "caption": caption, "only": only}


def num(label, ours, ref=None, ref_label=None, unit=None, agg="first"):
    """One number: label (may name summary.json values as {path}), ours (a path, see resolve()),
    and optionally ref (the formula's, the playbook's, the baseline's: a path) and whose it is."""
    return {"label": label, "ours": ours, "ref": ref, "ref_label": ref_label, "unit": unit, "agg": agg}


# ---- the table: per chapter, its figures and its numbers --------------------------------------
# Paths: dotted keys into summary.json; [n] an index (-1: the last); [key=value] / [key!=value]
# keep the list's elements that match (then the path goes on in each); [*] all of them. A path
# that yields several values takes agg of them: first, max, min, all (booleans), count.
# "a | b": the first of the two that summary.json has.
CHAPTERS = {
    "00": {
        "figures": [fig("ch00_bandwidth.png",
                        "Bus bandwidth against message size, one line per collective (our ring all-reduce dashed) — "
                        "the nccl-tests-style measurement behind the playbook's appendix A0 (Parallel Programming "
                        "Crash Course) and its collective-bandwidth figures, on this machine's MPI ranks.")],
        "numbers": [
            num("ring all-reduce: bytes rank 0 sent", "ring_check.bytes_sent_rank0",
                "ring_check.bytes_formula_rank0", "formula 2(N−1)/N · size", "bytes"),
            num("ring all-reduce equals the library's, bit for bit", "ring_check.bit_equal"),
            num("ring busbw / library busbw (at {ratio_at_bytes} bytes)", "ring_to_library_busbw_ratio", unit="ratio"),
        ],
    },
    "01": {
        "figures": [
            fig("ch01_memory_timeline.png",
                "The memory profile of the first training steps, stacked by category — regenerates the playbook's "
                "memory-profile figure (Memory usage in Transformers), from our tracker."),
            fig("ch01_memory_vs_seq.png",
                "Training memory against sequence length for Llama 3.1 8B / 70B / 405B — regenerates the playbook's "
                "memory usage vs sequence length figure (from the course's calculator)."),
        ],
        "numbers": [
            num("one layer's saved activations", "results.layer_activation_bytes.measured",
                "results.layer_activation_bytes.exercise", "count (exercise 01.1)", "bytes"),
            num("parameters", "results.breakdown.parameter.measured", "results.breakdown.parameter.expected",
                "formula", "bytes"),
            num("gradients", "results.breakdown.gradient.measured", "results.breakdown.gradient.expected",
                "formula", "bytes"),
            num("optimizer states", "results.breakdown.optimizer_state.measured",
                "results.breakdown.optimizer_state.expected", "formula", "bytes"),
            num("activations (peak)", "results.breakdown.activation.measured", "results.breakdown.activation.expected",
                "formula", "bytes"),
            num("every category as counted", "results.all_match"),
        ],
    },
    "02": {
        "figures": [fig("ch02_recompute_memory.png",
                        "Activation memory against sequence length with no / selective / full recomputation, "
                        "Llama 1B to 405B — regenerates the playbook's activation recomputation figure (calculator).")],
        "numbers": [
            num("one layer kept, no recomputation", "results.modes[mode=none].layer_kept",
                "results.modes[mode=none].layer_formula", "formula", "bytes"),
            num("one layer kept, selective", "results.modes[mode=selective].layer_kept",
                "results.modes[mode=selective].layer_formula", "formula", "bytes"),
            num("one layer kept, full", "results.modes[mode=full].layer_kept",
                "results.modes[mode=full].layer_formula", "formula", "bytes"),
            num("full recomputation: hardware FLOPs", "results.modes[mode=full].hardware_flops",
                "results.modes[mode=full].model_flops", "model FLOPs", "flops"),
            num("gradients identical, formula exact", "results.gradients_identical_and_formula_exact"),
        ],
    },
    "03": {
        "figures": [fig("ch03_accumulation.png",
                        "Peak activation memory of k accumulated micro-batches against one big batch — the playbook's "
                        "gradient accumulation argument, measured (the playbook draws no such figure)."),
                    fig("ch03_learning_curve.png",
                        "The training loss of every step and the loss on held-out data (--eval-every): the run "
                        "learning, measured on text it never trained on.")],
        "numbers": [
            num("peak activations, k = {results.comparisons[-1].k} accumulated",
                "results.comparisons[-1].peak_activation_accumulated",
                "results.comparisons[-1].peak_activation_big", "one big batch", "bytes"),
            num("loss, k = {results.comparisons[-1].k} accumulated", "results.comparisons[-1].loss_accumulated",
                "results.comparisons[-1].loss_big", "one big batch"),
            num("largest parameter difference after the step", "results.comparisons[*].max_param_diff", agg="max"),
        ],
    },
    "04": {
        "figures": [fig("ch04_dp_timelines.png",
                        "Compute and communication timelines of naive, overlapped and bucketed DP — our measured "
                        "version of the playbook's data-parallelism overlap and bucketing figures.")],
        "numbers": [
            num("bytes sent per step, bucketing", "results.variants[mode=bucketing].bytes_per_step",
                "results.ring_bytes_per_step", "formula 2(N−1)/N · gradients", "bytes"),
            num("communication hidden, overlap", "results.variants[mode=overlap].hidden_fraction", unit="percent"),
            num("communication hidden, bucketing", "results.variants[mode=bucketing].hidden_fraction", unit="percent"),
            num("step time, bucketing", "results.variants[mode=bucketing].step_seconds",
                "results.variants[mode=naive].step_seconds", "naive", "seconds"),
            num("largest relative loss gap to the single-rank baseline",
                "results.variants[*].max_rel_loss_diff_vs_baseline", agg="max"),
        ],
    },
    "05": {
        "figures": [
            fig("ch05_zero_memory.png",
                "Per-GPU memory of Llama 3.1 8B at DP = 8, plain DP and ZeRO-1 / 2 / 3, against sequence length — "
                "regenerates the playbook's ZeRO memory figure (calculator)."),
            fig("ch05_zero_stages.png",
                "Measured memory per rank and bytes sent per step by ZeRO stage — the playbook's ZeRO memory "
                "formulas checked on our ranks (not a playbook figure)."),
            fig("ch05_zero3_trace.png",
                "ZeRO-3 timelines with and without prefetching — our trace of the playbook's ZeRO-3 "
                "all-gather / reduce-scatter overlap figure."),
        ],
        "numbers": [
            num("ZeRO-1: optimizer states kept on rank 0",
                "results.stages[label=ZeRO-1].resident_rank0.optimizer_state",
                "results.stages[label=ZeRO-1].formula_rank0.optimizer_state", "formula", "bytes"),
            num("ZeRO-2: gradients kept on rank 0", "results.stages[label=ZeRO-2].resident_rank0.gradient",
                "results.stages[label=ZeRO-2].formula_rank0.gradient", "formula", "bytes"),
            num("ZeRO-3: parameters kept on rank 0", "results.stages[label=ZeRO-3].resident_rank0.parameter",
                "results.stages[label=ZeRO-3].formula_rank0.parameter", "formula", "bytes"),
            num("ZeRO-3: all-gathers hidden behind compute", "results.stages[label=ZeRO-3].trace.all_gather_hidden_fraction",
                unit="percent"),
            num("largest parameter difference to plain DP", "results.stages[*].max_param_diff_vs_first", agg="max"),
        ],
    },
    "06": {
        "figures": [
            fig("ch06_activation_vs_t.png",
                "One decoder layer's saved activations per rank against t, with and without SP — measured against "
                "the playbook's TP / SP activation formulas."),
            fig("ch06_tp_traces.png",
                "One step of TP and of TP + SP at the largest t, compute and communication — our trace of the "
                "playbook's TP and SP communication figures."),
            fig("ch06_tp_memory.png",
                "Per-GPU memory of Llama 3.1 70B at TP = 1, 8, 16 without and with SP — regenerates the playbook's "
                "TP / SP memory figures (calculator)."),
        ],
        "numbers": [
            num("one layer's activations, {results.variants[0].label} (rank 0)",
                "results.variants[0].rank0.layer_activation_measured",
                "results.variants[0].rank0.layer_activation_formula", "formula", "bytes"),
            num("one layer's activations, {results.variants[-1].label} (rank 0)",
                "results.variants[-1].rank0.layer_activation_measured",
                "results.variants[-1].rank0.layer_activation_formula", "formula", "bytes"),
            num("losses agree across the layouts", "results.losses_agree"),
            num("largest relative loss difference", "results.max_relative_loss_difference"),
        ],
    },
    "07": {
        "figures": [
            fig("ch07_mask_by_rank.png",
                "The causal mask's blocks coloured by the rank that computed them, contiguous against zig-zag — "
                "regenerates the playbook's zig-zag ring attention figure."),
            fig("ch07_attention_time.png",
                "Each cp rank's attention time per step — the load imbalance the playbook's zig-zag figure "
                "argues, measured (not a playbook figure)."),
            fig("ch07_cp_memory.png",
                "Per-GPU memory of Llama 3.1 8B at CP = 1, 2, 4, 8 against sequence length — the playbook's "
                "context-parallelism memory argument (calculator)."),
        ],
        "numbers": [
            num("K/V held for attention, {results.variants[-1].label} (rank 0)",
                "results.variants[-1].rank0.attention_kv_measured",
                "results.variants[-1].rank0.attention_kv_formula", "formula", "bytes"),
            num("every collective's bytes as counted", "results.comm_matches_count"),
            num("largest relative loss difference", "results.max_relative_loss_difference"),
        ],
    },
    "08": {
        "figures": [
            fig("ch08_gantt.png",
                "Simulated Gantt chart of each schedule — regenerates the playbook's AFAB, 1F1B, interleaved, "
                "zero-bubble and DualPipe schedule figures."),
            fig("ch08_bubble.png",
                "The bubble against the number of micro-batches, simulated and by formula — the playbook's "
                "bubble formulas (p−1)/m and (p−1)/(v·m) (not a playbook figure)."),
            fig("ch08_pp_memory.png",
                "Per-GPU memory of Llama 3.1 8B at PP = 1, 2, 4, 8 — the playbook's pipeline-parallelism memory "
                "argument (calculator)."),
            fig("ch08_gantt_measured.png",
                "What the executor ran on MPI ranks next to what the simulator predicts (ours).",
                only="with MPI ranks"),
        ],
        "numbers": [
            num("bubble, AFAB", "results.schedules[schedule=afab].bubble | schedules[schedule=afab].bubble",
                "results.schedules[schedule=afab].bubble_formula | schedules[schedule=afab].bubble_formula",
                "formula (p−1)/m"),
            num("bubble, 1F1B", "results.schedules[schedule=1f1b].bubble | schedules[schedule=1f1b].bubble",
                "results.schedules[schedule=1f1b].bubble_formula | schedules[schedule=1f1b].bubble_formula",
                "formula (p−1)/m"),
            num("bubble, interleaved", "results.schedules[schedule=interleaved].bubble | "
                "schedules[schedule=interleaved].bubble",
                "results.schedules[schedule=interleaved].bubble_formula | "
                "schedules[schedule=interleaved].bubble_formula", "formula (p−1)/(v·m)"),
            num("bubble, ZB-H1", "results.schedules[schedule=zb-h1].bubble | schedules[schedule=zb-h1].bubble",
                "results.schedules[schedule=zb-h1].bubble_formula | schedules[schedule=zb-h1].bubble_formula",
                "formula"),
            num("bubble, DualPipeV", "results.schedules[schedule=dualpipev].bubble | "
                "schedules[schedule=dualpipev].bubble",
                "results.schedules[schedule=dualpipev].bubble_formula | schedules[schedule=dualpipev].bubble_formula",
                "formula"),
            num("measured bubble on the ranks, 1F1B", "results.runs[schedule=1f1b].bubble_measured",
                "results.runs[schedule=1f1b].bubble_predicted", "simulator"),
        ],
    },
    "09": {
        "figures": [
            fig("ch09_tokens_per_expert.png",
                "Tokens per expert over the steps, with and without the load-balancing loss — the playbook's "
                "expert-parallelism load-balancing argument, measured (not a playbook figure)."),
            fig("ch09_a2a_bytes.png",
                "All-to-all bytes and parameters per rank for each EP size (ours)."),
        ],
        "numbers": [
            num("parameters", "results.num_parameters", "results.active_parameters", "active per token", "count"),
            num("expert imbalance late in training, {results.variants[0].variant}",
                "results.variants[0].imbalance_late", "results.variants[0].imbalance_first", "first step"),
            num("expert imbalance late in training, {results.variants[-1].variant}",
                "results.variants[-1].imbalance_late", "results.variants[-1].imbalance_first", "first step"),
        ],
    },
    "10": {
        "figures": [
            fig("ch10_memory_8b.png",
                "The playbook's 8B model, memory per GPU under each parallelism (calculator)."),
            fig("ch10_calibration.png",
                "The planner's step model against the playbook's measured DP scaling of the 1.34B model "
                "(its calibration), with each point's leave-one-out prediction."),
            fig("ch10_best_config.png",
                "The best configuration per model and node count — regenerates the playbook's best-configuration "
                "heatmap (Finding the best training configuration), from our planner; outlined: ties between meshes."),
        ],
        "numbers": [
            num("layouts trained", "results.layouts[*].layout", agg="count"),
            num("largest relative loss gap to the single-device run", "results.layouts[*].max_relative_loss_gap",
                agg="max"),
            num("every layout's memory as predicted", "results.layouts[*].memory_as_predicted", agg="all"),
            num("planner cells searched ({results.cluster})", "results.cells", unit="count"),
            num("planner search time", "results.search_seconds", unit="seconds"),
            num("step model's leave-one-out error on its calibration series, largest",
                "results.loo_error_largest_after", "results.loo_error_largest_before",
                "before the latency and GEMM-memory terms", "percent"),
        ],
    },
    "11": {
        "figures": [fig("ch11_kernels.png",
                        "GFLOP/s of each matmul rung against cuBLAS, measured in the same run — the playbook's GPU "
                        "primer (our kernel ladder; not a playbook figure).")],
        "numbers": [
            num("every kernel verified", "all_verified"),
            num("best fp32 rung, % of cuBLAS", "kernels[kernel!=cublas_sgemm][precision=f32][*].pct_of_cublas",
                unit="pct", agg="max"),
        ],
    },
    "12": {
        "figures": [fig("ch12_attention_vs_seq.png",
                        "Naive against flash attention on the CPU, time and memory against the sequence length — "
                        "the playbook's flash attention memory argument, measured (not a playbook figure).")],
        "numbers": [
            num("peak activations, flash", "results.flash_peak_activation_bytes",
                "results.naive_peak_activation_bytes", "naive attention", "bytes"),
            num("largest |flash − naive|, causal fp32", "results.equivalence[case=causal f32].largest_abs_difference"),
            num("relative loss gap in training", "results.training_max_relative_loss_gap"),
        ],
    },
    "13": {
        "figures": [
            fig("ch13_bandwidth.png",
                "Unfused against fused kernels, bytes moved and bandwidth per variant — the playbook's fused-kernel "
                "argument, measured on the CPU (not a playbook figure)."),
            fig("ch13_bandwidth_gpu.png", "The same chains as CUDA kernels (ours).", only="with a GPU"),
        ],
        "numbers": [
            num("AdamW step, bytes moved fused", "results.bandwidth[chain=adamw][variant=fused].bytes",
                "results.bandwidth[chain=adamw][variant=unfused].bytes", "unfused", "bytes"),
            num("AdamW step, time fused", "results.bandwidth[chain=adamw][variant=fused].ms",
                "results.bandwidth[chain=adamw][variant=unfused].ms", "unfused", "ms"),
            num("residual + RMSNorm forward, bytes moved fused",
                "results.bandwidth[chain=norm_fwd][variant=fused].bytes",
                "results.bandwidth[chain=norm_fwd][variant=unfused].bytes", "unfused", "bytes"),
            num("relative loss gap in training", "results.training_max_relative_loss_gap"),
        ],
    },
    "14": {
        "figures": [
            fig("ch14_formats.png",
                "The number formats' range and resolution, from the project's own conversions — the playbook's "
                "floating-point formats figures (Mixed precision training)."),
            fig("ch14_loss_curves.png",
                "One model trained in fp32, bf16, fp16 and fp16 with loss scaling — the playbook's mixed-precision "
                "argument, measured (not a playbook figure)."),
            fig("ch14_fp8.png",
                "The model's linear layers in FP8, scaled three ways, against fp32 — the playbook's FP8 "
                "loss-curve figure, on our model."),
        ],
        "numbers": [
            num("bytes per parameter at the step, bf16", "results.memory_per_parameter[recipe=bf16].step_peak",
                "results.memory_per_parameter[recipe=bf16].usp_calc", "usp_calc", "count"),
            num("bytes per parameter at the step, fp16 + scaling",
                "results.memory_per_parameter[recipe=fp16+scaling].step_peak",
                "results.playbook_recipes[recipe=bf16 + fp32 mixed precision (baseline)].bytes_per_parameter",
                "playbook (bf16 + fp32 mixed precision)", "count"),
            num("largest loss gap to fp32, bf16", "results.recipes[recipe=bf16].max_abs_gap_to_fp32"),
            num("skipped steps, fp16 + scaling", "results.recipes[recipe=fp16+scaling].skipped_steps", unit="count"),
            num("largest loss gap to fp32, FP8 per tensor", "results.fp8[recipe=fp8 per-tensor].max_abs_gap_to_fp32"),
        ],
    },
}
