// Exercise 10.1, the reference solution.
#include "chapters/10_5d_parallelism/planner_terms.hpp"

#include <algorithm>
#include <vector>

#include "chapters/10_5d_parallelism/step_terms.hpp"
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

namespace {

// The ring steps' latency of the DP collectives: each call waits α per step, 2(n-1) steps for an
// all-reduce, n-1 for a gather or a scatter; one call per 25 MiB bucket, or per layer (ZeRO-3).
double dp_latency(const PlanLayout& l, const StepFit& fit) {
  const calc::TrainingSetup& s = l.setup;
  const double steps = static_cast<double>(s.dp * s.cp - 1);  // of a gather or a scatter; an all-reduce twice
  const double gas = static_cast<double>(l.gas);
  const double buckets = static_cast<double>(
      gradient_buckets(static_cast<double>(s.model.num_parameters()) / static_cast<double>(s.tp * s.pp) * kBytes));
  const double layers = static_cast<double>(s.model.layers) / static_cast<double>(s.pp);
  double calls_times_steps = 0;
  if (s.zero <= 1) calls_times_steps = buckets * 2 * steps;
  if (s.zero == 2) calls_times_steps = (gas + 1) * buckets * steps;
  if (s.zero == 3) calls_times_steps = gas * 3 * layers * steps;
  return calls_times_steps * fit.latency;
}

}  // namespace

double dp_seconds(const PlanLayout& l, const Cluster& cl, const StepFit& fit, double compute_seconds) {
  const calc::TrainingSetup& s = l.setup;
  const std::int64_t replicas = s.dp * s.cp;  // the ranks holding the same weights
  if (replicas == 1) return 0;
  const double n_r = static_cast<double>(replicas);
  const double share = static_cast<double>(s.model.num_parameters()) / static_cast<double>(s.tp * s.pp) * kBytes *
                       (n_r - 1) / n_r;  // (n-1)/n of the rank's parameters, in bytes
  const int span = nodes_spanned(replicas, s.tp, cl.gpus_per_node);
  const double gas = static_cast<double>(l.gas);
  auto seconds = [&](const std::vector<double>& table, double bytes) {
    return bytes / (cl.bus(table, span) * fit.bandwidth_efficiency);
  };
  double comm = 0, backward = compute_seconds * 2.0 / 3.0 / gas;  // one micro-batch's backward
  if (s.zero <= 1) comm = seconds(cl.all_reduce, 2 * share);
  if (s.zero == 2) comm = gas * seconds(cl.reduce_scatter, share) + seconds(cl.all_gather, share), backward *= gas;
  if (s.zero == 3) comm = gas * (seconds(cl.reduce_scatter, share) + 2 * seconds(cl.all_gather, share)), backward *= gas;
  comm += dp_latency(l, fit);
  return std::max(0.0, comm - fit.overlap * backward);
}

double pp_p2p_seconds(const PlanLayout& l, const Cluster& cl, const StepFit& fit) {
  const calc::TrainingSetup& s = l.setup;
  if (s.pp == 1) return 0;
  const double bytes = static_cast<double>(s.mbs * (s.seq / s.cp) * s.model.hidden) * kBytes;
  const int span = nodes_spanned(2, s.dp * s.tp * s.cp, cl.gpus_per_node);
  const double one = fit.latency + bytes / (cl.bus(cl.all_gather, span) * fit.bandwidth_efficiency);
  return (2.0 * static_cast<double>(l.gas) + 2.0 * static_cast<double>(s.pp - 1)) * one;
}

}  // namespace usp::plan
