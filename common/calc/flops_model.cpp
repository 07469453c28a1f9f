#include "common/calc/flops_model.hpp"

#include "common/checked_math.hpp"

namespace usp::calc {

FlopsEstimate flops_per_step(const TrainingSetup& setup) {
  setup.validate();
  const ModelConfig& c = setup.model;
  FlopsEstimate f;
  f.tokens = (Count(setup.mbs) * setup.seq * setup.dp).value();
  const double tokens = static_cast<double>(f.tokens);
  // The parameters a token meets: with experts, its k experts' (and the router), not all E.
  const double n = static_cast<double>(c.active_parameters());
  // L·h·s: per token, one layer's q·kᵀ (or probs·v) costs 2·h·s FLOPs forward.
  const double lhs = static_cast<double>(c.layers) * static_cast<double>(c.hidden) * static_cast<double>(setup.seq);
  f.model = (6 * n + 12 * lhs) * tokens;
  switch (setup.recompute) {
    case Recompute::none: f.recompute = 0; break;
    case Recompute::selective: f.recompute = 2 * lhs * tokens; break;
    case Recompute::full: f.recompute = (2 * n + 4 * lhs) * tokens; break;
  }
  return f;
}

}  // namespace usp::calc
