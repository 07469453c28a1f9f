// ch05_zero: the playbook's "ZeRO (Zero Redundancy Optimizer)" on N_d data-parallel ranks.
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
//   3. The calculator's Llama-3.1 8B at DP = 8 under DP and ZeRO-1/2/3 over sequence lengths
//      (the playbook's figure; plots/ch05_zero_memory.py).
// Writes <out>/summary.json, zero_stages.csv (plots/ch05_zero_stages.py), zero3_prefetch.* and
// zero3_no_prefetch.* (Chrome trace JSON + CSV), zero_memory.csv.
//
//   mpirun -np 4 build/bin/ch05_zero [--zero 0,1,2,3] [--prefetch both] [--grad-acc 1]
//                                    [--precision bf16 [--fp32-grad-accum]]
//   ./usp run 05
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "common/calc/memory_model.hpp"
#include "common/calc/memory_sweep.hpp"
#include "common/json.hpp"
#include "common/runtime.hpp"
#include "common/train/training_summary.hpp"
#include "chapters/05_zero/stage_run.hpp"

namespace {

using namespace usp;
using namespace usp::ch05;

constexpr double kMiB = 1048576.0;

std::vector<ZeroOptions> parse_stages(const std::string& text, const std::string& prefetch, bool fp32_accum) {
  std::vector<ZeroOptions> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.size() != 1 || item[0] < '0' || item[0] > '3')
      throw UsageError("--zero stages must be 0 (plain data parallelism), 1, 2 or 3; got '" + item + "'");
    const int stage = item[0] - '0';
    for (bool pf : {true, false}) {
      if (stage == 3 && ((pf && prefetch == "off") || (!pf && prefetch == "on"))) continue;
      if (stage != 3 && !pf) continue;
      out.push_back({stage, pf, fp32_accum});
    }
  }
  if (out.empty()) throw UsageError("--zero must name at least one stage, e.g. 0,1,2,3");
  return out;
}

std::string mib(std::int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", static_cast<double>(bytes) / kMiB);
  return buf;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i)
    d = std::max(d, std::fabs(static_cast<double>(a[i]) - b[i]));
  return d;
}

std::uint64_t sent(const CommStats& s, CommOp op) { return s.sent(op); }

int run_chapter(Runtime& rt, int argc, char** argv) {
  Cli cli("ch05_zero", "ZeRO-1/2/3: optimizer states, gradients and parameters sharded over the data-parallel ranks");
  cli.add_common("out/05_zero");
  add_training_flags(cli, {"usp-small", 128, 2, 3, 3e-3});
  cli.add_string("zero", "0,1,2,3", "the stages to run side by side, comma-separated (0 = plain data parallelism)");
  cli.add_choice("prefetch", "both", {"on", "off", "both"},
                 "ZeRO-3: all-gather the next unit while the current one computes (both: run ZeRO-3 each way)");
  cli.add_int("grad-acc", 1, "micro-batches per rank per optimizer step", 1, 1024);
  cli.add_int("global-batch", 0, "samples per optimizer step over all ranks; sets --grad-acc (0: mbs × grad-acc × dp)",
              0, 1 << 24);
  cli.add_flag("fp32-grad-accum", "with --precision bf16: accumulate gradients in fp32 (4 more bytes per parameter)");
  if (!rt.parse(cli, argc, argv)) return 0;
  const int dp = rt.size(), rank = rt.rank();
  TrainingConfig cfg;
  std::unique_ptr<Dataset> data;
  std::vector<ZeroOptions> stages;
  std::int64_t grad_acc = 0;
  rt.agree([&] {
    cfg = training_config_from(cli);
    data = open_training_data(cfg);
    const bool fp32_accum = cli.get_flag("fp32-grad-accum");
    if (fp32_accum && cfg.dtype != DType::bf16)
      throw UsageError("--fp32-grad-accum needs --precision bf16 (fp32 gradients already accumulate in fp32)");
    stages = parse_stages(cli.get_string("zero"), cli.get_string("prefetch"), fp32_accum);
    grad_acc = cli.get_int("grad-acc");
    if (const std::int64_t g = cli.get_int("global-batch"); g > 0) {
      if (g % (cfg.mbs * dp) != 0)
        throw UsageError("--global-batch " + std::to_string(g) + " is not a multiple of mbs × dp = " +
                         std::to_string(cfg.mbs) + " × " + std::to_string(dp) + " = " + std::to_string(cfg.mbs * dp));
      grad_acc = g / (cfg.mbs * dp);
    }
  });
  const std::string out = cli.get_string("out");
  // Everything that is not a stage's own traffic (losses, traces, comparisons) goes over a second
  // communicator, so that the world's byte counters hold exactly what the stages communicate.
  std::unique_ptr<Communicator> metrics = rt.world().split(0, rank);
  Communicator& world = rt.world();
  const std::int64_t psi = cfg.model.num_parameters();
  if (rt.is_root()) {
    std::cout << "ch05_zero: " << cfg.model.str() << " (Ψ = " << psi << " parameters), seq " << cfg.seq << ", "
              << dtype_name(cfg.dtype) << (stages[0].fp32_grad_accum ? " with fp32 gradient accumulation" : "")
              << "\n  N_d = " << dp << " ranks × " << grad_acc << " micro-batch(es) of " << cfg.mbs
              << " = global batch " << dp * grad_acc * cfg.mbs << ", " << cfg.steps << " AdamW steps per stage\n";
    if (dp == 1)
      std::cout << "  note: with one rank ZeRO has nothing to shard over (N_d = 1): every stage keeps the full state.\n"
                   "        Run it on several ranks: mpirun -np 4 build/bin/ch05_zero (or ./usp run 05)\n";
  }

  make_dirs(out);
  std::vector<StageResult> results;
  for (const ZeroOptions& o : stages) {
    const std::string trace = o.stage != 3 ? "" : o.prefetch ? "zero3_prefetch" : "zero3_no_prefetch";
    results.push_back(run_stage(world, *metrics, cfg, *data, grad_acc, o, out, trace));
  }

  // ---- 1. losses and parameters --------------------------------------------------------------
  if (rt.is_root()) {
    std::cout << "\n1. The same steps under each stage (losses are the mean over the global batch)\n";
    std::printf("  %-22s", "stage");
    for (std::int64_t s = 0; s < cfg.steps; ++s) std::printf("  loss %-8lld", static_cast<long long>(s));
    std::printf("  max|Δw| vs %s\n", stage_label(results[0].options).c_str());
    for (const StageResult& r : results) {
      std::printf("  %-22s", stage_label(r.options).c_str());
      for (double l : r.losses) std::printf("  %-13.7f", l);
      std::printf("  %.3g\n", max_abs_diff(r.parameters, results[0].parameters));
    }
  }

  // ---- 2. memory per rank ----------------------------------------------------------------------
  // Every rank's numbers, gathered: [stage][rank][field].
  const MemCategory cats[] = {MemCategory::Parameter,  MemCategory::Gradient,   MemCategory::OptimizerState,
                              MemCategory::Activation, MemCategory::CommBuffer, MemCategory::Temporary};
  std::vector<std::vector<std::vector<std::int64_t>>> per_rank;
  for (const StageResult& r : results) {
    std::vector<std::int64_t> mine;
    for (MemCategory c : cats) mine.push_back(r.peak[c]);
    for (MemCategory c : {MemCategory::Parameter, MemCategory::Gradient, MemCategory::OptimizerState})
      mine.push_back(r.resident[c]);
    mine.push_back(r.formula.parameters);
    mine.push_back(r.formula.gradients);
    mine.push_back(r.formula.optimizer);
    mine.push_back(r.peak.total());
    for (CommOp op : {CommOp::all_reduce, CommOp::reduce_scatter, CommOp::all_gather})
      mine.push_back(static_cast<std::int64_t>(sent(r.comm, op)));
    mine.push_back(static_cast<std::int64_t>(r.comm.total_sent()));
    mine.push_back(r.max_units_held);
    per_rank.push_back(gather_int64(*metrics, mine));
  }
  // The traced runs' overlap, averaged over the ranks.
  auto rank_mean = [&](double v) {
    Tensor t = Tensor::from_floats({static_cast<float>(v)}, {1});
    metrics->all_reduce(t, ReduceOp::avg);
    return static_cast<double>(t.to_floats()[0]);
  };
  std::vector<std::array<double, 3>> overlap;  // gather hidden, reduce hidden, step ms
  for (const StageResult& r : results)
    overlap.push_back({rank_mean(r.gather_hidden), rank_mean(r.reduce_hidden), rank_mean(r.traced_step_ms)});
  enum Field {
    kPeak0 = 0,
    kRes0 = 6,
    kFormula0 = 9,
    kPeakTotal = 12,
    kAllReduce = 13,
    kReduceScatter,
    kAllGather,
    kCommTotal,
    kUnitsHeld
  };

  if (rt.is_root()) {
    bool all_equal = true;
    for (const auto& stage : per_rank)
      for (const auto& rr : stage)
        for (int i = 0; i < 3; ++i) all_equal = all_equal && rr[kRes0 + i] == rr[kFormula0 + i];
    std::cout << "\n2. Memory per rank (rank 0; MiB): the state kept between steps, and the peaks.\n"
              << "   Kept state measured by the tracker = the ZeRO formula (state_bytes.hpp), on every rank: "
              << (all_equal ? "yes, exactly" : "NO (see zero_stages.csv)") << "\n";
    std::printf("  %-22s %10s %10s %10s | %10s %10s %10s %10s %10s\n", "", "params", "grads", "optimizer", "peak:param",
                "grads", "optimizer", "activation", "comm buf");
    for (std::size_t i = 0; i < results.size(); ++i) {
      const auto& r0 = per_rank[i][0];
      std::printf("  %-22s %10s %10s %10s | %10s %10s %10s %10s %10s\n", stage_label(results[i].options).c_str(),
                  mib(r0[kRes0]).c_str(), mib(r0[kRes0 + 1]).c_str(), mib(r0[kRes0 + 2]).c_str(),
                  mib(r0[kPeak0]).c_str(), mib(r0[kPeak0 + 1]).c_str(), mib(r0[kPeak0 + 2]).c_str(),
                  mib(r0[kPeak0 + 3]).c_str(), mib(r0[kPeak0 + 4]).c_str());
    }
    for (std::size_t i = 0; i < results.size(); ++i)
      if (results[i].options.stage == 3)
        std::printf("  %s held at most %lld units' full parameters at once (the plan says %d)\n",
                    stage_label(results[i].options).c_str(), static_cast<long long>(per_rank[i][0][kUnitsHeld]),
                    max_units_held(unit_schedule(static_cast<int>(cfg.model.layers) + 2, cfg.model.tied_embeddings,
                                                 results[i].options.prefetch)));

    for (std::size_t i = 0; i < results.size(); ++i)
      if (results[i].options.stage == 3)
        std::printf(
            "  %s, traced last step: %.1f ms; time the all-gathers ran while the rank computed: %.0f%%, "
            "the reduce-scatters: %.0f%% (mean over ranks)\n",
            stage_label(results[i].options).c_str(), overlap[i][2], 100 * overlap[i][0], 100 * overlap[i][1]);

    // ---- 3. communication --------------------------------------------------------------------
    std::cout << "\n3. Bytes sent per step (rank 0; MiB) by collective\n";
    std::printf("  %-22s %12s %14s %12s %12s %10s\n", "", "all-reduce", "reduce-scatter", "all-gather", "total",
                "× DP");
    const double base = static_cast<double>(per_rank[0][0][kCommTotal]);
    for (std::size_t i = 0; i < results.size(); ++i) {
      const auto& r0 = per_rank[i][0];
      const auto per_step = [&](std::int64_t v) { return mib(v / cfg.steps); };
      std::printf("  %-22s %12s %14s %12s %12s %10.3f\n", stage_label(results[i].options).c_str(),
                  per_step(r0[kAllReduce]).c_str(), per_step(r0[kReduceScatter]).c_str(),
                  per_step(r0[kAllGather]).c_str(), per_step(r0[kCommTotal]).c_str(),
                  base > 0 ? static_cast<double>(r0[kCommTotal]) / base : 0.0);
    }
    std::cout
        << "  (ring algorithms: an all-reduce of Ψ elements sends 2(N_d-1)/N_d·Ψ per rank; a reduce-scatter or an\n"
           "   all-gather (N_d-1)/N_d·Ψ. ZeRO-2 and -3 reduce-scatter after every micro-batch.)\n";
  }

  // ---- files ---------------------------------------------------------------------------------
  JsonWriter j;
  j.begin_object();
  j.field("dp", dp)
      .field("grad_acc", grad_acc)
      .field("global_batch", dp * grad_acc * cfg.mbs)
      .field("num_parameters", psi);
  j.key("stages").begin_array();
  if (rt.is_root()) {
    std::ofstream csv(out + "/zero_stages.csv");
    csv << "stage,label,prefetch,rank,peak_parameter,peak_gradient,peak_optimizer_state,peak_activation,peak_comm_"
           "buffer,"
           "peak_temporary,resident_parameter,resident_gradient,resident_optimizer_state,formula_parameter,"
           "formula_gradient,formula_optimizer_state,peak_total,sent_all_reduce,sent_reduce_scatter,sent_all_gather,"
           "sent_total,steps,max_units_held\n";
    for (std::size_t i = 0; i < results.size(); ++i) {
      const StageResult& r = results[i];
      for (int k = 0; k < dp; ++k) {
        const auto& v = per_rank[i][static_cast<std::size_t>(k)];
        csv << r.options.stage << ',' << stage_label(r.options) << ',' << (r.options.prefetch ? 1 : 0) << ',' << k;
        for (int f = 0; f <= kUnitsHeld; ++f) {
          if (f == kUnitsHeld) csv << ',' << cfg.steps;
          csv << ',' << v[static_cast<std::size_t>(f)];
        }
        csv << '\n';
      }
      const auto& r0 = per_rank[i][0];
      j.begin_object();
      j.field("stage", r.options.stage).field("label", stage_label(r.options)).field("prefetch", r.options.prefetch);
      j.key("losses").array(r.losses);
      j.field("max_param_diff_vs_first", max_abs_diff(r.parameters, results[0].parameters));
      j.key("resident_rank0").begin_object();
      j.field("parameter", r0[kRes0]).field("gradient", r0[kRes0 + 1]).field("optimizer_state", r0[kRes0 + 2]);
      j.end_object();
      j.key("formula_rank0").begin_object();
      j.field("parameter", r0[kFormula0])
          .field("gradient", r0[kFormula0 + 1])
          .field("optimizer_state", r0[kFormula0 + 2]);
      j.end_object();
      j.key("peak_rank0").begin_object();
      for (int c = 0; c < 6; ++c) j.field(mem_category_name(cats[c]), r0[static_cast<std::size_t>(kPeak0 + c)]);
      j.end_object();
      j.key("sent_per_step_rank0").begin_object();
      j.field("all_reduce", r0[kAllReduce] / cfg.steps).field("reduce_scatter", r0[kReduceScatter] / cfg.steps);
      j.field("all_gather", r0[kAllGather] / cfg.steps).field("total", r0[kCommTotal] / cfg.steps);
      j.end_object();
      j.field("max_units_held", r0[kUnitsHeld]);
      if (r.options.stage == 3) {
        j.key("trace").begin_object();
        j.field("step_ms", overlap[i][2]).field("all_gather_hidden_fraction", overlap[i][0]);
        j.field("reduce_scatter_hidden_fraction", overlap[i][1]);
        j.end_object();
      }
      j.field("tokens_per_second",
              static_cast<double>(cfg.steps * dp * grad_acc * cfg.tokens_per_micro_batch()) / r.seconds);
      j.end_object();
    }
  }
  j.end_array();

  // ---- 4. the 8B figure (analytic) -----------------------------------------------------------
  const std::vector<calc::SweepRow> sweep = calc::run_sweep(calc::figure_zero());
  if (rt.is_root()) {
    calc::write_sweep_csv(out + "/zero_memory.csv", sweep);
    std::cout << "\n4. The calculator: " << sweep.front().setup.model.name << " at DP = " << sweep.front().setup.dp
              << ", mixed precision, no recomputation, b = 1 (GiB per GPU)\n";
    std::printf("  %-8s %8s %8s %8s %8s %12s %8s\n", "stage", "params", "grads", "optim", "states", "act. s=4096",
                "total");
    for (const calc::SweepRow& row : sweep) {
      if (row.setup.seq != 4096) continue;
      const calc::MemoryBreakdown& m = row.memory;
      const double gib = 1024.0 * 1024.0 * 1024.0;
      std::printf("  %-8s %8.1f %8.1f %8.1f %8.1f %12.1f %8.1f\n",
                  row.setup.zero == 0 ? "DP" : ("ZeRO-" + std::to_string(row.setup.zero)).c_str(), m.parameters / gib,
                  m.gradients / gib, m.optimizer / gib, (m.parameters + m.gradients + m.optimizer) / gib,
                  m.activations / gib, m.total() / gib);
    }
  }
  j.end_object();

  const StageResult& last = results.back();
  TrainingSummary summary;
  summary.chapter = "05_zero";
  summary.losses = last.losses;
  summary.tokens_per_second =
      static_cast<double>(cfg.steps * dp * grad_acc * cfg.tokens_per_micro_batch()) / last.seconds;
  summary.dp = dp;
  summary.flags_json = cli.values_json();
  summary.chapter_json = j.str();
  // The top-level losses, memory and comm_bytes are the last stage's (its peaks and counters are
  // the tracker's and the world's since that stage began); "results" holds every stage.
  write_training_summary(world, out + "/summary.json", summary);
  if (rt.is_root())
    std::cout << "\nwrote " << out << "/summary.json, zero_stages.csv, zero_memory.csv and the ZeRO-3 traces\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return usp::run(argc, argv, [&](usp::Runtime& rt) { return run_chapter(rt, argc, argv); });
}
