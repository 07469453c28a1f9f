#include "chapters/10_5d_parallelism/trainer_5d.hpp"

#include <algorithm>

#include "common/comm/broadcast_double.hpp"
#include "common/data/tokens_at.hpp"
#include "common/device.hpp"
#include "common/error.hpp"
#include "common/train/training_comms.hpp"
#include "common/train/validation_loss.hpp"

namespace usp::ch10 {

Trainer5d::Trainer5d(Communicator& world, const TrainingConfig& cfg, Layout5d layout) : layout_(layout) {
  check_layout_5d(layout_, world.size(), cfg.model, cfg.seq);
  check_world_device("Trainer5d", world, cfg.device);
  schedule_ = ch08::make_schedule(layout_.schedule, layout_.pp, layout_.m, ch08::chunks_of(layout_.schedule, layout_.v));
  const std::vector<ch08::UnitRange> stages = ch08::split_units(cfg.model, schedule_.layout.num_stages());
  mesh_ = std::make_unique<Mesh>(world, MeshLayout(world.size(), MeshSizes{.dp = layout_.dp, .tp = layout_.tp,
                                                                            .cp = layout_.cp, .pp = layout_.pp,
                                                                            .ep = layout_.ep}));
  // The parallelisms that change the layers, each over its group.
  ModelOptions options = cfg.model_options();
  options.linears = &queue_;  // the single-device ops (B / W split on demand) ...
  if (layout_.tp > 1) {               // ... or Megatron's blocks
    tp_ = std::make_unique<ch06::MegatronTp>(mesh_->tp(), /*sequence_parallel=*/false, cfg.model.vocab);
    options.linears = tp_.get();
  }
  if (layout_.cp > 1) {
    attention_ = ch07::make_cp_attention(layout_.attention, mesh_->cp(), layout_.sharding,
                                         cfg.model.heads / layout_.tp, cfg.model.kv_heads / layout_.tp);
    options.attention = attention_.get();
    positions_ = ch07::rank_positions(layout_.sharding, cfg.seq, layout_.cp, mesh_->cp().rank());
  }
  if (layout_.ep > 1) {
    experts_ = std::make_unique<ch09::AllToAllExperts>(mesh_->ep(), cfg.model.experts);
    options.expert_parallel = experts_.get();
  }
  // This rank's stages and their units, sharded as TP and EP say.
  const int r = mesh_->pp().rank();
  std::vector<ch08::UnitRange> mine;
  for (int c = 0; c < schedule_.v; ++c) mine.push_back(stages[static_cast<std::size_t>(schedule_.layout.stage_of(r, c))]);
  params_ = std::make_unique<ch08::StageParams>(cfg, mine, TpShard{layout_.tp, mesh_->tp().rank()},
                                                EpShard{layout_.ep, layout_.ep > 1 ? mesh_->ep().rank() : 0},
                                                /*with_optimizer=*/layout_.zero == 0);
  // Without ZeRO the chunks report each final gradient to chapter 04's sync (under a zero-bubble
  // schedule a linear weight's from its W, where its gradient is computed: ModelHooks::grad_ready).
  optimizer_ = std::make_unique<StageOptimizer>(*params_, cfg.adamw, layout_.zero, mesh_->dp_cp(),
                                                layout_.ep > 1 ? &mesh_->ep_dp() : nullptr, layout_.m);
  std::vector<Model*> models;
  for (const ch08::UnitRange& u : mine) {
    ModelOptions o = options;
    o.stage = {u.first, u.last};
    chunks_.push_back(std::make_unique<Model>(params_->store(), o));
    if (StageGradSync* sync = optimizer_->gradient_sync()) {
      ModelHooks hooks;
      sync->attach(hooks);
      chunks_.back()->set_hooks(std::move(hooks));
    }
    models.push_back(chunks_.back().get());
  }
  last_rank_ = schedule_.layout.rank_of(schedule_.layout.num_stages() - 1);
  loss_comm_ = mesh_->pp().split(0, r);
  executor_ = std::make_unique<ch08::PipelineExecutor>(mesh_->pp(), schedule_, models, queue_);
}

Trainer5d::~Trainer5d() = default;

Step5d Trainer5d::step(const std::vector<Batch>& micro_batches) {
  params_->zero_grad();
  if (attention_) attention_->reset_work();
  std::vector<Batch> local;  // this rank's tokens of each sequence
  local.reserve(micro_batches.size());
  for (const Batch& b : micro_batches) local.push_back(positions_.empty() ? b : tokens_at(b, positions_));
  Step5d out;
  if (StageGradSync* sync = optimizer_->gradient_sync()) sync->begin_step();
  out.executed = executor_->run(local, 1.0f / static_cast<float>(layout_.m));
  out.loss = broadcast_double(*loss_comm_, last_rank_, out.executed.loss_sum / layout_.m);
  optimizer_->step();
  synchronize_compute(params_->store().device());  // a GPU's queued work belongs to this step
  return out;
}

double Trainer5d::held_out_loss(Communicator& replicas, const Dataset& data, std::int64_t batches, std::int64_t mbs,
                                std::int64_t seq) {
  auto evaluate = [&](const Batch& batch) {
    return executor_->evaluate(positions_.empty() ? batch : tokens_at(batch, positions_));
  };
  // Meaningful on the last stage's ranks (the others' losses are 0 there): shared from them.
  const double last_stage = validation_loss(replicas, evaluate, data, batches, mbs, seq);
  return broadcast_double(*loss_comm_, last_rank_, last_stage);
}

}  // namespace usp::ch10
