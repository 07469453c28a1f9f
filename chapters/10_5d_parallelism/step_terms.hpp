// The step model's terms that no exercise owns (step_model.hpp adds them up; the communication
// terms are exercise 10.1's, planner_terms.hpp), each from first principles, with its formula here
// once. All times in seconds, for one rank and one optimizer step.
//
// Notation: a layout dp · tp · pp · cp, mbs sequences of s tokens per micro-batch, gas micro-batches
// per step, a model of L layers, hidden h, a query heads and g kv heads of d, SwiGLU width f.
#pragma once
#include <cstdint>

#include "chapters/10_5d_parallelism/cluster.hpp"
#include "chapters/10_5d_parallelism/step_model.hpp"

namespace usp::plan {

// The size in which the DP gradients are reduced: PyTorch DDP's default bucket (bucket_cap_mb = 25,
// i.e. 25 MiB). nanotron's DP is not documented to use that size: an assumption, said in the lesson.
inline constexpr double kBucketBytes = 25.0 * 1024 * 1024;

// The buckets a rank's gradients of `bytes` are cut into: ceil(bytes / kBucketBytes), at least 1
// (one DP collective per bucket: exercise 10.1 (c) counts their latency).
std::int64_t gradient_buckets(double bytes);

// What small per-GPU GEMMs lose. A GEMM [m, k] × [k, n] moves 2(m·k + k·n + m·n) bf16 bytes
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
