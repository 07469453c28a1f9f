// ch04_data_parallel: the playbook's "Data Parallelism" on CPU ranks, or with --device cuda one GPU per rank
// (gradients over NCCL, or over MPI through host memory when ranks share a GPU: --backend).
//
// Every rank trains a full replica of the model on its share of each step's global batch
// (global batch = mbs × grad-acc × dp) and the gradients are averaged over the ranks before
// each AdamW step, in one of three ways (gradient_sync.hpp):
//   naive      all-reduce every gradient after the backward pass
//   overlap    launch each gradient's all-reduce the moment backward produces it
//   bucketing  group the gradients into buckets of --bucket-mb (reverse parameter order,
//              exercise 04.1), launch each bucket once it is full (exercise 04.2)
// By default the three run side by side from the same weights on the same batches. For each:
// the losses (equal to the single-rank baseline on the same global batch, which rank 0 also
// runs), the all-reduces per step and the bytes each rank sent (= 2(N-1)/N of the gradients),
// no all-reduce during the non-final micro-batches of gradient accumulation, and a trace of
// compute and communication per rank with the fraction of communication hidden behind
// backward. Each step prints the progress line (variant_runner.hpp); --eval-every N evaluates the
// held-out loss on the replicated model every N steps, split over the ranks (summary.json's
// results.validation: the last variant's, as its losses). Writes to --out: summary.json,
// variants.csv, bucket_plan.csv, trace_<mode>.json (Perfetto) and trace_<mode>.csv
// (plots/ch04_dp_timelines.py draws them).
//
//   mpirun -np 4 build/bin/ch04_data_parallel [--dp-mode naive|overlap|bucketing|all]
//          [--grad-acc 2] [--bucket-mb 1] [--mbs 4] [--steps 5] [--eval-every 2] [--quiet]
//   ./usp run 04
#include <cmath>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "chapters/04_data_parallel/dp_comparison.hpp"
#include "chapters/04_data_parallel/dp_report.hpp"
#include "common/json.hpp"
#include "common/runtime.hpp"
#include "common/train/training_comms.hpp"
#include "common/train/training_inputs.hpp"
#include "common/train/training_summary.hpp"
#include "common/train/validation_loss.hpp"

namespace {

using namespace usp;
using namespace usp::ch04;

constexpr double kMiB = 1048576.0;

std::string text_of(double v) {
  std::ostringstream ss;
  ss << v;
  return ss.str();
}

struct Setup {
  TrainingInputs in;
  std::int64_t grad_acc = 1, global_batch = 0, bucket_cap = 0;
  std::vector<DpMode> modes = {};
  bool baseline = true;
  ProgressFlags progress = {};
};

// Reads and checks the flags; every rank agrees on the outcome (one message on failure).
Setup read_setup(Runtime& rt, const Cli& cli) {
  Setup s{agree_training_inputs(rt, cli, TrainingDevices::cpu_or_cuda_ranks)};
  const double bucket_mb = cli.get_float("bucket-mb");
  s.bucket_cap = static_cast<std::int64_t>(std::llround(bucket_mb * kMiB));
  rt.require(bucket_mb > 0 && s.bucket_cap >= 1,
             "--bucket-mb must be > 0 (the bucket cap in MiB; 0.25 is 256 KiB), got " + text_of(bucket_mb));

  // global batch = mbs × grad-acc × dp (the playbook's gbs = mbs × grad_acc × dp).
  const std::int64_t dp = rt.size(), mbs = s.in.config.mbs;
  rt.agree([&] { s.grad_acc = resolve_grad_acc(cli, mbs, dp); });
  s.global_batch = mbs * s.grad_acc * dp;
  const std::string mode = cli.get_string("dp-mode");
  s.modes = mode == "all" ? all_dp_modes() : std::vector<DpMode>{parse_dp_mode(mode)};
  s.baseline = !cli.get_flag("no-baseline");
  rt.agree([&] {
    s.progress = progress_flags_from(cli);
    if (s.progress.eval_every > 0) check_validation_data(*s.in.data, s.progress.eval_batches, mbs, s.in.config.seq);
  });
  return s;
}

void print_intro(std::ostream& out, const Setup& s, int dp, std::int64_t grad_bytes) {
  const TrainingConfig& tc = s.in.config;
  out << "ch04_data_parallel: " << tc.model.str() << " (Ψ = " << tc.model.num_parameters() << " parameters, "
      << grad_bytes << " bytes of gradients), seq " << tc.seq << ", " << dtype_name(tc.dtype) << ", on "
      << tc.device.str() << "\n"
      << "  dp " << dp << " × grad-acc " << s.grad_acc << " × mbs " << tc.mbs << " = global batch " << s.global_batch
      << " samples (" << s.global_batch * tc.seq << " tokens) per step, " << tc.steps << " steps\n";
  if (dp == 1) out << "  (one rank: nothing to synchronise; launch with mpirun -np 4, or ./usp run 04)\n";
  out << "\n";
}

// The bucket plan is a pure function of the layout (exercise 04.1): made on every rank, printed
// and written once. Returns "" or, while the exercise is a stub, its message.
std::string bucket_plan_part(Runtime& rt, const std::vector<ParamInfo>& layout, const Setup& s,
                             const std::string& out_dir, BucketPlan& plan) {
  const std::string no_plan =
      rt.skip_if_not_implemented([&] { plan = bucket_plan(layout, s.bucket_cap, s.in.config.dtype); });
  if (rt.is_root() && no_plan.empty()) {
    const report::Table table = bucket_plan_table(plan, layout);
    print_plan(std::cout, plan, table);
    table.write_csv(out_dir + "/bucket_plan.csv");
    std::cout << "\n";
  } else if (rt.is_root()) {
    std::cout << "bucket plan: not available, " << no_plan << "\n\n";
  }
  return no_plan;
}

// Each --dp-mode variant in turn (collective); a variant whose exercise is a stub is skipped on
// every rank together.
std::vector<DpVariant> run_variants(Runtime& rt, VariantRunner& runner, Communicator& grads, const Setup& s,
                                    bool no_plan) {
  std::vector<DpVariant> runs;
  for (DpMode mode : s.modes) {
    if (mode == DpMode::bucketing && no_plan) {
      if (rt.is_root()) std::cout << "bucketing: skipped until exercise 04.1 is written\n";
      continue;
    }
    const DpConfig cfg{s.in.config, s.grad_acc, mode, s.bucket_cap};
    const std::string skipped = rt.skip_if_not_implemented(
        [&] { runs.push_back(run_variant(runner, cfg, grads, *s.in.data, s.progress.eval_batches)); });
    if (rt.is_root() && !skipped.empty()) std::cout << dp_mode_name(mode) << ": skipped, " << skipped << "\n";
  }
  return runs;
}

// Rank 0's terminal report of the variants that ran; returns whether their exact counts hold.
bool print_variants(std::ostream& out, const std::vector<DpVariant>& runs, const VariantsContext& c,
                    const report::Table& table, std::size_t dtype_bytes) {
  print_losses(out, runs, c.baseline);
  char line[160];
  std::snprintf(line, sizeof line,
                "\n  ring all-reduce of every gradient: 2(N-1)/N · Ψ · %zu = %.0f bytes sent per rank per step\n",
                dtype_bytes, c.ring_bytes);
  out << line;
  table.print(out);
  out << "  (per step, mean over the ranks and the steps after the first. comm: each all-reduce from its start\n"
         "   on the progress thread to its completion, waiting for the other ranks included; hidden: the part\n"
         "   of it during backward compute; exposed: the rest. peak: rank 0's tracked bytes, all categories.)\n";
  return check_counts(out, runs, c);
}

int run_chapter(Runtime& rt, int argc, char** argv) {
  Cli cli = training_cli("ch04_data_parallel", {"usp-small", 128, 4, 8, 3e-3},
      "Data parallelism on CPU ranks or GPUs: naive, overlapped and bucketed gradient all-reduce, side by\n"
      "side, with gradient accumulation, traces, and the single-rank baseline they reproduce.");
  cli.add_choice("dp-mode", "all", {"naive", "overlap", "bucketing", "all"},
                 "how gradients are synchronised (all: the three side by side)");
  cli.add_int("grad-acc", 1, "micro-batches per optimizer step (gradients are synchronised after the last)", 1, 1024);
  cli.add_int("global-batch", 0, "samples per step over all ranks, = mbs × grad-acc × dp (0: from those)", 0,
              std::int64_t{1} << 30);
  cli.add_float("bucket-mb", 1.0, "bucket cap in MiB for --dp-mode bucketing (fractions allowed)");
  cli.add_flag("no-baseline", "skip the single-rank baseline run (rank 0, the whole global batch)");
  add_progress_flags(cli);
  if (!rt.parse(cli, argc, argv)) return 0;
  const Setup setup = read_setup(rt, cli);
  const TrainingConfig& tc = setup.in.config;
  const int dp = rt.size();
  const bool root = rt.is_root();
  const std::string out_dir = cli.get_string("out");
  const std::vector<ParamInfo> layout = llama_param_layout(tc.model);  // names and offsets, no memory
  const std::int64_t psi = tc.model.num_parameters(), grad_bytes = psi * static_cast<std::int64_t>(dtype_size(tc.dtype));
  if (root) print_intro(std::cout, setup, dp, grad_bytes);
  if (root) make_dirs(out_dir);  // rank 0 writes every file

  BucketPlan plan;
  const std::string no_plan = bucket_plan_part(rt, layout, setup, out_dir, plan);

  // The gradients go over comms.tensors(); the losses, traces, held-out losses and summaries over
  // comms.metrics(), so the gradients' counters (summary.json's comm_bytes) hold the gradients alone.
  TrainingComms comms(rt, tc);
  VariantRunner runner(comms.metrics(), {.config = tc, .tokens_per_step = setup.global_batch * tc.seq,
                                         .progress = setup.progress, .trace_dir = out_dir});

  // The baseline first, on rank 0 alone; the variants' memory peaks are taken afterwards.
  VariantsContext c{dp, setup.grad_acc, setup.global_batch, tc.seq, 2.0 * (dp - 1) / dp * static_cast<double>(grad_bytes)};
  if (setup.baseline && root) c.baseline = run_baseline(tc, *setup.in.data, setup.global_batch, tc.steps);
  rt.world().barrier();
  const std::vector<DpVariant> runs = run_variants(rt, runner, comms.tensors(), setup, !no_plan.empty());
  const report::Table variants = variants_table(runs, c);
  const bool checks_ok = !root || runs.empty() || print_variants(std::cout, runs, c, variants, dtype_size(tc.dtype));

  JsonWriter results;
  results.begin_object().field("grad_acc", setup.grad_acc).field("global_batch", setup.global_batch);
  results.field("bucket_cap_bytes", setup.bucket_cap).field("parameters", psi).field("gradient_bytes", grad_bytes);
  results.field("ring_bytes_per_step", c.ring_bytes).field("buckets", static_cast<std::int64_t>(plan.buckets.size()));
  if (!c.baseline.empty()) results.key("baseline_losses").array(c.baseline);
  results.key("variants");
  variants.write_json(results);
  const DpVariant none;
  const DpVariant& last = runs.empty() ? none : runs.back();
  write_validation_json(results, last.val_steps, last.val_losses);
  results.end_object();
  if (root) variants.write_csv(out_dir + "/variants.csv");
  write_training_summary(rt.world(), out_dir + "/summary.json",
                         {.chapter = "04_data_parallel",
                          .losses = runs.empty() ? std::vector<double>{} : runs.back().losses,
                          .tokens_per_second = runs.empty() ? 0.0 : static_cast<double>(setup.global_batch * tc.seq) /
                                                                        runs.back().step_seconds,
                          .dp = dp, .flags_json = cli.values_json(), .chapter_json = results.str(),
                          .comm = comms.device_stats()});
  if (root)
    std::cout << "\nwrote " << out_dir << "/summary.json, variants.csv" << (no_plan.empty() ? ", bucket_plan.csv" : "")
              << " and trace_<variant>.json/.csv (open in https://ui.perfetto.dev)\n";
  // A wrong count is a failed run, not just a line in the log.
  return mean_over_ranks(rt.world(), {checks_ok ? 1.0 : 0.0})[0] == 1.0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) { return usp::run(argc, argv, run_chapter); }
