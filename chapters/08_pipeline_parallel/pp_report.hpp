// What chapter 08 prints and writes about the schedules it ran on MPI ranks (pp_run.hpp): per
// schedule the losses, the step time, the measured bubble next to the simulator's prediction
// from the measured op times and the formula (with the machine's load while it was timed), and per rank the op times, peak activations (and
// how many micro-batches were in flight), parameters held and bytes sent; the measured and the
// predicted Gantt charts as CSVs (plots/ch08_gantt_measured.py).
#pragma once
#include <ostream>
#include <string>
#include <vector>

#include "chapters/08_pipeline_parallel/pp_run.hpp"
#include "chapters/08_pipeline_parallel/schedule_simulator.hpp"
#include "common/json.hpp"
#include "common/report/machine_load.hpp"

namespace usp::ch08 {

// One schedule's measurements, reduced for printing (rank 0 holds every rank's after gather_runs).
struct RunReport {
  ScheduleRun run;                          // this rank's (losses and last_step are everyone's)
  Simulation measured, predicted;           // the real last step; the simulator on measured costs
  Costs costs;                              // per virtual stage, measured (ms), on this rank's pipeline
  std::vector<std::int64_t> params_held;  // [world rank]
  std::vector<std::vector<StageCost>> chunk_costs;  // [world rank][chunk]: its pipeline's measured times
  std::vector<std::int64_t> peak_activation_bytes, peak_in_flight, sent_bytes;  // [world rank]
  report::MachineLoad load;  // while the steps were timed: the measured bubble depends on it
};

// Collective over world: every rank's numbers gathered.
RunReport report_run(Communicator& world, ScheduleRun run);

void print_run(std::ostream& out, const RunReport& r, const TrainingConfig& cfg);
// "the losses agree across the schedules: yes, bit for bit" (or where they differ).
void print_agreement(std::ostream& out, const std::vector<RunReport>& reports);
// gantt_measured_<schedule>.csv, gantt_predicted_<schedule>.csv, in_flight_measured_<schedule>.csv.
void write_run_csvs(const std::string& dir, const RunReport& r);
void write_run_json(JsonWriter& j, const RunReport& r);

}  // namespace usp::ch08
