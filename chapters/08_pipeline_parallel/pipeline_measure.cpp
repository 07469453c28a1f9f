#include "chapters/08_pipeline_parallel/pipeline_measure.hpp"

#include <algorithm>
#include <bit>

#include "common/error.hpp"
#include "common/train/training_summary.hpp"

namespace usp::ch08 {

namespace {

constexpr std::size_t kFields = 5;  // index, start, end, in_flight, activation_bytes

}  // namespace

std::vector<ExecutedStep> gather_executed(Communicator& pp, const ExecutedStep& mine) {
  // gather_int64 needs as many values on every rank: the lists' lengths first, then the ops
  // padded to the longest list.
  const auto lengths = gather_int64(pp, {static_cast<std::int64_t>(mine.ops.size())});
  std::int64_t longest = 0;
  for (const auto& l : lengths) longest = std::max(longest, l[0]);
  std::vector<std::int64_t> flat(static_cast<std::size_t>(longest) * kFields + 3, 0);
  flat[0] = std::bit_cast<std::int64_t>(mine.loss_sum);
  flat[1] = mine.peak_in_flight;
  flat[2] = mine.peak_activation_bytes;
  for (std::size_t i = 0; i < mine.ops.size(); ++i) {
    const ExecutedOp& e = mine.ops[i];
    std::int64_t* f = &flat[3 + i * kFields];
    f[0] = e.index;
    f[1] = std::bit_cast<std::int64_t>(e.start_us);
    f[2] = std::bit_cast<std::int64_t>(e.end_us);
    f[3] = e.in_flight;
    f[4] = e.activation_bytes;
  }
  const auto all = gather_int64(pp, flat);
  std::vector<ExecutedStep> out(all.size());
  for (std::size_t r = 0; r < all.size(); ++r) {
    const auto& g = all[r];
    ExecutedStep& s = out[r];
    s.loss_sum = std::bit_cast<double>(g[0]);
    s.peak_in_flight = static_cast<int>(g[1]);
    s.peak_activation_bytes = g[2];
    for (std::int64_t i = 0; i < lengths[r][0]; ++i) {
      const std::int64_t* f = &g[3 + static_cast<std::size_t>(i) * kFields];
      s.ops.push_back({static_cast<int>(f[0]), std::bit_cast<double>(f[1]), std::bit_cast<double>(f[2]),
                       static_cast<int>(f[3]), f[4]});
    }
  }
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
