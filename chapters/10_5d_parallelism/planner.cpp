#include "chapters/10_5d_parallelism/planner.hpp"

#include <algorithm>

#include "chapters/10_5d_parallelism/planner_terms.hpp"
#include "common/error.hpp"

namespace usp::plan {

std::vector<PlannedLayout> search_layouts(const PlanRequest& r, const Cluster& cl, SearchCounts* counts) {
  SearchCounts seen;
  if (r.nodes < 1) throw UsageError("--nodes must be >= 1, got " + std::to_string(r.nodes));
  if (r.seq < 1 || r.global_batch_tokens % r.seq != 0)
    throw UsageError("--global-batch-tokens " + std::to_string(r.global_batch_tokens) +
                     " must be a multiple of --seq " + std::to_string(r.seq));
  const std::int64_t world = static_cast<std::int64_t>(r.nodes) * cl.gpus_per_node;
  const std::int64_t samples = r.global_batch_tokens / r.seq;
  const auto str = [](std::int64_t v) { return std::to_string(v); };
  for (auto [flag, n] : {std::pair{"--tp", r.tp}, std::pair{"--pp", r.pp}})
    if (n < 0 || (n > 0 && world % n != 0))
      throw UsageError(std::string(flag) + " " + str(n) + " does not divide the " + str(world) + " GPUs (" +
                       str(r.nodes) + " node(s) × " + str(cl.gpus_per_node) + "): the world must factor as dp · tp · pp");
  if (r.tp > cl.gpus_per_node && cl.tp_within_node)
    throw UsageError("--tp " + str(r.tp) + " spans " + str(nodes_spanned(r.tp, 1, cl.gpus_per_node)) + " nodes of " +
                     str(cl.gpus_per_node) + " GPUs, and " + cl.name +
                     " keeps tensor parallelism inside a node (tp_within_node)");
  if (r.pp > 0 && (r.pp > r.model.layers || r.model.layers % r.pp != 0))
    throw UsageError("--pp " + str(r.pp) + " must divide the " + str(r.model.layers) + " layers");
  std::vector<PlannedLayout> out;
  // TP sizes: the powers of two that divide the world (and fit a node when the cluster says so),
  // or the one asked for.
  std::vector<std::int64_t> tps;
  for (std::int64_t tp = 1; tp <= world && world % tp == 0 && !(cl.tp_within_node && tp > cl.gpus_per_node); tp *= 2)
    tps.push_back(tp);
  if (r.tp > 0) tps = {r.tp};
  for (std::int64_t tp : tps) {
    if (r.model.heads % tp != 0 || r.model.ffn % tp != 0) continue;
    for (std::int64_t pp = 1; pp <= r.model.layers && tp * pp <= world; ++pp) {
      if ((world / tp) % pp != 0 || r.model.layers % pp != 0 || (r.pp > 0 && pp != r.pp)) continue;
      // CP: powers of two that cut the sequence into 2·cp zig-zag chunks.
      for (std::int64_t cp = 1; cp <= world / tp / pp && (world / tp / pp) % cp == 0 && r.seq % (2 * cp) == 0; cp *= 2) {
        const std::int64_t dp = world / tp / pp / cp;
        for (std::int64_t mbs : {1, 2, 4, 8}) {
          if (samples % (dp * mbs) != 0) continue;
          const std::int64_t gas = samples / (dp * mbs);
          if (pp > 1 && gas < pp) continue;  // the schedules need at least p micro-batches to fill the pipeline
          for (int zero = 0; zero <= (dp * cp > 1 ? 3 : 0); ++zero)
            for (Recompute rc : {Recompute::none, Recompute::selective, Recompute::full})
              for (ch08::ScheduleKind kind : {ch08::ScheduleKind::one_f_one_b, ch08::ScheduleKind::zb_h1}) {
                if (pp == 1 && kind != ch08::ScheduleKind::one_f_one_b) continue;  // no pipeline: one "schedule"
                PlanLayout l;
                calc::TrainingSetup& s = l.setup;
                s.model = r.model;
                s.seq = r.seq;
                s.mbs = mbs;
                s.precision = calc::Precision::mixed;
                s.recompute = rc;
                s.dp = dp, s.zero = zero, s.tp = tp, s.pp = pp, s.cp = cp;
                l.gas = gas;
                l.kind = kind;
                ++seen.factored;
                const std::int64_t bytes = layout_bytes(l);  // the most loaded stage (exercise 10.1)
                if (static_cast<double>(bytes) > cl.memory_bytes) continue;
                PlannedLayout p{l, bytes, step_time(l, cl), 0, 0};
                p.mfu = mfu(l, cl);
                p.tokens_per_second_per_gpu = static_cast<double>(r.global_batch_tokens) / p.time.total() /
                                              static_cast<double>(world);
                out.push_back(p);
              }
        }
      }
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const PlannedLayout& a, const PlannedLayout& b) { return a.mfu > b.mfu; });
  if (counts) *counts = seen;
  return out;
}

std::size_t tied_with_best(const std::vector<PlannedLayout>& layouts, double band) {
  std::size_t n = 0;
  while (n < layouts.size() && layouts[n].mfu >= (1 - band) * layouts.front().mfu) ++n;
  return n;
}

}  // namespace usp::plan
