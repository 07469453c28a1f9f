// The cluster planner (usp_plan): every layout of a model on a cluster that fits in the GPUs'
// memory, ranked by predicted MFU.
//   layouts   dp · tp · pp · cp = nodes · GPUs per node (tp a power of two within a node, or
//             beyond when the cluster lets TP span nodes; pp a divisor of the layers; cp a power
//             of two with s divisible by 2·cp), ZeRO 0..3 (1..3 only with dp·cp > 1), mbs ∈
//             {1, 2, 4, 8} with gas = global batch / (dp · mbs · s) a whole number,
//             recomputation none / selective / full; the schedule 1F1B or ZB-H1 when pp > 1.
//             Expert parallelism is not searched (ep = 1: the step model has no all-to-all term).
//   memory    usp_calc's per-rank model (calc::memory_per_rank, mixed precision) of the most
//             loaded pipeline stage must fit in the GPU's memory (layout_bytes, exercise 10.1);
//   time      step_model.hpp.
#pragma once
#include <cstdint>
#include <vector>

#include "common/model/config.hpp"
#include "chapters/10_5d_parallelism/cluster.hpp"
#include "chapters/10_5d_parallelism/step_model.hpp"

namespace usp::plan {

struct PlanRequest {
  ModelConfig model;
  int nodes = 1;
  std::int64_t seq = 4096;
  std::int64_t global_batch_tokens = 1 << 20;
  std::int64_t tp = 0, pp = 0;  // > 0: only layouts with this tp / pp (usp_plan --tp / --pp)
};

struct PlannedLayout {
  PlanLayout layout;
  std::int64_t memory_bytes = 0;  // layout_bytes: the most loaded rank's
  StepTime time;
  double mfu = 0;
  double tokens_per_second_per_gpu = 0;
};

// What the search saw: the layouts that factor the world and the batch (before the memory filter).
// None: the node count itself is the problem, not the model's size.
struct SearchCounts {
  std::int64_t factored = 0;
};

// Every fitting layout, best MFU first (counts, when given, says how many factored). UsageError when the request cannot be planned: nodes < 1,
// a global batch not a multiple of seq, a fixed tp or pp that does not divide the cluster's GPUs
// (the world must factor as dp · tp · pp), a fixed tp larger than a node when the cluster keeps
// TP inside nodes, a fixed pp above the layers or not dividing them.
std::vector<PlannedLayout> search_layouts(const PlanRequest& request, const Cluster& cluster,
                                          SearchCounts* counts = nullptr);

// How many of `layouts` (best MFU first, as search_layouts returns them) the step model cannot tell
// from the best: those whose predicted MFU is at least (1 - band) times the best's. 0 when empty,
// else >= 1 (the best itself). usp_plan says when more than one is tied, and their spread.
std::size_t tied_with_best(const std::vector<PlannedLayout>& layouts, double band = kModelError);

}  // namespace usp::plan
