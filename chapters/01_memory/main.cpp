// ch01_memory: the playbook's "Memory usage in transformers" on one device.
//
//   1. The training state, counted and measured: parameters, gradients, optimizer states.
//   2. One layer's activations three ways: your count (exercise 01.1), what the layer declares
//      it keeps, and what the memory tracker measured while it ran.
//   3. A few training steps with the tracker's timeline on (forward / backward / optimizer),
//      the playbook's memory profile: activations climb through forward and fall through
//      backward, gradients appear in the first backward, optimizer states at the first step.
//      Each step prints the progress line (step_progress.hpp); --eval-every N evaluates the
//      held-out loss (summary.json's results.validation) outside the measured memory: the
//      timeline pauses and the peaks leave it out (MemoryTracker::Unmeasured).
//   4. The analytic calculator beside the measurement, and its sweep for Llama-3.1 8B / 70B /
//      405B over sequence lengths (the playbook's stacked-memory figure).
// Writes <out>/summary.json, breakdown.csv, memory_timeline.csv and memory_vs_seq.csv
// (plots/ch01_memory_timeline.py and plots/ch01_memory_vs_seq.py draw them).
//
//   build/bin/ch01_memory [--model usp-small] [--seq 128] [--mbs 8] [--steps 3] [--precision bf16]
//                         [--eval-every 1] [--quiet]
//   ./usp run 01
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "chapters/01_memory/activation_bytes.hpp"
#include "common/calc/memory_model.hpp"
#include "common/calc/memory_sweep.hpp"
#include "common/data/dataset.hpp"
#include "common/json.hpp"
#include "common/runtime.hpp"
#include "common/train/finite_loss.hpp"
#include "common/train/matmul_peak.hpp"
#include "common/train/step_progress.hpp"
#include "common/train/training_inputs.hpp"
#include "common/train/training_summary.hpp"
#include "common/train/validation_loss.hpp"
#include "chapters/01_memory/memory_report.hpp"

namespace {

using namespace usp;
using namespace usp::ch01;

// 3. The training steps, the tracker's timeline recording them; 2. (one layer's activations) is
// measured during the first forward. Adam's states are allocated at the first step, as PyTorch
// allocates them lazily (what the playbook's profile shows). The held-out evaluations are left out
// of the timeline, the peaks and the time.
struct TrainedSteps {
  std::vector<double> losses, val_losses;
  std::vector<std::int64_t> val_steps;
  LayerMeasurement layer;
  double seconds = 0;  // the steps' wall time, the evaluations left out
};

TrainedSteps train_steps(ParamStore& params, Model& model, std::unique_ptr<AdamW>& optimizer, const TrainingConfig& cfg,
                         const Dataset& data, const ProgressFlags& progress, double peak_flops) {
  auto& tracker = MemoryTracker::instance();
  TrainedSteps r;
  double eval_seconds = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (std::int64_t step = 0; step < cfg.steps; ++step) {
    const auto ts = std::chrono::steady_clock::now();
    const Batch batch = data.batch(step, 0, cfg.mbs, cfg.seq);
    tracker.mark("forward");
    const double loss = model.forward(batch.inputs, batch.targets);
    if (step == 0) r.layer = measure_layer(model, cfg);
    tracker.mark("backward");
    model.backward();
    tracker.mark("optimizer");
    if (!optimizer) optimizer = std::make_unique<AdamW>(params, cfg.adamw);
    optimizer->step(params);
    params.zero_grad();
    r.losses.push_back(loss);
    require_finite_loss(loss, step);
    synchronize(cfg.device);
    StepProgress line{step, loss, std::chrono::duration<double>(std::chrono::steady_clock::now() - ts).count(),
                      cfg.tokens_per_micro_batch(), 1, static_cast<double>(model.flops().model()), peak_flops};
    if (progress.evaluates(step, cfg.steps)) {
      const auto te = std::chrono::steady_clock::now();
      {
        const MemoryTracker::Unmeasured off_the_books;  // the timeline and the peaks are the steps'
        line.val_loss = validation_loss(model, data, progress.eval_batches, cfg.mbs, cfg.seq);
      }
      require_finite_loss(line.val_loss, step, "validation loss");
      r.val_steps.push_back(step);
      r.val_losses.push_back(line.val_loss);
      eval_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - te).count();
    }
    if (!progress.quiet) print_progress_line("  ", line);
  }
  synchronize(cfg.device);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() - eval_seconds;
  return r;
}

int run_chapter(Runtime& rt, int argc, char** argv) {
  Cli cli = training_cli("ch01_memory", {"usp-small", 128, 8, 3, 3e-3, {"none"}},
                         "memory of one training step: parameters, gradients, optimizer states, activations");
  add_progress_flags(cli);
  if (!rt.parse(cli, argc, argv)) return 0;
  const TrainingInputs in = agree_training_inputs(rt, cli, TrainingDevices::cpu_or_cuda);
  const TrainingConfig& cfg = in.config;
  const Dataset& data = *in.data;
  rt.require(rt.size() == 1, "chapter 01 runs on one device: launch it without mpirun (or with -np 1)");
  ProgressFlags progress;
  rt.agree([&] {
    progress = progress_flags_from(cli);
    if (progress.eval_every > 0) check_validation_data(data, progress.eval_batches, cfg.mbs, cfg.seq);
  });
  const std::string out = cli.get_string("out");
  const ModelConfig& mc = cfg.model;
  std::cout << "ch01_memory: " << mc.str() << ", seq " << cfg.seq << ", micro-batch " << cfg.mbs << ", "
            << dtype_name(cfg.dtype) << ", data " << data.spec() << ", on " << cfg.device.str() << "\n\n";

  const double peak_flops = progress.quiet ? 0 : matmul_peak_flops(cfg.device);
  auto& tracker = MemoryTracker::instance();
  tracker.record_timeline(true);
  tracker.mark("start");

  // 1. The training state: parameters and gradients now, optimizer states at the first step.
  ParamStore params(mc, cfg.dtype, cfg.device);
  params.init(cfg.seed);
  Model model(params, cfg.model_options());
  std::unique_ptr<AdamW> optimizer;  // kept to the end: its states are part of the breakdown

  // 3. The training steps (2. is measured during the first forward).
  const TrainedSteps run = train_steps(params, model, optimizer, cfg, data, progress, peak_flops);
  tracker.mark("end");
  tracker.record_timeline(false);

  const Breakdown breakdown = compare_with_counts(params, model, cfg, run.layer);
  print_breakdown(std::cout, breakdown, run.layer);

  // 4. The calculator's playbook-formula view of the same run, and the 8B/70B/405B sweep.
  const calc::MemorySweep sweep = calc::figure_memory_vs_seq();
  calc::write_sweep_csv(out + "/memory_vs_seq.csv", calc::run_sweep(sweep));
  print_calculator_view(std::cout, cfg);

  tracker.write_timeline_csv(out + "/memory_timeline.csv");
  write_breakdown_csv(out + "/breakdown.csv", breakdown);
  write_training_summary(rt.world(), out + "/summary.json",
                         {.chapter = "01_memory", .losses = run.losses,
                          .tokens_per_second = static_cast<double>(cfg.steps * cfg.tokens_per_micro_batch()) / run.seconds,
                          .flags_json = cli.values_json(),
                          .chapter_json = results_json(breakdown, run.layer, run.val_steps, run.val_losses)});
  std::cout << "\nwrote " << out << "/summary.json, breakdown.csv, memory_timeline.csv, memory_vs_seq.csv\n";
  return breakdown.all_match() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) { return usp::run(argc, argv, run_chapter); }
