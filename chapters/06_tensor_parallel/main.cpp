// ch06_tensor_parallel: the playbook's "Tensor Parallelism" and "Sequence Parallelism" on the
// run's W ranks: CPU ranks, or with --device cuda a GPU per rank (the groups over NCCL, or over
// MPI through host memory when ranks share a GPU: --backend).
//
//   1. The layouts side by side: for each t of --tp that divides W, t-way tensor parallelism
//      (Megatron-LM's column and row blocks) on dp = W / t data-parallel replicas, without and
//      with sequence parallelism (--sp). Each trains the same steps on the same global batch from
//      the same initial weights, so the losses agree; the final parameters' largest difference
//      from the first layout's shows it too.
//   2. Each rank's memory by category, and one layer's saved activations against the course's
//      formula: TP divides what the column blocks make by t, SP the stream's tensors too.
//   3. The bytes each rank sends per step, by collective, against the operator count: TP's
//      all-reduces become SP's all-gathers and reduce-scatters (the same bytes), plus the
//      all-gathers that fetch the column blocks' inputs again in backward.
//   4. The step time, and a trace of each layout's last step (plots/ch06_tp_traces.py).
//   Each step prints the progress line (variant_runner.hpp); --eval-every N evaluates the held-out
//   loss every N steps in each layout itself (tp_run.hpp), outside its memory and traffic
//   (summary.json's results.validation: the last layout's, as its losses).
//   5. The calculator's Llama-3.1 70B at TP 1, 8 and 16 without and with SP (plots/ch06_tp_memory.py).
// Writes <out>/summary.json, tp_variants.csv (plots/ch06_activation_vs_t.py), the traces
// trace_tp<t>[_sp].{json,csv} (plots/ch06_tp_traces.py) and tp_memory.csv.
//
//   mpirun -np 4 build/bin/ch06_tensor_parallel [--tp 1,2,4] [--sp both] [--grad-acc 1]
//                                               [--save DIR] [--load DIR] [--eval-every 2] [--quiet]
//   ./usp run 06
#include <algorithm>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "chapters/06_tensor_parallel/tp_checkpoint.hpp"
#include "chapters/06_tensor_parallel/tp_report.hpp"
#include "chapters/06_tensor_parallel/tp_run.hpp"
#include "common/calc/memory_sweep.hpp"
#include "common/json.hpp"
#include "common/runtime.hpp"
#include "common/train/each_variant.hpp"
#include "common/train/training_comms.hpp"
#include "common/train/training_inputs.hpp"
#include "common/train/training_summary.hpp"
#include "common/train/validation_loss.hpp"
#include "common/train/variant_runner.hpp"

namespace {

using namespace usp;
using namespace usp::ch06;

struct Setup {
  TrainingInputs in;
  std::vector<Variant> variants = {};
  std::vector<int> skipped = {};  // t of the default --tp that do not divide the world size
  std::int64_t grad_acc = 0;      // micro-batches per rank at t = 1 (dp = W)
  ProgressFlags progress = {};    // --quiet, --eval-every, --eval-batches
};

constexpr int kMaxTp = 4096;  // each t of --tp: chapter 10's bound on its --tp

// The layouts of --tp and --sp on `world` ranks, each checked (check_tp_layout) against the
// model and the micro-batch.
void plan_variants(Setup& s, const Cli& cli, int world) {
  const TrainingConfig& cfg = s.in.config;
  const std::string sp = cli.get_string("sp");
  for (int t : parse_int_list(cli.get_string("tp"), "--tp", 1, kMaxTp, Repeats::refused)) {
    if (world % t != 0) {
      if (cli.given("tp"))
        throw UsageError("--tp " + std::to_string(t) + " does not divide the " + std::to_string(world) +
                         " ranks of this run (each of the dp = W / t replicas is t ranks)");
      s.skipped.push_back(t);
      continue;
    }
    const int dp = world / t;
    std::vector<bool> modes;
    if (t == 1 || sp != "on") modes.push_back(false);  // t = 1 has no group to split the stream over
    if (t > 1 && sp != "off") modes.push_back(true);
    for (bool with_sp : modes)
      s.variants.push_back({TpLayout{dp, t, with_sp}, s.grad_acc * t, "trace_" + variant_name({dp, t, with_sp})});
  }
  if (sp == "on" && std::none_of(s.variants.begin(), s.variants.end(), [](const Variant& v) { return v.layout.sp; }))
    s.variants.push_back({TpLayout{world, 1, true}, s.grad_acc, ""});  // check_tp_layout says why not
  if (s.variants.empty())
    throw UsageError("--tp " + cli.get_string("tp") + ": no t divides the " + std::to_string(world) + " ranks");
  for (const Variant& v : s.variants) check_tp_layout(v.layout, world, cfg.model, cfg.mbs, cfg.seq);
}

// Reads and checks the flags; every rank agrees on the outcome (one message on failure).
Setup read_setup(Runtime& rt, const Cli& cli) {
  Setup s{agree_training_inputs(rt, cli, TrainingDevices::cpu_or_cuda_ranks)};
  rt.agree([&] {
    // The global batch of W × grad-acc × mbs samples: a layout with dp = W / t replicas runs
    // grad-acc × t micro-batches per replica, so every layout sees the same samples per step.
    s.grad_acc = resolve_grad_acc(cli, s.in.config.mbs, rt.size());
    s.progress = progress_flags_from(cli);
    const TrainingConfig& cfg = s.in.config;
    if (s.progress.eval_every > 0) check_validation_data(*s.in.data, s.progress.eval_batches, cfg.mbs, cfg.seq);
    plan_variants(s, cli, rt.size());
    if (!cli.get_string("save").empty() && cli.get_string("save") == cli.get_string("load"))
      throw UsageError("--save and --load name the same directory '" + cli.get_string("save") + "'");
  });
  return s;
}

void print_intro(std::ostream& out, const Setup& s, int world) {
  const TrainingConfig& cfg = s.in.config;
  const std::int64_t global = world * s.grad_acc * cfg.mbs;
  out << "ch06_tensor_parallel: " << cfg.model.str() << " (Ψ = " << cfg.model.num_parameters()
      << " parameters), seq " << cfg.seq << ", " << dtype_name(cfg.dtype) << ", recompute "
      << recompute_name(cfg.recompute) << "\n  W = " << world << (world == 1 ? " rank" : " ranks") << "; global batch "
      << global << " samples of "
      << cfg.seq << " tokens (micro-batches of " << cfg.mbs << "), " << cfg.steps << " AdamW steps per layout, on "
      << cfg.device.str() << "\n";
  for (const Variant& v : s.variants)
    out << "    " << v.layout.label() << ": dp = " << v.layout.dp << " replica(s) of t = " << v.layout.tp
        << " rank(s), " << v.micro_batches << " micro-batch(es) per replica and step\n";
  for (int t : s.skipped) out << "  note: t = " << t << " does not divide the " << world << " ranks: skipped\n";
  if (world == 1)
    out << "  note: on one rank only t = 1 fits (no tensor parallelism). Run it on several ranks:\n"
           "        mpirun -np 4 build/bin/ch06_tensor_parallel (or ./usp run 06)\n";
}

// The chapter's flags after the training run's (training_cli): the layouts' (--tp, --sp), the global batch,
// the checkpoints.
void add_flags(Cli& cli) {
  cli.add_string("tp", "1,2,4",
                 "tensor-parallel sizes t to run side by side, comma-separated; each on dp = W / t replicas "
                 "(by default the t that divide the world size W)");
  cli.add_choice("sp", "both", {"off", "on", "both"},
                 "sequence parallelism at every t > 1: off, on, or both (each t with and without)");
  cli.add_int("grad-acc", 1,
              "micro-batches per rank per optimizer step at t = 1 (dp = W); a layout of dp = W / t replicas runs "
              "grad-acc × t per replica, on the same global batch",
              1, 1024);
  cli.add_int("global-batch", 0, "samples per step over all ranks; sets --grad-acc (0: mbs × grad-acc × W)", 0,
              1 << 24);
  cli.add_string("save", "", "after the last layout's steps, save its model here (a whole Hugging Face checkpoint)");
  cli.add_string("load", "", "start every layout from this checkpoint (any TP degree) instead of the seed's weights");
  add_progress_flags(cli);
}

// The global batch's tokens: W × grad-acc micro-batches of mbs × seq.
double tokens_per_step(const Setup& s, int world) {
  return static_cast<double>(world * s.grad_acc * s.in.config.tokens_per_micro_batch());
}

// 1-4. Every layout trained side by side (--load before, --save after the last), every rank's
// numbers gathered; nothing while exercise 06.1 or 06.2 is a stub (said once).
std::optional<VariantsReport> run_layouts(Runtime& rt, const Cli& cli, const Setup& setup) {
  const TrainingConfig& cfg = setup.in.config;
  const std::string out = cli.get_string("out");
  // The layouts' tensors over the CPU world or a device communicator, everything else over
  // metrics (common/train/training_comms.hpp); the steps through the runner (variant_runner.hpp).
  TrainingComms comms(rt, cfg);
  const double tokens = tokens_per_step(setup, rt.size());
  VariantRunner runner(comms.metrics(), {cfg, static_cast<std::int64_t>(tokens), setup.progress, out});
  make_dirs(out);

  const std::string load = cli.get_string("load"), save = cli.get_string("save");
  std::vector<VariantResult> results;
  // Every layout runs the blocks of exercise 06.1 and the loss of 06.2: while they are stubs,
  // nothing can train (skipped on every rank together).
  const bool trained = train_each_variant(
      rt, setup.variants.size(), "the layouts: skipped until exercises 06.1 and 06.2 are written", [&](std::size_t i) {
        TrainerHooks hooks;
        if (!load.empty())  // a missing or mismatched checkpoint is a UsageError on every rank
          hooks.before_training = [&](TpTrainer& trainer) { rt.agree([&] { load_tp_checkpoint(trainer, load); }); };
        if (!save.empty() && i + 1 == setup.variants.size())
          hooks.after_training = [&](TpTrainer& trainer) {
            rt.agree([&] { save_tp_checkpoint(rt.world(), trainer, save); });
          };
        results.push_back(run_variant(runner, comms.tensors(), cfg, *setup.in.data, setup.variants[i], hooks,
                                      setup.progress.held_out_batches()));
      });
  if (!trained) return std::nullopt;
  return gather_variants(comms.metrics(), std::move(results), cfg.steps, tokens, runner.agreement());
}

// 1-4 printed and tp_variants.csv; 5. the calculator's 70B figure (tp_memory.csv). Rank 0 only.
void print_report(std::ostream& out, const VariantsReport& report, const std::string& out_dir) {
  print_losses(out, report);
  print_memory(out, report);
  print_comm(out, report);
  print_speed(out, report);
  report.numbers.write_csv(out_dir + "/tp_variants.csv");
  const std::vector<calc::SweepRow> sweep = calc::run_sweep(calc::figure_tp());  // 5. the 70B figure
  calc::write_sweep_csv(out_dir + "/tp_memory.csv", sweep);
  out << "\n5. The calculator: " << sweep.front().setup.model.name
      << ", mixed precision, no recomputation, b = 1 (GiB per GPU; plots/ch06_tp_memory.py draws every s)\n";
  calc::print_sweep_table(out, sweep, 4096, "layout", [](const calc::TrainingSetup& s) {
    return "TP " + std::to_string(s.tp) + (s.sp ? " + SP" : "");
  });
}

// summary.json: the top-level losses, memory and comm_bytes are the last layout's (its peaks are
// the tracker's since that layout began, its bytes those of its tp and dp groups); "results"
// holds every layout.
void write_summary(Runtime& rt, const Cli& cli, const Setup& setup, const VariantsReport& report) {
  const TrainingConfig& cfg = setup.in.config;
  const int world = rt.size();
  JsonWriter j;
  j.begin_object().field("world", world).field("grad_acc", setup.grad_acc);
  j.field("global_batch", world * setup.grad_acc * cfg.mbs).field("num_parameters", cfg.model.num_parameters());
  write_variants_json(j, report, variant_name);
  const VariantResult& last = report.results.back();
  write_validation_json(j, last.val_steps, last.val_losses);
  j.end_object();
  CommStats traffic = last.tp_comm;
  traffic += last.dp_comm;
  write_training_summary(rt.world(), cli.get_string("out") + "/summary.json",
                         {.chapter = "06_tensor_parallel", .losses = last.losses,
                          .tokens_per_second = tokens_per_step(setup, world) / last.median_step_seconds(),
                          .dp = last.variant.layout.dp, .tp = last.variant.layout.tp, .flags_json = cli.values_json(),
                          .chapter_json = j.str(), .comm = &traffic});
}

int run_chapter(Runtime& rt, int argc, char** argv) {
  Cli cli = training_cli("ch06_tensor_parallel", {"usp-small", 128, 2, 3, 3e-3},
      "tensor parallelism (Megatron-LM's column and row blocks) and sequence parallelism on a dp × tp mesh,\n"
      "on CPU ranks or a GPU per rank");
  add_flags(cli);
  if (!rt.parse(cli, argc, argv)) return 0;
  const Setup setup = read_setup(rt, cli);
  if (rt.is_root()) print_intro(std::cout, setup, rt.size());
  const std::optional<VariantsReport> report = run_layouts(rt, cli, setup);
  if (!report) return 0;
  const std::string out = cli.get_string("out");
  if (rt.is_root()) print_report(std::cout, *report, out);
  write_summary(rt, cli, setup, *report);
  const std::string save = cli.get_string("save");
  if (rt.is_root())
    std::cout << "\nwrote " << out << "/summary.json, tp_variants.csv, tp_memory.csv and the traces trace_tp*.{json,csv}"
              << (save.empty() ? "" : "; the last layout's model to " + save) << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return usp::run(argc, argv, run_chapter); }
