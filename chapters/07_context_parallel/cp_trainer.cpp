#include "chapters/07_context_parallel/cp_trainer.hpp"

#include "common/data/tokens_at.hpp"
#include "common/device.hpp"
#include "common/error.hpp"
#include "common/train/training_comms.hpp"

namespace usp::ch07 {

CpTrainer::CpTrainer(Communicator& world, const TrainingConfig& cfg, CpLayout layout) : layout_(layout) {
  check_cp_layout(layout_, world.size(), cfg.model, cfg.seq);
  check_world_device("CpTrainer", world, cfg.device);
  mesh_ = std::make_unique<Mesh>(
      world, MeshLayout(world.size(), MeshSizes{.dp = layout_.dp, .tp = layout_.tp, .cp = layout_.cp}));
  attention_ = make_cp_attention(layout_.attention, mesh_->cp(), layout_.sharding, cfg.model.heads / layout_.tp,
                                 cfg.model.kv_heads / layout_.tp);
  ModelOptions options = cfg.model_options();
  options.attention = attention_.get();
  if (layout_.tp > 1) {
    tp_ = std::make_unique<ch06::MegatronTp>(mesh_->tp(), /*sequence_parallel=*/false, cfg.model.vocab);
    options.linears = tp_.get();
  }
  // Every rank holds the whole model, or with tp its TpShard (context parallelism splits the
  // tokens, not the weights), initialised from the seed as one device would.
  state_ = build_rank_model(cfg, StoreLayout{.tp = TpShard{layout_.tp, mesh_->tp().rank()}}, options);
  positions_ = rank_positions(layout_.sharding, cfg.seq, layout_.cp, mesh_->cp().rank());
}

CpTrainer::~CpTrainer() = default;

double CpTrainer::step(const std::vector<Batch>& micro_batches) {
  const float scale = 1.0f / static_cast<float>(micro_batches.size());
  state_.store->zero_grad();
  attention_->reset_work();  // the step's attention: its compute time over every micro-batch
  double loss = 0.0;
  for (const Batch& b : micro_batches) {
    const Batch mine = tokens_at(b, positions_);
    loss += state_.model->forward(mine.inputs, mine.targets);
    state_.model->backward(scale);
  }
  // Each rank's gradient is that of the mean loss over its tokens; every rank of the dp × cp
  // mesh holds as many, so the global gradient is the mean over all of them (over the ranks that
  // hold the same TP shard: the dp·cp group).
  if (mesh_->dp_cp().size() > 1) mesh_->dp_cp().all_reduce(state_.store->flat_grad(), ReduceOp::avg);
  state_.optimizer->step(*state_.store);
  synchronize(state_.store->device());  // a GPU's queued work belongs to this step (and its time)
  return loss / static_cast<double>(micro_batches.size());
}

}  // namespace usp::ch07
