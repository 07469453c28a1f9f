// Exercise 04.2: the gradient-ready hook that launches a full bucket.
//
// The contract is in chapters/04_data_parallel/bucket_launch.hpp; the idea is in
// chapters/04_data_parallel/README.md ("Bucketing"). Replace the throw with your code.
// Check it with: ./usp test 04 --exercises, then run it with ./usp run 04 --exercises
#include "chapters/04_data_parallel/bucket_launch.hpp"

#include "common/error.hpp"

namespace usp::ch04 {

void on_grad_ready(BucketLaunchState& state, int param, Communicator& comm, Tensor& flat_grad) {
  (void)state;
  (void)param;
  (void)comm;
  (void)flat_grad;
  throw NotImplemented(
      "exercise 04.2: the gradient-ready hook (hint: every rank must launch the same collectives in the "
      "same order, and backward must not wait for them)");
}

}  // namespace usp::ch04
