// The bubble formulas (see schedule_formulas.hpp).
#include "chapters/08_pipeline_parallel/schedule_formulas.hpp"

#include <sstream>

namespace usp::ch08 {

BubbleFormula bubble_formula(ScheduleKind kind, int p, int m, int v, StageCost cost) {
  std::ostringstream text;
  switch (kind) {
    case ScheduleKind::afab:
    case ScheduleKind::one_f_one_b:
      text << "(p-1)/m = " << p - 1 << "/" << m;
      return {static_cast<double>(p - 1) / m, text.str()};
    case ScheduleKind::interleaved_1f1b:
      text << "(p-1)/(v·m) = " << p - 1 << "/" << v * m;
      return {static_cast<double>(p - 1) / (v * m), text.str()};
    case ScheduleKind::zb_h1: {
      const double idle = (p - 1) * (cost.f + cost.b - cost.w), busy = m * (cost.f + cost.b + cost.w);
      text << "(p-1)(t_F+t_B-t_W) / (m(t_F+t_B+t_W)) = " << idle << "/" << busy;
      return {idle / busy, text.str()};
    }
    case ScheduleKind::zb_h2: {
      // The parallelogram's two corners: rank r waits r·t_F for its first input and finishes
      // (p-1-r)·t_F before the last rank (the paper's equal-cost construction).
      const double idle = (p - 1) * cost.f, busy = m * (cost.f + cost.b + cost.w);
      text << "(p-1)t_F / (m(t_F+t_B+t_W)) = " << idle << "/" << busy;
      return {idle / busy, text.str()};
    }
    case ScheduleKind::dualpipev: {
      // With equal costs (what the schedule is cut for), (p-1)·t_F per rank of 2m chunks' work.
      const double idle = (p - 1) * cost.f, busy = 2 * m * (cost.f + cost.b + cost.w);
      text << "(p-1)t_F / (2m(t_F+t_B+t_W)) = " << idle << "/" << busy;
      return {idle / busy, text.str()};
    }
  }
  return {};
}

}  // namespace usp::ch08
