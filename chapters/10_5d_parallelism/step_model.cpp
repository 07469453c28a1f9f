#include "chapters/10_5d_parallelism/step_model.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "chapters/08_pipeline_parallel/schedule_simulator.hpp"
#include "chapters/10_5d_parallelism/planner_terms.hpp"
#include "chapters/10_5d_parallelism/step_terms.hpp"
#include "common/calc/flops_model.hpp"

namespace usp::plan {

namespace {

double tokens(const PlanLayout& l) {
  return static_cast<double>(l.setup.dp) * static_cast<double>(l.setup.mbs) * static_cast<double>(l.gas) *
         static_cast<double>(l.setup.seq);
}

}  // namespace

int nodes_spanned(std::int64_t n, std::int64_t stride, int gpus_per_node) {
  return static_cast<int>(std::max<std::int64_t>(1, (n * stride + gpus_per_node - 1) / gpus_per_node));
}

double model_flops(const PlanLayout& l) {
  const ModelConfig& c = l.setup.model;
  const double lhs = static_cast<double>(c.layers) * static_cast<double>(c.hidden) * static_cast<double>(l.setup.seq);
  return (6.0 * static_cast<double>(c.active_parameters()) + 12.0 * lhs) * tokens(l);
}

StepTime step_time(const PlanLayout& l, const Cluster& cl, const StepFit& fit) {
  const calc::TrainingSetup& s = l.setup;
  const ModelConfig& c = s.model;
  const double gpus = static_cast<double>(l.world());
  StepTime t;
  // Compute: the job's FLOPs (with recomputation's) spread over every GPU.
  const double lhs = static_cast<double>(c.layers) * static_cast<double>(c.hidden) * static_cast<double>(s.seq);
  const double n = static_cast<double>(c.active_parameters());
  double per_token = 6 * n + 12 * lhs;
  if (s.recompute == Recompute::full) per_token += 2 * n + 4 * lhs;
  if (s.recompute == Recompute::selective) per_token += 2 * lhs;
  t.compute = per_token * tokens(l) / gpus / (cl.peak_flops * fit.compute_efficiency) + gemm_memory_seconds(l, cl);
  // DP: the gradients' collectives over the dp·cp ranks holding the same weights, less what the
  // backward hides (exercise 10.1 (c), planner_terms.hpp).
  t.dp = dp_seconds(l, cl, fit, t.compute);
  // TP: 4 all-reduces of the [mbs·s/cp, h] activations per layer and micro-batch, not hidden
  // (exercise 10.1 (b)).
  t.tp = tp_seconds(l, cl);
  // CP: the ring's K/V blocks, forward (K, V) and backward (K, V, dK, dV), not hidden.
  if (s.cp > 1) {
    const double kv = 2.0 * static_cast<double>(s.mbs * (s.seq / s.cp) * (c.kv_heads / s.tp) * c.head_dim()) * kBytes;
    const double per_micro_batch = 3.0 * static_cast<double>(s.cp - 1) * kv * static_cast<double>(c.layers) /
                                   static_cast<double>(s.pp);
    const int span = nodes_spanned(s.cp, s.tp, cl.gpus_per_node);
    t.cp = static_cast<double>(l.gas) * per_micro_batch / (cl.bus(cl.all_gather, span) * fit.bandwidth_efficiency);
  }
  // PP: the schedule's bubble and the boundary crossings (exercise 10.1 (d)).
  if (s.pp > 1) t.pp_bubble = t.compute * bubble_ratio(l.kind, static_cast<int>(s.pp), static_cast<int>(l.gas));
  t.pp_p2p = pp_p2p_seconds(l, cl, fit);
  return t;
}

double bubble_ratio(ch08::ScheduleKind kind, int p, int m) {
  static std::map<std::tuple<ch08::ScheduleKind, int, int>, double> known;  // the search asks again and again
  const auto key = std::tuple{kind, p, m};
  if (const auto it = known.find(key); it != known.end()) return it->second;
  const ch08::Simulation sim = ch08::simulate(ch08::make_schedule(kind, p, m), ch08::uniform_costs(p, {1, 1, 1}));
  return known[key] = sim.bubble();
}

double mfu(const PlanLayout& l, const Cluster& cl, const StepFit& fit) {
  return model_flops(l) / (step_time(l, cl, fit).total() * static_cast<double>(l.world()) * cl.peak_flops);
}

}  // namespace usp::plan
