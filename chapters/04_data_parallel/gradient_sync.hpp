// Gradient synchronisation for data parallelism: the three variants of the playbook.
//
// Every rank holds the full model and computes gradients on its own share of the global batch;
// before the optimizer step the gradients are averaged over the N_d ranks (all-reduce, then
// divide by N_d: ReduceOp::avg), so every rank applies the same update and the replicas stay
// identical. The variants differ only in WHEN the all-reduces run:
//
//   naive      after the whole backward pass: one blocking all-reduce per parameter, issued
//              in the order backward produced the gradients (last parameter first). Nothing
//              overlaps; the step waits for all of it.
//   overlap    from the grad_ready hook: each parameter's all-reduce is launched (async) the
//              moment its gradient is final, while backward computes the earlier layers; the
//              step waits for them all before the optimizer. Same ops as naive, in the same
//              order, only earlier.
//   bucketing  the same, per bucket of parameters (bucket_plan.hpp, exercises 04.1 and 04.2):
//              fewer, larger all-reduces, each on a contiguous view of the flat gradient buffer.
//
// With gradient accumulation (k micro-batches per step) only the LAST micro-batch's backward
// synchronises: the earlier ones just accumulate locally (begin_backward(false)), as
// DDP's no_sync(). Communication per step is therefore the same whatever k is.
//
// What is synchronised is a GradientBuffer: one contiguous gradient buffer and the parameters
// laid out in it. Here that is the whole model's flat gradient (ParamStore::flat_grad()); chapter
// 10 runs one GradientSync per contiguous run of a pipeline stage's per-unit buffers.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "chapters/04_data_parallel/bucket_launch.hpp"
#include "chapters/04_data_parallel/bucket_plan.hpp"
#include "common/comm/communicator.hpp"
#include "common/model/model.hpp"

namespace usp::ch04 {

enum class DpMode { naive, overlap, bucketing };
const char* dp_mode_name(DpMode mode);                // "naive", "overlap", "bucketing"
DpMode parse_dp_mode(const std::string& name);        // UsageError otherwise
const std::vector<DpMode>& all_dp_modes();            // naive, overlap, bucketing

// The bucket cap the trainers use unless told otherwise (--bucket-mb 1; PyTorch DDP's default,
// 25 MiB, is sized for models far larger than this course's).
constexpr std::int64_t kDefaultBucketCapBytes = std::int64_t{1} << 20;

// A contiguous gradient buffer and its parameters: infos[i] is parameter i of the buffer, at
// [offset, offset + numel) of `grad`, back to back in order (what bucket_plan() takes).
struct GradientBuffer {
  Tensor grad;                   // [n] (any layout; only its elements matter)
  std::vector<ParamInfo> infos;  // offsets into grad
};
GradientBuffer whole_model(ParamStore& params);  // params.flat_grad() and params.infos()

class GradientSync {
 public:
  // plan: the buckets of the bucketing mode over buffer.infos (ignored by the other two); buffer:
  // where the model accumulates the gradients, and the parameters the hook's indices name.
  // comm: the data-parallel group.
  GradientSync(DpMode mode, Communicator& comm, GradientBuffer buffer, BucketPlan plan);
  GradientSync(const GradientSync&) = delete;  // the model's hook points at this object
  GradientSync& operator=(const GradientSync&) = delete;

  DpMode mode() const { return mode_; }
  const BucketPlan& plan() const { return plan_; }
  // Sets hooks.grad_ready (other hooks are kept): the model then reports each final gradient
  // (parameter i of the buffer).
  void attach(ModelHooks& hooks);

  // Before each micro-batch's backward: whether its gradients are the step's final ones (the
  // last micro-batch), which are the only ones synchronised.
  void begin_backward(bool final_micro_batch);
  // After the final backward: runs the naive all-reduces, or waits for the launched ones.
  // Afterwards the gradient buffer holds the average over the ranks.
  void finish();

  // All-reduces one step issues: one per parameter (naive, overlap) or per bucket.
  std::int64_t collectives_per_step() const;

 private:
  void grad_ready(int param);
  Tensor grad(int param) const;  // parameter param's elements of the buffer

  DpMode mode_;
  Communicator& comm_;
  GradientBuffer buffer_;
  BucketPlan plan_;
  bool syncing_ = false;
  std::vector<WorkHandle> pending_;   // overlap: one per launched parameter
  BucketLaunchState buckets_;         // bucketing
};

}  // namespace usp::ch04
