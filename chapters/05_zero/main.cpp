// ch05_zero: the playbook's "ZeRO (Zero Redundancy Optimizer)" on N_d data-parallel ranks: CPU ranks,
// or with --device cuda a GPU per rank (NCCL, or MPI through host memory when ranks share a GPU).
//
//   1. The stages side by side (--zero 0,1,2,3; 0 is plain data parallelism): the same training
//      steps on the same global batch under each, with
//        - the losses, and the final parameters' largest difference from the first stage's;
//        - each rank's memory by category: the state it keeps between steps (measured by the
//          tracker, next to the exact ZeRO formula of state_bytes.hpp) and the peaks, where
//          ZeRO-2's unit gradients and ZeRO-3's gathered units show up;
//        - the bytes each rank sends per step, by collective, against data parallelism's.
//   2. ZeRO-3 with and without prefetching the next unit's all-gather (--prefetch), with a trace
//      of the last step of each (plots/ch05_zero3_trace.py draws them as timelines).
//   3. Each step prints the progress line (variant_runner.hpp); --eval-every N evaluates the
//      held-out loss every N steps on a replica of the full parameters split over the ranks
//      (stage_run.hpp), outside the stages' memory and traffic (summary.json's results.validation:
//      the last stage's, as its losses).
//   4. The calculator's Llama-3.1 8B at DP = 8 under DP and ZeRO-1/2/3 over sequence lengths
//      (the playbook's figure; plots/ch05_zero_memory.py).
// Writes <out>/summary.json, zero_stages.csv (plots/ch05_zero_stages.py), zero3_prefetch.* and
// zero3_no_prefetch.* (Chrome trace JSON + CSV), zero_memory.csv.
//
//   mpirun -np 4 build/bin/ch05_zero [--zero 0,1,2,3] [--prefetch both] [--grad-acc 1]
//                                    [--precision bf16 [--fp32-grad-accum]] [--eval-every 2] [--quiet]
//   ./usp run 05
#include <iostream>
#include <string>
#include <vector>

#include "chapters/05_zero/stage_report.hpp"
#include "chapters/05_zero/stage_run.hpp"
#include "common/calc/memory_sweep.hpp"
#include "common/json.hpp"
#include "common/runtime.hpp"
#include "common/train/training_comms.hpp"
#include "common/train/training_inputs.hpp"
#include "common/train/training_summary.hpp"
#include "common/train/validation_loss.hpp"
#include "common/train/variant_runner.hpp"

namespace {

using namespace usp;
using namespace usp::ch05;

std::vector<ZeroOptions> parse_stages(const std::string& text, const std::string& prefetch, bool prefetch_given,
                                     bool fp32_accum) {
  std::vector<ZeroOptions> out;
  bool has_stage3 = false;
  for (int stage : parse_int_list(text, "--zero", 0, 3, Repeats::refused)) {
    has_stage3 = has_stage3 || stage == 3;
    for (bool pf : {true, false}) {
      if (stage == 3 && ((pf && prefetch == "off") || (!pf && prefetch == "on"))) continue;
      if (stage != 3 && !pf) continue;
      out.push_back({stage, pf, fp32_accum});
    }
  }
  if (prefetch_given && !has_stage3)
    throw UsageError("--prefetch acts on ZeRO-3's all-gathers only, and --zero " + text + " has no stage 3");
  return out;
}

struct Setup {
  TrainingInputs in;
  std::vector<ZeroOptions> stages = {};
  std::int64_t grad_acc = 0;
  ProgressFlags progress = {};  // --quiet, --eval-every, --eval-batches
};

// Reads and checks the flags; every rank agrees on the outcome (one message on failure).
Setup read_setup(Runtime& rt, const Cli& cli) {
  Setup s{agree_training_inputs(rt, cli, TrainingDevices::cpu_or_cuda_ranks)};
  const TrainingConfig& cfg = s.in.config;
  const std::int64_t dp = rt.size();
  rt.agree([&] {
    const bool fp32_accum = cli.get_flag("fp32-grad-accum");
    if (fp32_accum && cfg.dtype != DType::bf16)
      throw UsageError("--fp32-grad-accum needs --precision bf16 (fp32 gradients already accumulate in fp32)");
    s.stages = parse_stages(cli.get_string("zero"), cli.get_string("prefetch"), cli.given("prefetch"), fp32_accum);
    s.grad_acc = resolve_grad_acc(cli, cfg.mbs, dp);
    s.progress = progress_flags_from(cli);
    if (s.progress.eval_every > 0) check_validation_data(*s.in.data, s.progress.eval_batches, cfg.mbs, cfg.seq);
  });
  return s;
}

void print_intro(std::ostream& out, const Setup& s, int dp) {
  const TrainingConfig& cfg = s.in.config;
  out << "ch05_zero: " << cfg.model.str() << " (Ψ = " << cfg.model.num_parameters() << " parameters), seq " << cfg.seq
      << ", " << dtype_name(cfg.dtype) << (s.stages[0].fp32_grad_accum ? " with fp32 gradient accumulation" : "")
      << ", on " << cfg.device.str()
      << "\n  N_d = " << dp << " ranks × " << s.grad_acc << " micro-batch(es) of " << cfg.mbs << " = global batch "
      << dp * s.grad_acc * cfg.mbs << ", " << cfg.steps << " AdamW steps per stage\n";
  if (dp == 1)
    out << "  note: with one rank ZeRO has nothing to shard over (N_d = 1): every stage keeps the full state.\n"
           "        Run it on several ranks: mpirun -np 4 build/bin/ch05_zero (or ./usp run 05)\n";
}

int run_chapter(Runtime& rt, int argc, char** argv) {
  Cli cli = training_cli("ch05_zero", {"usp-small", 128, 2, 3, 3e-3},
                         "ZeRO-1/2/3: optimizer states, gradients and parameters sharded over the data-parallel ranks");
  cli.add_string("zero", "0,1,2,3", "the stages to run side by side, comma-separated (0 = plain data parallelism)");
  cli.add_choice("prefetch", "both", {"on", "off", "both"},
                 "ZeRO-3: all-gather the next unit while the current one computes (both: run ZeRO-3 each way)");
  cli.add_int("grad-acc", 1, "micro-batches per rank per optimizer step", 1, 1024);
  cli.add_int("global-batch", 0, "samples per step over all ranks; sets --grad-acc (0: mbs × grad-acc × dp)",
              0, 1 << 24);
  cli.add_flag("fp32-grad-accum", "with --precision bf16: accumulate gradients in fp32 (4 more bytes per parameter)");
  add_progress_flags(cli);
  if (!rt.parse(cli, argc, argv)) return 0;
  const Setup setup = read_setup(rt, cli);
  const TrainingConfig& cfg = setup.in.config;
  const int dp = rt.size();
  const std::string out = cli.get_string("out");
  if (rt.is_root()) print_intro(std::cout, setup, dp);
  // The stages' own communicator (the CPU world or a device communicator) and metrics for
  // everything else (common/train/training_comms.hpp); the steps through the runner.
  TrainingComms comms(rt, cfg);
  const double tokens_per_step = static_cast<double>(dp * setup.grad_acc * cfg.tokens_per_micro_batch());
  VariantRunner runner(comms.metrics(), {cfg, static_cast<std::int64_t>(tokens_per_step), setup.progress, out});
  make_dirs(out);
  std::vector<StageResult> results;
  for (const ZeroOptions& o : setup.stages) {
    const std::string trace = o.stage != 3 ? "" : o.prefetch ? "zero3_prefetch" : "zero3_no_prefetch";
    results.push_back(run_stage(runner, comms.tensors(), comms.metrics(), cfg, *setup.in.data, setup.grad_acc, o, trace,
                                setup.progress.held_out_batches()));
  }
  const StagesReport report = gather_stages(comms.metrics(), std::move(results), cfg.steps);
  const std::vector<calc::SweepRow> sweep = calc::run_sweep(calc::figure_zero());  // 4. the 8B figure
  if (rt.is_root()) {
    print_losses(std::cout, report);
    print_memory(std::cout, report, cfg);
    print_comm(std::cout, report);
    report.numbers.write_csv(out + "/zero_stages.csv");
    calc::write_sweep_csv(out + "/zero_memory.csv", sweep);
    print_calculator(std::cout, sweep);
  }

  JsonWriter j;
  j.begin_object().field("dp", dp).field("grad_acc", setup.grad_acc).field("global_batch", dp * setup.grad_acc * cfg.mbs);
  j.field("num_parameters", cfg.model.num_parameters());
  write_stages_json(j, report, tokens_per_step);
  write_validation_json(j, report.results.back().val_steps, report.results.back().val_losses);
  j.end_object();
  // The top-level losses, memory and comm_bytes are the last stage's (its peaks and counters are
  // the tracker's and the world's since that stage began); "results" holds every stage.
  const StageResult& last = report.results.back();
  write_training_summary(rt.world(), out + "/summary.json",
                         {.chapter = "05_zero", .losses = last.losses,
                          .tokens_per_second = static_cast<double>(cfg.steps) * tokens_per_step / last.seconds,
                          .dp = dp, .flags_json = cli.values_json(), .chapter_json = j.str(),
                          .comm = comms.device_stats()});
  if (rt.is_root())
    std::cout << "\nwrote " << out << "/summary.json, zero_stages.csv, zero_memory.csv and the ZeRO-3 traces\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return usp::run(argc, argv, run_chapter); }
