#include "chapters/10_5d_parallelism/step_terms.hpp"

#include <cmath>

namespace usp::plan {

std::int64_t gradient_buckets(double bytes) {
  return std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(bytes / kBucketBytes)));
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
