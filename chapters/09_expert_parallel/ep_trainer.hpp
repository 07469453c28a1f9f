// EpTrainer: a mixture-of-experts model trained on dp ranks whose experts are spread over
// expert-parallel groups of ep ranks (ep divides dp: the ep ranks of a group are data-parallel
// for everything else). Each rank runs its own micro-batches through the whole dense model;
// at every MoE layer its token rows travel to the experts' ranks and back (AllToAllExperts).
//
// Gradients (each rank's loss is the mean over its own tokens; the global loss is the mean over
// the dp ranks):
//   dense parameters (attention, norms, router, embedding, head): every rank holds them all and
//     computed the gradient of its own loss: the mean over the dp ranks (all-reduce avg);
//   an expert's parameters: held by the dp/ep ranks at the same place of their ep groups (the
//     "expert data-parallel" group); each holder accumulated the gradient of the losses of the
//     ep ranks of its group, whose tokens it computed. Summed over the expert data-parallel group
//     that is the sum over all dp ranks' losses: divided by dp, the mean.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "chapters/09_expert_parallel/all_to_all_experts.hpp"
#include "common/data/dataset.hpp"
#include "common/mesh.hpp"
#include "common/model/model.hpp"
#include "common/optim/adamw.hpp"
#include "common/train/rank_model.hpp"
#include "common/train/training_flags.hpp"

namespace usp::ch09 {

struct EpLayout {
  int dp = 1;  // every rank (world = dp)
  int ep = 1;  // experts spread over groups of ep of them

  std::string label() const;  // "EP 4", "DP 4 with EP 2"
};

// UsageError (the same on every rank): world != dp, a dense model, ep not dividing dp or the
// number of experts.
void check_ep_layout(const EpLayout& layout, int world_size, const ModelConfig& model);

class EpTrainer {
 public:
  // Collective over world (builds the mesh).
  EpTrainer(Communicator& world, const TrainingConfig& cfg, EpLayout layout);
  ~EpTrainer();
  EpTrainer(const EpTrainer&) = delete;
  EpTrainer& operator=(const EpTrainer&) = delete;

  // One optimizer step over this rank's micro-batches. Returns the mean cross-entropy over them.
  double step(const std::vector<Batch>& micro_batches);

  const EpLayout& layout() const { return layout_; }
  Communicator& dp() { return mesh_->dp(); }
  Communicator& ep() { return mesh_->ep(); }
  Communicator& ep_dp() { return mesh_->ep_dp(); }
  ParamStore& params() { return *state_.store; }
  Model& model() { return *state_.model; }
  // The last step's routing, summed over its micro-batches: per layer, per expert.
  const std::vector<MoeRouting>& routing() const { return routing_; }
  double aux_loss() const { return aux_loss_; }  // the last step's, mean over its micro-batches

 private:
  EpLayout layout_;
  std::unique_ptr<Mesh> mesh_;
  std::unique_ptr<AllToAllExperts> experts_;
  RankModel state_;  // store, model, optimizer
  std::vector<std::pair<std::int64_t, std::int64_t>> dense_runs_, expert_runs_;  // [begin, end) of the flat buffer
  std::vector<MoeRouting> routing_;
  double aux_loss_ = 0;
};

}  // namespace usp::ch09
