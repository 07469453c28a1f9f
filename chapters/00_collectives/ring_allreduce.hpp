// Chapter 00's exercise: all-reduce by hand, from point-to-point messages, on a ring.
//
// The n ranks form a ring (rank r sends to r+1 and receives from r-1, modulo n). The tensor is
// cut into n chunks (ring_chunk below). Then:
//   1. reduce-scatter, n-1 steps: at step k rank r sends chunk (r - k) mod n to its right
//      neighbour and adds the chunk (r - k - 1) mod n it receives from its left neighbour into
//      its own copy. Afterwards rank r holds the full sum of chunk (r + 1) mod n.
//   2. all-gather, n-1 steps: at step k rank r sends chunk (r + 1 - k) mod n (complete) and
//      overwrites chunk (r - k) mod n with the complete one it receives.
// Each rank sends 2(n-1) chunks, i.e. 2(n-1)/n of the tensor: the bandwidth-optimal volume,
// independent of n.
#pragma once
#include <cstdint>
#include <utility>

#include "common/comm/communicator.hpp"

namespace usp::ch00 {

// Elements [first, second) of chunk i when numel elements are cut into n chunks whose sizes
// differ by at most one (the first numel % n chunks get one extra element).
inline std::pair<std::int64_t, std::int64_t> ring_chunk(std::int64_t numel, int n, int i) {
  const std::int64_t base = numel / n, extra = numel % n;
  const std::int64_t begin = i * base + (i < extra ? i : extra);
  return {begin, begin + base + (i < extra ? 1 : 0)};
}

// Exercise 00.1: sums t over every rank of comm, in place, using only comm.sendrecv (or
// send/recv) — no library collective. t is a contiguous f32 tensor on comm.device(); any numel,
// including numel < comm.size() (some chunks are then empty).
void ring_all_reduce(Communicator& comm, Tensor& t);

}  // namespace usp::ch00
