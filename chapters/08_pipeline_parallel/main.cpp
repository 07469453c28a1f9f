// ch08_pipeline_parallel: the playbook's "Pipeline Parallelism". A schedule is data (schedule.hpp):
// each rank's ordered list of forwards, backwards and messages. One plan, two executors:
//
//   1. The simulator, on no ranks at all: for each schedule of --schedule (AFAB, 1F1B, interleaved
//      1F1B, ZB-H1, ZB-H2, DualPipeV) on --p ranks and --m micro-batches (--v chunks per rank, interleaved only): the
//      validator's verdict, the Gantt chart as text, the bubble (Σ idle / Σ busy) next to its
//      formula, and the peak activations in flight per rank.
//   2. With --sweep: the bubble for m = 1 .. --sweep-m at p = --sweep-p, every schedule
//      (interleaved with v = 2 and 4 where p divides m), simulated and by the formula (the
//      playbook's "bubble size" figure, plots/ch08_bubble.py).
//   3. The calculator's Llama-3.1 8B with PP = 1, 2, 4, 8: the first stage's memory (pp_memory.csv,
//      plots/ch08_pp_memory.py).
//   4. On W > 1 ranks, the executor: the model cut into p·v stages over pp = W / --dp ranks, each
//      schedule trained for --steps steps on the same global batch (the losses agree, bit for bit),
//      and for its last step the measured bubble next to what the simulator predicts from the
//      measured op times, each rank's op times, peak activations (micro-batches in flight),
//      parameters held and bytes sent; the measured and predicted Gantt charts
//      (plots/ch08_gantt_measured.py) and a trace per schedule. Each step prints the progress
//      line (variant_runner.hpp); --eval-every N evaluates the held-out loss through the pipeline
//      (a forward-only pass of the held-out batches from stage to stage, the replicas splitting
//      them), outside its memory and pipeline bytes (summary.json's results.validation: the last
//      schedule's, as its losses).
// Simulator durations in integer time units: --tf (forward), --tb (input gradient), --tw (weight
// gradient); a whole backward is tb + tw (default 1 + 1 = 2 t_F, the playbook's assumption).
// They are the costs of one interleaved chunk; so that every schedule runs the same model, the
// others, whose stage is a rank's v chunks together, take v times as long (v = 1 when the run
// has no interleaved schedule). The sweep times each schedule with the flags' costs per chunk
// (the bubble, a ratio, does not depend on the scale). On W > 1 ranks, --p is the run's pp.
// Writes <out>/summary.json, gantt_<schedule>.csv and in_flight_<schedule>.csv
// (plots/ch08_gantt.py), bubble_sweep.csv with --sweep, and on W > 1 ranks
// gantt_measured_<schedule>.csv, gantt_predicted_<schedule>.csv, in_flight_measured_<schedule>.csv
// and trace_<schedule>.{json,csv}.
//
//   build/bin/ch08_pipeline_parallel [--schedule all|afab|1f1b|interleaved|zb-h1|zb-h2|dualpipev] [--p 4] [--m 8]
//                                    [--v 2] [--tf 1 --tb 1 --tw 1] [--latency 0]
//                                    [--sweep [--sweep-p 8] [--sweep-m 64]]
//   mpirun -np 2 build/bin/ch08_pipeline_parallel [--dp 1] [--m 8] [--eval-every 2] [--quiet] [training flags]
//                                                                                     (./usp run 08)
#include <algorithm>
#include <numeric>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "chapters/08_pipeline_parallel/pp_report.hpp"
#include "chapters/08_pipeline_parallel/pp_run.hpp"
#include "chapters/08_pipeline_parallel/schedule.hpp"
#include "chapters/08_pipeline_parallel/schedule_formulas.hpp"
#include "chapters/08_pipeline_parallel/schedule_report.hpp"
#include "chapters/08_pipeline_parallel/schedule_simulator.hpp"
#include "chapters/08_pipeline_parallel/schedule_validator.hpp"
#include "common/calc/memory_sweep.hpp"
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
using namespace usp::ch08;

struct Setup {
  TrainingInputs in;
  int dp = 1, pp = 1;  // the executor's mesh (pp = 1: one rank, the simulator only)
  std::vector<ScheduleKind> kinds = {};
  int p = 4, m = 8, v = 2;
  StageCost cost = {};  // of one chunk-sized piece of a rank's layers (--tf, --tb, --tw)
  int pieces = 1;  // a rank's layers in such pieces: the least common multiple of the schedules' chunks
  double latency = 0;
  bool sweep = false;
  int sweep_p = 8, sweep_m = 64;
  ProgressFlags progress = {};  // --quiet, --eval-every, --eval-batches
};

// One schedule's results, for the summary.
struct Outcome {
  ScheduleKind kind = ScheduleKind::afab;
  int v = 1;
  std::string skipped;  // the exercise's message when it is not done yet
  double step_time = 0, bubble = 0, formula = 0, idle_fraction = 0;
  std::vector<int> peak_in_flight;
};

int chunks_for(const Setup& s, ScheduleKind kind) { return chunks_of(kind, s.v); }

// The same model for every schedule: interleaved runs each of a rank's v chunks at (t_F, t_B,
// t_W); the others run the rank's layers as one stage, `pieces` times as long.
StageCost stage_cost(const Setup& s, ScheduleKind kind) {
  const double k = s.pieces / chunks_for(s, kind);
  return {k * s.cost.f, k * s.cost.b, k * s.cost.w};
}

Setup read_setup(Runtime& rt, const Cli& cli) {
  Setup s{agree_training_inputs(rt, cli, TrainingDevices::cpu_or_cuda_ranks)};
  rt.agree([&] {
    const std::string which = cli.get_string("schedule");
    s.kinds = which == "all" ? all_schedule_kinds() : std::vector<ScheduleKind>{parse_schedule_kind(which)};
    s.p = static_cast<int>(cli.get_int("p"));
    s.dp = static_cast<int>(cli.get_int("dp"));
    if (rt.size() % s.dp != 0)
      throw UsageError("--dp " + std::to_string(s.dp) + " does not divide the " + std::to_string(rt.size()) +
                       " ranks of this run (each of the dp replicas is a pipeline of W / dp ranks)");
    s.pp = rt.size() / s.dp;
    if (s.pp > 1) {
      if (cli.given("p") && s.p != s.pp)
        throw UsageError("--p " + std::to_string(s.p) + ": this run's pipelines have " + std::to_string(s.pp) +
                         " ranks (W / dp = " + std::to_string(rt.size()) + " / " + std::to_string(s.dp) +
                         "); on several ranks --p is the run's pp (leave it out)");
      s.p = s.pp;
    }
    s.m = static_cast<int>(cli.get_int("m"));
    s.v = static_cast<int>(cli.get_int("v"));
    s.cost = {static_cast<double>(cli.get_int("tf")), static_cast<double>(cli.get_int("tb")),
              static_cast<double>(cli.get_int("tw"))};
    s.latency = static_cast<double>(cli.get_int("latency"));
    for (ScheduleKind kind : s.kinds) s.pieces = std::lcm(s.pieces, chunks_for(s, kind));
    s.sweep = cli.get_flag("sweep");
    s.sweep_p = static_cast<int>(cli.get_int("sweep-p"));
    s.sweep_m = static_cast<int>(cli.get_int("sweep-m"));
    for (const char* flag : {"sweep-p", "sweep-m"})
      if (cli.given(flag) && !s.sweep)
        throw UsageError(std::string("--") + flag + " sets the bubble sweep's size; it needs --sweep");
    // Without pipeline stages the chapter simulates the schedules and trains nothing: the
    // executor's flags would be ignored.
    if (s.pp == 1)
      for (const char* flag : {"model", "layers", "hidden", "heads", "kv-heads", "ffn", "tied", "seq", "mbs", "data",
                               "precision", "recompute", "lr", "weight-decay", "steps", "seed", "quiet"})
        if (cli.given(flag))
          throw UsageError(std::string("--") + flag + ": with pp = W / dp = 1 the chapter only simulates the "
                           "schedules; the executor, which trains the model, needs pipelines of 2 or more ranks "
                           "(mpirun -np 2 or more)");
    s.progress = progress_flags_from(cli);
    if (s.progress.eval_every > 0) {
      if (s.pp == 1)
        throw UsageError("--eval-every: one rank only simulates the schedules; the held-out loss is evaluated by the "
                         "executor, which trains on several ranks (mpirun -np 2 or more)");
      check_validation_data(*s.in.data, s.progress.eval_batches, s.in.config.mbs, s.in.config.seq);
    }
    if (cli.given("v") && s.v > 1 && which != "all" && which != "interleaved")
      throw UsageError("--v " + std::to_string(s.v) + ": only the interleaved schedule splits a rank's layers into "
                       "chunks of your choice; " + which + " runs v = " +
                       std::to_string(chunks_of(parse_schedule_kind(which), 1)));
    // The parameters each schedule accepts (make_schedule's checks; the exercises are not called).
    for (ScheduleKind kind : s.kinds)
      if (kind == ScheduleKind::interleaved_1f1b && s.m % s.p != 0)
        throw UsageError("--schedule interleaved needs --m a multiple of --p (micro-batches go through the chunks in "
                         "groups of p); got m = " + std::to_string(s.m) + ", p = " + std::to_string(s.p) +
                         (which == "all" ? " (or pick another --schedule)" : ""));
    for (ScheduleKind kind : s.kinds)
      if (kind == ScheduleKind::dualpipev && s.m < 2 * s.p)
        throw UsageError("--schedule dualpipev needs --m >= 2p (its steady phase pairs micro-batches of both arms of "
                         "the V); got m = " + std::to_string(s.m) + ", p = " + std::to_string(s.p) +
                         (which == "all" ? " (or pick another --schedule)" : ""));
    // The executor's reasons: the world, the model's layers against p·v stages, tied embeddings.
    if (s.pp > 1)
      for (ScheduleKind kind : s.kinds) check_pp_layout({s.dp, s.pp, kind, s.m, chunks_for(s, kind)}, rt.size(), s.in.config.model);
  });
  return s;
}

// One schedule: validate, simulate, print; its CSVs under out_dir (when write: rank 0 only).
Outcome run_schedule(std::ostream& out, const Setup& s, ScheduleKind kind, const std::string& out_dir, bool write) {
  Outcome o;
  o.kind = kind;
  o.v = chunks_for(s, kind);
  const Schedule sched = make_schedule(kind, s.p, s.m, o.v);
  const std::string verdict = validate_schedule(sched);
  if (!verdict.empty()) throw Error(std::string(schedule_kind_name(kind)) + " is not valid: " + verdict);
  const StageCost cost = stage_cost(s, kind);
  const Simulation sim = simulate(sched, uniform_costs(sched.layout.num_stages(), cost, s.latency));
  const BubbleFormula f = bubble_formula(kind, s.p, s.m, o.v, cost);
  o.step_time = sim.step_time;
  o.bubble = sim.bubble();
  o.formula = f.value;
  o.idle_fraction = sim.idle_fraction();
  o.peak_in_flight = sim.peak_in_flight;

  out << "\n== " << schedule_kind_name(kind) << ": p = " << s.p << ", m = " << s.m << ", v = " << o.v
      << ", a chunk's t_F = " << cost.f << ", t_B = " << cost.b << ", t_W = " << cost.w << "  (validator: ok) ==\n";
  const std::string gantt = text_gantt(sched, sim);
  out << (gantt.empty() ? "  (the step is too long for a text chart: see gantt_" + std::string(schedule_kind_name(kind)) +
                              ".csv)\n"
                        : gantt);
  out << "  step time " << sim.step_time << "; bubble (idle / busy) " << sim.bubble() << ", formula " << f.text
      << " = " << f.value << (sim.bubble() == f.value ? " (equal)" : " (differs)") << "; idle share of the step "
      << sim.idle_fraction() << "\n  activations in flight, peak per rank:";
  for (int peak : sim.peak_in_flight) out << ' ' << peak;
  out << (o.v > 1 ? " (chunk activations: 1/v of a micro-batch's each)\n" : " (micro-batches)\n");

  if (!write) return o;
  const std::string name = schedule_kind_name(kind);
  gantt_table(sched, sim).write_csv(out_dir + "/gantt_" + name + ".csv");
  in_flight_table(sim).write_csv(out_dir + "/in_flight_" + name + ".csv");
  return o;
}

// The bubble over m at p = s.sweep_p for every schedule: schedule,p,m,v,bubble,formula,step_time,
// peak_in_flight (the largest over the ranks). Exercises not done yet are left out.
report::Table bubble_sweep(Runtime& rt, std::ostream& out, const Setup& s) {
  const auto number = [](const char* key) { return report::Column{.key = key, .csv_format = "%.17g"}; };
  report::Table csv({{.key = "schedule"}, {.key = "p"}, {.key = "m"}, {.key = "v"}, number("bubble"), number("formula"),
                     number("step_time"), {.key = "peak_in_flight"}});
  for (ScheduleKind kind : all_schedule_kinds()) {
    const std::vector<int> vs =
        kind == ScheduleKind::interleaved_1f1b ? std::vector<int>{2, 4} : std::vector<int>{chunks_of(kind, 1)};
    for (int v : vs) {
      const std::string skipped = rt.skip_if_not_implemented([&] {
        for (int m = 1; m <= s.sweep_m; ++m) {
          if (kind == ScheduleKind::interleaved_1f1b && m % s.sweep_p != 0) continue;
          if (kind == ScheduleKind::dualpipev && m < 2 * s.sweep_p) continue;
          const Schedule sched = make_schedule(kind, s.sweep_p, m, v);
          const Simulation sim = simulate(sched, uniform_costs(sched.layout.num_stages(), s.cost, s.latency));
          csv.add({std::string(schedule_kind_name(kind)), std::int64_t{s.sweep_p}, std::int64_t{m}, std::int64_t{v},
                   sim.bubble(), bubble_formula(kind, s.sweep_p, m, v, s.cost).value, sim.step_time,
                   std::int64_t{*std::max_element(sim.peak_in_flight.begin(), sim.peak_in_flight.end())}});
        }
      });
      if (!skipped.empty() && rt.is_root())
        out << "sweep: " << schedule_kind_name(kind) << " left out: " << skipped << "\n";
    }
  }
  return csv;
}

// The calculator's Llama-3.1 8B with PP = 1, 2, 4, 8 (the first stage), written for
// plots/ch08_pp_memory.py and printed at s = 4096.
void print_pp_memory(std::ostream& out, const std::string& out_dir) {
  const std::vector<calc::SweepRow> sweep = calc::run_sweep(calc::figure_pp());
  calc::write_sweep_csv(out_dir + "/pp_memory.csv", sweep);
  const std::int64_t seq = 4096;
  out << "\nThe calculator: " << sweep.front().setup.model.name << ", mixed precision, b = 1, s = " << seq
      << ": the FIRST stage's memory (GiB; plots/ch08_pp_memory.py draws every s). The states fall by p; under\n"
         "1F1B the first stage keeps p micro-batches of its L/p layers in flight, so its activations do not.\n";
  calc::print_sweep_tables_by_recompute(out, sweep, calc::figure_pp().recomputes, seq,
                                        [](const calc::TrainingSetup& st) { return "PP " + std::to_string(st.pp); });
}

// The simulated schedules: [{"schedule": ..., "v": ..., "step_time": ..., ...}, ...].
std::string schedules_json(const std::vector<Outcome>& outcomes) {
  JsonWriter w;
  w.begin_array();
  for (const Outcome& o : outcomes) {
    w.begin_object().field("schedule", schedule_kind_name(o.kind)).field("v", o.v);
    if (!o.skipped.empty()) {
      w.field("skipped", o.skipped).end_object();
      continue;
    }
    w.field("step_time", o.step_time).field("bubble", o.bubble).field("bubble_formula", o.formula);
    w.field("idle_fraction", o.idle_fraction);
    w.key("peak_in_flight").array(o.peak_in_flight);
    w.end_object();
  }
  w.end_array();
  return w.str();
}

// 4. The executor: every schedule trained on the run's ranks, measured, compared.
std::vector<RunReport> run_executor(Runtime& rt, const Setup& s, const std::string& out_dir) {
  const TrainingConfig& cfg = s.in.config;
  // Activations and gradients over the CPU world or a device communicator, which the mesh splits
  // into the pipeline and dp groups; what is not training traffic (losses, traces, gathers) over
  // metrics (common/train/training_comms.hpp); the steps through the runner (variant_runner.hpp).
  TrainingComms comms(rt, cfg);
  VariantRunner runner(comms.metrics(), {cfg, s.dp * s.m * cfg.tokens_per_micro_batch(), s.progress, out_dir});
  if (rt.is_root())
    std::cout << "\n4. The executor on " << rt.size() << (cfg.device.is_cuda() ? " GPUs" : " ranks") << ": " << cfg.model.str() << ", seq " << cfg.seq
              << ", micro-batches of " << cfg.mbs << ", " << dtype_name(cfg.dtype) << ", recompute "
              << recompute_name(cfg.recompute) << "; dp = " << s.dp << " pipeline(s) of pp = " << s.pp << " ranks, m = "
              << s.m << " micro-batches each, " << cfg.steps << " AdamW steps per schedule (times: ms)\n";
  std::vector<RunReport> reports;
  for (ScheduleKind kind : s.kinds) {
    const PpLayout layout{s.dp, s.pp, kind, s.m, chunks_for(s, kind)};
    const std::string missing = rt.skip_if_not_implemented([&] {
      reports.push_back(
          report_run(comms.metrics(), train_schedule(runner, comms.tensors(), cfg, *s.in.data, layout,
                                                     s.progress.held_out_batches())));
    });
    if (!rt.is_root()) continue;
    if (!missing.empty()) {
      std::cout << "\n== " << schedule_kind_name(kind) << ": not run: " << missing << "\n";
      continue;
    }
    print_run(std::cout, reports.back(), cfg);
    write_run_csvs(out_dir, reports.back());
  }
  if (rt.is_root()) print_agreement(std::cout, reports);
  return reports;
}

// The flags: the training run's (a model of 8 layers), the simulator's (--schedule, --p, --m,
// --v, the durations, --latency), the sweep's.
void add_flags(Cli& cli) {
  cli.add_common("out/08_pipeline_parallel");
  // The executor's model: 8 layers, so that p = 4 ranks with v = 2 chunks give every virtual
  // stage a layer; small enough for a laptop's cores.
  TrainingDefaults training{"usp-small", 128, 1, 3, 3e-3};
  training.layers = 8;
  add_training_flags(cli, training);
  cli.add_int("dp", 1, "data-parallel replicas (on W > 1 ranks: each a pipeline of W / dp ranks)", 1, 1 << 16);
  std::vector<std::string> schedules = {"all"};
  for (ScheduleKind kind : all_schedule_kinds()) schedules.push_back(schedule_kind_name(kind));
  cli.add_choice("schedule", "all", schedules, "which schedule(s) to show");
  cli.add_int("p", 4, "pipeline ranks of the simulation (on W > 1 ranks: the run's pp = W / dp)", 1, 64);
  cli.add_int("m", 8, "micro-batches per step", 1, 1024);
  cli.add_int("v", 2, "model chunks per rank (interleaved only)", 1, 16);
  cli.add_int("tf", 1, "duration of a forward (F) of one chunk, in time units", 1, 1000);
  cli.add_int("tb", 1, "duration of the input-gradient half (B) of a chunk's backward", 1, 1000);
  cli.add_int("tw", 1, "duration of the weight-gradient half (W); a whole backward BW is tb + tw", 0, 1000);
  cli.add_int("latency", 0, "time from a send to its message's arrival", 0, 1000);
  cli.add_flag("sweep", "also write bubble_sweep.csv: the bubble for m = 1 .. --sweep-m at p = --sweep-p");
  cli.add_int("sweep-p", 8, "the pipeline ranks of --sweep", 1, 64);
  cli.add_int("sweep-m", 64, "the largest m of --sweep", 1, 256);
  add_progress_flags(cli);
}

// 1. Every schedule of --schedule validated and simulated, printed by rank 0 (which alone keeps
// the outcomes); a schedule whose exercise is a stub is skipped.
std::vector<Outcome> simulate_schedules(Runtime& rt, std::ostream& out, const Setup& s, const std::string& out_dir) {
  std::vector<Outcome> outcomes;
  for (ScheduleKind kind : s.kinds) {
    Outcome o;
    o.kind = kind;
    o.v = chunks_for(s, kind);
    std::ostringstream text;
    o.skipped = rt.skip_if_not_implemented([&] { o = run_schedule(text, s, kind, out_dir, rt.is_root()); });
    if (!rt.is_root()) continue;
    if (!o.skipped.empty())
      out << "\n== " << schedule_kind_name(kind) << ": skipped: " << o.skipped << "\n";
    else
      out << text.str();
    outcomes.push_back(o);
  }
  return outcomes;
}

// summary.json. Without a training run, the flags and the simulated schedules. With one, the
// summary every training chapter writes: the last schedule's losses at its top (every
// schedule's are the same), every schedule in "runs".
void write_summary(Runtime& rt, const Cli& cli, const Setup& s, const std::vector<Outcome>& outcomes,
                   const std::vector<RunReport>& runs) {
  const std::string path = cli.get_string("out") + "/summary.json";
  if (runs.empty()) {
    if (!rt.is_root()) return;
    JsonWriter w;
    w.begin_object().key("flags").raw(cli.values_json()).key("schedules").raw(schedules_json(outcomes)).end_object();
    w.write_file(path);
    return;
  }
  JsonWriter j;
  j.begin_object().key("schedules").raw(schedules_json(outcomes)).key("runs").begin_array();
  for (const RunReport& r : runs) write_run_json(j, r);
  j.end_array();
  const ScheduleRun& last = runs.back().run;
  write_validation_json(j, last.val_steps, last.val_losses);
  j.end_object();
  CommStats traffic = last.pp_comm;
  traffic += last.dp_comm;
  const TrainingConfig& cfg = s.in.config;
  const double tokens_per_step = static_cast<double>(s.dp * s.m * cfg.tokens_per_micro_batch());
  write_training_summary(rt.world(), path,
                         {.chapter = "08_pipeline_parallel", .losses = last.losses,
                          .tokens_per_second = tokens_per_step / last.median_step_seconds(), .dp = s.dp, .pp = s.pp,
                          .flags_json = cli.values_json(), .chapter_json = j.str(), .comm = &traffic});
}

}  // namespace

int main(int argc, char** argv) {
  return usp::run(argc, argv, [&](Runtime& rt) {
    Cli cli("ch08_pipeline_parallel",
            "pipeline schedules (AFAB, 1F1B, interleaved 1F1B, ZB-H1, ZB-H2, DualPipeV) as data: validated, simulated, "
            "run on MPI ranks; their bubble "
            "against the formulas");
    add_flags(cli);
    if (!rt.parse(cli, argc, argv)) return 0;
    const Setup s = read_setup(rt, cli);
    const std::string out_dir = cli.get_string("out");
    std::ostream& out = std::cout;
    if (rt.is_root())
      out << "ch08_pipeline_parallel: p = " << s.p << " ranks, m = " << s.m << " micro-batches; per piece of "
          << "1/" << s.pieces << " of a rank's layers t_F = " << s.cost.f << ", t_B = " << s.cost.b << ", t_W = "
          << s.cost.w << " (a whole backward BW = t_B + t_W), send latency " << s.latency << "\n";

    const std::vector<Outcome> outcomes = simulate_schedules(rt, out, s, out_dir);  // 1.
    if (s.sweep) {                                                                  // 2.
      const report::Table sweep = bubble_sweep(rt, out, s);
      if (rt.is_root()) {
        sweep.write_csv(out_dir + "/bubble_sweep.csv");
        out << "\nwrote " << out_dir << "/bubble_sweep.csv\n";
      }
    }
    if (rt.is_root()) print_pp_memory(out, out_dir);  // 3.
    std::vector<RunReport> runs;
    if (s.pp > 1) {
      runs = run_executor(rt, s, out_dir);  // 4.
    } else if (rt.is_root()) {
      out << "\nthe executor needs several ranks (the stages of a pipeline): mpirun -np 2 "
             "build/bin/ch08_pipeline_parallel (or ./usp run 08)\n";
    }
    write_summary(rt, cli, s, outcomes, runs);
    if (rt.is_root() && runs.empty())
      out << "wrote " << out_dir << "/summary.json, gantt_<schedule>.csv, in_flight_<schedule>.csv\n";
    else if (rt.is_root())
      out << "\nwrote " << out_dir << "/summary.json, gantt_{measured,predicted}_<schedule>.csv, "
          << "in_flight_measured_<schedule>.csv, trace_<schedule>.{json,csv}, gantt_<schedule>.csv, in_flight_<schedule>.csv\n";
    return 0;
  });
}
