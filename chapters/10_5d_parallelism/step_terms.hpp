// The step model's terms that no exercise owns (step_model.hpp adds them up), each from first
// principles, with its formula here once. All times in seconds, for one rank and one optimizer step.
//
// Notation: a layout dp · tp · pp · cp, mbs sequences of s tokens per micro-batch, gas micro-batches
// per step, a model of L layers, hidden h, a query heads and g kv heads of d, SwiGLU width f; the
// n = dp · cp ranks that hold the same weights (the DP group); α the latency of one ring step
// (StepFit::latency), β the bus bandwidth of the level a group spans times the fitted efficiency.
#pragma once
#include <cstdint>

#include "chapters/10_5d_parallelism/cluster.hpp"
#include "chapters/10_5d_parallelism/step_model.hpp"

namespace usp::plan {

// The size in which the DP gradients are reduced: PyTorch DDP's default bucket (bucket_cap_mb = 25,
// i.e. 25 MiB). nanotron's DP is not documented to use that size: an assumption, said in the lesson.
inline constexpr double kBucketBytes = 25.0 * 1024 * 1024;

// The buckets a rank's gradients of `bytes` are cut into: ceil(bytes / kBucketBytes), at least 1.
std::int64_t gradient_buckets(double bytes);

// (1) The DP collectives' latency. A ring collective over n ranks is 2(n-1) steps for an
//   all-reduce (reduce-scatter, then all-gather) and n-1 for an all-gather or a reduce-scatter;
//   each step waits α however few bytes it carries, and the calls of one stream run one after the
//   other, so the latencies add:
//     ZeRO-0/1  B · 2(n-1) · α                         (B = gradient_buckets(2 · N/(tp·pp)), once per step)
//     ZeRO-2    gas · B · (n-1) · α + B · (n-1) · α    (a reduce-scatter per micro-batch, one all-gather)
//     ZeRO-3    gas · 3 · (L/pp) · (n-1) · α           (per micro-batch and layer: the parameters'
//                                                      all-gather in forward and again in backward,
//                                                      the gradients' reduce-scatter)
//   0 when n = 1. At 256 ranks an all-reduce of a 1.34B model's gradients is 107 buckets × 510
//   steps: the term that makes small per-GPU batches collapse at scale.
double dp_latency_seconds(const PlanLayout& l, const StepFit& fit);

// (2) Pipeline point to point. Each micro-batch's activation [mbs · s/cp, h] (bf16) crosses a stage
//   boundary forward and its gradient backward: a rank sends 2 · gas messages per step, and the
//   first micro-batch's forward and the last one's backward cross all p-1 boundaries on the
//   critical path (the fill and the drain), so
//     (2 · gas + 2 · (pp-1)) · (α + bytes / β)
//   with β the all-gather bus bandwidth of the nodes two neighbouring stages span (stages are the
//   outermost mesh dimension: dp·tp·cp ranks apart), not hidden. 0 when pp = 1.
double pp_p2p_seconds(const PlanLayout& l, const Cluster& cluster, const StepFit& fit);

// (3) What small per-GPU GEMMs lose. A GEMM [m, k] × [k, n] moves 2(m·k + k·n + m·n) bf16 bytes
//   through HBM for 2·m·k·n FLOPs; at the fitted compute rate R = efficiency · peak and the HBM
//   bandwidth W its time is taken as 2mkn / R + 2(mk + kn + mn) / W (the loads not hidden behind
//   the math: an effective rate 1 / (1/R + 1/(I·W)) for an intensity of I FLOPs per byte). Heavy TP
//   shrinks n (and k) by tp, CP shrinks m by cp, so I falls and the second term grows. Per layer
//   and micro-batch, with m = mbs · s/cp, the four linear blocks of a rank:
//     QKV [m, h] × [h, (a+2g)·d/tp],  O [m, a·d/tp] × [a·d/tp, h],
//     gate+up [m, h] × [h, 2f/tp],     down [m, f/tp] × [f/tp, h],
//   each moved 3 times (forward, and backward's two GEMMs, dX and dW, of the same three sizes), 4
//   under full recomputation; L/pp layers, gas micro-batches. This returns the memory part only
//   (the FLOPs are the compute term's); 0 when the cluster gives no HBM bandwidth.
double gemm_memory_seconds(const PlanLayout& l, const Cluster& cluster);

}  // namespace usp::plan
