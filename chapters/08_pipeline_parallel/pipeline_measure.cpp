#include "chapters/08_pipeline_parallel/pipeline_measure.hpp"

#include <algorithm>

#include "common/error.hpp"
#include "common/report/row_gather.hpp"

namespace usp::ch08 {

namespace {

// An executed step without its list of ops, as it travels.
struct StepTotals {
  double loss_sum = 0;
  int peak_in_flight = 0;
  std::int64_t peak_activation_bytes = 0;
};

}  // namespace

std::vector<ExecutedStep> gather_executed(Communicator& pp, const ExecutedStep& mine) {
  const std::vector<StepTotals> totals =
      report::gather_rows(pp, StepTotals{mine.loss_sum, mine.peak_in_flight, mine.peak_activation_bytes});
  std::vector<std::vector<ExecutedOp>> ops = report::gather_row_lists(pp, mine.ops);
  std::vector<ExecutedStep> out(totals.size());
  for (std::size_t r = 0; r < out.size(); ++r)
    out[r] = {std::move(ops[r]), totals[r].loss_sum, totals[r].peak_in_flight, totals[r].peak_activation_bytes};
  return out;
}

Simulation measured_timeline(const Schedule& s, const std::vector<ExecutedStep>& ranks) {
  USP_CHECK(static_cast<int>(ranks.size()) == s.p, "measured_timeline: one executed step per pipeline rank");
  Simulation sim;
  sim.p = s.p;
  sim.timeline.resize(static_cast<std::size_t>(s.p));
  sim.busy.assign(static_cast<std::size_t>(s.p), 0.0);
  sim.in_flight.resize(static_cast<std::size_t>(s.p));
  sim.peak_in_flight.assign(static_cast<std::size_t>(s.p), 0);
  for (int r = 0; r < s.p; ++r) {
    const auto ri = static_cast<std::size_t>(r);
    const std::vector<Op>& list = s.ops[ri];
    USP_CHECK(ranks[ri].ops.size() == list.size(), "measured_timeline: rank " + std::to_string(r) +
                                                       " ran another number of ops than its list holds");
    sim.in_flight[ri].push_back({0, 0});
    for (const ExecutedOp& e : ranks[ri].ops) {
      const Op& op = list[static_cast<std::size_t>(e.index)];
      const double start = e.start_us / 1000, end = e.end_us / 1000;
      sim.step_time = std::max(sim.step_time, end);
      if (is_compute(op.kind)) {
        sim.timeline[ri].push_back({op, e.index, start, end});
        sim.busy[ri] += end - start;
      }
      if (e.in_flight != sim.in_flight[ri].back().count) sim.in_flight[ri].push_back({end, e.in_flight});
      sim.peak_in_flight[ri] = std::max(sim.peak_in_flight[ri], e.in_flight);
    }
  }
  return sim;
}

Costs measured_costs(const Schedule& s, const std::vector<ExecutedStep>& ranks) {
  const Simulation real = measured_timeline(s, ranks);
  const auto S = static_cast<std::size_t>(s.layout.num_stages());
  // Per stage: the summed durations and counts of its F, B, W and whole BW ops.
  enum { F, B, W, BW, kinds };
  std::vector<double> sum[kinds], count[kinds];
  for (int k = 0; k < kinds; ++k) sum[k].assign(S, 0.0), count[k].assign(S, 0.0);
  for (int r = 0; r < s.p; ++r)
    for (const TimedOp& t : real.timeline[static_cast<std::size_t>(r)]) {
      const int k = t.op.kind == OpKind::F ? F : t.op.kind == OpKind::B ? B : t.op.kind == OpKind::W ? W : BW;
      const auto st = static_cast<std::size_t>(s.layout.stage_of(r, t.op.chunk));
      sum[k][st] += t.end - t.start;
      count[k][st] += 1;
    }
  Costs costs;
  for (std::size_t st = 0; st < S; ++st) {
    auto mean = [&](int k) { return count[k][st] > 0 ? sum[k][st] / count[k][st] : 0.0; };
    // A stage that split its backward has B and W times (its whole BW's, if some, are then
    // timed as b + w); one that never did has only BW, kept whole as b (w = 0).
    costs.stage.push_back(count[B][st] > 0 ? StageCost{mean(F), mean(B), mean(W)} : StageCost{mean(F), mean(BW), 0.0});
  }
  return costs;
}

}  // namespace usp::ch08
