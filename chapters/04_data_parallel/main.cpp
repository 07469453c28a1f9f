// ch04_data_parallel: the playbook's "Data Parallelism" on CPU ranks.
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
// backward. Writes to --out: summary.json, variants.csv, bucket_plan.csv, trace_<mode>.json
// (Perfetto) and trace_<mode>.csv (plots/ch04_dp_timelines.py draws them).
//
//   mpirun -np 4 build/bin/ch04_data_parallel [--dp-mode naive|overlap|bucketing|all]
//          [--grad-acc 2] [--bucket-mb 1] [--mbs 4] [--steps 5]
//   ./usp run 04
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "common/json.hpp"
#include "common/runtime.hpp"
#include "common/train/training_summary.hpp"
#include "chapters/04_data_parallel/dp_comparison.hpp"

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
  TrainingConfig train;
  std::unique_ptr<Dataset> data;
  std::int64_t grad_acc = 1, global_batch = 0, bucket_cap = 0;
  std::vector<DpMode> modes;
  bool baseline = true;
};

// Reads and checks the flags; every rank agrees on the outcome (one message on failure).
Setup read_setup(Runtime& rt, const Cli& cli) {
  Setup s;
  rt.agree([&] {
    s.train = training_config_from(cli);
    s.data = open_training_data(s.train);
  });
  const std::string device = cli.get_string("device"), backend = cli.get_string("backend");
  rt.require(device == "auto" || device == "cpu",
             "chapter 04 trains on CPU ranks (the model has no CUDA path yet): use --device cpu or leave it at auto");
  rt.require(backend == "auto" || backend == "mpi", "chapter 04 uses the MPI backend: use --backend mpi or leave it at auto");

  const double bucket_mb = cli.get_float("bucket-mb");
  s.bucket_cap = static_cast<std::int64_t>(std::llround(bucket_mb * kMiB));
  rt.require(bucket_mb > 0 && s.bucket_cap >= 1,
             "--bucket-mb must be > 0 (the bucket cap in MiB; 0.25 is 256 KiB), got " + text_of(bucket_mb));

  // global batch = mbs × grad-acc × dp (the playbook's gbs = mbs × grad_acc × dp).
  const std::int64_t dp = rt.size(), mbs = s.train.mbs, gbs = cli.get_int("global-batch");
  s.grad_acc = cli.get_int("grad-acc");
  if (gbs > 0) {
    const std::string per_step = "mbs × dp = " + std::to_string(mbs) + " × " + std::to_string(dp) + " = " +
                                 std::to_string(mbs * dp);
    rt.require(gbs % (mbs * dp) == 0, "--global-batch " + std::to_string(gbs) + " is not a multiple of " + per_step +
                                          " (global batch = mbs × grad-acc × dp)");
    if (cli.given("grad-acc")) {
      rt.require(gbs == mbs * s.grad_acc * dp,
                 "--global-batch " + std::to_string(gbs) + " does not equal mbs × grad-acc × dp = " + std::to_string(mbs) +
                     " × " + std::to_string(s.grad_acc) + " × " + std::to_string(dp) + " = " +
                     std::to_string(mbs * s.grad_acc * dp));
    } else {
      s.grad_acc = gbs / (mbs * dp);
    }
  }
  s.global_batch = mbs * s.grad_acc * dp;
  const std::string mode = cli.get_string("dp-mode");
  s.modes = mode == "all" ? all_dp_modes() : std::vector<DpMode>{parse_dp_mode(mode)};
  s.baseline = !cli.get_flag("no-baseline");
  return s;
}

// "model.layers.3.mlp.down_proj.weight" -> "layers.3.mlp.down_proj", for the printed plan.
std::string short_name(std::string name) {
  if (name.rfind("model.", 0) == 0) name = name.substr(6);
  const std::string suffix = ".weight";
  if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
    name.resize(name.size() - suffix.size());
  return name;
}

void print_plan(const BucketPlan& plan, const std::vector<ParamInfo>& layout, std::ostream& out) {
  out << "bucket plan: cap " << plan.cap_bytes << " bytes, " << plan.buckets.size()
      << " buckets, filled in reverse parameter order\n";
  char line[256];
  std::snprintf(line, sizeof line, "  %6s %6s  %-60s %10s\n", "bucket", "params", "from .. to (backward order)", "bytes");
  out << line;
  for (std::size_t b = 0; b < plan.buckets.size(); ++b) {
    const Bucket& k = plan.buckets[b];
    std::string span = short_name(layout[static_cast<std::size_t>(k.params.front())].name);
    if (k.params.size() > 1) span += " .. " + short_name(layout[static_cast<std::size_t>(k.params.back())].name);
    std::snprintf(line, sizeof line, "  %6zu %6zu  %-60s %10lld\n", b, k.params.size(), span.c_str(),
                  static_cast<long long>(k.bytes));
    out << line;
  }
}

void write_plan_csv(const std::string& path, const BucketPlan& plan, const std::vector<ParamInfo>& layout) {
  std::ofstream csv(path);
  csv << "bucket,first_param,last_param,num_params,begin,end,bytes\n";
  for (std::size_t b = 0; b < plan.buckets.size(); ++b) {
    const Bucket& k = plan.buckets[b];
    csv << b << ',' << layout[static_cast<std::size_t>(k.params.front())].name << ','
        << layout[static_cast<std::size_t>(k.params.back())].name << ',' << k.params.size() << ',' << k.begin
        << ',' << k.end << ',' << k.bytes << '\n';
  }
}

double max_rel_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double worst = 0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    worst = std::max(worst, std::fabs(a[i] - b[i]) / std::fabs(b[i]));
  return worst;
}

int run_chapter(Runtime& rt, int argc, char** argv) {
  Cli cli("ch04_data_parallel",
          "Data parallelism on CPU ranks: naive, overlapped and bucketed gradient all-reduce, side by side,\n"
          "with gradient accumulation, traces, and the single-rank baseline they reproduce.");
  cli.add_common("out/04_data_parallel");
  add_training_flags(cli, {"usp-small", 128, 4, 8, 3e-3});
  cli.add_choice("dp-mode", "all", {"naive", "overlap", "bucketing", "all"},
                 "how gradients are synchronised (all: the three side by side)");
  cli.add_int("grad-acc", 1, "micro-batches per optimizer step (gradients are synchronised after the last)", 1, 1024);
  cli.add_int("global-batch", 0, "samples per step over all ranks, = mbs × grad-acc × dp (0: from those)", 0,
              std::int64_t{1} << 30);
  cli.add_float("bucket-mb", 1.0, "bucket cap in MiB for --dp-mode bucketing (fractions allowed)");
  cli.add_flag("no-baseline", "skip the single-rank baseline run (rank 0, the whole global batch)");
  if (!rt.parse(cli, argc, argv)) return 0;
  Setup setup = read_setup(rt, cli);
  Communicator& comm = rt.world();
  const int dp = comm.size();
  const bool root = rt.is_root();
  const std::string out_dir = cli.get_string("out");
  const TrainingConfig& tc = setup.train;
  std::ostream& out = std::cout;  // rank 0 prints

  const std::vector<ParamInfo> layout = llama_param_layout(tc.model);  // names and offsets, no memory
  const std::int64_t psi = tc.model.num_parameters(), grad_bytes = psi * static_cast<std::int64_t>(dtype_size(tc.dtype));
  if (root) {
    out << "ch04_data_parallel: " << tc.model.str() << " (Ψ = " << psi << " parameters, " << grad_bytes
        << " bytes of gradients), seq " << tc.seq << ", " << dtype_name(tc.dtype) << "\n"
        << "  dp " << dp << " × grad-acc " << setup.grad_acc << " × mbs " << tc.mbs << " = global batch "
        << setup.global_batch << " samples (" << setup.global_batch * tc.seq << " tokens) per step, " << tc.steps
        << " steps\n";
    if (dp == 1) out << "  (one rank: nothing to synchronise; launch with mpirun -np 4, or ./usp run 04)\n";
    out << "\n";
  }
  if (root) make_dirs(out_dir);  // rank 0 writes every file

  // The bucket plan is a pure function of the layout: print it once (exercise 04.1).
  BucketPlan plan;
  bool have_plan = false;
  try {
    plan = bucket_plan(layout, setup.bucket_cap, tc.dtype);
    have_plan = true;
    if (root) {
      print_plan(plan, layout, out);
      write_plan_csv(out_dir + "/bucket_plan.csv", plan, layout);
      out << "\n";
    }
  } catch (const NotImplemented& e) {
    if (root) out << "bucket plan: not available, " << e.what() << "\n\n";
  }

  // The baseline first, on rank 0 alone; the variants' memory peaks are taken afterwards.
  std::vector<double> baseline;
  if (setup.baseline && root) baseline = run_baseline(tc, *setup.data, setup.global_batch, tc.steps);
  comm.barrier();

  std::vector<VariantRun> runs;
  for (DpMode mode : setup.modes) {
    if (mode == DpMode::bucketing && !have_plan) {
      if (root) out << "bucketing: skipped until exercise 04.1 is written\n";
      continue;
    }
    DpConfig cfg{tc, setup.grad_acc, mode, setup.bucket_cap};
    try {
      runs.push_back(run_variant(cfg, comm, *setup.data, tc.steps, out_dir));
    } catch (const NotImplemented& e) {
      // The stub throws on every rank at the first gradient, before any all-reduce of the step.
      if (root) out << dp_mode_name(mode) << ": skipped, " << e.what() << "\n";
    }
  }

  // Ring all-reduce of every gradient: each rank sends 2(N-1)/N · Ψ · bytes per element.
  const double ring_bytes = 2.0 * (dp - 1) / dp * static_cast<double>(grad_bytes);
  bool checks_ok = true;
  if (root && !runs.empty()) {
    out << "\nlosses (mean over the global batch)\n  step";
    if (!baseline.empty()) out << "       1 rank";
    for (const auto& r : runs) std::printf("%13s", dp_mode_name(r.mode));
    std::fflush(stdout);
    out << "\n";
    for (std::int64_t s = 0; s < tc.steps; ++s) {
      std::printf("  %4lld", static_cast<long long>(s));
      if (!baseline.empty()) std::printf("  %11.7f", baseline[static_cast<std::size_t>(s)]);
      for (const auto& r : runs) std::printf("  %11.7f", r.losses[static_cast<std::size_t>(s)]);
      std::printf("\n");
    }
    if (!baseline.empty()) {
      std::printf("  max |Δloss|/loss vs 1 rank:");
      for (const auto& r : runs) std::printf("  %s %.1e", dp_mode_name(r.mode), max_rel_diff(r.losses, baseline));
      std::printf("  (fp32 reduction order)\n");
    }

    std::printf("\n  ring all-reduce of every gradient: 2(N-1)/N · Ψ · %zu = %.0f bytes sent per rank per step\n",
                dtype_size(tc.dtype), ring_bytes);
    std::printf("  %-10s %8s %9s %12s %11s %12s %9s %8s %11s %9s\n", "variant", "step ms", "tokens/s", "all-reduces",
                "bytes/step", "backward ms", "comm ms", "hidden", "exposed ms", "peak MiB");
    for (const auto& r : runs) {
      const double per = static_cast<double>(r.timed_steps) * dp * 1e3;  // us summed over ranks and steps -> ms per step
      std::printf("  %-10s %8.1f %9.0f %12lld %11lld %12.1f %9.1f %7.1f%% %11.1f %9.2f\n", dp_mode_name(r.mode),
                  r.step_seconds * 1e3, static_cast<double>(setup.global_batch * tc.seq) / r.step_seconds,
                  static_cast<long long>(r.collectives_per_step), static_cast<long long>(r.bytes_per_step),
                  r.overlap.backward_us / per, r.overlap.comm_us / per, 100.0 * r.overlap.fraction(),
                  r.overlap.exposed_us() / per, static_cast<double>(r.peak_total) / kMiB);
    }
    std::fflush(stdout);
    out << "  (per step, mean over the ranks and the steps after the first. comm: each all-reduce from its start\n"
           "   on the progress thread to its completion, waiting for the other ranks included; hidden: the part\n"
           "   of it during backward compute; exposed: the rest. peak: rank 0's tracked bytes, all categories.)\n";

    for (const auto& r : runs) {
      // Exact counts, every rank (the bytes: rank 0's; every rank sends the same in a ring).
      const bool count_ok = r.collectives_per_step == r.expected_collectives;
      const bool bytes_ok = std::fabs(static_cast<double>(r.bytes_per_step) - ring_bytes) < static_cast<double>(r.collectives_per_step);
      if (!count_ok || !bytes_ok || !r.quiet_micro_batches) {
        checks_ok = false;
        out << "error: " << dp_mode_name(r.mode) << ": " << r.collectives_per_step << " all-reduces per step (expected "
            << r.expected_collectives << "), " << r.bytes_per_step << " bytes (expected " << ring_bytes << "), "
            << (r.quiet_micro_batches ? "" : "an all-reduce during a non-final micro-batch") << "\n";
      }
    }
    if (setup.grad_acc > 1 && checks_ok)
      out << "  gradient accumulation: no all-reduce during the " << setup.grad_acc - 1 << " non-final micro-batch"
          << (setup.grad_acc > 2 ? "es" : "") << " of any step, on any rank; all of them in the last one\n";
  }

  // Files: variants.csv and summary.json (the last variant's losses and throughput).
  JsonWriter results;
  results.begin_object().field("grad_acc", setup.grad_acc).field("global_batch", setup.global_batch);
  results.field("bucket_cap_bytes", setup.bucket_cap).field("parameters", psi).field("gradient_bytes", grad_bytes);
  results.field("ring_bytes_per_step", ring_bytes).field("buckets", have_plan ? static_cast<std::int64_t>(plan.buckets.size()) : 0);
  if (!baseline.empty()) results.key("baseline_losses").array(baseline);
  results.key("variants").begin_array();
  std::ofstream csv;
  if (root) {
    csv.open(out_dir + "/variants.csv");
    csv << "mode,dp,grad_acc,global_batch,step_ms,tokens_per_s,all_reduces_per_step,bytes_per_step,ring_bytes,"
           "backward_ms_per_step,comm_ms_per_step,hidden_ms_per_step,hidden_fraction,comm_spans,overlapping_spans,"
           "peak_bytes\n";
  }
  for (const auto& r : runs) {
    const double steps_ranks = static_cast<double>(r.timed_steps) * dp;
    const double tokens_per_s = static_cast<double>(setup.global_batch * tc.seq) / r.step_seconds;
    results.begin_object().field("mode", dp_mode_name(r.mode)).key("losses").array(r.losses);
    results.field("step_seconds", r.step_seconds).field("tokens_per_second", tokens_per_s);
    results.field("all_reduces_per_step", r.collectives_per_step).field("bytes_per_step", r.bytes_per_step);
    results.field("quiet_micro_batches", r.quiet_micro_batches);
    results.field("backward_us", r.overlap.backward_us).field("comm_us", r.overlap.comm_us).field("hidden_us", r.overlap.hidden_us);
    results.field("hidden_fraction", r.overlap.fraction()).field("peak_bytes", r.peak_total);
    if (!baseline.empty()) results.field("max_rel_loss_diff_vs_baseline", max_rel_diff(r.losses, baseline));
    results.end_object();
    if (root)
      csv << dp_mode_name(r.mode) << ',' << dp << ',' << setup.grad_acc << ',' << setup.global_batch << ','
          << r.step_seconds * 1e3 << ',' << tokens_per_s << ',' << r.collectives_per_step << ',' << r.bytes_per_step << ','
          << ring_bytes << ',' << r.overlap.backward_us / steps_ranks / 1e3 << ',' << r.overlap.comm_us / steps_ranks / 1e3 << ','
          << r.overlap.hidden_us / steps_ranks / 1e3 << ',' << r.overlap.fraction() << ',' << r.overlap.comm_spans << ','
          << r.overlap.overlapping_spans << ',' << r.peak_total << '\n';
  }
  results.end_array().end_object();

  TrainingSummary summary;
  summary.chapter = "04_data_parallel";
  summary.dp = dp;
  if (!runs.empty()) {
    summary.losses = runs.back().losses;
    summary.tokens_per_second = static_cast<double>(setup.global_batch * tc.seq) / runs.back().step_seconds;
  }
  summary.flags_json = cli.values_json();
  summary.chapter_json = results.str();
  write_training_summary(comm, out_dir + "/summary.json", summary);
  if (root)
    out << "\nwrote " << out_dir << "/summary.json, variants.csv" << (have_plan ? ", bucket_plan.csv" : "")
        << " and trace_<variant>.json/.csv (open in https://ui.perfetto.dev)\n";
  // A wrong count is a failed run, not just a line in the log.
  const bool all_ok = mean_over_ranks(comm, {checks_ok ? 1.0 : 0.0})[0] == 1.0;
  return all_ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  return usp::run(argc, argv, [&](usp::Runtime& rt) { return run_chapter(rt, argc, argv); });
}
