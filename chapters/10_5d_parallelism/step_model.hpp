// The planner's step time: one training step of a layout on a cluster, from first principles
// with three efficiency constants fitted on the playbook's data-parallel scaling series of the
// 1.34B model (the only measured cluster data used; docs: the plan module's calibration).
//
// For a layout dp · tp · pp (cp = ep = 1 in this model), micro-batches of mbs sequences of s
// tokens, gas of them per step (global batch = dp · mbs · gas · s tokens):
//   compute    the step's FLOPs per GPU, (6N + 12·L·h·s per token, + recomputation's) · tokens
//              / (tp · pp · dp), at kComputeEfficiency of the GPU's peak;
//   DP         one gradient all-reduce per step of the rank's N/(tp·pp) bf16 gradients
//              (2(n-1)/n of them on the ring; ZeRO-1/2: reduce-scatter + all-gather, the same;
//              ZeRO-3: the parameters gathered again in forward and backward, ×1.5), over the
//              nodes the DP group spans, at kBandwidthEfficiency of NCCL's measured bus
//              bandwidth; kOverlap of the last micro-batch's backward hides part of it;
//   TP         per layer and micro-batch, 2 all-reduces of the [mbs·s, h] bf16 activations in
//              forward and 2 in backward (Megatron's f and g), inside a node (or over the nodes
//              a group spans when the cluster allows), not hidden;
//   PP         1F1B's bubble, (p-1)/m of the compute with m = gas micro-batches, plus each
//              micro-batch's activation and gradient crossing each stage boundary.
// All times in seconds.
#pragma once
#include <string>

#include "common/calc/training_setup.hpp"
#include "chapters/10_5d_parallelism/cluster.hpp"

namespace usp::plan {

// Fitted on the DP series (within 4% of every point; tests/plan).
inline constexpr double kComputeEfficiency = 0.38;   // achieved / peak FLOP rate of the GEMM-bound step
inline constexpr double kBandwidthEfficiency = 0.46;  // achieved / NCCL-benchmark bus bandwidth
inline constexpr double kOverlap = 0.25;              // of the last micro-batch's backward, spent on DP comm

inline constexpr double kBytes = 2;  // bf16 activations, gradients and parameters on the wire

// Nodes a group of n ranks spans when consecutive ranks of it are `stride` ranks apart (the mesh
// puts TP innermost, so a TP group's stride is 1, a DP group's tp·cp).
int nodes_spanned(std::int64_t n, std::int64_t stride, int gpus_per_node);

struct PlanLayout {
  calc::TrainingSetup setup;  // dp, zero, tp, pp (cp = ep = 1), mbs, seq, recompute, mixed precision
  std::int64_t gas = 1;       // micro-batches per step per DP rank
  std::string schedule() const { return setup.pp > 1 ? "1f1b" : "none"; }
  std::int64_t world() const { return setup.dp * setup.tp * setup.pp * setup.cp; }
};

struct StepTime {
  double compute = 0, dp = 0, tp = 0, pp_bubble = 0, pp_p2p = 0;
  double total() const { return compute + dp + tp + pp_bubble + pp_p2p; }
};

// The model FLOPs of the step (MFU's numerator: no recomputation).
double model_flops(const PlanLayout& l);
StepTime step_time(const PlanLayout& l, const Cluster& cluster);
double mfu(const PlanLayout& l, const Cluster& cluster);  // model FLOPs / (T · GPUs · peak)

}  // namespace usp::plan
