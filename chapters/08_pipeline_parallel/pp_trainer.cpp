#include "chapters/08_pipeline_parallel/pp_trainer.hpp"

#include "common/comm/broadcast_double.hpp"
#include "common/device.hpp"
#include "common/error.hpp"
#include "common/train/training_comms.hpp"
#include "common/train/validation_loss.hpp"

namespace usp::ch08 {

std::string PpLayout::label() const {
  std::string s = std::string(schedule_kind_name(schedule)) + " PP " + std::to_string(pp);
  if (v > 1) s += " × v " + std::to_string(v);
  if (dp > 1) s += " × DP " + std::to_string(dp);
  return s + ", m = " + std::to_string(m);
}

void check_pp_layout(const PpLayout& layout, int world_size, const ModelConfig& model) {
  const auto str = [](int v) { return std::to_string(v); };
  if (layout.dp < 1 || layout.pp < 1) throw UsageError("--dp and --pp must be >= 1");
  if (layout.world() != world_size)
    throw UsageError("the mesh dp " + str(layout.dp) + " × pp " + str(layout.pp) + " = " + str(layout.world()) +
                     " ranks does not match the " + str(world_size) + " ranks of this run");
  (void)split_units(model, layout.pp * layout.v);
}

PpTrainer::PpTrainer(Communicator& world, const TrainingConfig& cfg, PpLayout layout) : layout_(layout) {
  check_pp_layout(layout_, world.size(), cfg.model);
  cfg_device_ = cfg.device;
  check_world_device("PpTrainer", world, cfg.device);
  schedule_ = make_schedule(layout_.schedule, layout_.pp, layout_.m, layout_.v);
  stages_ = split_units(cfg.model, schedule_.layout.num_stages());
  mesh_ = std::make_unique<Mesh>(world, MeshLayout(world.size(), MeshSizes{.dp = layout_.dp, .pp = layout_.pp}));
  const int r = mesh_->pp().rank();
  std::vector<UnitRange> mine;
  for (int c = 0; c < layout_.v; ++c) mine.push_back(stages_[static_cast<std::size_t>(schedule_.layout.stage_of(r, c))]);
  params_ = std::make_unique<StageParams>(cfg, mine);
  std::vector<Model*> models;
  for (const UnitRange& u : mine) {
    ModelOptions options = cfg.model_options();
    options.linears = &queue_;  // the single-device ops, with B / W split on demand
    options.stage = {u.first, u.last};
    chunks_.push_back(std::make_unique<Model>(params_->store(), options));
    models.push_back(chunks_.back().get());
  }
  last_rank_ = schedule_.layout.rank_of(schedule_.layout.num_stages() - 1);
  loss_comm_ = mesh_->pp().split(0, r);
  executor_ = std::make_unique<PipelineExecutor>(mesh_->pp(), schedule_, models, queue_);
}

PpTrainer::~PpTrainer() = default;

PpStep PpTrainer::step(const std::vector<Batch>& micro_batches) {
  params_->zero_grad();
  PpStep out;
  out.executed = executor_->run(micro_batches, 1.0f / static_cast<float>(layout_.m));
  // The last stage knows the losses: the replica's mean, to the other stages.
  // The last stage's mean loss to every rank of the replica, over a communicator of its own, so
  // that the pipeline group's counters hold exactly activations and gradients.
  out.loss = broadcast_double(*loss_comm_, last_rank_, out.executed.loss_sum / layout_.m);
  params_->average_grads(mesh_->dp());
  params_->step();
  synchronize_compute(cfg_device_);  // a GPU's queued work belongs to this step
  return out;
}

double PpTrainer::held_out_loss(Communicator& replicas, const Dataset& data, std::int64_t batches, std::int64_t mbs,
                                std::int64_t seq) {
  // Meaningful on the last stage's ranks (the others' losses are 0 there): shared from them.
  const double last_stage = validation_loss(
      replicas, [&](const Batch& batch) { return executor_->evaluate(batch); }, data, batches, mbs, seq);
  return broadcast_double(*loss_comm_, last_rank_, last_stage);
}

}  // namespace usp::ch08
