// Chapter 00's exercise: all-reduce by hand, from point-to-point messages, on a ring.
//
// The n ranks form a ring: rank r talks only to r+1 (right) and r-1 (left), modulo n. The
// tensor is cut into n chunks by ring_chunk below. The bandwidth-optimal ring sends each rank
// 2(n-1) chunks, i.e. 2(n-1)/n of the tensor whatever n is: half of them while the partial sums
// travel round the ring (a reduce-scatter), half while the finished chunks do (an all-gather).
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

// Exercise 00.1: sums t over every rank of comm, in place.
//   t      a contiguous f32 tensor on comm.device(), the same numel on every rank (any numel,
//          numel < comm.size() included: some chunks are then empty)
//   after  every rank's t holds the element-wise sum of all ranks' inputs (in the order the
//          ring adds them: bit-identical to the library's all-reduce when the sums are exact)
//   how    point-to-point messages only (comm.sendrecv, or send/recv), no library collective:
//          2(n-1) messages per rank, each one chunk of the ring_chunk layout sent to the right
//          neighbour, in the reduce-scatter every chunk but (r+1) mod n, in the all-gather every
//          chunk but (r+2) mod n; one receive buffer, not one per step.
void ring_all_reduce(Communicator& comm, Tensor& t);

}  // namespace usp::ch00
