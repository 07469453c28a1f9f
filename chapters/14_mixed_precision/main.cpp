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
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "chapters/14_mixed_precision/format_tables.hpp"
#include "chapters/14_mixed_precision/fp8_gemm_run.hpp"
#include "chapters/14_mixed_precision/fp8_linears.hpp"
#include "chapters/14_mixed_precision/precision_training.hpp"
#include "common/calc/precision_recipes.hpp"
#include "common/io/output_file.hpp"
#include "common/json.hpp"
#include "common/runtime.hpp"
#include "common/train/finite_loss.hpp"
#include "common/train/loss_agreement.hpp"
#include "common/train/training_inputs.hpp"
#include "common/train/training_summary.hpp"

namespace {

using namespace usp;
using namespace usp::ch14;

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0.0 : s / static_cast<double>(v.size());
}

// The "max |Δ| vs fp32" cell: the largest gap to the fp32 run, or "diverged at step N" where the
// recipe's loss became NaN or infinite: a result of this chapter, never counted as agreeing.
std::string gap_cell(const std::vector<double>& losses, const std::vector<double>& fp32) {
  const std::int64_t diverged = first_non_finite(losses);
  if (diverged >= 0) return "diverged at step " + std::to_string(diverged);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2e", max_loss_gap(losses, fp32, false));
  return buf;
}

std::string curves_csv(const std::vector<PrecisionRun>& runs) {
  std::ostringstream s;
  s << "recipe,step,loss,scale,applied,zero_fraction,subnormal_fraction,inf_fraction,nan_fraction\n";
  for (const PrecisionRun& r : runs)
    for (std::size_t i = 0; i < r.losses.size(); ++i)
      s << r.recipe << ',' << i << ',' << r.losses[i] << ',' << r.scales[i] << ',' << (r.applied[i] ? 1 : 0) << ','
        << r.zero_fraction[i] << ',' << r.subnormal_fraction[i] << ',' << r.inf_fraction[i] << ','
        << r.nan_fraction[i] << '\n';
  return s.str();
}

std::string histogram_csv(const std::vector<PrecisionRun>& runs) {
  std::ostringstream s;
  s << "recipe,log2_low,count\n";
  for (const PrecisionRun& r : runs) {
    s << r.recipe << ",zero," << r.histogram_zeros << '\n';
    s << r.recipe << ",inf," << r.histogram_infs << '\n';
    s << r.recipe << ",nan," << r.histogram_nans << '\n';
    for (std::size_t i = 0; i < r.log2_histogram.size(); ++i)
      if (r.log2_histogram[i] > 0)
        s << r.recipe << ',' << static_cast<int>(i) + PrecisionRun::kHistLow << ',' << r.log2_histogram[i] << '\n';
  }
  return s.str();
}

// Bytes per parameter of each recipe's training state, measured by the tracker on the first step,
// next to the usp_calc row it answers to. Writes "memory_per_parameter" into the summary.
void print_memory(const std::vector<PrecisionRun>& runs, JsonWriter& j) {
  const Recipe order[] = {Recipe::fp32, Recipe::bf16, Recipe::fp16, Recipe::fp16_scaled};
  std::printf("\n   Memory per parameter, measured (tracker, first step) vs usp_calc:\n");
  std::printf("   %-13s %7s %7s %10s %8s %12s   %-38s %s\n", "recipe", "params", "grads", "optimizer", "states",
              "step peak", "usp_calc", "states (peak)");
  j.key("memory_per_parameter").begin_array();
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const StateMemory& m = runs[i].memory;
    const double n = static_cast<double>(m.parameters_numel);
    const CalcRow row = calc_row(order[i]);
    const std::int64_t calc_total = row.bytes.parameters + row.bytes.gradients + row.bytes.optimizer;
    std::printf("   %-13s %7.2f %7.2f %10.2f %8.2f %12.2f   %-38s %lld\n", runs[i].recipe.c_str(),
                static_cast<double>(m.parameters) / n, static_cast<double>(m.gradients) / n,
                static_cast<double>(m.optimizer) / n, static_cast<double>(m.states()) / n,
                static_cast<double>(m.states() + m.step_extra) / n, row.flags, static_cast<long long>(calc_total));
    j.begin_object()
        .field("recipe", runs[i].recipe)
        .field("parameters", static_cast<double>(m.parameters) / n)
        .field("gradients", static_cast<double>(m.gradients) / n)
        .field("optimizer", static_cast<double>(m.optimizer) / n)
        .field("step_peak", static_cast<double>(m.states() + m.step_extra) / n)
        .field("usp_calc", calc_total)
        .end_object();
  }
  j.end_array();
  // The playbook's table, from the calculator (usp_calc --recipes): what each framework keeps.
  std::printf("\n   The playbook's recipes (usp_calc --recipes; formats of master weights, accumulated gradients,\n"
              "   weights, gradients, Adam m + v; '-' where none is kept):\n");
  j.key("playbook_recipes").begin_array();
  for (const calc::PrecisionRecipe& r : calc::playbook_precision_recipes()) {
    const auto shown = [](const std::string& f) { return f.empty() ? std::string("-") : f; };
    std::printf("   %-40s GEMM %-5s %-5s %-5s %-5s %-5s %-5s %-5s %3d bytes\n", r.name.c_str(), r.gemm.c_str(),
                shown(r.master_weights).c_str(), shown(r.accumulated_gradients).c_str(), r.weights.c_str(),
                r.gradients.c_str(), r.adam_first.c_str(), r.adam_second.c_str(), r.total_bytes());
    j.begin_object().field("recipe", r.name).field("bytes_per_parameter", r.total_bytes()).end_object();
  }
  j.end_array();
}

// 4. The FP8 GEMM on the GPU, where one with FP8 tensor cores is visible: the accuracy of each
// product at 1024³ against its own CPU reference, the rates at 4096³ and 8192³.
// Section 2: each recipe's losses against fp32, its skipped steps and where its gradients sat
// (zero, subnormal, inf, NaN), printed and added to summary.json; the scaled run's loss scale.
void print_recipes(const TrainingConfig& cfg, const std::vector<PrecisionRun>& runs, JsonWriter& j) {
  std::printf("\n2. %s trained %lld steps on %lld × %lld tokens under each recipe (AdamW, fp32 master weights for the "
              "narrow ones):\n",
              cfg.model.str().c_str(), static_cast<long long>(cfg.steps), static_cast<long long>(cfg.mbs),
              static_cast<long long>(cfg.seq));
  std::printf("   %-13s %10s %10s %20s %8s %14s %14s %10s %10s\n", "recipe", "first", "last", "max |Δ| vs fp32",
              "skipped", "zero grads", "subnormal", "inf", "NaN");
  const PrecisionRun& ref = runs.front();
  j.key("recipes").begin_array();
  for (const PrecisionRun& r : runs) {
    const double gap = max_loss_gap(r.losses, ref.losses, false);
    std::printf("   %-13s %10.4f %10.4f %20s %8lld %13.2f%% %13.2f%% %9.2f%% %9.2f%%\n", r.recipe.c_str(),
                r.losses.front(), r.losses.back(), gap_cell(r.losses, ref.losses).c_str(),
                static_cast<long long>(r.skipped_steps),
                100.0 * mean(r.zero_fraction), 100.0 * mean(r.subnormal_fraction), 100.0 * mean(r.inf_fraction),
                100.0 * mean(r.nan_fraction));
    j.begin_object()
        .field("recipe", r.recipe)
        .field("final_loss", r.losses.back())
        .field("max_abs_gap_to_fp32", gap)
        .field("diverged_at_step", first_non_finite(r.losses))
        .field("skipped_steps", r.skipped_steps)
        .field("mean_zero_grad_fraction", mean(r.zero_fraction))
        .field("mean_subnormal_grad_fraction", mean(r.subnormal_fraction))
        .field("mean_inf_grad_fraction", mean(r.inf_fraction))
        .field("mean_nan_grad_fraction", mean(r.nan_fraction))
        .field("first_step_grad_infs", r.histogram_infs)
        .field("first_step_grad_nans", r.histogram_nans)
        .end_object();
  }
  j.end_array();
  const PrecisionRun& scaled = runs.back();
  std::printf("   loss scale of fp16+scaling per step:");
  for (float s : scaled.scales) std::printf(" %g", static_cast<double>(s));
  std::printf("\n");
}

// Section 3: the FP8 linears' losses against fp32 (ref) and what each scaling flushed to zero,
// printed, added to summary.json and written to fp8_curves.csv.
void print_fp8_runs(const PrecisionRun& ref, const std::vector<Fp8Run>& fp8, const std::string& out,
                    JsonWriter& j) {
  std::printf("\n3. The same model with its attention and MLP matmuls in FP8 (e4m3 forward, e5m2 gradients, fp32 "
              "accumulation; emulated):\n");
  std::printf("   %-15s %10s %10s %20s %30s\n", "recipe", "first", "last", "max |Δ| vs fp32",
              "flushed to 0: act / w / grad");
  std::ostringstream csv;
  csv << "recipe,step,loss\n";
  for (std::size_t i = 0; i < ref.losses.size(); ++i) csv << "fp32," << i << ',' << ref.losses[i] << '\n';
  j.key("fp8").begin_array();
  for (const Fp8Run& r : fp8) {
    const double gap = max_loss_gap(r.losses, ref.losses, false);
    for (std::size_t s = 0; s < r.losses.size(); ++s) csv << r.recipe << ',' << s << ',' << r.losses[s] << '\n';
    std::printf("   %-15s %10.4f %10.4f %20s %9.2f%% %8.2f%% %8.2f%%\n", r.recipe.c_str(), r.losses.front(),
                r.losses.back(), gap_cell(r.losses, ref.losses).c_str(), 100.0 * r.activations.flushed_fraction(), 100.0 * r.weights.flushed_fraction(),
                100.0 * r.gradients.flushed_fraction());
    j.begin_object()
        .field("recipe", r.recipe)
        .field("final_loss", r.losses.back())
        .field("max_abs_gap_to_fp32", gap)
        .field("diverged_at_step", first_non_finite(r.losses))
        .field("activations_flushed_fraction", r.activations.flushed_fraction())
        .field("weights_flushed_fraction", r.weights.flushed_fraction())
        .field("gradients_flushed_fraction", r.gradients.flushed_fraction())
        .end_object();
  }
  j.end_array();
  write_file_atomic(out + "/fp8_curves.csv", csv.str());
}

void print_fp8_gemm(JsonWriter& j) {
  if (!fp8_gemm_available()) {
    std::printf("\n4. No GPU with FP8 tensor cores visible: cuBLASLt's FP8 GEMM (kernels/fp8) is not measured.\n");
    return;
  }
  const Fp8GemmRun acc = run_fp8_gemm(1024, 1024, 1024, 0);
  std::printf("\n4. y = x·wᵀ on the GPU, e4m3 with one scale per tensor (cuBLASLt) vs bf16 (cuBLAS), fp32 accumulation:\n"
              "   1024³: largest error over max |y|, each against the CPU's fp32 product of its own operands: e4m3 "
              "%.2e, bf16 %.2e; e4m3 against the unquantised fp32 product %.2e\n",
              acc.fp8_error, acc.bf16_error, acc.fp8_vs_fp32);
  j.key("fp8_gemm").begin_object()
      .field("fp8_error", acc.fp8_error)
      .field("bf16_error", acc.bf16_error)
      .field("fp8_vs_fp32", acc.fp8_vs_fp32)
      .key("rates").begin_array();
  std::printf("   %-6s %12s %12s %8s\n", "size", "e4m3 TFLOP/s", "bf16 TFLOP/s", "ratio");
  for (int n : {4096, 8192}) {
    const Fp8GemmRun r = run_fp8_gemm(n, n, n, 20, /*check=*/false);
    std::printf("   %-6d %12.1f %12.1f %7.2fx\n", n, r.fp8_tflops, r.bf16_tflops, r.fp8_tflops / r.bf16_tflops);
    j.begin_object().field("n", n).field("fp8_tflops", r.fp8_tflops).field("bf16_tflops", r.bf16_tflops).end_object();
  }
  j.end_array().end_object();
}

int run_chapter(Runtime& rt, int argc, char** argv) {
  Cli cli("ch14_mixed_precision",
          "number formats from the project's own conversions; one model trained in fp32, bf16, fp16 and fp16 "
          "with dynamic loss scaling, with each recipe's memory per parameter; its linear layers in FP8 (emulated); "
          "and, on a GPU with FP8 tensor cores, cuBLASLt's FP8 GEMM against bf16 cuBLAS");
  cli.add_common("out/14_mixed_precision");
  add_training_flags(cli, {"usp-small", 128, 4, 30, 3e-3});
  cli.add_float("init-scale", 65536.0, "the loss scale fp16+scaling starts from (a power of two)", 1.0, 1e30);
  cli.add_int("growth-interval", 4, "good steps in a row before the loss scale doubles", 1, 1 << 30);
  if (!rt.parse(cli, argc, argv)) return 0;
  rt.require(rt.size() == 1, "chapter 14 runs on one device: launch it without mpirun (or with -np 1)");
  const TrainingInputs in = agree_training_inputs(rt, cli);
  if (cli.given("precision"))
    throw UsageError("ch14_mixed_precision trains every precision itself: leave out --precision");
  {
    int e = 0;
    if (std::frexp(cli.get_float("init-scale"), &e) != 0.5)
      throw UsageError("--init-scale must be a power of two (so that dividing by it is exact), got " +
                       std::to_string(cli.get_float("init-scale")));
  }
  const std::string out = cli.get_string("out");
  make_dirs(out);
  JsonWriter j;
  j.begin_object();

  // 1. Formats.
  const std::vector<FormatRow> rows = format_rows();
  std::printf("1. The formats (common/float_formats.hpp), every narrow bit pattern decoded and encoded back:\n");
  std::printf("   %-5s %4s %4s %13s %13s %13s %10s %8s %10s %10s\n", "", "exp", "man", "min subnormal", "min normal",
              "max", "ε (1→next)", "in [1,2]", "finite", "round trip");
  j.key("formats").begin_array();
  for (const FormatRow& r : rows) {
    std::printf("   %-5s %4d %4d %13.4g %13.4g %13.6g %10.4g %8lld %10lld %10s\n", r.info.name, r.info.exponent_bits,
                r.info.mantissa_bits, static_cast<double>(r.info.min_subnormal),
                static_cast<double>(r.info.min_normal), static_cast<double>(r.info.max_finite),
                static_cast<double>(r.info.epsilon), static_cast<long long>(r.in_1_2),
                static_cast<long long>(r.finite), r.round_trip == r.finite ? "all" : "MISMATCH");
    j.begin_object()
        .field("name", std::string(r.info.name))
        .field("max_finite", static_cast<double>(r.info.max_finite))
        .field("min_normal", static_cast<double>(r.info.min_normal))
        .field("min_subnormal", static_cast<double>(r.info.min_subnormal))
        .field("epsilon", static_cast<double>(r.info.epsilon))
        .field("finite_patterns", r.finite)
        .field("round_trip_patterns", r.round_trip)
        .end_object();
  }
  j.end_array();
  write_file_atomic(out + "/formats.csv", formats_csv(rows));
  write_file_atomic(out + "/grid_1_2.csv", grid_csv());

  // 2. Training under each recipe.
  const TrainingConfig& cfg = in.config;
  LossScaleState scaler;
  scaler.scale = static_cast<float>(cli.get_float("init-scale"));
  scaler.growth_interval = cli.get_int("growth-interval");
  std::vector<PrecisionRun> runs;
  const std::string missing = rt.skip_if_not_implemented([&] {
    for (Recipe r : {Recipe::fp32, Recipe::bf16, Recipe::fp16, Recipe::fp16_scaled})
      runs.push_back(train_recipe(r, cfg, *in.data, scaler));
  });
  if (!missing.empty()) {
    std::cout << "\nfp16 with loss scaling needs exercise 14.1 (" << missing << "); the chapter stops here.\n";
    j.end_object();
    write_training_summary(rt.world(), out + "/summary.json",
                           {.chapter = "14_mixed_precision", .losses = {}, .flags_json = cli.values_json(),
                            .chapter_json = j.str()});
    return 0;
  }
  // fp32 is the reference every recipe is measured against: its divergence is an error.
  require_finite_losses(runs.front().losses, runs.front().recipe);
  print_recipes(cfg, runs, j);
  print_memory(runs, j);
  write_file_atomic(out + "/loss_curves.csv", curves_csv(runs));
  write_file_atomic(out + "/grad_histogram.csv", histogram_csv(runs));

  // 3. FP8 linear layers.
  std::vector<Fp8Run> fp8;
  const std::string missing_fp8 = rt.skip_if_not_implemented([&] {
    for (Fp8Scaling sc : {Fp8Scaling::direct, Fp8Scaling::per_tensor, Fp8Scaling::tiled})
      fp8.push_back(train_fp8(sc, cfg, *in.data));
  });
  if (!missing_fp8.empty()) {
    std::cout << "\nFP8 training needs exercise 14.2 (" << missing_fp8 << "); the chapter stops here.\n";
  } else {
    print_fp8_runs(runs.front(), fp8, out, j);
    print_fp8_gemm(j);
  }
  j.end_object();
  write_training_summary(rt.world(), out + "/summary.json",
                         {.chapter = "14_mixed_precision", .losses = runs[1].losses, .flags_json = cli.values_json(),
                          .chapter_json = j.str(), .non_finite_is_result = true});
  std::printf("\nwrote %s/summary.json, formats.csv, grid_1_2.csv, loss_curves.csv, grad_histogram.csv, fp8_curves.csv\n", out.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return usp::run(argc, argv, [&](usp::Runtime& rt) { return run_chapter(rt, argc, argv); });
}
