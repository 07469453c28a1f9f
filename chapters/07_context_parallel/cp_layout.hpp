// Exercise 07.2: which tokens of each sequence a context-parallel rank holds, and which blocks of
// the causal mask it computes at each step of the ring. Implemented in
// solutions/07_context_parallel/cp_layout.cpp; stubs in exercises/07_context_parallel/.
//
// A sequence of T tokens over W ranks:
//   contiguous  rank r holds tokens [r·T/W, (r+1)·T/W): one chunk of T/W.
//   zig-zag     the sequence is cut into 2W chunks of T/(2W); rank r holds chunk r and chunk
//               2W-1-r, in that order (so rank 0 holds the first and the last chunk).
// Under the causal mask a query sees only earlier keys, so with contiguous chunks rank 0's queries
// see only its own keys while rank W-1's see everyone's: the last rank does W blocks of work, the
// first one. Zig-zag pairs an early chunk with a late one, so every rank does the same work.
//
// The ring (ring_attention.hpp): at step i = 0..W-1 rank r holds the K/V of rank (r - i) mod W
// (its own at step 0; then each step every rank passes what it holds to rank r+1). A "block" is a
// pair (query chunk, key chunk) of the layout's chunks (W chunks contiguous, 2W zig-zag): it is
//   full     every key of the chunk is before every query of the chunk (no mask needed),
//   diagonal the same chunk: the causal triangle,
//   or skipped (every key after every query), and then not listed.
#pragma once
#include <cstdint>
#include <vector>

namespace usp::ch07 {

enum class CpSharding : unsigned char { contiguous, zigzag };
const char* sharding_name(CpSharding s);  // "contiguous", "zig-zag"

// Chunks a sequence is cut into: W (contiguous) or 2W (zig-zag); each T / chunks tokens.
int chunk_count(CpSharding s, int world);
// The chunks rank r holds, in the order its tokens are stored: {r} or {r, 2W-1-r}.
std::vector<int> rank_chunks(CpSharding s, int world, int rank);
// The positions in the whole sequence of rank r's tokens, in its storage order: T / W of them.
// These are what RoPE rotates each token by and what the causal mask compares.
std::vector<std::int32_t> rank_positions(CpSharding s, std::int64_t seq, int world, int rank);

// The other direction: the token at `position` of the whole sequence is row `index` of rank
// `rank`'s tokens (0 <= index < T / W): rank_positions(s, seq, world, rank)[index] == position.
struct TokenPlace {
  int rank = 0;
  std::int64_t index = 0;
  bool operator==(const TokenPlace&) const = default;
};
TokenPlace token_place(CpSharding s, std::int64_t seq, int world, std::int64_t position);

// Errors of rank_chunks, rank_positions, token_place and ring_step_blocks (usp::Error, the
// message exactly this), checked in this order, each for the arguments the function takes:
//   "cp layout: world <W> must be at least 1"
//   "cp layout: rank <r> is not one of the <W> ranks"
//   "cp layout: step <i> is not one of the <W> ring steps"
//   "cp layout: seq <T> must be at least 1"
//   "cp layout: seq <T> is not divisible by the <n> chunks of the <name> layout over <W> ranks"
//        (n = chunk_count(s, W), name = sharding_name(s))
//   "cp layout: position <p> is outside the sequence of <T> tokens"

struct Block {
  int q_chunk = 0;         // a chunk of the rank's queries (a layout chunk index)
  int k_chunk = 0;         // a chunk of the K/V it holds at this step
  bool diagonal = false;   // q_chunk == k_chunk: the causal triangle; otherwise a full block
  bool operator==(const Block&) const = default;
};
// The blocks rank r computes at ring step i (0 <= i < W), ordered by (q_chunk's place in the
// rank's storage, then k_chunk's place in the sender's storage); none skipped is listed.
std::vector<Block> ring_step_blocks(CpSharding s, int world, int rank, int step);

}  // namespace usp::ch07
