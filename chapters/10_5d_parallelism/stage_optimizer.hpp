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
// ZeRO 0: every rank all-reduces (averages) its gradients and updates all it holds.
// ZeRO 1: chapter 05's step (exercise 05.1, zero1_step.hpp) over the dp·cp group. Its flat
//   parameter vector is the rank's held units packed in unit order (Ψ_s elements, padded to
//   dp·cp·S, S = ceil(Ψ_s / dp·cp): the calculator's shard); the rank keeps the Adam states of its
//   shard only. The packed parameters and gradients are communication buffers of one step, copied
//   from and back into the units' own buffers.
#pragma once
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "chapters/08_pipeline_parallel/stage_params.hpp"
#include "common/comm/communicator.hpp"
#include "common/optim/adamw.hpp"

namespace usp::ch10 {

class StageOptimizer {
 public:
  // params: built with an optimizer for zero 0, without one for zero 1. replicas: the dp·cp group.
  // expert_replicas: the expert data-parallel group (ep > 1 only; null: the experts are
  // everywhere and average like the rest). Not owned.
  StageOptimizer(ch08::StageParams& params, const AdamWConfig& cfg, int zero, Communicator& replicas,
                 Communicator* expert_replicas);
  ~StageOptimizer();

  void step();  // after the step's backward: synchronise the gradients, update the parameters
  std::int64_t state_elements() const;  // parameters whose Adam states this rank keeps

 private:
  ch08::StageParams& params_;
  int zero_;
  Communicator& replicas_;
  Communicator* expert_replicas_;
  // [unit] -> runs [begin, end) of expert parameters inside the unit's buffer.
  std::vector<std::pair<int, std::vector<std::pair<std::int64_t, std::int64_t>>>> expert_runs_;
  // ZeRO-1: where each held unit starts in the packed vector [units], its real and padded lengths,
  // and the AdamW of this rank's shard (in packed coordinates).
  std::vector<std::int64_t> packed_offset_;
  std::int64_t packed_ = 0, padded_ = 0;
  std::unique_ptr<AdamW> shard_adam_;

  void average_gradients();
  // Elements [begin, end) of the packed parameters (or gradients), zeros past the held units.
  Tensor pack(bool grads, std::int64_t begin, std::int64_t end);
  void zero1_step();
};

}  // namespace usp::ch10
