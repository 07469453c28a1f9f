// ch14_mixed_precision: the playbook's "Mixed precision training" and "FP8 pretraining", on the CPU
// (and, where one with FP8 tensor cores is visible, a GPU).
//
//   1. The formats, from the core's conversion code: range and resolution of fp32, bf16, fp16,
//      e4m3 and e5m2, and every bit pattern of the narrow ones decoded and encoded back.
//   2. One model trained in fp32, bf16 (fp32 master weights), fp16 without loss scaling and fp16
//      with dynamic loss scaling (exercise 14.1), on the same data: the loss curves, how far each
//      strays from fp32, the steps skipped, and the gradients lost to underflow; and each recipe's
//      bytes per parameter, measured by the tracker, against usp_calc's row, and the playbook's table
//      of six recipes (bf16 mixed precision, Transformer Engine, FP8-LM, DeepSeek-V3, nanotron FP8).
//   3. The same model with its linear layers in FP8 (emulated: e4m3 forward, e5m2 gradients),
//      scaled three ways — not at all, per tensor, per tile (exercise 14.2) — against fp32.
//   4. With a GPU of compute capability 8.9+: cuBLASLt's e4m3 GEMM against bf16 cuBLAS, accuracy
//      and TFLOP/s (fp8_gemm_run.hpp).
// Writes <out>/summary.json, formats.csv, grid_1_2.csv, loss_curves.csv, grad_histogram.csv and
// fp8_curves.csv (plots/ch14_*.py).
//
//   build/bin/ch14_mixed_precision [--steps 30] [--init-scale 65536] [--growth-interval 4]
//   ./usp run 14
#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "chapters/14_mixed_precision/format_tables.hpp"
#include "chapters/14_mixed_precision/fp8_gemm_run.hpp"
#include "chapters/14_mixed_precision/fp8_linears.hpp"
#include "chapters/14_mixed_precision/precision_report.hpp"
#include "chapters/14_mixed_precision/precision_training.hpp"
#include "common/json.hpp"
#include "common/runtime.hpp"
#include "common/train/finite_loss.hpp"
#include "common/train/training_inputs.hpp"
#include "common/train/training_summary.hpp"

namespace {

using namespace usp;
using namespace usp::ch14;

// 1. The formats: the table, formats.csv and grid_1_2.csv, and "formats" in the summary.
void show_formats(const std::string& out, JsonWriter& j) {
  const std::vector<FormatRow> rows = format_rows();
  const report::Table t = formats_table(rows);
  std::printf("1. The formats (common/float_formats.hpp), every narrow bit pattern decoded and encoded back:\n");
  t.print_and_write_json(std::cout, "formats", j);
  t.write_csv(out + "/formats.csv");
  grid_table(rows).write_csv(out + "/grid_1_2.csv");
}

// 2. (The heading and each step's progress line are printed as the recipes train, in run_chapter.)
// Each recipe's losses against fp32, its skipped steps and where its gradients sat (zero,
// subnormal, inf, NaN); the scaled run's loss scale; each recipe's bytes per parameter, measured
// by the tracker on the first step, next to the usp_calc row it answers to; the playbook's table
// from the calculator (usp_calc --recipes). Writes loss_curves.csv and grad_histogram.csv.
void show_recipes(const std::vector<PrecisionRun>& runs, const std::string& out, JsonWriter& j) {
  recipes_table(runs).print_and_write_json(std::cout, "recipes", j);
  std::printf("   loss scale of fp16+scaling per step:");
  for (float s : runs.back().scales) std::printf(" %g", static_cast<double>(s));
  std::printf("\n");
  std::printf("\n   Memory per parameter, measured (tracker, first step) vs usp_calc:\n");
  memory_table(runs).print_and_write_json(std::cout, "memory_per_parameter", j);
  std::printf("\n   The playbook's recipes (usp_calc --recipes; formats of master weights, accumulated gradients,\n"
              "   weights, gradients, Adam m + v; '-' where none is kept):\n");
  const report::Table playbook = playbook_table();
  for (std::size_t r = 0; r < playbook.rows(); ++r) playbook.print_row(std::cout, r);
  j.key("playbook_recipes");
  playbook.write_json(j);
  loss_curves_table(runs).write_csv(out + "/loss_curves.csv");
  grad_histogram_table(runs).write_csv(out + "/grad_histogram.csv");
}

// 3. The FP8 linears' losses against fp32 and what each scaling flushed to zero; fp8_curves.csv.
// (The heading and each step's progress line are printed as the scalings train, in run_chapter.)
void show_fp8_runs(const PrecisionRun& fp32, const std::vector<Fp8Run>& fp8, const std::string& out, JsonWriter& j) {
  fp8_table(fp32, fp8).print_and_write_json(std::cout, "fp8", j);
  fp8_curves_table(fp32, fp8).write_csv(out + "/fp8_curves.csv");
}

// 4. The FP8 GEMM on the GPU, where one with FP8 tensor cores is visible: the accuracy of each
// product at 1024³ against its own CPU reference, the rates at 4096³ and 8192³.
void show_fp8_gemm(JsonWriter& j) {
  if (!fp8_gemm_available()) {
    std::printf("\n4. No GPU with FP8 tensor cores visible: cuBLASLt's FP8 GEMM (kernels/fp8) is not measured.\n");
    return;
  }
  const Fp8GemmRun acc = run_fp8_gemm(1024, 1024, 1024, 0);
  std::printf("\n4. y = x·wᵀ on the GPU, e4m3 with one scale per tensor (cuBLASLt) vs bf16 (cuBLAS), fp32 accumulation:\n"
              "   1024³: largest error over max |y|, each against the CPU's fp32 product of its own operands: e4m3 "
              "%.2e, bf16 %.2e; e4m3 against the unquantised fp32 product %.2e\n",
              acc.fp8_error, acc.bf16_error, acc.fp8_vs_fp32);
  report::Table rates = fp8_rates_table();
  rates.print_header(std::cout);
  for (int n : {4096, 8192}) {
    const Fp8GemmRun r = run_fp8_gemm(n, n, n, 20, /*check=*/false);
    rates.add({std::int64_t{n}, r.fp8_tflops, r.bf16_tflops, r.fp8_tflops / r.bf16_tflops});
    rates.print_row(std::cout, rates.rows() - 1);
  }
  j.key("fp8_gemm").begin_object().field("fp8_error", acc.fp8_error).field("bf16_error", acc.bf16_error);
  j.field("fp8_vs_fp32", acc.fp8_vs_fp32).key("rates");
  rates.write_json(j);
  j.end_object();
}

Cli chapter_cli() {
  Cli cli = training_cli("ch14_mixed_precision", {"usp-small", 128, 4, 30, 3e-3},
      "number formats from the project's own conversions; one model trained in fp32, bf16, fp16 and fp16 "
      "with dynamic loss scaling, with each recipe's memory per parameter; its linear layers in FP8 (emulated); "
      "and, on a GPU with FP8 tensor cores, cuBLASLt's FP8 GEMM against bf16 cuBLAS");
  cli.add_float("init-scale", 65536.0, "the loss scale fp16+scaling starts from (a power of two)", kMinLossScale,
                kMaxLossScale);
  cli.add_int("growth-interval", 4, "good steps in a row before the loss scale doubles", 1, 1 << 30);
  add_step_lines_flag(cli);
  return cli;
}

// The training inputs, after the checks only this chapter makes (one device, no --precision, a
// power-of-two initial loss scale).
TrainingInputs checked_inputs(Runtime& rt, const Cli& cli) {
  rt.require(rt.size() == 1, "chapter 14 runs on one device: launch it without mpirun (or with -np 1)");
  TrainingInputs in = agree_training_inputs(rt, cli);
  if (cli.given("precision"))
    throw UsageError("ch14_mixed_precision trains every precision itself: leave out --precision");
  int e = 0;
  if (std::frexp(cli.get_float("init-scale"), &e) != 0.5)
    throw UsageError("--init-scale must be a power of two (so that dividing by it is exact), got " +
                     std::to_string(cli.get_float("init-scale")));
  return in;
}

int run_chapter(Runtime& rt, int argc, char** argv) {
  Cli cli = chapter_cli();
  if (!rt.parse(cli, argc, argv)) return 0;
  const TrainingInputs in = checked_inputs(rt, cli);
  OpenSummary record(cli, "14_mixed_precision");  // --out made, the results object open
  const std::string& out = record.out;
  JsonWriter& j = record.results;
  show_formats(out, j);

  // 2. Training under each recipe (fp16+scaling is exercise 14.1).
  const TrainingConfig& cfg = in.config;
  LossScaleState scaler;
  scaler.scale = static_cast<float>(cli.get_float("init-scale"));
  scaler.growth_interval = cli.get_int("growth-interval");
  const StepLines lines = step_lines_from(cli, cfg.device);
  std::printf("\n2. %s trained %lld steps on %lld × %lld tokens under each recipe (AdamW, fp32 master weights for the "
              "narrow ones):\n",
              cfg.model.str().c_str(), static_cast<long long>(cfg.steps), static_cast<long long>(cfg.mbs),
              static_cast<long long>(cfg.seq));
  std::vector<PrecisionRun> runs;
  const std::string missing = rt.skip_if_not_implemented([&] {
    for (Recipe r : {Recipe::fp32, Recipe::bf16, Recipe::fp16, Recipe::fp16_scaled})
      runs.push_back(train_recipe(r, cfg, *in.data, scaler, lines));
  });
  if (!missing.empty()) {
    std::cout << "\nfp16 with loss scaling needs exercise 14.1 (" << missing << "); the chapter stops here.\n";
    record.write(rt.world());
    return 0;
  }
  // fp32 is the reference every recipe is measured against: its divergence is an error.
  require_finite_losses(runs.front().losses, runs.front().recipe);
  show_recipes(runs, out, j);

  // 3. FP8 linear layers (per-tile scaling is exercise 14.2).
  std::printf("\n3. The same model with its attention and MLP matmuls in FP8 (e4m3 forward, e5m2 gradients, fp32 "
              "accumulation; emulated):\n");
  std::vector<Fp8Run> fp8;
  const std::string missing_fp8 = rt.skip_if_not_implemented([&] {
    for (Fp8Scaling sc : {Fp8Scaling::direct, Fp8Scaling::per_tensor, Fp8Scaling::tiled})
      fp8.push_back(train_fp8(sc, cfg, *in.data, lines));
  });
  if (!missing_fp8.empty()) {
    std::cout << "\nFP8 training needs exercise 14.2 (" << missing_fp8 << "); the chapter stops here.\n";
  } else {
    show_fp8_runs(runs.front(), fp8, out, j);
    show_fp8_gemm(j);
  }
  record.summary.losses = runs[1].losses;
  record.summary.non_finite_is_result = true;
  record.write(rt.world());
  std::printf("\nwrote %s/summary.json, formats.csv, grid_1_2.csv, loss_curves.csv, grad_histogram.csv, fp8_curves.csv\n", out.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return usp::run(argc, argv, run_chapter); }
