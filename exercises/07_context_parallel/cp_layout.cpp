// Exercise 07.2: the layout of a sequence over the context-parallel ranks, both ways (a rank's
// positions, a position's rank and row), and the blocks of the causal mask each rank computes at
// each step of the ring.
//
// The contract is in chapters/07_context_parallel/cp_layout.hpp; the idea is in
// chapters/07_context_parallel/README.md ("Zig-zag"). Replace the throws with your code.
// Check it with: ./usp test 07 --exercises, then run it with ./usp run 07 --exercises
#include "chapters/07_context_parallel/cp_layout.hpp"

#include "common/error.hpp"

namespace usp::ch07 {

const char* sharding_name(CpSharding s) { return s == CpSharding::zigzag ? "zig-zag" : "contiguous"; }

int chunk_count(CpSharding s, int world) { return s == CpSharding::zigzag ? 2 * world : world; }

std::vector<int> rank_chunks(CpSharding s, int world, int rank) {
  (void)s, (void)world, (void)rank;
  throw NotImplemented("exercise 07.2: rank_chunks (hint: pair an early chunk with a late one)");
}

std::vector<std::int32_t> rank_positions(CpSharding s, std::int64_t seq, int world, int rank) {
  (void)s, (void)seq, (void)world, (void)rank;
  throw NotImplemented("exercise 07.2: rank_positions (hint: every chunk is seq / chunk_count tokens)");
}

TokenPlace token_place(CpSharding s, std::int64_t seq, int world, std::int64_t position) {
  (void)s, (void)seq, (void)world, (void)position;
  throw NotImplemented("exercise 07.2: token_place (hint: which chunk is the position in, and who holds it?)");
}

std::vector<Block> ring_step_blocks(CpSharding s, int world, int rank, int step) {
  (void)s, (void)world, (void)rank, (void)step;
  throw NotImplemented(
      "exercise 07.2: ring_step_blocks (hint: whose K/V does the rank hold at this step, and which of its "
      "chunks are not after which of yours?)");
}

}  // namespace usp::ch07
