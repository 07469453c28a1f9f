// ch10_5d_parallelism: the playbook's "5D parallelism in a nutshell" and "Finding the best
// configuration".
//
//   1. One trainer for every layout: DP × TP × PP × CP (× EP) on the run's W ranks, each layout
//      trained for --steps steps next to the same training on one device; per rank its mesh
//      coordinates, the parameter / gradient / Adam bytes it holds against the calculator's
//      prediction for its pipeline stage, its peak activations, and the bytes it sent over each
//      dimension's group. By default the layouts that fit W (8: dp2·tp2·pp2, dp2·cp2·tp2,
//      cp2·tp2·pp2 with ZeRO-1, dp4·ep4·pp2 on a mixture of experts, dp4·pp2 zero-bubble);
//      --dp/--tp/--pp/--cp/--ep choose one. Each step prints the progress line (variant_runner.hpp);
//      --eval-every N evaluates the held-out loss in each layout (forward-only through its stages,
//      the replicas splitting the batches: a multiple of dp with ep > 1), outside its memory and
//      bytes (summary.json's results.validation: the first layout's, as its losses).
//   2. The planner's calibration: the playbook's DP-scaling series of the 1.34B model, measured
//      MFU next to what the step model predicts with its three fitted constants.
//   3. The campaign: for the playbook's four models (1.34B, 3.57B, 8.86B, 80B) on 1-64 nodes of 8
//      H100, the best layout the planner finds (plots/ch10_best_config.py draws the heatmap),
//      and the search's time.
// Writes <out>/summary.json, layout_ranks.csv, calibration.csv, campaign.csv and memory_8b.csv (the
// 8B model's memory per GPU under each parallelism, from the calculator: plots/ch10_memory_8b.py).
//
//   mpirun -np 8 build/bin/ch10_5d_parallelism [--dp 2 --tp 2 --pp 2 [--cp 1] [--ep 1] [--zero 0|1]
//                                               [--schedule 1f1b] [--m 4] [--experts E]] [--cluster FILE]
//                                               [--eval-every 2] [--quiet]
//   ./usp run 10                                      (then: usp_plan --model M --nodes N)
#include <chrono>
#include <cstdio>
#include <iostream>
#include <vector>

#include "chapters/10_5d_parallelism/campaign.hpp"
#include "chapters/10_5d_parallelism/layout_flags.hpp"
#include "chapters/10_5d_parallelism/layout_report.hpp"
#include "chapters/10_5d_parallelism/layout_run.hpp"
#include "chapters/10_5d_parallelism/memory_by_dimension.hpp"
#include "common/io/output_file.hpp"
#include "common/json.hpp"
#include "common/runtime.hpp"
#include "common/train/training_comms.hpp"
#include "common/train/training_inputs.hpp"
#include "common/train/training_summary.hpp"
#include "common/train/validation_loss.hpp"
#include "common/train/variant_runner.hpp"

namespace {

using namespace usp;
using namespace usp::ch10;

// The layouts the run trains: the one the flags name, or those of the list that fit W.
struct Planned {
  Layout5d layout;
  bool moe = false;
};

std::vector<Planned> default_layouts(int W) {
  using ch08::ScheduleKind;
  const std::vector<Planned> all = {
      {layout_5d(2, 2, 2, 1, 1, 0, ScheduleKind::one_f_one_b, 4)},
      {layout_5d(2, 2, 1, 2, 1, 0, ScheduleKind::one_f_one_b, 2)},
      {layout_5d(1, 2, 2, 2, 1, 1, ScheduleKind::one_f_one_b, 4)},
      {layout_5d(4, 1, 2, 1, 4, 0, ScheduleKind::one_f_one_b, 2), true},
      {layout_5d(4, 1, 2, 1, 1, 1, ScheduleKind::zb_h1, 4)},
      {layout_5d(1, 2, 2, 1, 1, 0, ScheduleKind::one_f_one_b, 4)},  // 4 ranks
      {layout_5d(2, 1, 1, 2, 1, 1, ScheduleKind::one_f_one_b, 2)},
      {layout_5d(2, 1, 2, 1, 2, 0, ScheduleKind::one_f_one_b, 2), true},
      {layout_5d(1, 1, 2, 1, 1, 0, ScheduleKind::one_f_one_b, 4)},  // 2 ranks
      {layout_5d(1, 1, 1, 2, 1, 0, ScheduleKind::one_f_one_b, 2)},
  };
  std::vector<Planned> out;
  for (const Planned& p : all)
    if (p.layout.world() == W) out.push_back(p);
  if (out.empty()) out.push_back({layout_5d(W, 1, 1, 1, 1, 0, ScheduleKind::one_f_one_b, 2)});
  return out;
}

// A mixture of experts for the MoE layouts (--experts, or 4 experts top-2 with a capacity).
TrainingConfig moe_config(TrainingConfig cfg) {
  if (cfg.model.is_moe()) return cfg;
  cfg.model.experts = 4;
  cfg.model.experts_per_token = 2;
  cfg.model.capacity_factor = 1.25;
  cfg.model.validate();
  return cfg;
}

// The flags: the training run's, the MoE's, one layout's (--dp .. --sharding), the cluster's.
void add_flags(Cli& cli) {
  cli.add_common("out/10_5d_parallelism");
  add_training_flags(cli, {"usp-small", 64, 2, 3, 3e-3});
  add_moe_flags(cli, {0, 2, 0.01});
  cli.add_int("dp", 1, "data-parallel replicas (default: what W leaves after tp·pp·cp)", 1, 4096);
  cli.add_int("tp", 1, "tensor-parallel ranks (Megatron blocks)", 1, 4096);
  cli.add_int("pp", 1, "pipeline stages", 1, 4096);
  cli.add_int("cp", 1, "context-parallel ranks (each sequence split over them)", 1, 4096);
  cli.add_int("ep", 1, "expert-parallel ranks (inside dp·cp; needs --experts)", 1, 4096);
  cli.add_int("zero", 0, "0, or 1: Adam states sharded over the dp·cp replicas", 0, 3);
  cli.add_string("schedule", "1f1b", "the pipeline schedule: afab, 1f1b, interleaved, zb-h1, zb-h2, dualpipev");
  cli.add_int("m", 4, "micro-batches per replica and step (gradient accumulation)", 1, 4096);
  cli.add_int("v", 1, "chunks per pipeline rank (interleaved)", 1, 64);
  cli.add_choice("attention", "ring", {"ring", "all-gather", "all-to-all"}, "the context-parallel attention");
  cli.add_choice("sharding", "zig-zag", {"zig-zag", "contiguous"}, "how CP cuts each sequence");
  cli.add_string("cluster", "", "a JSON cluster file instead of the playbook's H100 cluster");
  add_progress_flags(cli);
}

// What the flags chose, checked on every rank together (one message on failure).
struct Setup {
  TrainingInputs in;
  std::vector<Planned> layouts = {};
  plan::Cluster cluster = plan::Cluster::playbook();
  ProgressFlags progress = {};  // --quiet, --eval-every, --eval-batches
};

Setup read_setup(Runtime& rt, const Cli& cli) {
  Setup s{agree_training_inputs(rt, cli, TrainingDevices::cpu_or_cuda_ranks)};
  const int W = rt.size();
  rt.agree([&] {
    s.progress = progress_flags_from(cli);
    require_layout_flags_used(cli, W);
    if (layout_chosen(cli)) s.layouts.push_back({layout_from_flags(cli, W), s.in.config.model.is_moe()});
    else s.layouts = default_layouts(W);
    for (const Planned& p : s.layouts)
      check_layout_5d(p.layout, W, (p.moe ? moe_config(s.in.config) : s.in.config).model, s.in.config.seq);
    if (cli.given("cluster")) s.cluster = plan::Cluster::from_file(cli.get_string("cluster"));
    if (s.progress.eval_every > 0) {
      for (const Planned& p : s.layouts)
        if (p.layout.ep > 1 && s.progress.eval_batches % p.layout.dp != 0)
          throw UsageError("--eval-batches " + std::to_string(s.progress.eval_batches) + " is not a multiple of the " +
                           std::to_string(p.layout.dp) + " replicas of layout " + p.layout.label() +
                           ": its expert-parallel ranks exchange tokens at every MoE layer, so each replica "
                           "evaluates as many held-out batches");
      check_validation_data(*s.in.data, s.progress.eval_batches, s.in.config.mbs, s.in.config.seq);
    }
  });
  return s;
}

// 1. The trainer: every layout trained, printed by rank 0 and written to layout_ranks.csv.
std::vector<LayoutRun> train_layouts(Runtime& rt, const Setup& s, const std::string& out) {
  const TrainingInputs& in = s.in;
  // The layouts' tensors over the CPU world or a device communicator, which each trainer's mesh
  // splits into its groups; everything else over metrics (common/train/training_comms.hpp).
  TrainingComms comms(rt, in.config);
  if (rt.is_root())
    std::cout << "1. One trainer for every layout, on " << rt.size()
              << (in.config.device.is_cuda() ? " GPU(s)" : " rank(s)") << ": " << in.config.model.str() << ", "
              << in.config.mbs << " × " << in.config.seq << " tokens per micro-batch, " << in.config.steps
              << " AdamW steps (fp32). Mesh order tp-cp-dp-pp (TP peers neighbours, stages furthest apart).\n"
              << "   Memory: KiB this rank holds, '=' where it is the calculator's for the rank's stage; bytes sent\n"
              << "   per step over each dimension's group.\n";
  std::vector<LayoutRun> runs;
  for (const Planned& p : s.layouts) {
    // A runner per layout (variant_runner.hpp): each its own global batch (dp · m micro-batches).
    const TrainingConfig cfg = p.moe ? moe_config(in.config) : in.config;
    VariantRunner runner(comms.metrics(),
                         {cfg, p.layout.dp * p.layout.m * cfg.tokens_per_micro_batch(), s.progress, out});
    runs.push_back(run_layout(runner, comms.tensors(), comms.metrics(), cfg, *in.data, p.layout,
                              s.progress.held_out_batches()));
    if (rt.is_root()) print_layout_run(std::cout, runs.back());
  }
  if (rt.is_root()) layout_ranks_table(runs).write_csv(out + "/layout_ranks.csv");
  return runs;
}

// 2. and 3. What the planner found: empty while exercise 10.1 is a stub.
struct PlannerResults {
  std::vector<CalibrationPoint> calibration;
  std::vector<CampaignCell> cells;
  double seconds = 0;  // the campaign's search
};

// The planner: arithmetic, the same on every rank (exercise 10.1's terms inside); rank 0 prints
// and writes calibration.csv and campaign.csv.
PlannerResults run_planner(Runtime& rt, const plan::Cluster& cluster, const std::string& out) {
  PlannerResults r;
  const std::string missing = rt.skip_if_not_implemented([&] {
    r.calibration = calibration_series(cluster);
    const auto t0 = std::chrono::steady_clock::now();
    r.cells = run_campaign({"playbook-1.34b", "playbook-3.57b", "playbook-8.86b", "playbook-80b"},
                           {1, 2, 4, 8, 16, 32, 64}, cluster);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  });
  if (!rt.is_root()) return r;
  if (!missing.empty()) {
    std::cout << "\n2. and 3. The planner: skipped until exercise 10.1 is written (" << missing << ")\n";
    return r;
  }
  print_calibration(r.calibration);
  print_campaign(r.cells, cluster, r.seconds);
  calibration_table(r.calibration).write_csv(out + "/calibration.csv");
  campaign_table(r.cells).write_csv(out + "/campaign.csv");
  return r;
}

// summary.json: the first layout's losses and throughput at its top, every layout in "layouts",
// the planner's leave-one-out error and search.
void write_summary(Runtime& rt, const Cli& cli, const Setup& s, const std::vector<LayoutRun>& runs,
                   const PlannerResults& planner) {
  JsonWriter j;
  j.begin_object().key("layouts");
  layouts_table(runs).write_json(j);
  j.field("cluster", s.cluster.name);
  // The step model's leave-one-out error on its calibration series, without and with the new terms.
  if (!planner.calibration.empty()) {
    const LooError before = loo_error(planner.calibration, false), after = loo_error(planner.calibration, true);
    j.field("loo_error_median_before", before.median).field("loo_error_largest_before", before.largest);
    j.field("loo_error_median_after", after.median).field("loo_error_largest_after", after.largest);
  }
  j.field("search_seconds", planner.seconds).field("cells", planner.cells.size());
  write_validation_json(j, runs.front().val_steps, runs.front().val_losses);
  j.end_object();
  const Layout5d& l = runs.front().layout;
  const double tokens_per_step = static_cast<double>(l.dp * l.m * s.in.config.tokens_per_micro_batch());
  write_training_summary(rt.world(), cli.get_string("out") + "/summary.json",
                         {.chapter = "10_5d_parallelism", .losses = runs.front().losses,
                          .tokens_per_second = tokens_per_step / runs.front().median_step_seconds, .dp = l.dp,
                          .tp = l.tp, .cp = l.cp, .pp = l.pp, .ep = l.ep, .flags_json = cli.values_json(),
                          .chapter_json = j.str()});
}

int run_chapter(Runtime& rt, int argc, char** argv) {
  Cli cli("ch10_5d_parallelism",
          "5D parallelism: DP × TP × PP × CP (× EP) layouts trained by one trainer, each against one device; then "
          "the cluster planner's calibration and the playbook's campaign (the best layout of 4 models on 1-64 nodes)");
  add_flags(cli);
  if (!rt.parse(cli, argc, argv)) return 0;
  const std::string out = cli.get_string("out");
  const Setup setup = read_setup(rt, cli);
  make_dirs(out);
  const std::vector<LayoutRun> runs = train_layouts(rt, setup, out);   // 1.
  const PlannerResults planner = run_planner(rt, setup.cluster, out);  // 2. and 3.
  if (rt.is_root()) memory_by_dimension_table(memory_by_dimension()).write_csv(out + "/memory_8b.csv");
  write_summary(rt, cli, setup, runs, planner);
  if (rt.is_root())
    std::cout << "\nwrote " << out << "/summary.json, layout_ranks.csv, calibration.csv, campaign.csv, memory_8b.csv\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return usp::run(argc, argv, [&](usp::Runtime& rt) { return run_chapter(rt, argc, argv); });
}
