// Exercise 07.2, solution: the layout of a sequence over the context-parallel ranks, and the
// blocks of the causal mask each rank computes at each ring step (the contract and the idea:
// chapters/07_context_parallel/cp_layout.hpp).
#include "chapters/07_context_parallel/cp_layout.hpp"

#include <string>

#include "common/error.hpp"

namespace usp::ch07 {

const char* sharding_name(CpSharding s) { return s == CpSharding::zigzag ? "zig-zag" : "contiguous"; }

int chunk_count(CpSharding s, int world) { return s == CpSharding::zigzag ? 2 * world : world; }

std::vector<int> rank_chunks(CpSharding s, int world, int rank) {
  if (s == CpSharding::contiguous) return {rank};
  return {rank, 2 * world - 1 - rank};  // an early chunk and the matching late one
}

std::vector<std::int32_t> rank_positions(CpSharding s, std::int64_t seq, int world, int rank) {
  const int chunks = chunk_count(s, world);
  USP_CHECK(seq % chunks == 0, "rank_positions: seq " + std::to_string(seq) + " is not a multiple of the " +
                                   std::to_string(chunks) + " chunks");
  const std::int64_t len = seq / chunks;
  std::vector<std::int32_t> out;
  for (int c : rank_chunks(s, world, rank))
    for (std::int64_t i = 0; i < len; ++i) out.push_back(static_cast<std::int32_t>(c * len + i));
  return out;
}

std::vector<Block> ring_step_blocks(CpSharding s, int world, int rank, int step) {
  // At step i the rank holds the K/V of rank (r - i) mod W. A query chunk sees a key chunk when
  // the key chunk is not after it: earlier chunks entirely (full), its own chunk causally.
  const int sender = ((rank - step) % world + world) % world;
  std::vector<Block> out;
  for (int qc : rank_chunks(s, world, rank))
    for (int kc : rank_chunks(s, world, sender))
      if (kc <= qc) out.push_back({qc, kc, kc == qc});
  return out;
}

}  // namespace usp::ch07
