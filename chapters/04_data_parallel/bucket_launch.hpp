// Exercise 04.2: the bucket launches of one synchronising backward pass — from the first final
// gradient to the moment every bucket has been averaged.
//
// During the backward pass whose gradients are final (the last micro-batch of a step), the
// model calls grad_ready(i) the moment parameter i's gradient is complete (ModelHooks, in
// reverse parameter order for this model, but the hook may not count on any order). A bucket of
// the plan (bucket_plan.hpp) may be all-reduced once every one of its gradients is final; it
// goes as one averaging all-reduce on its view of the flat gradient buffer, launched
// asynchronously so that backward keeps computing the earlier layers meanwhile. After backward,
// the step waits for them all. How to get there is the exercise (the chapter's README, section 3,
// asks the questions).
#pragma once
#include <cstddef>
#include <vector>

#include "chapters/04_data_parallel/bucket_plan.hpp"
#include "common/comm/communicator.hpp"

namespace usp::ch04 {

// What the hook knows during one synchronising backward pass. The tests read `launched` and
// `next_bucket`; the other fields are yours to fill and use as you see fit.
struct BucketLaunchState {
  const BucketPlan* plan = nullptr;
  std::vector<int> bucket_of_param;   // parameter index -> its bucket in *plan
  std::vector<int> waiting;           // per bucket: how many of its parameters are not ready yet
  std::vector<char> ready;            // per parameter: its gradient was reported final
  std::size_t next_bucket = 0;        // the first bucket not launched yet
  std::vector<WorkHandle> launched;   // one per launched bucket, in launch order
};

// A fresh state for one backward over `plan` (which must outlive it), for a model of num_params
// parameters: nothing ready, nothing launched (launched empty, next_bucket 0).
// Errors (usp::Error, the message starting with exactly this), for a plan that does not hold
// every parameter exactly once:
//   "bucket plan: parameter <p> is outside the model's <num_params> parameters"
//   "bucket plan: parameter <p> is in buckets <a> and <b>"          (a < b, the first two)
//   "bucket plan: parameter <p> is in no bucket"                     (the smallest such p)
BucketLaunchState start_bucket_launches(const BucketPlan& plan, std::size_t num_params);

// Parameter `param`'s gradient is final. flat_grad is ParamStore::flat_grad(): the buffer the
// plan's [begin, end) ranges index.
// After the call the launched buckets are exactly the longest prefix 0, 1, ..., next_bucket - 1 of
// the plan whose gradients are all final: launch order is plan order, the same on every rank
// (collectives must match across ranks), so a bucket complete before an earlier one waits for it.
// Each launched bucket has exactly one averaging all-reduce (ReduceOp::avg: the sum over the N_d
// ranks divided by N_d) over exactly its range [begin, end) of flat_grad, in place (no copy),
// asynchronous: nothing is waited on here. state.launched holds the handles in plan order.
// Errors (usp::Error, the message starting with exactly this; nothing launched by this call):
//   "on_grad_ready: parameter <p> is not one of the model's <n> parameters"
//   "on_grad_ready: parameter <p> reported ready twice"
//   "on_grad_ready: flat_grad has <n> elements, bucket <b> ends at <end>"   (checked when the
//                                                                            bucket is launched)
void on_grad_ready(BucketLaunchState& state, int param, Communicator& comm, Tensor& flat_grad);

// After backward: waits for every launched all-reduce, in launch order; then flat_grad holds the
// average over the ranks, and the state is spent (launched empty). If some bucket was never
// launched (a gradient never reported: a parameter the loss did not use), it first waits for the
// launched ones (nothing is left in flight), then throws usp::Error starting with
//   "bucketing: <k> of <n> buckets launched by the end of backward; bucket <b> waits for
//    parameters <p>, <q>, ..."
// (on one line: b = next_bucket, its parameters not reported ready, in the plan's order).
void finish_bucket_launches(BucketLaunchState& state);

}  // namespace usp::ch04
