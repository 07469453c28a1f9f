// What the course's counts say one rank of a CP layout sends and holds, for the chapter to print
// next to what the communicators and the tracker measured:
//   count_comm      the bytes one rank sends per optimizer step, by collective, on the
//                   context-parallel group (the attention's traffic, from what each variant's
//                   forward and backward do) and on the dp·cp group (the gradient all-reduce);
//   attention_kv_bytes  the K/V bytes the attention holds while it computes, beyond the rank's
//                   own k and v: the all-gather the other W-1 ranks' blocks, the ring the blocks
//                   it holds for the current step and receives for the next.
// Shapes per micro-batch: B = mbs sequences, T = seq / cp tokens of each per rank, H query heads
// and G kv heads of D, e the activations' bytes; kv = B·T·G·D·e, one rank's k (or v).
#pragma once
#include <array>
#include <cstdint>

#include "chapters/07_context_parallel/cp_trainer.hpp"
#include "common/comm/communicator.hpp"
#include "common/train/training_flags.hpp"

namespace usp::ch07 {

// Bytes sent and calls per optimizer step, indexed by CommOp, for a replica that runs
// `micro_batches` micro-batches per step; cp_rank and dp_cp_rank: this rank's place in its groups.
struct CommCount {
  std::array<std::uint64_t, kNumCommOps> cp_bytes{}, cp_calls{}, dp_cp_bytes{}, dp_cp_calls{};
};
CommCount count_comm(const TrainingConfig& cfg, const CpLayout& layout, std::int64_t micro_batches, int cp_rank,
                     int dp_cp_rank);

std::int64_t attention_kv_bytes(const TrainingConfig& cfg, const CpLayout& layout);

}  // namespace usp::ch07
