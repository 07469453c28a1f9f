// StageOptimizer: the end of a 5D step on one rank — the gradients of the units this rank holds
// made the global batch's, then one AdamW update.
//
// Who holds the same parameters as this rank: the dp·cp ranks at its (tp, pp) coordinate (the
// "replicas": DP splits the batch, CP the sequence, neither the weights). Each computed the
// gradient of the mean loss over its own tokens, and all hold as many tokens, so the global
// gradient is their mean. With experts (ep > 1) an expert's weights are held only by the ranks at
// the same place of their ep groups (the expert data-parallel group); each accumulated the
// gradients of the losses of its whole ep group, so the sum over that group divided by dp·cp is
// the mean (chapter 09).
//
// ZeRO 0: StageGradSync makes every held gradient the global batch's — the dense ones averaged by
//   chapter 04's buckets, launched during the pipeline's backward (exercises 04.1 and 04.2), the
//   experts held apart reduced over their group after the step's last op — and every rank updates
//   all it holds.
// ZeRO 1: chapter 05's step (exercise 05.1, zero1_step.hpp) over the dp·cp group. Its flat
//   parameter vector is the rank's held units packed in unit order (Ψ_s elements, padded to
//   dp·cp·S, S = ceil(Ψ_s / dp·cp): the calculator's shard); the rank keeps the Adam states of its
//   shard only. The packed parameters and gradients are communication buffers of one step, copied
//   from and back into the units' own buffers.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "chapters/08_pipeline_parallel/stage_params.hpp"
#include "chapters/10_5d_parallelism/stage_grad_sync.hpp"
#include "common/comm/communicator.hpp"
#include "common/optim/adamw.hpp"

namespace usp::ch10 {

class StageOptimizer {
 public:
  // params: built with an optimizer for zero 0, without one for zero 1. replicas: the dp·cp group.
  // expert_replicas: the expert data-parallel group (ep > 1 only; null: the experts are
  // everywhere and average like the rest). Not owned. passes: backward passes of each chunk per
  // step (m; zero 0 with replicas: the report that makes a gradient final is StageGradSync's m-th).
  StageOptimizer(ch08::StageParams& params, const AdamWConfig& cfg, int zero, Communicator& replicas,
                 Communicator* expert_replicas, int passes);
  ~StageOptimizer();

  // The gradient sync the chunk models report to (attach, then begin_step before each step's
  // backward); null when there is none (ZeRO-1 reduces in its step; a single replica).
  StageGradSync* gradient_sync() { return sync_.get(); }
  const StageGradSync* gradient_sync() const { return sync_.get(); }
  void step();  // after the step's backward: synchronise the gradients, update the parameters
  std::int64_t state_elements() const;  // parameters whose Adam states this rank keeps

 private:
  ch08::StageParams& params_;
  int zero_;
  Communicator& replicas_;
  Communicator* expert_replicas_;
  std::unique_ptr<StageGradSync> sync_;  // zero 0 with more than one replica
  // ZeRO-1: where each held unit starts in the packed vector [units], its real and padded lengths,
  // and the AdamW of this rank's shard (in packed coordinates).
  std::vector<std::int64_t> packed_offset_;
  std::int64_t packed_ = 0, padded_ = 0;
  std::unique_ptr<AdamW> shard_adam_;

  // Elements [begin, end) of the packed parameters (or gradients), zeros past the held units.
  Tensor pack(bool grads, std::int64_t begin, std::int64_t end);
  void zero1_step();
};

}  // namespace usp::ch10
