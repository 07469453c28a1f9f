// Exercise 04.2: the bucket launches of one synchronising backward pass. The contract is in
// chapters/04_data_parallel/bucket_launch.hpp; the lesson (chapters/04_data_parallel/README.md,
// section 3) gives the idea and the questions.
// Check it with: ./usp test 04.2 --exercises, then run it with ./usp run 04 --exercises
#include "chapters/04_data_parallel/bucket_launch.hpp"

#include "common/error.hpp"

namespace usp::ch04 {

BucketLaunchState start_bucket_launches(const BucketPlan& /*plan*/, std::size_t /*num_params*/) {
  throw NotImplemented("exercise 04.2: start_bucket_launches (the state of one backward's bucket launches)");
}

void on_grad_ready(BucketLaunchState& /*state*/, int /*param*/, Communicator& /*comm*/, Tensor& /*flat_grad*/) {
  throw NotImplemented("exercise 04.2: on_grad_ready (the gradient-ready hook)");
}

void finish_bucket_launches(BucketLaunchState& /*state*/) {
  throw NotImplemented("exercise 04.2: finish_bucket_launches (the wait at the end of backward)");
}

}  // namespace usp::ch04
