// What the executor measured, in the simulator's terms, so that one plan can be compared with
// itself: the real run as a Simulation (the same struct the simulator fills: the Gantt CSV, the
// bubble and the activations in flight are computed by the same code for both), and the
// per-stage operation times it measured, to feed back into the simulator.
//
//   measured bubble   Σ_r (T − busy_r) / Σ_r busy_r over the real step, T from the common start
//                     (the executor's barrier) to the last op's end on any rank; busy = the compute
//                     ops' time. Everything else a rank does — posting sends, waiting in a
//                     receive, copying a message — counts as idle, as it is for the hardware.
//   predicted bubble  the simulator run on the same lists with each stage's mean measured F, B, W
//                     (measured_costs) and zero latency: what the schedule would cost
//                     if the only idle time were its dependencies.
// Times in milliseconds.
#pragma once
#include <vector>

#include "chapters/08_pipeline_parallel/pipeline_executor.hpp"
#include "chapters/08_pipeline_parallel/schedule.hpp"
#include "chapters/08_pipeline_parallel/schedule_simulator.hpp"
#include "common/comm/communicator.hpp"

namespace usp::ch08 {

// Every pipeline rank's executed step, on every rank (collective over pp).
std::vector<ExecutedStep> gather_executed(Communicator& pp, const ExecutedStep& mine);

// The real run as the simulator would have reported it.
Simulation measured_timeline(const Schedule& s, const std::vector<ExecutedStep>& ranks);

// Each virtual stage's mean F, B and W time from the compute ops that ran (a stage that never
// split its backward: its mean BW as b, w = 0).
Costs measured_costs(const Schedule& s, const std::vector<ExecutedStep>& ranks);

}  // namespace usp::ch08
