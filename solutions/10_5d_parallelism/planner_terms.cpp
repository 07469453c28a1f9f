// Exercise 10.1, the reference solution.
#include "chapters/10_5d_parallelism/planner_terms.hpp"

#include <algorithm>

#include "common/calc/memory_model.hpp"

namespace usp::plan {

std::int64_t layout_bytes(const PlanLayout& l) {
  calc::TrainingSetup s = l.setup;
  const std::int64_t vocab_share = (s.model.vocab + s.tp - 1) / s.tp;
  const std::int64_t logits = 2 * 4 * s.mbs * (s.seq / s.cp) * vocab_share;  // fp32 logits and their gradient
  std::int64_t most = 0;
  for (s.stage = 0; s.stage < s.pp; ++s.stage) {
    std::int64_t bytes = calc::memory_per_rank(s).total();
    if (s.stage == s.pp - 1) bytes += logits;
    most = std::max(most, bytes);
  }
  return most;
}

double tp_seconds(const PlanLayout& l, const Cluster& cl) {
  const calc::TrainingSetup& s = l.setup;
  if (s.tp == 1) return 0;
  const double t = static_cast<double>(s.tp);
  // One all-reduce's S: the activations of this rank's tokens, s/cp of each sequence under CP.
  const double activation = static_cast<double>(s.mbs * (s.seq / s.cp) * s.model.hidden) * kBytes;
  const double through_link = activation * 2.0 * (t - 1) / t;                             // the ring's per-rank bytes
  const double bandwidth = cl.bus(cl.all_reduce, nodes_spanned(s.tp, 1, cl.gpus_per_node)) * kBandwidthEfficiency;
  const double per_step = 4.0 * static_cast<double>(s.model.layers) / static_cast<double>(s.pp) *
                          static_cast<double>(l.gas);  // all-reduces on this rank
  return per_step * through_link / bandwidth;
}

}  // namespace usp::plan
