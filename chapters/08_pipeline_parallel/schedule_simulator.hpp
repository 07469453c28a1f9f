// The simulator: the time a schedule takes, from the duration of each operation (docs/
// ARCHITECTURE.md, principle 4: the same lists the executor runs, timed for hardware the course
// does not have). Free of MPI and of the model: chapter 10's planner times layouts with it.
//
// Timing model, under the semantics of schedule.hpp (the lists are replayed, see
// schedule_replay.hpp, every rank starting at time 0):
//   * a rank runs one op at a time, in list order; a compute op of virtual stage s takes
//       F: cost[s].f    B: cost[s].b    W: cost[s].w    BW: cost[s].b + cost[s].w
//     and starts as soon as the op before it on the rank has ended (its inputs are there by
//     then: receives come before the op that needs them);
//   * a send takes no time on the rank; its message arrives `latency` later;
//   * a receive ends at max(the rank's clock, the message's arrival): the wait is idle time.
//
// What it reports:
//   * the Gantt chart: every compute op's start and end, per rank;
//   * the step time T: the last op's end over all ranks;
//   * the bubble, the playbook's definition: idle time relative to the ideal (busy) time,
//       bubble = Σ_r (T - busy_r) / Σ_r busy_r,
//     which for equal ranks is t_pb / t_id = (p-1)(t_f + t_b) / (m (t_f + t_b)) = (p-1)/m for
//     AFAB and 1F1B. With integer durations every time is an integer, so the sums are exact and
//     the ratio equals the formula's to the last bit. idle_fraction() is the share of the
//     p·T rank-seconds spent idle, Σ idle / (p·T) = (p-1)/(m+p-1) for 1F1B;
//   * activations in flight: the forward of (j, c) stores j's activations of chunk c when it
//     starts; they are freed when the op that last reads them ends: BW, or W when the backward
//     is split (W needs the chunk's inputs; B only frees part of them, counted as nothing here).
//     The count is in units of one chunk's activations of one micro-batch (for v > 1, a 1/v
//     share of a micro-batch's activations on the rank); peak per rank.
#pragma once
#include <vector>

#include "chapters/08_pipeline_parallel/schedule.hpp"

namespace usp::ch08 {

struct StageCost {
  double f = 1, b = 1, w = 1;  // forward, input-gradient half, weight-gradient half (BW = b + w)
};

struct Costs {
  std::vector<StageCost> stage;  // [p·v]: per virtual stage
  double latency = 0;            // from a send to its message's arrival
};

// Every virtual stage alike.
Costs uniform_costs(int num_stages, StageCost cost, double latency = 0);

struct TimedOp {
  Op op;
  int index = 0;  // in the rank's list
  double start = 0, end = 0;
};

struct InFlightPoint {
  double time = 0;
  int count = 0;  // activations held from this time on
};

struct Simulation {
  int p = 0;
  std::vector<std::vector<TimedOp>> timeline;         // [p]: the compute ops, in list order
  std::vector<double> busy;                           // [p]: summed compute time
  std::vector<std::vector<InFlightPoint>> in_flight;  // [p]: a point at each change, from (0, 0)
  std::vector<int> peak_in_flight;                    // [p]
  double step_time = 0;

  double idle(int rank) const { return step_time - busy[static_cast<std::size_t>(rank)]; }
  double total_idle() const;
  double total_busy() const;
  double bubble() const { return total_idle() / total_busy(); }                // Σ idle / Σ busy
  double idle_fraction() const { return total_idle() / (p * step_time); }     // Σ idle / (p·T)
};

// Times the schedule. Throws usp::Error with the validator's message when the schedule is not
// valid (schedule_validator.hpp), and when costs does not have one entry per virtual stage.
Simulation simulate(const Schedule& s, const Costs& costs);

}  // namespace usp::ch08
