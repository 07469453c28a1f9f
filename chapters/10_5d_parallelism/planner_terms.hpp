// Exercise 10.1: two terms of the cluster planner — what decides whether a layout is possible at
// all, and what one dimension's communication costs. The planner (planner.cpp) keeps a layout
// only when layout_bytes fits the GPU, and the step model (step_model.cpp) adds tp_seconds to the
// step; usp_plan and the campaign run on your versions.
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
//   The answer is the largest of the pp stages' sums. Stage 0 keeps the most micro-batches in
//   flight under 1F1B, the last one the logits: which one wins depends on the layout.
std::int64_t layout_bytes(const PlanLayout& l);

// (b) TP's communication time per optimizer step, in seconds, on one rank. Megatron's blocks do,
//   per decoder layer and micro-batch, 2 all-reduces of the [mbs·s, h] activations in forward
//   (after attention and after the MLP) and 2 in backward (their conjugates): 4 per layer, each of
//   mbs·s·h elements of kBytes bytes. A ring all-reduce of S bytes over t ranks moves
//   S·2(t-1)/t bytes through each rank's link; it runs at the bus bandwidth of the level the TP
//   group spans (cluster.bus(cluster.all_reduce, nodes), with nodes = nodes_spanned(t, 1,
//   gpus_per_node): consecutive ranks), times kBandwidthEfficiency. A rank runs L/pp layers and
//   gas micro-batches per step. Nothing hides it (each all-reduce's result is the next op's
//   input). 0 when tp = 1.
double tp_seconds(const PlanLayout& l, const Cluster& cluster);

}  // namespace usp::plan
