// The simulator (see schedule_simulator.hpp): a replay that keeps a clock per rank.
#include "chapters/08_pipeline_parallel/schedule_simulator.hpp"

#include <algorithm>
#include <cstddef>
#include <map>
#include <numeric>

#include "chapters/08_pipeline_parallel/schedule_replay.hpp"
#include "chapters/08_pipeline_parallel/schedule_validator.hpp"
#include "common/error.hpp"

namespace usp::ch08 {

Costs uniform_costs(int num_stages, StageCost cost, double latency) {
  return {std::vector<StageCost>(static_cast<std::size_t>(num_stages), cost), latency};
}

double Simulation::total_idle() const {
  double sum = 0;
  for (int r = 0; r < p; ++r) sum += idle(r);
  return sum;
}

double Simulation::total_busy() const { return std::accumulate(busy.begin(), busy.end(), 0.0); }

namespace {

double duration(const Op& op, const StageCost& c) {
  switch (op.kind) {
    case OpKind::F: return c.f;
    case OpKind::B: return c.b;
    case OpKind::W: return c.w;
    case OpKind::BW: return c.b + c.w;
    default: return 0;
  }
}

// Whether the op frees its micro-batch's activations of the chunk: the last op that reads them.
bool frees_activations(OpKind kind) { return kind == OpKind::BW || kind == OpKind::W; }

}  // namespace

Simulation simulate(const Schedule& s, const Costs& costs) {
  if (std::string e = validate_schedule(s); !e.empty())
    throw Error("cannot simulate an invalid " + std::string(schedule_kind_name(s.kind)) + " schedule: " + e);
  if (static_cast<int>(costs.stage.size()) != s.layout.num_stages())
    throw Error("the costs name " + std::to_string(costs.stage.size()) + " stages, the schedule has " +
                std::to_string(s.layout.num_stages()));

  const std::size_t p = static_cast<std::size_t>(s.p);
  Simulation sim;
  sim.p = s.p;
  sim.timeline.resize(p);
  sim.busy.assign(p, 0);
  sim.in_flight.assign(p, {InFlightPoint{0, 0}});
  sim.peak_in_flight.assign(p, 0);
  std::vector<double> clock(p, 0);
  std::vector<int> held(p, 0);
  std::map<Message, double> arrival;

  replay(s, [&](int rank, int index) {
    const std::size_t r = static_cast<std::size_t>(rank);
    const Op& op = s.ops[r][static_cast<std::size_t>(index)];
    switch (op.kind) {
      case OpKind::send_act:
      case OpKind::send_grad:
        arrival[message_of(s.layout, rank, op)] = clock[r] + costs.latency;
        return true;
      case OpKind::recv_act:
      case OpKind::recv_grad:
        clock[r] = std::max(clock[r], arrival.at(message_of(s.layout, rank, op)));
        return true;
      default:
        break;
    }
    const StageCost& cost = costs.stage[static_cast<std::size_t>(s.layout.stage_of(rank, op.chunk))];
    const TimedOp t{op, index, clock[r], clock[r] + duration(op, cost)};
    sim.timeline[r].push_back(t);
    sim.busy[r] += t.end - t.start;
    clock[r] = t.end;
    if (op.kind == OpKind::F) {
      sim.in_flight[r].push_back({t.start, ++held[r]});
      sim.peak_in_flight[r] = std::max(sim.peak_in_flight[r], held[r]);
    } else if (frees_activations(op.kind)) {
      sim.in_flight[r].push_back({t.end, --held[r]});
    }
    return true;
  });
  sim.step_time = *std::max_element(clock.begin(), clock.end());
  return sim;
}

}  // namespace usp::ch08
