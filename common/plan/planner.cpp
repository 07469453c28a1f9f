#include "common/plan/planner.hpp"

#include <algorithm>

#include "common/calc/memory_model.hpp"
#include "common/error.hpp"

namespace usp::plan {

std::vector<PlannedLayout> search_layouts(const PlanRequest& r, const Cluster& cl) {
  if (r.nodes < 1) throw UsageError("--nodes must be >= 1, got " + std::to_string(r.nodes));
  if (r.seq < 1 || r.global_batch_tokens % r.seq != 0)
    throw UsageError("--global-batch-tokens " + std::to_string(r.global_batch_tokens) +
                     " must be a multiple of --seq " + std::to_string(r.seq));
  const std::int64_t world = static_cast<std::int64_t>(r.nodes) * cl.gpus_per_node;
  const std::int64_t samples = r.global_batch_tokens / r.seq;
  std::vector<PlannedLayout> out;
  for (std::int64_t tp = 1; tp <= world; tp *= 2) {
    if (world % tp != 0) break;
    if (cl.tp_within_node && tp > cl.gpus_per_node) break;
    if (r.model.heads % tp != 0 || r.model.ffn % tp != 0) continue;
    for (std::int64_t pp = 1; pp <= r.model.layers && tp * pp <= world; ++pp) {
      if ((world / tp) % pp != 0 || r.model.layers % pp != 0) continue;
      const std::int64_t dp = world / tp / pp;
      for (std::int64_t mbs : {1, 2, 4, 8}) {
        if (samples % (dp * mbs) != 0) continue;
        const std::int64_t gas = samples / (dp * mbs);
        if (pp > 1 && gas < pp) continue;  // 1F1B needs at least p micro-batches to fill the pipeline
        for (int zero = 0; zero <= (dp > 1 ? 3 : 0); ++zero)
          for (Recompute rc : {Recompute::none, Recompute::selective, Recompute::full}) {
            PlanLayout l;
            calc::TrainingSetup& s = l.setup;
            s.model = r.model;
            s.seq = r.seq;
            s.mbs = mbs;
            s.precision = calc::Precision::mixed;
            s.recompute = rc;
            s.dp = dp;
            s.zero = zero;
            s.tp = tp;
            s.pp = pp;
            l.gas = gas;
            const calc::MemoryBreakdown m = calc::memory_per_rank(s);
            if (static_cast<double>(m.total()) > cl.memory_bytes) continue;
            PlannedLayout p{l, m.total(), step_time(l, cl), 0, 0};
            p.mfu = mfu(l, cl);
            p.tokens_per_second_per_gpu = static_cast<double>(r.global_batch_tokens) / p.time.total() /
                                          static_cast<double>(world);
            out.push_back(p);
          }
      }
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const PlannedLayout& a, const PlannedLayout& b) { return a.mfu > b.mfu; });
  return out;
}

}  // namespace usp::plan
