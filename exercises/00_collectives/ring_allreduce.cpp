// Exercise 00.1: all-reduce on a ring, from point-to-point messages only.
//
// The contract (what the tests check) is in chapters/00_collectives/ring_allreduce.hpp; the idea
// is in chapters/00_collectives/README.md ("The ring all-reduce"). Replace the throw with your code.
// Check it with: ./usp test 00 --exercises, then measure it with ./usp run 00 --exercises
#include "chapters/00_collectives/ring_allreduce.hpp"

#include "common/error.hpp"

namespace usp::ch00 {

void ring_all_reduce(Communicator& comm, Tensor& t) {
  (void)comm;
  (void)t;
  throw NotImplemented(
      "exercise 00.1: ring all-reduce (hint: after n-1 steps of passing and adding chunks, each rank "
      "holds one chunk's full sum; n-1 more steps spread the finished chunks)");
}

}  // namespace usp::ch00
