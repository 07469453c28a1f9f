// ch08_pipeline_parallel: the playbook's "Pipeline Parallelism" schedules as data (schedule.hpp),
// checked by the validator and timed by the simulator, on no ranks at all (the executor that
// runs them on MPI ranks with the model split into stages comes with the chapter's trainer).
//
//   1. For each schedule of --schedule (AFAB, 1F1B, interleaved 1F1B, ZB-H1) on --p ranks and
//      --m micro-batches (--v chunks per rank, interleaved only): the validator's verdict, the
//      simulated Gantt chart as text, the bubble (Σ idle / Σ busy) next to its formula, and the
//      peak activations in flight per rank.
//   2. With --sweep: the bubble for m = 1 .. --sweep-m at p = --sweep-p, every schedule (interleaved
//      with v = 2 and 4 where p divides m), measured and by the formula (the playbook's "bubble
//      size" figure, plots/ch08_bubble.py).
// Durations in integer time units: --tf (forward), --tb (input gradient), --tw (weight
// gradient); a whole backward is tb + tw (default 1 + 1 = 2 t_F, the playbook's assumption).
// They are the costs of one interleaved chunk; so that every schedule runs the same model, the
// others, whose stage is a rank's v chunks together, take v times as long (v = 1 when the run
// has no interleaved schedule). The sweep times each schedule with the flags' costs per chunk
// (the bubble, a ratio, does not depend on the scale).
// Writes <out>/summary.json, gantt_<schedule>.csv and in_flight_<schedule>.csv
// (plots/ch08_gantt.py), and bubble_sweep.csv with --sweep.
//
//   build/bin/ch08_pipeline_parallel [--schedule all|afab|1f1b|interleaved|zb-h1] [--p 4] [--m 8]
//                                    [--v 2] [--tf 1 --tb 1 --tw 1] [--latency 0]
//                                    [--sweep [--sweep-p 8] [--sweep-m 64]]
#include <algorithm>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "chapters/08_pipeline_parallel/schedule.hpp"
#include "chapters/08_pipeline_parallel/schedule_formulas.hpp"
#include "chapters/08_pipeline_parallel/schedule_report.hpp"
#include "chapters/08_pipeline_parallel/schedule_simulator.hpp"
#include "chapters/08_pipeline_parallel/schedule_validator.hpp"
#include "common/io/output_file.hpp"
#include "common/json.hpp"
#include "common/runtime.hpp"

namespace {

using namespace usp;
using namespace usp::ch08;

struct Setup {
  std::vector<ScheduleKind> kinds;
  int p = 4, m = 8, v = 2;
  StageCost cost;  // of one chunk-sized piece of a rank's layers (--tf, --tb, --tw)
  int pieces = 1;  // a rank's layers in such pieces: v when interleaved runs too, else 1
  double latency = 0;
  bool sweep = false;
  int sweep_p = 8, sweep_m = 64;
};

// One schedule's results, for the summary.
struct Outcome {
  ScheduleKind kind = ScheduleKind::afab;
  int v = 1;
  std::string skipped;  // the exercise's message when it is not done yet
  double step_time = 0, bubble = 0, formula = 0, idle_fraction = 0;
  std::vector<int> peak_in_flight;
};

int chunks_for(const Setup& s, ScheduleKind kind) { return kind == ScheduleKind::interleaved_1f1b ? s.v : 1; }

// The same model for every schedule: interleaved runs each of a rank's v chunks at (t_F, t_B,
// t_W); the others run the rank's layers as one stage, `pieces` times as long.
StageCost stage_cost(const Setup& s, ScheduleKind kind) {
  const double k = kind == ScheduleKind::interleaved_1f1b ? 1 : s.pieces;
  return {k * s.cost.f, k * s.cost.b, k * s.cost.w};
}

Setup read_setup(Runtime& rt, const Cli& cli) {
  Setup s;
  rt.agree([&] {
    const std::string which = cli.get_string("schedule");
    s.kinds = which == "all" ? all_schedule_kinds() : std::vector<ScheduleKind>{parse_schedule_kind(which)};
    s.p = static_cast<int>(cli.get_int("p"));
    s.m = static_cast<int>(cli.get_int("m"));
    s.v = static_cast<int>(cli.get_int("v"));
    s.cost = {static_cast<double>(cli.get_int("tf")), static_cast<double>(cli.get_int("tb")),
              static_cast<double>(cli.get_int("tw"))};
    s.latency = static_cast<double>(cli.get_int("latency"));
    const bool interleaved = std::find(s.kinds.begin(), s.kinds.end(), ScheduleKind::interleaved_1f1b) != s.kinds.end();
    s.pieces = interleaved ? s.v : 1;
    s.sweep = cli.get_flag("sweep");
    s.sweep_p = static_cast<int>(cli.get_int("sweep-p"));
    s.sweep_m = static_cast<int>(cli.get_int("sweep-m"));
    if (cli.given("v") && s.v > 1 && which != "all" && which != "interleaved")
      throw UsageError("--v " + std::to_string(s.v) + ": only the interleaved schedule splits a rank's layers into "
                       "chunks; " + which + " runs v = 1");
    // The parameters each schedule accepts (make_schedule's checks; the exercises are not called).
    for (ScheduleKind kind : s.kinds)
      if (kind == ScheduleKind::interleaved_1f1b && s.m % s.p != 0)
        throw UsageError("--schedule interleaved needs --m a multiple of --p (micro-batches go through the chunks in "
                         "groups of p); got m = " + std::to_string(s.m) + ", p = " + std::to_string(s.p) +
                         (which == "all" ? " (or pick another --schedule)" : ""));
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
  write_file_atomic(out_dir + "/gantt_" + name + ".csv", gantt_csv(sched, sim));
  write_file_atomic(out_dir + "/in_flight_" + name + ".csv", in_flight_csv(sim));
  return o;
}

// The bubble over m at p = s.sweep_p for every schedule: schedule,p,m,v,bubble,formula,step_time,
// peak_in_flight (the largest over the ranks). Exercises not done yet are left out.
std::string bubble_sweep(Runtime& rt, std::ostream& out, const Setup& s) {
  std::ostringstream csv;
  csv.precision(17);
  csv << "schedule,p,m,v,bubble,formula,step_time,peak_in_flight\n";
  for (ScheduleKind kind : all_schedule_kinds()) {
    const std::vector<int> vs = kind == ScheduleKind::interleaved_1f1b ? std::vector<int>{2, 4} : std::vector<int>{1};
    for (int v : vs) {
      const std::string skipped = rt.skip_if_not_implemented([&] {
        for (int m = 1; m <= s.sweep_m; ++m) {
          if (kind == ScheduleKind::interleaved_1f1b && m % s.sweep_p != 0) continue;
          const Schedule sched = make_schedule(kind, s.sweep_p, m, v);
          const Simulation sim = simulate(sched, uniform_costs(sched.layout.num_stages(), s.cost, s.latency));
          csv << schedule_kind_name(kind) << ',' << s.sweep_p << ',' << m << ',' << v << ',' << sim.bubble() << ','
              << bubble_formula(kind, s.sweep_p, m, v, s.cost).value << ',' << sim.step_time << ','
              << *std::max_element(sim.peak_in_flight.begin(), sim.peak_in_flight.end()) << '\n';
        }
      });
      if (!skipped.empty() && rt.is_root())
        out << "sweep: " << schedule_kind_name(kind) << " left out: " << skipped << "\n";
    }
  }
  return csv.str();
}

void write_summary(const std::string& path, const Cli& cli, const std::vector<Outcome>& outcomes) {
  JsonWriter w;
  w.begin_object();
  w.key("flags").raw(cli.values_json());
  w.key("schedules").begin_array();
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
  w.end_object();
  w.write_file(path);
}

}  // namespace

int main(int argc, char** argv) {
  return usp::run(argc, argv, [&](Runtime& rt) {
    Cli cli("ch08_pipeline_parallel",
            "pipeline schedules (AFAB, 1F1B, interleaved 1F1B, ZB-H1) as data: validated, simulated, their bubble "
            "against the formulas");
    cli.add_common("out/08_pipeline_parallel");
    cli.add_choice("schedule", "all", {"all", "afab", "1f1b", "interleaved", "zb-h1"}, "which schedule(s) to show");
    cli.add_int("p", 4, "pipeline ranks", 1, 64);
    cli.add_int("m", 8, "micro-batches per step", 1, 1024);
    cli.add_int("v", 2, "model chunks per rank (interleaved only)", 1, 16);
    cli.add_int("tf", 1, "duration of a forward (F) of one chunk, in time units", 1, 1000);
    cli.add_int("tb", 1, "duration of the input-gradient half (B) of a chunk's backward", 1, 1000);
    cli.add_int("tw", 1, "duration of the weight-gradient half (W); a whole backward BW is tb + tw", 0, 1000);
    cli.add_int("latency", 0, "time from a send to its message's arrival", 0, 1000);
    cli.add_flag("sweep", "also write bubble_sweep.csv: the bubble for m = 1 .. --sweep-m at p = --sweep-p");
    cli.add_int("sweep-p", 8, "the pipeline ranks of --sweep", 1, 64);
    cli.add_int("sweep-m", 64, "the largest m of --sweep", 1, 256);
    if (!rt.parse(cli, argc, argv)) return 0;
    const Setup s = read_setup(rt, cli);
    const std::string out_dir = cli.get_string("out");
    std::ostream& out = std::cout;
    if (rt.is_root())
      out << "ch08_pipeline_parallel: p = " << s.p << " ranks, m = " << s.m << " micro-batches; per piece of "
          << "1/" << s.pieces << " of a rank's layers t_F = " << s.cost.f << ", t_B = " << s.cost.b << ", t_W = "
          << s.cost.w << " (a whole backward BW = t_B + t_W), send latency " << s.latency << "\n";

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
    if (s.sweep) {
      const std::string csv = bubble_sweep(rt, out, s);
      if (rt.is_root()) {
        write_file_atomic(out_dir + "/bubble_sweep.csv", csv);
        out << "\nwrote " << out_dir << "/bubble_sweep.csv\n";
      }
    }
    if (rt.is_root()) {
      write_summary(out_dir + "/summary.json", cli, outcomes);
      out << "wrote " << out_dir << "/summary.json, gantt_<schedule>.csv, in_flight_<schedule>.csv\n";
    }
    return 0;
  });
}
