// TpTrainer: training on a dp × tp mesh. Each of the dp replicas is one model split over tp
// ranks (Megatron-LM's tensor parallelism, optionally with sequence parallelism: MegatronTp);
// every rank of a replica sees the same micro-batches, the replicas see different ones.
//
// One step (k micro-batches per replica, each loss scaled by 1/k):
//   forward and backward of each micro-batch: the tensor-parallel collectives happen inside
//     the model, at the blocks' entries and exits (parallel_linear.hpp);
//   sequence parallelism only: the RMSNorm weights are replicated but each rank saw only its
//     rows of the stream, so their gradients are partial sums: all-reduce them over tp;
//   dp > 1: average every gradient over the replicas (one all-reduce of the rank's flat
//     gradient over dp: a rank only synchronises its own shard, Ψ/t parameters);
//   AdamW on the rank's shard (element-wise, so it is the baseline's update of that slice).
// Without sequence parallelism nothing else is needed: every rank computed the norms on all N
// rows from the same (all-reduced) gradients, so their weights stay identical on the tp ranks.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "chapters/06_tensor_parallel/megatron_tp.hpp"
#include "chapters/06_tensor_parallel/tp_layout.hpp"
#include "common/data/dataset.hpp"
#include "common/mesh.hpp"
#include "common/model/model.hpp"
#include "common/optim/adamw.hpp"
#include "common/train/rank_model.hpp"
#include "common/train/training_flags.hpp"

namespace usp::ch06 {

class TpTrainer {
 public:
  // Collective over world (it builds the mesh). The rank's shard is initialised by itself (the
  // counter-based init of params.hpp): the whole model never exists on any rank. UsageError
  // (check_tp_layout) for a layout that cannot run.
  TpTrainer(Communicator& world, const TrainingConfig& cfg, TpLayout layout);
  ~TpTrainer();
  TpTrainer(const TpTrainer&) = delete;
  TpTrainer& operator=(const TpTrainer&) = delete;

  // One optimizer step on this replica's micro-batches (the same ones on every tp rank of it).
  // Returns their mean loss (the replica's share of the global loss).
  double step(const std::vector<Batch>& micro_batches);

  const TpLayout& layout() const { return layout_; }
  Mesh& mesh() { return *mesh_; }
  Communicator& tp() { return mesh_->tp(); }
  Communicator& dp() { return mesh_->dp(); }
  ParamStore& params() { return *state_.store; }
  Model& model() { return *state_.model; }
  AdamW& optimizer() { return *state_.optimizer; }

  // Every parameter unsharded (f32, the single-device flat layout); collective over the tp group,
  // on a communicator of its own so that tp()'s byte counters keep only the training traffic.
  std::vector<float> full_parameters();
  // The replica's gradient of the last step, unsharded, after the tp and dp synchronisation.
  std::vector<float> full_gradients();

 private:
  TpLayout layout_;
  std::unique_ptr<Mesh> mesh_;
  std::unique_ptr<Communicator> tp_quiet_;  // the tp group again, for gathering results
  std::unique_ptr<MegatronTp> ops_;
  RankModel state_;  // store, model, optimizer
  std::vector<int> norm_params_;  // replicated parameters (RMSNorm weights)
};

}  // namespace usp::ch06
