// Exercise 04.2: the gradient-ready hook that launches a full bucket.
//
// Read chapters/04_data_parallel/README.md ("Bucketing") and bucket_launch.hpp first. Then
// replace the throw:
//   1. find param's bucket (state.bucket_of_param) and count it off state.waiting;
//   2. while state.next_bucket is a bucket of the plan whose waiting count is 0:
//        Tensor view = flat_grad.view(bucket.begin, {bucket.end - bucket.begin});
//        state.launched.push_back(comm.all_reduce_async(view, ReduceOp::avg));
//        ++state.next_bucket;
// Do not wait on the handles here: the point is that backward keeps computing meanwhile.
// Check your work with: ./usp test 04 --exercises
#include "chapters/04_data_parallel/bucket_launch.hpp"

#include "common/error.hpp"

namespace usp::ch04 {

void on_grad_ready(BucketLaunchState& state, int param, Communicator& comm, Tensor& flat_grad) {
  (void)state;
  (void)param;
  (void)comm;
  (void)flat_grad;
  throw NotImplemented(
      "exercise 04.2: the gradient-ready hook — mark the parameter ready, launch every complete "
      "bucket in plan order with all_reduce_async(view, ReduceOp::avg)");
}

}  // namespace usp::ch04
