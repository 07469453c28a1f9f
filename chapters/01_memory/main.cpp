// ch01_memory: the playbook's "Memory usage in transformers" on one device.
//
//   1. The training state, counted and measured: parameters, gradients, optimizer states.
//   2. One layer's activations three ways: your count (exercise 01.1), what the layer declares
//      it keeps, and what the memory tracker measured while it ran.
//   3. A few training steps with the tracker's timeline on (forward / backward / optimizer),
//      the playbook's memory profile: activations climb through forward and fall through
//      backward, gradients appear in the first backward, optimizer states at the first step.
//   4. The analytic calculator beside the measurement, and its sweep for Llama-3.1 8B / 70B /
//      405B over sequence lengths (the playbook's stacked-memory figure).
// Writes <out>/summary.json, breakdown.csv, memory_timeline.csv and memory_vs_seq.csv
// (plots/ch01_memory_timeline.py and plots/ch01_memory_vs_seq.py draw them).
//
//   build/bin/ch01_memory [--model usp-small] [--seq 128] [--mbs 8] [--steps 3] [--precision bf16]
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
#include "common/train/training_inputs.hpp"
#include "common/train/training_summary.hpp"
#include "chapters/01_memory/memory_report.hpp"

namespace {

using namespace usp;
using namespace usp::ch01;

int run_chapter(Runtime& rt, int argc, char** argv) {
  Cli cli("ch01_memory", "memory of one training step: parameters, gradients, optimizer states, activations");
  cli.add_common("out/01_memory");
  add_training_flags(cli, {"usp-small", 128, 8, 3, 3e-3, {"none"}});
  if (!rt.parse(cli, argc, argv)) return 0;
  const TrainingInputs in = agree_training_inputs(rt, cli, TrainingDevices::cpu_or_cuda);
  const TrainingConfig& cfg = in.config;
  const Dataset& data = *in.data;
  rt.require(rt.size() == 1, "chapter 01 runs on one device: launch it without mpirun (or with -np 1)");
  const std::string out = cli.get_string("out");
  const ModelConfig& mc = cfg.model;
  std::cout << "ch01_memory: " << mc.str() << ", seq " << cfg.seq << ", micro-batch " << cfg.mbs << ", "
            << dtype_name(cfg.dtype) << ", data " << data.spec() << ", on " << cfg.device.str() << "\n\n";

  auto& tracker = MemoryTracker::instance();
  tracker.record_timeline(true);
  tracker.mark("start");

  // 1. The training state: parameters and gradients now, optimizer states at the first step
  //    (as PyTorch allocates Adam's states lazily, which is what the playbook's profile shows).
  ParamStore params(mc, cfg.dtype, cfg.device);
  params.init(cfg.seed);
  Model model(params, cfg.model_options());
  std::unique_ptr<AdamW> optimizer;

  // 3. Training steps with the timeline; 2. is measured during the first forward.
  std::vector<double> losses;
  LayerMeasurement layer;
  const auto t0 = std::chrono::steady_clock::now();
  for (std::int64_t step = 0; step < cfg.steps; ++step) {
    const Batch batch = data.batch(step, 0, cfg.mbs, cfg.seq);
    tracker.mark("forward");
    const double loss = model.forward(batch.inputs, batch.targets);
    if (step == 0) layer = measure_layer(model, cfg);
    tracker.mark("backward");
    model.backward();
    tracker.mark("optimizer");
    if (!optimizer) optimizer = std::make_unique<AdamW>(params, cfg.adamw);
    optimizer->step(params);
    params.zero_grad();
    losses.push_back(loss);
    std::printf("step %3lld  loss %.4f\n", static_cast<long long>(step), loss);
  }
  synchronize(cfg.device);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  tracker.mark("end");
  tracker.record_timeline(false);

  const Breakdown breakdown = compare_with_counts(params, model, cfg, layer);
  print_breakdown(std::cout, breakdown, layer);

  // 4. The calculator's playbook-formula view of the same run, and the 8B/70B/405B sweep.
  const calc::MemorySweep sweep = calc::figure_memory_vs_seq();
  calc::write_sweep_csv(out + "/memory_vs_seq.csv", calc::run_sweep(sweep));
  print_calculator_view(std::cout, cfg);

  tracker.write_timeline_csv(out + "/memory_timeline.csv");
  write_breakdown_csv(out + "/breakdown.csv", breakdown);
  write_training_summary(rt.world(), out + "/summary.json",
                         {.chapter = "01_memory", .losses = losses,
                          .tokens_per_second = static_cast<double>(cfg.steps * cfg.tokens_per_micro_batch()) / seconds,
                          .flags_json = cli.values_json(), .chapter_json = results_json(breakdown, layer)});
  std::cout << "\nwrote " << out << "/summary.json, breakdown.csv, memory_timeline.csv, memory_vs_seq.csv\n";
  return breakdown.all_match() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  return usp::run(argc, argv, [&](usp::Runtime& rt) { return run_chapter(rt, argc, argv); });
}
