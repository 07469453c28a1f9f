#include "chapters/08_pipeline_parallel/pp_report.hpp"

#include <cmath>
#include <iomanip>
#include <numeric>
#include <sstream>

#include "chapters/08_pipeline_parallel/pipeline_measure.hpp"
#include "chapters/08_pipeline_parallel/schedule_formulas.hpp"
#include "chapters/08_pipeline_parallel/schedule_report.hpp"
#include "common/io/output_file.hpp"
#include "common/report/row_gather.hpp"

namespace usp::ch08 {

namespace {

double mib(std::int64_t bytes) { return static_cast<double>(bytes) / (1 << 20); }

// A rank's row of the per-rank table, as it travels (report/row_gather.hpp).
struct RankNumbers {
  std::int64_t params_held, peak_activation_bytes, peak_in_flight, sent_bytes;
};

// The per-rank table under each run: its chunks' measured op times, peak activations (and how
// many in flight), parameters held and bytes sent, in MiB.
report::Table ranks_table(const RunReport& r, const TrainingConfig& cfg) {
  report::Table t({{.key = "rank", .header = "rank", .format = "%4lld"},
                   {.key = "op_times", .header = "op times per chunk, ms: F / B / W (BW as B)", .format = " | %-43s"},
                   {.key = "activations", .header = "peak activations, MiB (in flight)", .format = " | %33s"},
                   {.key = "params_held", .header = "params held, MiB", .format = " | %16.2f"},
                   {.key = "sent", .header = "sent, MiB", .format = " | %9.2f"}});
  for (std::size_t w = 0; w < r.params_held.size(); ++w) {
    std::ostringstream ops, act;
    ops << std::fixed << std::setprecision(2);
    for (const StageCost& sc : r.chunk_costs[w]) ops << (&sc == &r.chunk_costs[w].front() ? "" : "; ") << sc.f << " / " << sc.b << " / " << sc.w;
    act << std::fixed << std::setprecision(2) << mib(r.peak_activation_bytes[w]) << " (" << r.peak_in_flight[w] << ")";
    t.add({static_cast<std::int64_t>(w), ops.str(), act.str(),
           mib(r.params_held[w] * static_cast<std::int64_t>(dtype_size(cfg.dtype))), mib(r.sent_bytes[w])});
  }
  return t;
}

}  // namespace

RunReport report_run(Communicator& world, ScheduleRun run) {
  RunReport r;
  r.measured = measured_timeline(run.schedule, run.last_step);
  r.costs = measured_costs(run.schedule, run.last_step);
  r.load = report::machine_load();
  r.predicted = simulate(run.schedule, r.costs);
  const ExecutedStep& mine = run.last_step[static_cast<std::size_t>(run.pp_rank)];
  std::vector<StageCost> mine_costs;  // this rank's chunks' F, B, W times
  for (int c = 0; c < run.layout.v; ++c)
    mine_costs.push_back(r.costs.stage[static_cast<std::size_t>(run.schedule.layout.stage_of(run.pp_rank, c))]);
  r.chunk_costs = report::gather_row_lists(world, mine_costs);
  const RankNumbers numbers{run.params_held, mine.peak_activation_bytes, mine.peak_in_flight,
                            static_cast<std::int64_t>(run.pp_comm.total_sent() + run.dp_comm.total_sent())};
  for (const RankNumbers& n : report::gather_rows(world, numbers)) {
    r.params_held.push_back(n.params_held);
    r.peak_activation_bytes.push_back(n.peak_activation_bytes);
    r.peak_in_flight.push_back(n.peak_in_flight);
    r.sent_bytes.push_back(n.sent_bytes);
  }
  r.run = std::move(run);
  return r;
}

void print_run(std::ostream& out, const RunReport& r, const TrainingConfig& cfg) {
  const ScheduleRun& run = r.run;
  const Schedule& s = run.schedule;
  out << "\n== " << run.layout.label() << ": stages";
  for (int st = 0; st < s.layout.num_stages(); ++st)
    out << (st ? "; " : " ") << st << " on rank " << s.layout.rank_of(st) << " = "
        << describe(run.stages[static_cast<std::size_t>(st)], cfg.model);
  out << "\n  losses:";
  for (double l : run.losses) out << ' ' << std::setprecision(6) << l;
  // The formula at the measured (stage-averaged) op times.
  StageCost mean{};
  for (const StageCost& c : r.costs.stage) mean.f += c.f, mean.b += c.b, mean.w += c.w;
  const double n = static_cast<double>(r.costs.stage.size());
  mean = {mean.f / n, mean.b / n, mean.w / n};
  const BubbleFormula f = bubble_formula(s.kind, s.p, s.m, s.v, mean);
  const double measured = r.measured.bubble(), predicted = r.predicted.bubble();
  out << "\n  step " << std::setprecision(4) << run.median_step_seconds() * 1e3 << " ms (median of " << run.step_seconds.size()
      << "); last step " << r.measured.step_time << " ms, bubble (idle / busy) measured " << std::setprecision(3) << measured
      << ", the simulator on the measured op times " << predicted << " (" << std::showpos << std::setprecision(2)
      << measured - predicted << ", " << (predicted > 0 ? 100 * (measured - predicted) / predicted : 0.0)
      << std::noshowpos << "%), the formula " << f.text << " = " << std::setprecision(3) << f.value << "\n"
      << "  timed at " << report::describe(r.load) << "\n";
  ranks_table(r, cfg).print(out);
}

void print_agreement(std::ostream& out, const std::vector<RunReport>& reports) {
  if (reports.size() < 2) return;
  bool same = true;
  for (const RunReport& r : reports) same = same && r.run.losses == reports.front().run.losses;
  out << "\nthe losses agree across the schedules: " << (same ? "yes, bit for bit" : "no") << "\n";
}

void write_run_csvs(const std::string& dir, const RunReport& r) {
  const std::string name = schedule_kind_name(r.run.layout.schedule);
  gantt_table(r.run.schedule, r.measured).write_csv(dir + "/gantt_measured_" + name + ".csv");
  gantt_table(r.run.schedule, r.predicted).write_csv(dir + "/gantt_predicted_" + name + ".csv");
  in_flight_table(r.measured).write_csv(dir + "/in_flight_measured_" + name + ".csv");
}

void write_run_json(JsonWriter& j, const RunReport& r) {
  j.begin_object().field("schedule", schedule_kind_name(r.run.layout.schedule));
  j.field("dp", r.run.layout.dp).field("pp", r.run.layout.pp).field("m", r.run.layout.m).field("v", r.run.layout.v);
  j.key("losses").array(r.run.losses);
  j.field("step_seconds", r.run.median_step_seconds());
  j.field("bubble_measured", r.measured.bubble()).field("bubble_predicted", r.predicted.bubble());
  j.field("load_average", r.load.load1).field("cores", r.load.cores);
  j.key("params_held").array(r.params_held);
  j.key("peak_activation_bytes").array(r.peak_activation_bytes);
  j.key("peak_in_flight").array(r.peak_in_flight);
  j.key("sent_bytes").array(r.sent_bytes);
  j.end_object();
}

}  // namespace usp::ch08
