#!/usr/bin/env python3
"""The course run on one page: plots/out/index.html, a section per chapter.

    python3 plots/index_page.py --out plots/out --results out

Each chapter that ran (out/NN_name/summary.json) gets its figures (plots/out/chNN_*.png, captioned
with the playbook figure each regenerates), the few numbers that matter read from its
summary.json (ours beside the formula's or the playbook's, with the difference), the machine and
load its timings came from where summary.json records them, and a link to its lesson. A run with
--exercises (out/exercises/NN_name, plots/out/exercises/) is shown as such; a chapter that did not
run says so. ./usp run and ./usp plots call this after the figures. Not a figure itself (./usp
plots runs plots/chNN_*.py only); standard library only: no network, no JavaScript.

Adding a chapter is one entry in CHAPTERS below: its figures' captions and its numbers, each
number a path into summary.json (see resolve()).
"""
import argparse
import base64
import html
import json
import math
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT_DEFAULT = os.path.dirname(HERE)


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
                        "gradient accumulation argument, measured (the playbook draws no such figure).")],
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
                "(its calibration)."),
            fig("ch10_best_config.png",
                "The best configuration per model and node count — regenerates the playbook's best-configuration "
                "heatmap (Finding the best training configuration), from our planner."),
        ],
        "numbers": [
            num("layouts trained", "results.layouts[*].layout", agg="count"),
            num("largest relative loss gap to the single-device run", "results.layouts[*].max_relative_loss_gap",
                agg="max"),
            num("every layout's memory as predicted", "results.layouts[*].memory_as_predicted", agg="all"),
            num("planner cells searched ({results.cluster})", "results.cells", unit="count"),
            num("planner search time", "results.search_seconds", unit="seconds"),
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

# ---- summary.json paths -------------------------------------------------------------------------

_TOKEN = re.compile(r"\.?([^.\[\]]+)|\[([^\]]*)\]")


class Missing(Exception):
    pass


def _step(values, multi, token):
    key, sel = token
    if key is not None:
        out = []
        for v in values:
            if not isinstance(v, dict) or key not in v:
                if multi:
                    continue
                raise Missing(key)
            out.append(v[key])
        return out, multi
    if sel == "*" or "=" in sel:
        lists = values if not multi else [values]
        out = []
        for lst in lists:
            if not isinstance(lst, list):
                raise Missing(f"[{sel}] on a non-list")
            for e in lst:
                if sel == "*":
                    out.append(e)
                    continue
                neg = "!=" in sel
                k, want = sel.split("!=" if neg else "=", 1)
                has = isinstance(e, dict) and k in e and str(e[k]) == want
                if isinstance(e, dict) and k in e and (has != neg):
                    out.append(e)
        return out, True
    try:
        i = int(sel)
    except ValueError:
        raise Missing(f"bad selector [{sel}]")
    out = []
    for v in values:
        if not isinstance(v, list) or not -len(v) <= i < len(v):
            raise Missing(f"[{i}]")
        out.append(v[i])
    return out, multi


def resolve(doc, path, agg="first"):
    """The value at path in doc (see the table's comment), or raises Missing."""
    last = None
    for alt in path.split(" | "):
        try:
            tokens = [(m.group(1), m.group(2)) for m in _TOKEN.finditer(alt.strip())]
            values, multi = [doc], False
            for t in tokens:
                values, multi = _step(values, multi, t)
            if not values:
                raise Missing(alt + ": nothing matches")
            if not multi or agg == "first":
                return values[0]
            if agg == "count":
                return len(values)
            if agg == "all":
                return all(bool(v) for v in values)
            nums = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
            if not nums:
                raise Missing(alt + ": no numbers")
            return max(nums) if agg == "max" else min(nums)
        except Missing as e:
            last = e
    raise last or Missing(path)


# ---- formatting -----------------------------------------------------------------------------------

def fmt(value, unit=None):
    """The text a value is shown as (the test checks the page with this same function)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        return value
    if not isinstance(value, (int, float)) or (isinstance(value, float) and not math.isfinite(value)):
        return str(value)
    if unit == "bytes":
        s = f"{int(value):,} B" if float(value).is_integer() else f"{value:,.1f} B"
        return s + (f" ({value / 2**20:.2f} MiB)" if abs(value) >= 2**20 else "")
    if unit == "percent":
        return f"{100 * value:.1f}%"
    if unit == "pct":
        return f"{value:.1f}%"
    if unit == "seconds":
        return f"{value:.4g} s"
    if unit == "ms":
        return f"{value:.4g} ms"
    if unit == "ratio":
        return f"{value:.3g}×"
    if isinstance(value, int) or (unit in ("count", "flops") and float(value).is_integer()):
        return f"{int(value):,}"
    if value == 0:
        return "0"
    return f"{value:.6g}"


def difference(ours, ref, unit):
    """ours − ref, and relative to ref, as text; None when they are not both numbers."""
    def is_num(v):
        return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
    if not (is_num(ours) and is_num(ref)):
        return None
    d = ours - ref
    if d == 0:
        return "0 (equal)"
    text = ("+" if d > 0 else "−") + fmt(abs(d), unit if unit not in ("percent", "pct") else unit)
    if unit == "percent":
        text = ("+" if d > 0 else "−") + f"{100 * abs(d):.1f} points"
    if ref != 0:
        rel = 100 * d / abs(ref)
        text += f" ({'+' if rel > 0 else '−'}{abs(rel):.3g}%)"
    return text


def fill_label(label, doc):
    def sub(m):
        try:
            return fmt(resolve(doc, m.group(1)))
        except Missing:
            return "?"
    return re.sub(r"\{([^{}]+)\}", sub, label)


# ---- reading a run --------------------------------------------------------------------------------

def chapter_dirs(root):
    d = os.path.join(root, "chapters")
    names = sorted(n for n in os.listdir(d) if re.match(r"^\d\d_", n) and os.path.isdir(os.path.join(d, n)))
    return {n[:2]: n for n in names}


def lesson_title(root, name):
    try:
        with open(os.path.join(root, "chapters", name, "README.md"), encoding="utf-8") as f:
            for line in f:
                if line.startswith("# "):
                    return line[2:].strip()
    except OSError:
        pass
    return "Chapter " + name


def needs_gpu(root, name):
    try:
        with open(os.path.join(root, "chapters", name, "run.conf"), encoding="utf-8") as f:
            return any(re.match(r"^\s*requires=[\"']?gpu", line) for line in f)
    except OSError:
        return False


def read_summary(folder):
    """(summary dict or None, note): the folder's summary.json."""
    path = os.path.join(folder, "summary.json")
    if not os.path.isfile(path):
        return None, "the run wrote no summary.json (it may have stopped early)"
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        return (doc, None) if isinstance(doc, dict) else (None, "summary.json is not a JSON object")
    except (OSError, ValueError) as e:
        return None, f"summary.json could not be read: {e}"


def machine_lines(doc, folder):
    """What summary.json records about the machine and its load, as lines of text."""
    lines = []
    if isinstance(doc.get("device"), str):
        lines.append(f"device: {doc['device']}")
    flags = doc.get("flags") if isinstance(doc.get("flags"), dict) else {}
    if "device" in flags and "device" not in doc:
        lines.append(f"device asked for: --device {flags['device']}")
    if isinstance(doc.get("world_size"), int):
        lines.append(f"ranks: {doc['world_size']}")
    loads = []

    def walk(x, where):
        if isinstance(x, dict):
            if "load_average" in x:
                loads.append((x.get("load_average"), x.get("cores"), where))
            for k, v in x.items():
                walk(v, where + [k])
        elif isinstance(x, list):
            for i, v in enumerate(x):
                label = (v.get("schedule") or v.get("label") or str(i)) if isinstance(v, dict) else str(i)
                walk(v, where + [str(label)])
    walk(doc, [])
    for load, cores, where in loads:
        what = " (" + " ".join(w for w in where if w != "results") + ")" if [w for w in where if w != "results"] else ""
        if not isinstance(load, (int, float)) or load < 0:
            lines.append(f"load unknown{what}")
            continue
        busy = isinstance(cores, int) and load > cores
        lines.append(f"timed at load {load:.2f} (1-minute average) on {cores} cores{what}"
                     + (": busier than its cores, so the times are the sharing's" if busy else ""))
    if not loads:
        lines.append("summary.json records no machine load for these timings")
    try:
        t = os.path.getmtime(os.path.join(folder, "summary.json"))
        lines.append("written " + time.strftime("%Y-%m-%d %H:%M", time.localtime(t)))
    except OSError:
        pass
    return lines


# ---- the page -------------------------------------------------------------------------------------

CSS = """
body { font-family: sans-serif; max-width: 1100px; margin: 1em auto; padding: 0 1em; color: #222; }
h2 { border-bottom: 1px solid #ccc; padding-bottom: .2em; margin-top: 2em; }
figure { margin: 1em 0; } figure img { max-width: 100%; border: 1px solid #ddd; }
figcaption { font-size: .9em; color: #444; }
table { border-collapse: collapse; margin: .5em 0; font-size: .9em; }
td, th { border: 1px solid #ccc; padding: .2em .5em; text-align: left; vertical-align: top; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.status-ran { color: #185; } .status-exercises { color: #a60; } .status-none { color: #888; }
.note { color: #a33; } .machine { font-size: .9em; color: #555; }
section.exercises { border-left: 4px solid #e90; padding-left: 1em; }
"""


class Page:
    def __init__(self, out_dir, embed):
        self.out_dir = out_dir
        self.embed = embed
        self.parts = []

    def add(self, s):
        self.parts.append(s)

    def img_src(self, rel):
        if not self.embed:
            return rel
        with open(os.path.join(self.out_dir, rel), "rb") as f:
            return "data:image/png;base64," + base64.b64encode(f.read()).decode("ascii")


def e(s):
    return html.escape(str(s), quote=True)


def numbers_table(page, entry, doc, kind):
    rows = []
    for n in entry.get("numbers", []):
        label = fill_label(n["label"], doc)
        try:
            ours = resolve(doc, n["ours"], n["agg"])
        except Missing:
            rows.append(f'<tr><td>{e(label)}</td><td class="num missing" colspan="4">not in this run\'s '
                        f'summary.json</td></tr>')
            continue
        cells = [f'<td>{e(label)}</td>',
                 f'<td class="num ours" data-path="{e(n["ours"])}" data-agg="{e(n["agg"])}" '
                 f'data-unit="{e(n["unit"] or "")}" data-value="{e(json.dumps(ours))}">{e(fmt(ours, n["unit"]))}</td>']
        ref = None
        if n["ref"]:
            try:
                ref = resolve(doc, n["ref"])
                cells.append(f'<td class="num ref" data-path="{e(n["ref"])}" data-unit="{e(n["unit"] or "")}" '
                             f'data-value="{e(json.dumps(ref))}">{e(fmt(ref, n["unit"]))}</td>'
                             f'<td>{e(n["ref_label"] or "")}</td>')
            except Missing:
                cells.append(f'<td class="num missing">—</td><td>{e(n["ref_label"] or "")} (not in summary.json)</td>')
        else:
            cells.append('<td></td><td></td>')
        d = difference(ours, ref, n["unit"]) if n["ref"] else None
        cells.append(f'<td class="num diff">{e(d) if d is not None else ""}</td>')
        rows.append("<tr>" + "".join(cells) + "</tr>")
    if rows:
        page.add('<table class="numbers"><tr><th>what</th><th>ours</th><th>against</th><th>whose</th>'
                 '<th>difference</th></tr>\n' + "\n".join(rows) + "</table>")


def figures_block(page, nn, entry, sub, kind):
    folder = os.path.join(page.out_dir, sub) if sub else page.out_dir
    listed = set()
    for f in entry.get("figures", []):
        listed.add(f["png"])
        rel = (sub + "/" if sub else "") + f["png"]
        if os.path.isfile(os.path.join(page.out_dir, rel)):
            page.add(f'<figure><img src="{e(page.img_src(rel))}" alt="{e(f["png"])}" loading="lazy">'
                     f'<figcaption><code>{e(rel)}</code>: {e(f["caption"])}</figcaption></figure>')
        elif f["only"]:
            page.add(f'<p class="machine">{e(rel)}: not drawn (it is drawn only {e(f["only"])}).</p>')
        else:
            page.add(f'<p class="note">{e(rel)}: not drawn; <code>./usp plots {nn}</code> draws it from the results.</p>')
    extra = sorted(n for n in (os.listdir(folder) if os.path.isdir(folder) else [])
                   if n.startswith(f"ch{nn}_") and n.endswith(".png") and n not in listed)
    for name in extra:
        rel = (sub + "/" if sub else "") + name
        page.add(f'<figure><img src="{e(page.img_src(rel))}" alt="{e(name)}" loading="lazy">'
                 f'<figcaption><code>{e(rel)}</code> (no caption yet in plots/index_page.py)</figcaption></figure>')


def run_block(page, nn, entry, folder, sub, kind):
    """One run's figures, numbers and machine: kind is 'reference' or 'exercises'."""
    doc, note = read_summary(folder)
    if note:
        page.add(f'<p class="note">{e(note)}</p>')
    figures_block(page, nn, entry, sub, kind)
    if doc is not None:
        numbers_table(page, entry, doc, kind)
        page.add('<p class="machine">' + "<br>".join(e(x) for x in machine_lines(doc, folder)) + "</p>")


def build(root, out_dir, results_dir, embed=False):
    chapters = chapter_dirs(root)
    for nn in CHAPTERS:
        if nn not in chapters:
            print(f"index_page: the table has chapter {nn}, which is not under chapters/", file=sys.stderr)
    page = Page(out_dir, embed)
    status = {}
    for nn, name in chapters.items():
        ref = os.path.isdir(os.path.join(results_dir, name))
        ex = os.path.isdir(os.path.join(results_dir, "exercises", name))
        status[nn] = (ref, ex)
    page.add('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
             '<title>Ultra-Scale Playbook in C++: the course run</title>'
             f'<style>{CSS}</style></head><body>')
    page.add('<h1>The course run</h1>')
    page.add(f'<p>Every chapter of <code>./usp run</code>: its figures (each caption says which playbook figure it '
             f'regenerates), the numbers that matter from its <code>summary.json</code> beside the formula\'s or the '
             f'playbook\'s, the machine and load behind its timings, and its lesson. Results read from '
             f'<code>{e(os.path.relpath(results_dir, out_dir))}</code>; generated '
             f'{e(time.strftime("%Y-%m-%d %H:%M"))}.</p>')
    page.add('<table class="contents"><tr><th>chapter</th><th>status</th></tr>')
    for nn, name in chapters.items():
        ref, ex = status[nn]
        if ref and ex:
            s, cls = "ran (and with --exercises)", "ran"
        elif ref:
            s, cls = "ran", "ran"
        elif ex:
            s, cls = "ran with --exercises only", "exercises"
        else:
            s, cls = "did not run", "none"
        page.add(f'<tr><td><a href="#ch{nn}">{e(lesson_title(root, name))}</a></td>'
                 f'<td class="status-{cls}">{e(s)}</td></tr>')
    page.add('</table>')
    for nn, name in chapters.items():
        entry = CHAPTERS.get(nn, {})
        ref, ex = status[nn]
        lesson = os.path.relpath(os.path.join(root, "chapters", name, "README.md"), out_dir).replace(os.sep, "/")
        state = "ran" if ref else ("exercises" if ex else "none")
        page.add(f'<section id="ch{nn}" class="chapter" data-chapter="{nn}" data-status="{state}">')
        page.add(f'<h2>{e(lesson_title(root, name))}</h2>')
        page.add(f'<p>Lesson: <a href="{e(lesson)}">chapters/{e(name)}/README.md</a></p>')
        if not ref and not ex:
            why = " It needs a CUDA GPU: <code>./usp run</code> skips it where none is visible." \
                if needs_gpu(root, name) else ""
            page.add(f'<p class="status-none did-not-run">Did not run: no results in '
                     f'<code>out/{e(name)}/</code>.{why} <code>./usp run {nn}</code> runs it.</p>')
        if ex and not ref:
            page.add(f'<p class="status-none did-not-run">Did not run from the reference solution: no results in '
                     f'<code>out/{e(name)}/</code>; only your <code>--exercises</code> run below. '
                     f'<code>./usp run {nn}</code> runs the reference.</p>')
        if ref:
            run_block(page, nn, entry, os.path.join(results_dir, name), "", "reference")
        if ex:
            page.add(f'<section class="exercises" data-chapter="{nn}">')
            page.add(f'<h3>Ran with --exercises: your exercise files (exercises/{e(name)}/)</h3>')
            page.add(f'<p class="status-exercises">This run is <code>./usp run {nn} --exercises</code>: results in '
                     f'<code>out/exercises/{e(name)}/</code>, figures in <code>plots/out/exercises/</code>; its '
                     f'numbers are your code\'s, not the reference solution\'s.</p>')
            run_block(page, nn, entry, os.path.join(results_dir, "exercises", name), "exercises", "exercises")
            page.add('</section>')
        page.add('</section>')
    page.add('</body></html>\n')
    return "\n".join(page.parts)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="plots/out", help="folder with the figures; index.html is written there")
    ap.add_argument("--results", default="out", help="the chapters' results (out/NN_name, out/exercises/NN_name)")
    ap.add_argument("--root", default=ROOT_DEFAULT, help="the repository (its chapters/ and lessons)")
    ap.add_argument("--embed", action="store_true", help="embed the PNGs in the page (one file to send)")
    args = ap.parse_args()
    out_dir = os.path.abspath(args.out)
    os.makedirs(out_dir, exist_ok=True)
    text = build(os.path.abspath(args.root), out_dir, os.path.abspath(args.results), args.embed)
    path = os.path.join(out_dir, "index.html")
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)
    print(f"wrote {os.path.join(args.out, 'index.html')}")


if __name__ == "__main__":
    main()
