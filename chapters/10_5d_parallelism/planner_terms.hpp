// Exercise 10.1: the planner's model of one layout — whether it fits at all, and what its
// communication costs per step. The planner (planner.cpp) keeps a layout only when layout_bytes
// fits the GPU, and the step model (step_model.cpp) adds tp_seconds, dp_seconds and pp_p2p_seconds
// to the step; the calibration (calibration.hpp) fits its constants through dp_seconds; usp_plan
// and the campaign run on your versions.
//
// Notation (step_model.hpp): a layout dp · tp · pp · cp on the mesh order tp-cp-dp-pp (TP
// innermost, pipeline stages outermost), mbs sequences of s tokens per micro-batch, gas
// micro-batches per step, a model of L layers, hidden h, N parameters (num_parameters()). Every
// wire element is kBytes (bf16). A group of n ranks `stride` ranks apart spans
// nodes_spanned(n, stride, gpus_per_node) nodes, and a collective over it runs at
// cluster.bus(<its table>, span): the bus bandwidth NCCL measured (cluster.hpp says what a ring
// moves through each rank's link per collective), times the fitted bandwidth efficiency. Every function is for ONE rank and ONE optimizer step, in seconds (bytes for (a)).
#pragma once
#include <cstdint>

#include "chapters/10_5d_parallelism/cluster.hpp"
#include "chapters/10_5d_parallelism/step_model.hpp"

namespace usp::plan {

// (a) The memory-feasibility filter. A layout runs only if EVERY rank's memory fits in its GPU,
//   and ranks differ only by pipeline stage (TP, DP, CP and ZeRO split evenly). Per stage
//   k = 0 .. pp-1 a rank holds
//     calc::memory_per_rank(setup with setup.stage = k).total()   (parameters, gradients,
//         optimizer states, the layers' activations: the playbook's count), and, on the LAST
//         stage only (the one that computes the loss),
//     the logits of one micro-batch and their gradient, which the playbook's count leaves out:
//         2 tensors of mbs · (s / cp) rows × ceil(v / tp) columns (the vocabulary-parallel
//         head's share) in fp32 (4 bytes): chapter 06 measured them as the step's largest
//         allocation. On a 128k vocabulary they are gigabytes.
//   The answer is the largest of the pp stages' sums.
std::int64_t layout_bytes(const PlanLayout& l);

// (b) Tensor parallelism. Megatron's column -> row blocks (chapter 06), in attention and in the
//   MLP of every decoder layer, each ending in an all-reduce of the [tokens, h] activations of
//   the tokens this rank holds in forward, and each with its conjugate in backward. Under context
//   parallelism a rank holds mbs · s/cp of them: its TP group reduces those rows only. Each
//   all-reduce is a ring over the tp ranks (consecutive ranks) at the all-reduce bus bandwidth
//   of the nodes the group spans, times kBandwidthEfficiency (the shipped fit: tp_seconds takes
//   no StepFit, since the calibration series has tp = 1). Nothing hides it (each all-reduce's
//   result is the next op's input). 0 when tp = 1.
double tp_seconds(const PlanLayout& l, const Cluster& cluster);

// (c) Data parallelism: the gradients' collectives over the n = dp · cp ranks that hold the same
//   weights (CP ranks hold the same weights too), whose group is tp ranks apart. A rank owns the
//   gradients of N / (tp · pp) parameters, in bf16. What ZeRO changes (chapter 05):
//     ZeRO-0/1  one all-reduce of them per step (ZeRO-1's reduce-scatter + all-gather move the
//               same bytes; count it as the all-reduce);
//     ZeRO-2    a reduce-scatter of them after EVERY micro-batch (a rank keeps only its gradient
//               shard, so it cannot accumulate the others), and one all-gather of the updated
//               parameters per step;
//     ZeRO-3    per micro-batch: the reduce-scatter, and an all-gather of the parameters for the
//               forward and again for the backward (none kept between them).
//   Each collective at its own table's bus bandwidth (all_reduce, reduce_scatter, all_gather) and
//   fit.bandwidth_efficiency. Latency: a ring over n ranks is 2(n-1) steps for an all-reduce, n-1
//   for a gather or a scatter; each step waits fit.latency however few bytes it carries, and the
//   calls of one stream add up: the gradients go in gradient_buckets(bytes of the rank's
//   gradients) buckets, one call per bucket (ZeRO-0/1/2's collectives), except ZeRO-3's, which
//   are per layer: 3 calls per micro-batch and each of the rank's L/pp layers.
//   Overlap: the collectives start during a backward, and fit.overlap of that backward is spent
//   hiding them. The backward of one micro-batch is 2/3 of its compute (compute_seconds / gas:
//   compute_seconds is the step's compute term); ZeRO-0/1's one all-reduce can hide behind the
//   last micro-batch's backward only, ZeRO-2/3's per-micro-batch collectives behind every
//   micro-batch's. What is left, never below 0, is the answer. 0 when n = 1.
double dp_seconds(const PlanLayout& l, const Cluster& cluster, const StepFit& fit, double compute_seconds);

// (d) Pipeline point to point. Each micro-batch's activation [mbs · s/cp, h] crosses a stage
//   boundary forward and its gradient backward: a rank sends 2 · gas messages per step; and the
//   first micro-batch's forward and the last one's backward cross all pp-1 boundaries on the
//   critical path (the fill and the drain), 2 · (pp-1) more. Each message waits fit.latency and
//   moves its bytes at the all-gather bus bandwidth of the nodes two neighbouring stages span
//   (stages are the outermost mesh dimension: dp·tp·cp ranks apart) times
//   fit.bandwidth_efficiency. Not hidden. 0 when pp = 1.
double pp_p2p_seconds(const PlanLayout& l, const Cluster& cluster, const StepFit& fit);

}  // namespace usp::plan
