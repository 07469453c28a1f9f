#include "common/plan/step_model.hpp"

#include <algorithm>
#include <cmath>

#include "common/calc/flops_model.hpp"

namespace usp::plan {

namespace {

constexpr double kBytes = 2;  // bf16 activations, gradients and parameters on the wire

// Nodes a group of n ranks spans when consecutive ranks of it are `stride` ranks apart.
int nodes_spanned(std::int64_t n, std::int64_t stride, int gpus_per_node) {
  return static_cast<int>(std::max<std::int64_t>(1, (n * stride + gpus_per_node - 1) / gpus_per_node));
}

double tokens(const PlanLayout& l) {
  return static_cast<double>(l.setup.dp) * static_cast<double>(l.setup.mbs) * static_cast<double>(l.gas) *
         static_cast<double>(l.setup.seq);
}

}  // namespace

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
  // TP: 4 all-reduces of the [mbs·s, h] activations per layer and micro-batch, not hidden.
  if (s.tp > 1) {
    const double act = static_cast<double>(s.mbs * s.seq * c.hidden) * kBytes;
    const double per = act * 2.0 * static_cast<double>(s.tp - 1) / static_cast<double>(s.tp);
    const int span = nodes_spanned(s.tp, 1, cl.gpus_per_node);
    const double layers_per_rank = static_cast<double>(c.layers) / static_cast<double>(s.pp);
    t.tp = 4.0 * layers_per_rank * static_cast<double>(l.gas) * per / (cl.bus(cl.all_reduce, span) * kBandwidthEfficiency);
  }
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
