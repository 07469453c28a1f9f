// The text Gantt chart and the CSVs (see schedule_report.hpp).
#include "chapters/08_pipeline_parallel/schedule_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <iomanip>
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

std::string gantt_csv(const Schedule& s, const Simulation& sim) {
  std::ostringstream out;
  out << std::setprecision(15) << "rank,index,kind,micro_batch,chunk,stage,start,end\n";
  for (int r = 0; r < sim.p; ++r)
    for (const TimedOp& t : sim.timeline[static_cast<std::size_t>(r)])
      out << r << ',' << t.index << ',' << op_kind_name(t.op.kind) << ',' << t.op.mb << ',' << t.op.chunk << ','
          << s.layout.stage_of(r, t.op.chunk) << ',' << t.start << ',' << t.end << '\n';
  return out.str();
}

std::string in_flight_csv(const Simulation& sim) {
  std::ostringstream out;
  out << std::setprecision(15) << "rank,time,in_flight\n";
  for (int r = 0; r < sim.p; ++r)
    for (const InFlightPoint& pt : sim.in_flight[static_cast<std::size_t>(r)])
      out << r << ',' << pt.time << ',' << pt.count << '\n';
  return out.str();
}

}  // namespace usp::ch08
