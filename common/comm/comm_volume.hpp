// How many bytes one rank sends for one collective under the bandwidth-optimal algorithm
// (the same accounting as nccl-tests' "bus bandwidth"). `bytes` is the op's payload:
//   broadcast, reduce, all_reduce        the tensor
//   gather, all_gather                   the gathered output (size() chunks)
//   scatter, reduce_scatter, all_to_all  the full input (size() chunks)
// and the bytes this rank sends are
//   all_reduce      2(n-1)/n · bytes   ring: reduce-scatter, then all-gather
//   all_gather      (n-1)/n · bytes    ring: forward n-1 chunks
//   reduce_scatter  (n-1)/n · bytes    ring: forward n-1 partial chunks
//   all_to_all      (n-1)/n · bytes    one chunk to each other rank
//   broadcast       bytes, except the rank just before the root on the ring: 0 (pipelined chain)
//   reduce          bytes, except the root: 0 (pipelined chain towards the root)
//   gather          bytes/n, except the root: 0
//   scatter         (n-1)/n · bytes on the root, 0 elsewhere
//   barrier         0
// Products are exact integers: n divides the payload of the chunked ops; for all_reduce of a
// size n does not divide, the ring's chunks differ by one element and the figure is rounded down.
#pragma once
#include <cstdint>

#include "common/comm/communicator.hpp"

namespace usp {

struct CommVolume {
  std::uint64_t payload_bytes = 0;
  std::uint64_t bytes_sent = 0;
};

CommVolume comm_volume(CommOp op, std::uint64_t bytes, int n, int rank, int root = 0);

// nccl-tests' bus-bandwidth factor: busbw = algbw · factor.
double busbw_factor(CommOp op, int n);

}  // namespace usp
