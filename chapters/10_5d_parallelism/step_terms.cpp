#include "chapters/10_5d_parallelism/step_terms.hpp"

#include <cmath>

namespace usp::plan {

std::int64_t gradient_buckets(double bytes) {
  return std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(bytes / kBucketBytes)));
}

double dp_latency_seconds(const PlanLayout& l, const StepFit& fit) {
  const calc::TrainingSetup& s = l.setup;
  const std::int64_t n = s.dp * s.cp;
  if (n == 1) return 0;
  const double steps = static_cast<double>(n - 1);  // of a gather or a scatter; an all-reduce twice
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

double pp_p2p_seconds(const PlanLayout& l, const Cluster& cl, const StepFit& fit) {
  const calc::TrainingSetup& s = l.setup;
  if (s.pp == 1) return 0;
  const double bytes = static_cast<double>(s.mbs * (s.seq / s.cp) * s.model.hidden) * kBytes;
  const int span = nodes_spanned(2, s.dp * s.tp * s.cp, cl.gpus_per_node);
  const double one = fit.latency + bytes / (cl.bus(cl.all_gather, span) * fit.bandwidth_efficiency);
  return (2.0 * static_cast<double>(l.gas) + 2.0 * static_cast<double>(s.pp - 1)) * one;
}

double gemm_memory_seconds(const PlanLayout& l, const Cluster& cl) {
  if (cl.hbm_bytes_per_second <= 0) return 0;
  const calc::TrainingSetup& s = l.setup;
  const ModelConfig& c = s.model;
  const double m = static_cast<double>(s.mbs * (s.seq / s.cp));
  const double h = static_cast<double>(c.hidden), t = static_cast<double>(s.tp);
  const double q = static_cast<double>(c.heads * c.head_dim()), kv = static_cast<double>(c.kv_heads * c.head_dim());
  const double f = static_cast<double>(c.ffn);
  auto moved = [&](double k, double n) { return 2.0 * (m * k + k * n + m * n); };  // bf16 A, B and C
  const double per_layer = moved(h, (q + 2 * kv) / t) + moved(q / t, h) + moved(h, 2 * f / t) + moved(f / t, h);
  const double passes = s.recompute == Recompute::full ? 4.0 : 3.0;
  const double layers = static_cast<double>(c.layers) / static_cast<double>(s.pp);
  return static_cast<double>(l.gas) * layers * passes * per_layer / cl.hbm_bytes_per_second;
}

}  // namespace usp::plan
