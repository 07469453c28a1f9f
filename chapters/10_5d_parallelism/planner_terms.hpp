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

// (b) TP's communication time per optimizer step, in seconds, on one rank. What it models:
//   Megatron's column -> row blocks (chapter 06), in attention and in the MLP of every decoder
//   layer, each ending in an all-reduce of the [tokens, h] activations of the tokens this rank
//   holds in forward, and each with its conjugate in backward. Under context parallelism a rank
//   holds mbs · s/cp of them (its CP group's share of the sequence): its TP group reduces those
//   rows only. An element is kBytes bytes. Each all-reduce is a ring over the tp ranks (chapter
//   00: what does a ring move through each rank's link?) at the bus bandwidth of the level the
//   TP group spans, cluster.bus(cluster.all_reduce, nodes_spanned(tp, 1, gpus_per_node))
//   (consecutive ranks), times kBandwidthEfficiency. Count what one rank does in one step: its
//   L/pp layers, gas micro-batches. Nothing hides it (each all-reduce's result is the next op's
//   input). 0 when tp = 1.
double tp_seconds(const PlanLayout& l, const Cluster& cluster);

}  // namespace usp::plan
