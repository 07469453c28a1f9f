#include "chapters/10_5d_parallelism/step_model.hpp"

#include <algorithm>
#include <cmath>

#include "chapters/10_5d_parallelism/planner_terms.hpp"
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

StepTime step_time(const PlanLayout& l, const Cluster& cl) {
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
  t.compute = per_token * tokens(l) / gpus / (cl.peak_flops * kComputeEfficiency);
  // DP: the gradient of what a rank holds, once per step.
  if (s.dp > 1) {
    const double grads = static_cast<double>(c.num_parameters()) / static_cast<double>(s.tp * s.pp) * kBytes;
    const double volume = grads * 2.0 * static_cast<double>(s.dp - 1) / static_cast<double>(s.dp) * (s.zero == 3 ? 1.5 : 1.0);
    const int span = nodes_spanned(s.dp, s.tp * s.cp, cl.gpus_per_node);
    const double comm = volume / (cl.bus(cl.all_reduce, span) * kBandwidthEfficiency);
    const double last_backward = t.compute / static_cast<double>(l.gas) * 2.0 / 3.0;
    t.dp = std::max(0.0, comm - kOverlap * last_backward);
  }
  // TP: 4 all-reduces of the [mbs·s, h] activations per layer and micro-batch, not hidden
  // (exercise 10.1, planner_terms.hpp).
  t.tp = tp_seconds(l, cl);
  // PP: 1F1B's bubble and the boundary crossings (point to point at the all-gather's bandwidth).
  if (s.pp > 1) {
    t.pp_bubble = t.compute * static_cast<double>(s.pp - 1) / static_cast<double>(l.gas);
    const double act = static_cast<double>(s.mbs * s.seq * c.hidden) * kBytes;
    const int span = nodes_spanned(2, s.dp * s.tp * s.cp, cl.gpus_per_node);
    t.pp_p2p = 2.0 * static_cast<double>(l.gas) * act / (cl.bus(cl.all_gather, span) * kBandwidthEfficiency);
  }
  return t;
}

double mfu(const PlanLayout& l, const Cluster& cl) {
  return model_flops(l) / (step_time(l, cl).total() * static_cast<double>(l.world()) * cl.peak_flops);
}

}  // namespace usp::plan
