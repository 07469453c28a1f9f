// What chapter 08 prints and writes about a simulated schedule: the text Gantt chart and the
// CSVs that plots/ch08_gantt.py and plots/ch08_bubble.py draw.
#pragma once
#include <string>

#include "chapters/08_pipeline_parallel/schedule.hpp"
#include "chapters/08_pipeline_parallel/schedule_simulator.hpp"
#include "common/report/table.hpp"

namespace usp::ch08 {

// One line per rank, one cell per time unit, each cell the op running then ("F3", "B3", "W3",
// "BW3"; "F3.1" for chunk 1 when v > 1) or "." when the rank is idle:
//   rank 0 | F0  F1  F2  F3  .   .   .   BW0 BW0 ...
// Needs integer times (integer durations and latency); returns "" when they are not, or when
// the step is longer than max_cells units.
std::string text_gantt(const Schedule& s, const Simulation& sim, int max_cells = 160);

// The CSVs, as tables (times with 15 significant digits):
// rank,index,kind,micro_batch,chunk,stage,start,end: every compute op (index: in the rank's
// list, communication included).
report::Table gantt_table(const Schedule& s, const Simulation& sim);

// rank,time,in_flight: each rank's activations in flight from `time` on.
report::Table in_flight_table(const Simulation& sim);

}  // namespace usp::ch08
