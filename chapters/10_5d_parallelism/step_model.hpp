// The planner's step time: one training step of a layout on a cluster, from first principles
// with four constants (StepFit) fitted on the playbook's data-parallel scaling series of the
// 1.34B model (the only measured cluster data used; calibration.hpp fits them and reports the
// leave-one-out error).
//
// For a layout dp · tp · pp · cp (ep = 1 in this model), micro-batches of mbs sequences of s
// tokens, gas of them per step (global batch = dp · mbs · gas · s tokens), on the mesh order
// tp-cp-dp-pp (TP innermost):
//   compute    the step's FLOPs per GPU, (6N + 12·L·h·s per token, + recomputation's) · tokens
//              / (dp · tp · pp · cp), at compute_efficiency of the GPU's peak, plus what the
//              linear blocks' GEMMs move through HBM (step_terms.hpp: small per-GPU GEMMs
//              under heavy TP or CP);
//   DP         the gradients of the rank's N/(tp·pp) bf16 parameters over the n = dp·cp ranks
//              that hold the same weights, at bandwidth_efficiency of NCCL's measured bus
//              bandwidth for the nodes that group spans: ZeRO-0/1 one all-reduce per step
//              (2(n-1)/n of them; ZeRO-1's reduce-scatter + all-gather move the same); ZeRO-2 a
//              reduce-scatter after every micro-batch (it keeps only its gradient shard) and one
//              all-gather of the parameters; ZeRO-3 also all-gathers the parameters in every
//              micro-batch's forward and backward; plus every ring step's latency α, per bucket
//              or per layer; `overlap` of the backward that follows the collectives' start (the
//              last micro-batch's for ZeRO-0/1, every one's for ZeRO-2/3) hides part of them
//              (exercise 10.1 (c));
//   TP         per layer and micro-batch, 2 all-reduces of the [mbs·s/cp, h] bf16 activations in
//              forward and 2 in backward (Megatron's f and g), inside a node (or over the nodes
//              a group spans when the cluster allows), not hidden (exercise 10.1 (b));
//   CP         ring attention, per layer and micro-batch: the K and V of the other cp-1 chunks
//              pass each rank in forward (2·(cp-1)·mbs·(s/cp)·(kv heads/tp)·d elements), and K, V
//              and their gradients in backward (twice that), at the all-gather bandwidth of the
//              nodes the CP group spans; counted as not hidden (the ring overlaps it with the
//              attention blocks, but no measured series exists to fit how much: a conservative
//              choice, said here);
//   PP         the schedule's bubble as chapter 08's simulator times it (the same lists the
//              executor runs: 1F1B (p-1)/m, ZB-H1 (p-1)/(3m) with t_F = t_B = t_W) times the
//              compute, with m = gas micro-batches, plus the point-to-point crossings of the
//              stage boundaries, fill and drain included (exercise 10.1 (d)).
// All times in seconds.
#pragma once
#include <string>

#include "chapters/08_pipeline_parallel/schedule.hpp"
#include "chapters/10_5d_parallelism/cluster.hpp"
#include "common/calc/training_setup.hpp"

namespace usp::plan {

// Fitted on the DP series (calibration.hpp: fit_step_model(playbook_dp_series(), playbook cluster,
// ModelTerms::after), rounded; tests/plan checks that the fit still lands on them).
inline constexpr double kComputeEfficiency = 0.400;   // achieved / peak FLOP rate of the GEMM-bound step
inline constexpr double kBandwidthEfficiency = 0.486;  // achieved / NCCL-benchmark bus bandwidth
inline constexpr double kOverlap = 0.204;              // of the backward after a collective starts, spent hiding it
// Seconds per ring step of a collective (α). The fit drives it to 0: on this series the measured
// bus bandwidth by node count already accounts for the whole drop at 256 GPUs, and any α > 0 makes
// the fit worse. (NCCL's own tuning model puts a ring step at microseconds; with 25 MiB buckets that
// would cost more than the measured step at 256 GPUs, so NCCL cannot be running those all-reduces
// as latency-bound rings.) The terms keep α so that a cluster with a measured latency can use it.
inline constexpr double kLatency = 0;
// The step model's error on points it was not fitted to, as the leave-one-out error on the DP
// series estimates it (its largest, 5.7%, rounded up; calibration.hpp). Two layouts whose predicted
// MFU differs by less than this are a tie it cannot break (planner.hpp: tied_with_best).
inline constexpr double kModelError = 0.06;

// The fitted constants as one value, so that a fit can try others (calibration.hpp); the default
// is the shipped fit. tp_seconds (exercise 10.1) reads kBandwidthEfficiency itself: the DP series
// has tp = 1, so a refit on it never needs TP's term.
struct StepFit {
  double compute_efficiency = kComputeEfficiency;
  double bandwidth_efficiency = kBandwidthEfficiency;
  double overlap = kOverlap;
  double latency = kLatency;
};

inline constexpr double kBytes = 2;  // bf16 activations, gradients and parameters on the wire

// Nodes a group of n ranks spans when consecutive ranks of it are `stride` ranks apart (the mesh
// puts TP innermost, so a TP group's stride is 1, a DP group's tp·cp).
int nodes_spanned(std::int64_t n, std::int64_t stride, int gpus_per_node);

struct PlanLayout {
  calc::TrainingSetup setup;  // dp, zero, tp, pp, cp (ep = 1), mbs, seq, recompute, mixed precision
  std::int64_t gas = 1;       // micro-batches per step per DP rank
  ch08::ScheduleKind kind = ch08::ScheduleKind::one_f_one_b;  // when pp > 1: 1F1B or ZB-H1
  std::string schedule() const { return setup.pp > 1 ? ch08::schedule_kind_name(kind) : "none"; }
  std::int64_t world() const { return setup.dp * setup.tp * setup.pp * setup.cp; }
};

struct StepTime {
  double compute = 0, dp = 0, tp = 0, cp = 0, pp_bubble = 0, pp_p2p = 0;
  double total() const { return compute + dp + tp + cp + pp_bubble + pp_p2p; }
};

// The model FLOPs of the step (MFU's numerator: no recomputation).
double model_flops(const PlanLayout& l);
StepTime step_time(const PlanLayout& l, const Cluster& cluster, const StepFit& fit = {});
// The schedule's bubble, idle / busy, for p equal stages and m micro-batches with t_F = t_B = t_W
// (chapter 08's simulator on the schedule's lists; remembered per (kind, p, m)).
double bubble_ratio(ch08::ScheduleKind kind, int p, int m);
double mfu(const PlanLayout& l, const Cluster& cluster, const StepFit& fit = {});  // model FLOPs / (T · GPUs · peak)

}  // namespace usp::plan
