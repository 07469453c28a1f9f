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
// ZeRO 1: the rank's held units, concatenated in unit order (N elements), are cut into dp·cp
//   shards of ceil(N / dp·cp) (the calculator's shard; the last ones shorter or empty). A
//   reduce-scatter leaves each replica its shard of the averaged gradient, it updates that shard
//   with the only Adam states it keeps, and an all-gather brings every replica the updated
//   parameters. The packed gradients and parameters travel in communication buffers.
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
  struct Piece {  // ZeRO-1: the part of one unit inside this rank's shard
    int unit = 0;
    std::int64_t in_unit = 0, in_shard = 0, length = 0;
    std::unique_ptr<AdamW> adam;
  };
  ch08::StageParams& params_;
  int zero_;
  Communicator& replicas_;
  Communicator* expert_replicas_;
  // [unit] -> runs [begin, end) of expert parameters inside the unit's buffer.
  std::vector<std::pair<int, std::vector<std::pair<std::int64_t, std::int64_t>>>> expert_runs_;
  std::vector<std::int64_t> packed_offset_;  // [units]: where each unit starts in the packed vector
  std::int64_t shard_ = 0;                   // ZeRO-1 shard length
  std::vector<Piece> pieces_;

  void average_gradients();
  void zero1_step();
};

}  // namespace usp::ch10
