// Exercise 07.2, solution: the layout of a sequence over the context-parallel ranks, both ways
// (a rank's positions, a position's rank and row), and the blocks of the causal mask each rank
// computes at each ring step (the contract and the idea: chapters/07_context_parallel/cp_layout.hpp).
#include "chapters/07_context_parallel/cp_layout.hpp"

#include <string>

#include "common/error.hpp"

namespace usp::ch07 {

const char* sharding_name(CpSharding s) { return s == CpSharding::zigzag ? "zig-zag" : "contiguous"; }

int chunk_count(CpSharding s, int world) { return s == CpSharding::zigzag ? 2 * world : world; }

namespace {

void check_rank(int world, int rank) {
  if (world < 1) throw Error("cp layout: world " + std::to_string(world) + " must be at least 1");
  if (rank < 0 || rank >= world)
    throw Error("cp layout: rank " + std::to_string(rank) + " is not one of the " + std::to_string(world) + " ranks");
}

// The tokens of one chunk: seq / chunks, refused unless the chunks cut seq evenly.
std::int64_t chunk_length(CpSharding s, std::int64_t seq, int world) {
  if (seq < 1) throw Error("cp layout: seq " + std::to_string(seq) + " must be at least 1");
  const int chunks = chunk_count(s, world);
  if (seq % chunks != 0)
    throw Error("cp layout: seq " + std::to_string(seq) + " is not divisible by the " + std::to_string(chunks) +
                " chunks of the " + sharding_name(s) + " layout over " + std::to_string(world) + " ranks");
  return seq / chunks;
}

}  // namespace

std::vector<int> rank_chunks(CpSharding s, int world, int rank) {
  check_rank(world, rank);
  if (s == CpSharding::contiguous) return {rank};
  return {rank, 2 * world - 1 - rank};  // an early chunk and the matching late one
}

std::vector<std::int32_t> rank_positions(CpSharding s, std::int64_t seq, int world, int rank) {
  check_rank(world, rank);
  const std::int64_t len = chunk_length(s, seq, world);
  std::vector<std::int32_t> out;
  for (int c : rank_chunks(s, world, rank))
    for (std::int64_t i = 0; i < len; ++i) out.push_back(static_cast<std::int32_t>(c * len + i));
  return out;
}

TokenPlace token_place(CpSharding s, std::int64_t seq, int world, std::int64_t position) {
  if (world < 1) throw Error("cp layout: world " + std::to_string(world) + " must be at least 1");
  const std::int64_t len = chunk_length(s, seq, world);
  if (position < 0 || position >= seq)
    throw Error("cp layout: position " + std::to_string(position) + " is outside the sequence of " +
                std::to_string(seq) + " tokens");
  const auto chunk = static_cast<int>(position / len);
  const std::int64_t within = position % len;
  // Chunks 0..W-1 are each rank's first (or only) chunk; zig-zag's chunk c >= W is the second
  // chunk of rank 2W-1-c, stored after its first one.
  if (chunk < world) return {chunk, within};
  return {2 * world - 1 - chunk, len + within};
}

std::vector<Block> ring_step_blocks(CpSharding s, int world, int rank, int step) {
  check_rank(world, rank);
  if (step < 0 || step >= world)
    throw Error("cp layout: step " + std::to_string(step) + " is not one of the " + std::to_string(world) +
                " ring steps");
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
