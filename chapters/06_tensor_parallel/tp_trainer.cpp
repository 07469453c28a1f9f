#include "chapters/06_tensor_parallel/tp_trainer.hpp"

#include "chapters/06_tensor_parallel/tp_gather.hpp"
#include "common/device.hpp"
#include "common/train/training_comms.hpp"

namespace usp::ch06 {

TpTrainer::TpTrainer(Communicator& world, const TrainingConfig& cfg, TpLayout layout) : layout_(layout) {
  check_tp_layout(layout_, world.size(), cfg.model, cfg.mbs, cfg.seq);
  check_world_device("TpTrainer", world, cfg.device);
  mesh_ = std::make_unique<Mesh>(world, MeshLayout(world.size(), layout_.mesh_sizes()));
  tp_quiet_ = mesh_->tp().split(0, mesh_->tp().rank());
  ops_ = std::make_unique<MegatronTp>(mesh_->tp(), layout_.sp, cfg.model.vocab);
  ModelOptions options = cfg.model_options();
  options.linears = ops_.get();
  state_ = build_rank_model(cfg, StoreLayout{.tp = TpShard{layout_.tp, mesh_->tp().rank()}}, options);
  for (std::size_t i = 0; i < state_.store->infos().size(); ++i)
    if (state_.store->infos()[i].split_dim < 0) norm_params_.push_back(static_cast<int>(i));
}

TpTrainer::~TpTrainer() = default;

double TpTrainer::step(const std::vector<Batch>& micro_batches) {
  const float scale = 1.0f / static_cast<float>(micro_batches.size());
  state_.store->zero_grad();
  double loss = 0.0;
  for (const Batch& b : micro_batches) {
    loss += state_.model->forward(b.inputs, b.targets);
    state_.model->backward(scale);
  }
  if (layout_.sp)  // partial sums over each rank's rows of the stream
    for (int i : norm_params_) {
      Tensor g = state_.store->grad(i);
      mesh_->tp().all_reduce(g);
    }
  if (layout_.dp > 1) mesh_->dp().all_reduce(state_.store->flat_grad(), ReduceOp::avg);
  state_.optimizer->step(*state_.store);
  synchronize(state_.store->device());  // a GPU's queued work belongs to this step (and its time)
  return loss / static_cast<double>(micro_batches.size());
}

std::vector<float> TpTrainer::full_parameters() { return gather_full_parameters(*state_.store, *tp_quiet_); }

std::vector<float> TpTrainer::full_gradients() {
  // The gradients laid out as parameters: a store of the same shard whose "parameters" are them.
  ParamStore grads(state_.store->config(), DType::f32, Device::cpu(), StoreLayout{Residency::flat, Residency::none, 1, state_.store->layout().tp});
  grads.flat().copy_from(state_.store->flat_grad().dtype() == DType::f32
                             ? state_.store->flat_grad()
                             : Tensor::from_floats(state_.store->flat_grad().to_floats(), {state_.store->numel()}));
  return gather_full_parameters(grads, *tp_quiet_);
}

}  // namespace usp::ch06
