// Which part of a buffer each of N_d ranks owns under ZeRO.
//
// A buffer of n elements is padded with zeros to N_d·S elements, S = ceil(n / N_d), and rank r
// owns the shard [r·S, (r+1)·S). Of those S elements the first `owned` are real parameters,
// the rest (only ever on the last ranks) padding that nobody updates:
//
//   n = 10, N_d = 4:  S = 3   |r0: 0 1 2|r1: 3 4 5|r2: 6 7 8|r3: 9 - -|   owned 3, 3, 3, 1
//
// ZeRO-1 shards the model's one flat buffer this way. ZeRO-2 and ZeRO-3 shard each UNIT
// (embedding, each layer, head) on its own, because a unit's gradient is reduce-scattered, and
// a unit's parameters all-gathered, as one collective of N_d equal chunks the moment that unit
// is done or needed (the layout of PyTorch FSDP). Rank r then owns, in unit u whose parameters
// are [a_u, b_u) of the flat layout, the flat elements [a_u + r·S_u, a_u + r·S_u + owned_u).
#pragma once
#include <algorithm>
#include <cstdint>

namespace usp::ch05 {

struct Shard {
  std::int64_t size = 0;   // S, elements per rank
  std::int64_t begin = 0;  // r·S, into the padded buffer
  std::int64_t owned = 0;  // real elements at the start of the shard: clamp(n - r·S, 0, S)
  std::int64_t end() const { return begin + size; }
  std::int64_t owned_end() const { return begin + owned; }
};

inline Shard shard_of(std::int64_t n, int ranks, int rank) {
  Shard s;
  s.size = (n + ranks - 1) / ranks;
  s.begin = static_cast<std::int64_t>(rank) * s.size;
  s.owned = std::clamp<std::int64_t>(n - s.begin, 0, s.size);
  return s;
}

}  // namespace usp::ch05
