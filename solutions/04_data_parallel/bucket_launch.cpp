// Exercise 04.2, the reference solution: the bucket launches of one synchronising backward pass.
#include "chapters/04_data_parallel/bucket_launch.hpp"

#include <string>

#include "common/error.hpp"

namespace usp::ch04 {

BucketLaunchState start_bucket_launches(const BucketPlan& plan, std::size_t num_params) {
  BucketLaunchState s;
  s.plan = &plan;
  s.bucket_of_param.assign(num_params, -1);
  s.ready.assign(num_params, 0);
  s.waiting.assign(plan.buckets.size(), 0);
  for (std::size_t b = 0; b < plan.buckets.size(); ++b) {
    for (const int p : plan.buckets[b].params) {
      if (p < 0 || static_cast<std::size_t>(p) >= num_params)
        throw Error("bucket plan: parameter " + std::to_string(p) + " is outside the model's " +
                    std::to_string(num_params) + " parameters");
      int& owner = s.bucket_of_param[static_cast<std::size_t>(p)];
      if (owner >= 0)
        throw Error("bucket plan: parameter " + std::to_string(p) + " is in buckets " + std::to_string(owner) +
                    " and " + std::to_string(b));
      owner = static_cast<int>(b);
      s.waiting[b] += 1;
    }
  }
  for (std::size_t p = 0; p < num_params; ++p)
    if (s.bucket_of_param[p] < 0) throw Error("bucket plan: parameter " + std::to_string(p) + " is in no bucket");
  return s;
}

void on_grad_ready(BucketLaunchState& state, int param, Communicator& comm, Tensor& flat_grad) {
  const std::size_t n = state.ready.size();
  if (param < 0 || static_cast<std::size_t>(param) >= n)
    throw Error("on_grad_ready: parameter " + std::to_string(param) + " is not one of the model's " +
                std::to_string(n) + " parameters");
  const auto p = static_cast<std::size_t>(param);
  if (state.ready[p]) throw Error("on_grad_ready: parameter " + std::to_string(param) + " reported ready twice");
  state.ready[p] = 1;
  state.waiting[static_cast<std::size_t>(state.bucket_of_param[p])] -= 1;
  // This gradient may complete its own bucket and release later ones that were complete already:
  // the buckets to launch now are next_bucket .. stop - 1, in plan order. All are checked first.
  const std::vector<Bucket>& buckets = state.plan->buckets;
  std::size_t stop = state.next_bucket;
  while (stop < buckets.size() && state.waiting[stop] == 0) {
    if (buckets[stop].end > flat_grad.numel())
      throw Error("on_grad_ready: flat_grad has " + std::to_string(flat_grad.numel()) + " elements, bucket " +
                  std::to_string(stop) + " ends at " + std::to_string(buckets[stop].end));
    ++stop;
  }
  for (; state.next_bucket < stop; ++state.next_bucket) {
    const Bucket& bucket = buckets[state.next_bucket];
    Tensor view = flat_grad.view(bucket.begin, {bucket.end - bucket.begin});  // no copy: the bucket IS the buffer
    state.launched.push_back(comm.all_reduce_async(view, ReduceOp::avg));
  }
}

void finish_bucket_launches(BucketLaunchState& state) {
  std::vector<WorkHandle> launched = std::move(state.launched);
  state.launched.clear();
  for (auto& w : launched) w->wait();  // in launch order; before any error: nothing left in flight
  const std::size_t total = state.plan ? state.plan->buckets.size() : 0;
  if (state.next_bucket == total) return;
  std::string missing;
  for (const int p : state.plan->buckets[state.next_bucket].params)
    if (!state.ready[static_cast<std::size_t>(p)]) missing += (missing.empty() ? "" : ", ") + std::to_string(p);
  throw Error("bucketing: " + std::to_string(launched.size()) + " of " + std::to_string(total) +
              " buckets launched by the end of backward; bucket " + std::to_string(state.next_bucket) +
              " waits for parameters " + missing);
}

}  // namespace usp::ch04
