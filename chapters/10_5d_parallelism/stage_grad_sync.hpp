// StageGradSync: chapter 04's bucketed, overlapped gradient sync (GradientSync, exercises 04.1 and
// 04.2) over the units one pipeline rank holds, for every chunk model of the rank.
//
// What it synchronises: every held gradient, made the global batch's. The dense ones are averaged
// over the dp·cp replicas by chapter 04's code. The units keep their gradients in per-unit buffers
// (StageParams), so a bucket cannot span two units: each unit's buffer — or, with expert
// parallelism, each run of dense parameters between its experts — is one GradientBuffer with its
// own bucket plan and GradientSync. Experts held apart (ep > 1) live on some replicas only: after
// the buckets, each run of them is summed over the expert data-parallel group and divided by
// dp·cp (chapter 09's rule; not a chapter 04 average).
//
// When a gradient is final: a chunk's model runs m backward passes per step (one per
// micro-batch, in any interleaving with the other chunks), each reporting every parameter of the
// chunk through ModelHooks::grad_ready; the m-th report of a parameter is its final one, and goes
// to its GradientSync, which launches each bucket as soon as all of it is final (plan order), while
// the pipeline keeps computing. Under a zero-bubble schedule's split backward the linear weights'
// reports come from W, which computes their gradients (the norms' and the embedding's from B), so
// the buckets launch there, overlapping the ops that follow.
#pragma once
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "chapters/04_data_parallel/gradient_sync.hpp"
#include "chapters/08_pipeline_parallel/stage_params.hpp"

namespace usp::ch10 {

class StageGradSync {
 public:
  // params: the rank's units (their gradient buffers materialized). replicas: the dp·cp group.
  // expert_replicas: the expert data-parallel group (ep > 1; null: the experts are everywhere and
  // average like the rest). Not owned. passes: backward passes of each chunk per step (m).
  StageGradSync(ch08::StageParams& params, Communicator& replicas, Communicator* expert_replicas, int passes,
                std::int64_t cap_bytes = ch04::kDefaultBucketCapBytes);
  ~StageGradSync();
  StageGradSync(const StageGradSync&) = delete;  // the models' hooks point at this object
  StageGradSync& operator=(const StageGradSync&) = delete;

  // Sets a chunk model's hooks.grad_ready (other hooks are kept).
  void attach(ModelHooks& hooks);
  // Before the step's first backward: no report counted yet, every buffer waiting for its final one.
  void begin_step();
  // After the step's last op: waits for every launched bucket, then reduces the experts held apart. Every held gradient is then the global batch's.
  // Error (from chapter 04's finish) when a bucket was never complete: a parameter reported fewer
  // than `passes` times.
  void finish();

  std::int64_t collectives_per_step() const;  // all-reduces a step issues: the buckets

 private:
  struct Place {
    int buffer = -1;  // -1: not in a GradientSync (not held, or an expert held apart)
    int param = 0;    // its index in that buffer
  };
  Communicator& replicas_;
  Communicator* expert_replicas_;
  std::vector<Tensor> expert_grads_;                        // views: the runs of experts held apart
  std::vector<std::unique_ptr<ch04::GradientSync>> syncs_;  // one per GradientBuffer
  std::vector<ModelHooks> ready_;                           // [buffer]: its GradientSync's hook
  std::vector<Place> place_;                                // [store parameter]
  std::vector<int> reports_;                                // [store parameter]: this step's
  int passes_;

  void grad_ready(int param);
};

}  // namespace usp::ch10
