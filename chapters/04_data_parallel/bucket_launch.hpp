// Exercise 04.2: the "gradient ready" hook that launches a full bucket.
//
// During the backward pass whose gradients are final (the last micro-batch of a step), the
// model calls grad_ready(i) the moment parameter i's gradient is complete (ModelHooks, in
// reverse parameter order). The hook marks the parameter ready; once every parameter of a
// bucket is ready, that bucket's all-reduce is launched asynchronously, on the bucket's view
// of the flat gradient buffer, while backward goes on computing the earlier layers. Buckets
// are launched in plan order, on every rank the same (collectives must match across ranks): a
// bucket that fills before an earlier one waits for it.
//
// The all-reduce averages (ReduceOp::avg: the sum over the N_d ranks divided by N_d), so that
// after the last one completes every rank holds the gradient of the mean loss over the global
// batch.
#pragma once
#include <cstddef>
#include <vector>

#include "chapters/04_data_parallel/bucket_plan.hpp"
#include "common/comm/communicator.hpp"

namespace usp::ch04 {

// What the hook knows during one synchronising backward pass.
struct BucketLaunchState {
  const BucketPlan* plan = nullptr;
  std::vector<int> bucket_of_param;   // parameter index -> its bucket in *plan
  std::vector<int> waiting;           // per bucket: how many of its parameters are not ready yet
  std::size_t next_bucket = 0;        // the first bucket not launched yet (launch order = plan order)
  std::vector<WorkHandle> launched;   // one per launched bucket, in launch order
};

// A fresh state for one backward over plan, for a model of num_params parameters: every
// parameter waiting, nothing launched. (Given, not part of the exercise.)
BucketLaunchState start_bucket_launches(const BucketPlan& plan, std::size_t num_params);

// Exercise 04.2: parameter `param`'s gradient is final.
//   before  state as start_bucket_launches made it, updated by the earlier calls of this pass
//   after   param no longer counts as waiting; every bucket from state.next_bucket on whose
//           parameters are all ready, up to the first one that is not, has exactly one
//           averaging all-reduce (ReduceOp::avg) in flight over its range [begin, end) of
//           flat_grad, asynchronously: nothing is waited on here; the handles are in
//           state.launched in plan order, and state.next_bucket is the first bucket not launched
// flat_grad is ParamStore::flat_grad(): the buffer the plan's [begin, end) ranges index.
void on_grad_ready(BucketLaunchState& state, int param, Communicator& comm, Tensor& flat_grad);

}  // namespace usp::ch04
