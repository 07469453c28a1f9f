// Layout5d: one point of the 5D space — how many ranks each dimension takes and the choices
// that go with them (ZeRO stage, pipeline schedule and micro-batches, CP's sharding and
// attention). The mesh puts the dimensions on the world's ranks in the order "tp-cp-dp-pp",
// fastest first: TP peers are neighbours (they talk every layer: the same node, the fastest
// links), then CP (every layer's attention), then DP (once a step), and pipeline stages are the
// furthest apart (one activation per micro-batch). Expert parallelism lives inside the dp·cp
// ranks of a (tp, pp) coordinate (common/mesh.hpp).
#pragma once
#include <cstdint>
#include <string>

#include "chapters/07_context_parallel/cp_attention.hpp"
#include "chapters/07_context_parallel/cp_layout.hpp"
#include "chapters/08_pipeline_parallel/schedule.hpp"
#include "common/model/config.hpp"

namespace usp::ch10 {

struct Layout5d {
  int dp = 1, tp = 1, pp = 1, cp = 1, ep = 1;
  int zero = 0;  // 0, or 1: each stage's optimizer states sharded over its dp·cp replicas
  ch08::ScheduleKind schedule = ch08::ScheduleKind::one_f_one_b;
  int m = 1;  // micro-batches per replica and step (gradient accumulation; the pipeline's m)
  int v = 1;  // chunks per pipeline rank (interleaved)
  ch07::CpSharding sharding = ch07::CpSharding::zigzag;
  ch07::CpAttention attention = ch07::CpAttention::ring;

  int world() const { return dp * tp * pp * cp; }
  std::string label() const;  // "dp2·tp2·pp2", "cp2·tp2·pp2 zero1", "dp2·ep2·pp2"
};

// A layout written as one line (the lists of layouts the chapter and its tests run); zig-zag sharding.
Layout5d layout_5d(int dp, int tp, int pp, int cp, int ep, int zero, ch08::ScheduleKind schedule, int m, int v = 1,
                   ch07::CpAttention attention = ch07::CpAttention::ring);

// UsageError (the same on every rank) when the layout cannot run, naming the first reason:
//   sizes < 1, dp·tp·pp·cp not the world size, ZeRO other than 0 or 1;
//   TP: t not dividing the heads, kv heads, ffn or vocabulary (chapter 06), or a mixture of
//     experts (this course spreads experts with EP, not TP);
//   CP: seq not divisible by cp (contiguous) or 2·cp (zig-zag), the all-to-all attention with cp
//     not dividing a TP rank's heads (chapter 07); a mixture of experts with cp > 1 (the router's
//     capacity and load-balancing statistics would be computed on a rank's share of a sequence,
//     which is not the baseline's objective);
//   PP: fewer layers than p·v stages, tied embeddings, a schedule that cannot take (p, m, v)
//     (chapter 08); a zero-bubble schedule with tp > 1 (its B / W split is the single-device
//     LinearHook, weight_grad_queue.hpp);
//   EP: ep > 1 on a dense model, ep not dividing the experts or dp·cp, ZeRO-1 with ep > 1.
void check_layout_5d(const Layout5d& layout, int world_size, const ModelConfig& model, std::int64_t seq);

}  // namespace usp::ch10
