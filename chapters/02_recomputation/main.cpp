// ch02_recomputation: the playbook's "Activation recomputation" on one device (the CPU, or a GPU with
// --device cuda).
//
// The same batch, from the same weights, under the three modes:
//   none       every layer keeps what its backward needs (the attention probabilities included)
//   selective  the attention probabilities (b·a·s² per layer) are dropped and recomputed from
//              q and k in backward: the quadratic term goes, at the cost of one q·kᵀ per layer
//   full       each layer keeps only its input and runs its whole forward again in backward
// For each: the activations held between forward and backward (measured, and by the formula
// for our layers), the peak, the FLOPs (model FLOPs for MFU, hardware FLOPs for HFU) and the
// time; the gradients of the three modes are compared bit for bit. Each mode's measured step
// prints the progress line (step_progress.hpp; --quiet: none); a non-finite loss is an error. No
// --eval-every: nothing here trains (one forward and backward from the initial weights per mode).
// Writes <out>/summary.json, recompute.csv and recompute_memory.csv (the playbook's
// none/selective/full figure for 1B..405B, from the calculator).
//
//   build/bin/ch02_recomputation [--seq 256] [--mbs 4] [--repeats 3]
//   ./usp run 02
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "chapters/02_recomputation/recompute_measurement.hpp"
#include "common/calc/memory_sweep.hpp"
#include "common/json.hpp"
#include "common/report/table.hpp"
#include "common/runtime.hpp"
#include "common/train/finite_loss.hpp"
#include "common/train/matmul_peak.hpp"
#include "common/train/step_progress.hpp"
#include "common/train/training_inputs.hpp"
#include "common/train/training_summary.hpp"

namespace {

using namespace usp;
using namespace usp::ch02;

// One row per mode: the terminal table, recompute.csv and summary.json's "modes".
report::Table modes_table(const std::vector<ModeResult>& results) {
  constexpr double kMiB = 1.0 / 1048576.0;
  const auto differ_mark = [](const report::Value& v) {
    return std::get<std::int64_t>(v) == 0 ? std::string() : std::string("  GRADIENTS DIFFER");
  };
  report::Table t({
      {.key = "mode", .header = "mode", .format = "%-10s"},
      {.key = "held_after_forward", .header = "held after fwd", .format = " %10.2f MiB", .scale = kMiB},
      {.key = "held_vs_none", .header = "vs none", .format = " %7.3fx", .csv = false, .json = false},
      {.key = "layer_kept", .header = "layer keeps", .format = " %10.2f MiB", .scale = kMiB},
      {.key = "layer_formula", .header = "formula", .format = " %10.2f MiB", .scale = kMiB},
      {.key = "peak_activation", .header = "peak act.", .format = " %8.2f MiB", .scale = kMiB},
      {.key = "peak_total", .json = false},
      {.key = "model_flops", .header = "GFLOP mdl", .format = " %10.3f", .scale = 1e-9},
      {.key = "hfu_over_mfu", .header = "HFU/MFU", .format = " %10.3f", .csv = false, .json = false},
      {.key = "hardware_flops"},
      {.key = "recompute_flops", .json = false},
      {.key = "seconds", .header = "time s", .format = " %9.3f"},
      {.key = "gradient_differences", .format = "%s", .text = differ_mark},
  });
  const ModeResult& none = results[0];
  for (const ModeResult& r : results)
    t.add({recompute_name(r.mode), r.held_after_forward,
           static_cast<double>(r.held_after_forward) / static_cast<double>(none.held_after_forward), r.layer_kept,
           r.layer_formula, r.peak_activation, r.peak_total, r.flops.model(),
           static_cast<double>(r.flops.hardware()) / static_cast<double>(r.flops.model()), r.flops.hardware(),
           r.flops.recompute, r.seconds, count_differences(r.gradients, none.gradients)});
  return t;
}

int run_chapter(Runtime& rt, int argc, char** argv) {
  Cli cli = training_cli("ch02_recomputation", {"usp-small", 256, 4, 1, 3e-3},
                         "activation memory and extra compute of none / selective / full recomputation");
  cli.add_int("repeats", 3, "timed forward+backward runs per mode (the median is reported)", 1, 100);
  cli.add_flag("quiet", "no progress line per mode (the table and summary.json only)");
  refuse_eval_flags(cli, "chapter 02 trains nothing (one forward and backward per mode from the same initial "
                         "weights), so there is no held-out loss to follow");
  // The shared training flags this chapter would ignore: it measures every mode, and takes no step.
  cli.refuse("recompute", "chapter 02 measures none, selective and full side by side on the same batch");
  for (const char* flag : {"steps", "lr", "weight-decay"})
    cli.refuse(flag, "chapter 02 trains nothing (one forward and backward per mode from the same initial weights, "
                     "no optimizer step); chapters 01 and 03-10 train");
  if (!rt.parse(cli, argc, argv)) return 0;
  const TrainingInputs in = agree_training_inputs(rt, cli, TrainingDevices::cpu_or_cuda);
  const TrainingConfig& cfg = in.config;
  rt.require(rt.size() == 1, "chapter 02 runs on one device: launch it without mpirun (or with -np 1)");
  const std::string out = cli.get_string("out");
  std::cout << "ch02_recomputation: " << cfg.model.str() << ", seq " << cfg.seq << ", micro-batch " << cfg.mbs << ", "
            << dtype_name(cfg.dtype) << ", on " << cfg.device.str()
            << (cfg.device.is_cuda() ? " (the probabilities from the model's CUDA attention, not exercise 02.1's host code)"
                                     : "")
            << "\n\n";

  const Batch batch = in.data->batch(0, 0, cfg.mbs, cfg.seq);
  const bool quiet = cli.get_flag("quiet");
  const double peak_flops = quiet ? 0 : matmul_peak_flops(cfg.device);
  std::vector<ModeResult> results;
  for (Recompute mode : {Recompute::none, Recompute::selective, Recompute::full}) {
    const ModeResult& r =
        results.emplace_back(measure_mode(cfg, mode, batch, static_cast<int>(cli.get_int("repeats"))));
    require_finite_loss(r.loss, 0, "loss", recompute_name(mode));
    // The hardware FLOPs would be HFU; the progress line's MFU counts the model's (the same in every mode).
    const StepProgress line{0, r.loss, r.seconds, cfg.tokens_per_micro_batch(), 1,
                            static_cast<double>(r.flops.model()), peak_flops};
    if (!quiet) {
      char label[32];
      std::snprintf(label, sizeof label, "  %-9s ", recompute_name(mode));
      print_progress_line(label, line);
    }
  }
  if (!quiet) std::printf("\n");
  const ModeResult& none = results[0];
  const report::Table modes = modes_table(results);
  modes.print(std::cout);
  make_dirs(out);
  modes.write_csv(out + "/recompute.csv");
  bool identical = true, ok = true;
  for (const ModeResult& r : results) {
    identical = identical && count_differences(r.gradients, none.gradients) == 0;
    ok = ok && r.layer_kept == r.layer_formula;
  }
  ok = ok && identical;
  std::cout << "\n  gradients of selective and full equal none's bit for bit: " << (identical ? "yes" : "NO") << "\n";

  calc::write_sweep_csv(out + "/recompute_memory.csv", calc::run_sweep(calc::figure_recompute()));
  JsonWriter j;
  j.begin_object().key("modes");
  modes.write_json(j);
  j.field("gradients_identical_and_formula_exact", ok).end_object();
  write_training_summary(rt.world(), out + "/summary.json",
                         {.chapter = "02_recomputation", .losses = {none.loss},
                          .tokens_per_second = static_cast<double>(cfg.tokens_per_micro_batch()) / none.seconds,
                          .flags_json = cli.values_json(), .chapter_json = j.str()});
  std::cout << "wrote " << out << "/summary.json, recompute.csv, recompute_memory.csv\n";
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) { return usp::run(argc, argv, run_chapter); }
