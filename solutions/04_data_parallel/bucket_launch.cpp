// Solution 04.2: the gradient-ready hook that launches a full bucket.
#include "chapters/04_data_parallel/bucket_launch.hpp"

#include "common/error.hpp"

namespace usp::ch04 {

void on_grad_ready(BucketLaunchState& state, int param, Communicator& comm, Tensor& flat_grad) {
  const std::vector<Bucket>& buckets = state.plan->buckets;
  const int b = state.bucket_of_param.at(static_cast<std::size_t>(param));
  USP_CHECK(state.waiting[static_cast<std::size_t>(b)] > 0, "on_grad_ready: a parameter reported ready twice");
  state.waiting[static_cast<std::size_t>(b)] -= 1;
  // Launch, in plan order, every bucket that is now complete.
  while (state.next_bucket < buckets.size() && state.waiting[state.next_bucket] == 0) {
    const Bucket& bucket = buckets[state.next_bucket];
    Tensor view = flat_grad.view(bucket.begin, {bucket.end - bucket.begin});  // no copy: the bucket IS the buffer
    state.launched.push_back(comm.all_reduce_async(view, ReduceOp::avg));
    state.next_bucket += 1;
  }
}

}  // namespace usp::ch04
