// The bubble each schedule should have, by the formulas of the playbook and the zero-bubble
// paper, for equal stages of cost (t_F, t_B, t_W) per chunk (t_BW = t_B + t_W); what the
// simulator's measurement (schedule_simulator.hpp: Σ idle / Σ busy) is compared with.
//   AFAB, 1F1B   (p-1)/m             every rank idles (p-1)(t_F + t_BW) of m (t_F + t_BW)
//   interleaved  (p-1)/(v·m)         the same idle time, in chunks v times shorter
//   ZB-H1        (p-1)(t_F + t_B - t_W) / (m (t_F + t_B + t_W))   (Qi et al. 2023, section 2.1;
//                derived there for t_F = t_B = t_W, where it is (p-1)/(3m)); the simulator
//                agrees whenever m >= p and t_W <= t_B (with t_W > t_B the last rank's
//                postponed W's outlast rank 0's tail and the step grows)
//   ZB-H2        (p-1)t_F / (m (t_F + t_B + t_W)) for t_F = t_B = t_W and m >= p: no idle time inside
//                the parallelogram, only its two corners within one synchronous step
//   DualPipeV    (p-1)t_F / (2m (t_F + t_B + t_W)) for t_F = t_B = t_W per chunk (m >= 2p), F&B run
//                one after the other (the DualPipe README's (PP/2-1)(F&B + B - 3W) counts them
//                overlapped)
#pragma once
#include <string>

#include "chapters/08_pipeline_parallel/schedule.hpp"
#include "chapters/08_pipeline_parallel/schedule_simulator.hpp"

namespace usp::ch08 {

struct BubbleFormula {
  double value = 0;
  std::string text;  // "(p-1)/m = 3/8"
};

BubbleFormula bubble_formula(ScheduleKind kind, int p, int m, int v, StageCost cost);

}  // namespace usp::ch08
