#include "chapters/10_5d_parallelism/campaign.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>

#include "chapters/10_5d_parallelism/calibration.hpp"
#include "common/report/median.hpp"
#include <set>
#include <tuple>

namespace usp::ch10 {

std::vector<CampaignCell> run_campaign(const std::vector<std::string>& models, const std::vector<int>& nodes,
                                       const plan::Cluster& cluster) {
  std::vector<CampaignCell> cells;
  for (const std::string& m : models)
    for (int n : nodes) {
      const std::vector<plan::PlannedLayout> all = plan::search_layouts({ModelConfig::builtin(m), n}, cluster);
      const std::size_t tied = plan::tied_with_best(all);
      // The best layout (the search's first; a default one when none fits) set in the initialiser, not
      // assigned over a default one after it (GCC 12 -O3 read that default's strings as maybe uninitialised).
      CampaignCell c{.model = m, .nodes = n, .fitting = all.size(),
                     .best = all.empty() ? plan::PlannedLayout{} : all.front(), .tied = tied};
      std::set<std::tuple<std::int64_t, std::int64_t, std::int64_t>> meshes;
      for (std::size_t i = 0; i < c.tied; ++i) meshes.insert({all[i].layout.setup.tp, all[i].layout.setup.pp, all[i].layout.setup.cp});
      c.tied_meshes = meshes.size();
      cells.push_back(c);
    }
  return cells;
}

std::vector<CalibrationPoint> calibration_series(const plan::Cluster& cluster) {
  const std::vector<plan::MeasuredPoint>& series = plan::playbook_dp_series();
  const std::vector<double> before = plan::leave_one_out(series, cluster, plan::ModelTerms::before);
  const std::vector<double> after = plan::leave_one_out(series, cluster, plan::ModelTerms::after);
  std::vector<CalibrationPoint> out;
  for (std::size_t i = 0; i < series.size(); ++i) {
    const plan::MeasuredPoint& p = series[i];
    out.push_back({p.dp, p.mbs, p.gas, p.mfu, plan::mfu(plan::dp_series_layout(p), cluster), before[i], after[i]});
  }
  return out;
}

LooError loo_error(const std::vector<CalibrationPoint>& points, bool after) {
  std::vector<double> errors;
  for (const CalibrationPoint& p : points) errors.push_back(std::fabs((after ? p.loo_after : p.loo_before) - p.measured) / p.measured);
  return {report::median(errors), *std::max_element(errors.begin(), errors.end())};
}

report::Table campaign_table(const std::vector<CampaignCell>& cells) {
  const auto both = [](const char* key, const char* header, const char* format) {  // terminal and CSV
    return report::Column{.key = key, .header = header, .format = format};
  };
  const auto number = [](const char* key) { return report::Column{.key = key, .csv_format = "%.9g"}; };
  report::Table t({both("model", "model", "%-15s"), both("nodes", "nodes", " %5lld"), {.key = "fitting"},
                   both("dp", "dp", " | %3lld"), both("tp", "tp", " %3lld"), both("pp", "pp", " %3lld"),
                   both("cp", "cp", " %3lld"), both("zero", "zero", " %4lld"), both("mbs", "mbs", " %3lld"),
                   both("gas", "gas", " %4lld"), both("recompute", "recompute", " %-9s"),
                   both("schedule", "sched", " %-5s"), {.key = "memory_bytes"}, number("step_seconds"),
                   number("tokens_per_second_per_gpu"),
                   {.key = "mfu", .header = "MFU", .format = " | %5.1f%%", .scale = 100, .csv_format = "%.9g"},
                   {.key = "memory_gb", .header = "mem GB", .format = " %7.1f", .csv = false},
                   both("tied_with_best", "ties", " %5lld"), both("tied_meshes", "meshes", " %6lld")},
                  "   ");
  for (const CampaignCell& c : cells) {
    std::vector<report::Value> row = {c.model, std::int64_t{c.nodes}, static_cast<std::int64_t>(c.fitting)};
    if (c.fitting == 0) {
      row.resize(19, std::string());  // no layout: empty fields
      t.add(std::move(row));
      continue;
    }
    const calc::TrainingSetup& s = c.best.layout.setup;
    row.insert(row.end(), {s.dp, s.tp, s.pp, s.cp, std::int64_t{s.zero}, s.mbs, c.best.layout.gas,
                           std::string(recompute_name(s.recompute)), c.best.layout.schedule(), c.best.memory_bytes,
                           c.best.time.total(), c.best.tokens_per_second_per_gpu, c.best.mfu,
                           static_cast<double>(c.best.memory_bytes) / 1e9, static_cast<std::int64_t>(c.tied),
                           static_cast<std::int64_t>(c.tied_meshes)});
    t.add(std::move(row));
  }
  return t;
}

report::Table calibration_table(const std::vector<CalibrationPoint>& points) {
  report::Table t({{.key = "dp", .header = "DP", .format = "%5lld"},
                   {.key = "mbs", .header = "MBS", .format = " %4lld"},
                   {.key = "gas", .header = "GAS", .format = " %4lld"},
                   {.key = "measured_mfu", .header = "measured", .format = "   %7.1f%%", .scale = 100, .csv_format = "%.9g"},
                   {.key = "predicted_mfu", .header = "predicted", .format = " %8.1f%%", .scale = 100, .csv_format = "%.9g"},
                   {.key = "error", .header = "error", .format = " %+6.1f%%", .csv = false},
                   {.key = "loo_before_mfu", .csv_format = "%.9g"},
                   {.key = "loo_after_mfu", .csv_format = "%.9g"}},
                  "   ");
  for (const CalibrationPoint& p : points)
    t.add({p.dp, p.mbs, p.gas, p.measured, p.predicted, 100 * (p.predicted - p.measured) / p.measured, p.loo_before,
           p.loo_after});
  return t;
}

void print_calibration(const std::vector<CalibrationPoint>& cal) {
  std::printf("\n2. Calibration: the playbook's DP scaling of the 1.34B model (TP = PP = 1, ZeRO-0, s = 4096, 1M\n"
              "   tokens per step) against the step model (compute at %.0f%% of peak, collectives at %.0f%% of the\n"
              "   measured bus bandwidth and %.1f us per ring step, %.0f%% of the backward hiding the all-reduce)\n",
              100 * plan::kComputeEfficiency, 100 * plan::kBandwidthEfficiency, 1e6 * plan::kLatency, 100 * plan::kOverlap);
  calibration_table(cal).print(std::cout);
  const LooError before = loo_error(cal, false), after = loo_error(cal, true);
  std::printf("   leave-one-out (fitted on the other %zu points, the held-out one predicted): |error| median %.1f%%,\n"
              "   largest %.1f%%; before the latency and GEMM-memory terms: median %.1f%%, largest %.1f%%\n",
              cal.size() - 1, 100 * after.median, 100 * after.largest, 100 * before.median, 100 * before.largest);
}

void print_campaign(const std::vector<CampaignCell>& cells, const plan::Cluster& cluster, double seconds) {
  std::printf("\n3. The campaign: the best layout per model and node count (%s; searched in %.3f s)\n",
              cluster.name.c_str(), seconds);
  const report::Table t = campaign_table(cells);
  t.print_header(std::cout);
  for (std::size_t i = 0; i < cells.size(); ++i) {
    if (cells[i].fitting == 0)
      std::printf("   %-15s %5d | nothing fits\n", cells[i].model.c_str(), cells[i].nodes);
    else
      t.print_row(std::cout, i);
  }
  std::size_t fit = 0, ties = 0, mesh_ties = 0;
  for (const CampaignCell& c : cells) fit += c.fitting > 0, ties += c.tied > 1, mesh_ties += c.tied_meshes > 1;
  std::printf("   ties: in %zu of the %zu cells where a layout fits, other layouts predict an MFU within %.0f%% of\n"
              "   the best (the step model's own error), and in %zu of them with another mesh (tp, pp, cp): the\n"
              "   model cannot rank them (the heatmap marks those cells ~)\n",
              ties, fit, 100 * plan::kModelError, mesh_ties);
}

}  // namespace usp::ch10
