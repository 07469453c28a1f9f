// The text Gantt chart and the CSVs (see schedule_report.hpp).
#include "chapters/08_pipeline_parallel/schedule_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <sstream>
#include <vector>

namespace usp::ch08 {

namespace {

bool integral(double t) { return std::floor(t) == t; }

std::string cell_label(const Op& op, int v) {
  std::ostringstream s;
  s << op_kind_name(op.kind) << op.mb;
  if (v > 1) s << '.' << op.chunk;
  return s.str();
}

}  // namespace

std::string text_gantt(const Schedule& s, const Simulation& sim, int max_cells) {
  if (!integral(sim.step_time) || sim.step_time > max_cells) return "";
  const std::size_t cells = static_cast<std::size_t>(sim.step_time);
  std::size_t width = 1;
  for (const auto& rank : sim.timeline)
    for (const TimedOp& t : rank) {
      if (!integral(t.start) || !integral(t.end)) return "";
      width = std::max(width, cell_label(t.op, s.v).size());
    }
  std::ostringstream out;
  for (int r = 0; r < sim.p; ++r) {
    std::vector<std::string> row(cells, ".");
    for (const TimedOp& t : sim.timeline[static_cast<std::size_t>(r)])
      for (auto u = static_cast<std::size_t>(t.start); u < static_cast<std::size_t>(t.end); ++u)
        row[u] = cell_label(t.op, s.v);
    out << "  rank " << r << " |";
    for (const std::string& c : row) out << ' ' << c << std::string(width - c.size(), ' ');
    out << "\n";
  }
  return out.str();
}

report::Table gantt_table(const Schedule& s, const Simulation& sim) {
  report::Table t({{.key = "rank"}, {.key = "index"}, {.key = "kind"}, {.key = "micro_batch"}, {.key = "chunk"},
                   {.key = "stage"}, {.key = "start", .csv_format = "%.15g"}, {.key = "end", .csv_format = "%.15g"}});
  for (int r = 0; r < sim.p; ++r)
    for (const TimedOp& op : sim.timeline[static_cast<std::size_t>(r)])
      t.add({std::int64_t{r}, std::int64_t{op.index}, std::string(op_kind_name(op.op.kind)), std::int64_t{op.op.mb},
             std::int64_t{op.op.chunk}, std::int64_t{s.layout.stage_of(r, op.op.chunk)}, op.start, op.end});
  return t;
}

report::Table in_flight_table(const Simulation& sim) {
  report::Table t({{.key = "rank"}, {.key = "time", .csv_format = "%.15g"}, {.key = "in_flight"}});
  for (int r = 0; r < sim.p; ++r)
    for (const InFlightPoint& pt : sim.in_flight[static_cast<std::size_t>(r)])
      t.add({std::int64_t{r}, pt.time, std::int64_t{pt.count}});
  return t;
}

}  // namespace usp::ch08
