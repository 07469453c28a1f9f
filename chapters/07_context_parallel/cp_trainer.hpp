// CpTrainer: training on a dp × cp (× tp) mesh. Each of the dp replicas splits every sequence of
// its micro-batches over cp ranks (cp_layout.hpp: contiguous or zig-zag chunks), runs the model on
// its tokens with a context-parallel attention (cp_attention.hpp), and the gradients are averaged
// over all dp·cp ranks: a rank's loss is the mean over its tokens, the global loss the mean of the
// ranks' (they all hold the same number of tokens), so the global gradient is the mean of theirs.
// With tp > 1 each of those ranks is a tensor-parallel group of tp ranks (chapter 06's MegatronTp,
// no sequence parallelism): they hold a TpShard of the weights and split each layer's heads, so
// the CP attention runs on a rank's heads / tp heads; the dp·cp average is over the ranks holding
// the same shard. Mesh order "tp-cp-dp-pp": TP peers are neighbours, then CP.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "chapters/06_tensor_parallel/megatron_tp.hpp"
#include "chapters/07_context_parallel/cp_attention.hpp"
#include "chapters/07_context_parallel/cp_mesh_layout.hpp"
#include "common/data/dataset.hpp"
#include "common/mesh.hpp"
#include "common/model/model.hpp"
#include "common/optim/adamw.hpp"
#include "common/train/rank_model.hpp"
#include "common/train/training_flags.hpp"

namespace usp::ch07 {

class CpTrainer {
 public:
  // Collective over world (builds the mesh: cp innermost, "cp-..." order).
  CpTrainer(Communicator& world, const TrainingConfig& cfg, CpLayout layout);
  ~CpTrainer();
  CpTrainer(const CpTrainer&) = delete;
  CpTrainer& operator=(const CpTrainer&) = delete;

  // One optimizer step on this replica's micro-batches (whole sequences: the trainer takes this
  // rank's tokens of each). Returns the mean loss over this rank's tokens.
  double step(const std::vector<Batch>& micro_batches);

  const CpLayout& layout() const { return layout_; }
  Communicator& cp() { return mesh_->cp(); }
  Communicator& dp() { return mesh_->dp(); }
  Communicator& dp_cp() { return mesh_->dp_cp(); }
  Communicator& tp() { return mesh_->tp(); }
  ParamStore& params() { return *state_.store; }
  Model& model() { return *state_.model; }
  CpAttentionBase& attention() { return *attention_; }
  const std::vector<std::int32_t>& positions() const { return positions_; }

 private:
  CpLayout layout_;
  std::unique_ptr<Mesh> mesh_;
  std::unique_ptr<ch06::MegatronTp> tp_;  // tp > 1 only
  std::unique_ptr<CpAttentionBase> attention_;
  RankModel state_;  // store, model, optimizer
  std::vector<std::int32_t> positions_;
};

}  // namespace usp::ch07
