// Exercise 00.1: all-reduce on a ring, from point-to-point messages only.
//
// Read chapters/00_collectives/ring_allreduce.hpp (the steps) and README.md ("The ring
// all-reduce") first. Then replace the throw below with the two phases:
//   1. reduce-scatter: n-1 steps of comm.sendrecv(chunk to the right, buffer from the left),
//      adding what arrives into your own copy of that chunk;
//   2. all-gather: n-1 steps passing the finished chunks on, receiving straight into place.
// Useful pieces: ring_chunk(numel, n, i) for chunk i's element range, t.view(begin, {count})
// for a chunk without copying, and one receive buffer allocated once with
// Tensor::empty({count}, DType::f32, MemCategory::CommBuffer) before the loop.
// Check your work with: ./usp test 00 --exercises
#include "chapters/00_collectives/ring_allreduce.hpp"

#include "common/error.hpp"

namespace usp::ch00 {

void ring_all_reduce(Communicator& comm, Tensor& t) {
  (void)comm;
  (void)t;
  throw NotImplemented(
      "exercise 00.1: ring all-reduce — reduce-scatter (send chunk r-k right, add chunk r-k-1 "
      "from the left) then all-gather, n-1 sendrecv steps each");
}

}  // namespace usp::ch00
