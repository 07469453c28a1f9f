#include "chapters/09_expert_parallel/ep_trainer.hpp"

#include "common/device.hpp"

#include "common/error.hpp"
#include "common/ops/ops.hpp"
#include "common/train/training_comms.hpp"

namespace usp::ch09 {

std::string EpLayout::label() const {
  const std::string e = "EP " + std::to_string(ep);
  return dp > ep ? "DP " + std::to_string(dp) + " with " + e : e;
}

void check_ep_layout(const EpLayout& layout, int world_size, const ModelConfig& model) {
  const auto str = [](std::int64_t v) { return std::to_string(v); };
  if (!model.is_moe()) throw UsageError("expert parallelism needs a model with experts (--experts E)");
  if (layout.dp != world_size)
    throw UsageError("dp " + str(layout.dp) + " does not match the " + str(world_size) + " ranks of this run");
  if (layout.ep < 1 || layout.dp % layout.ep != 0)
    throw UsageError("--ep " + str(layout.ep) + " must divide the " + str(layout.dp) +
                     " ranks (each group of ep ranks shares the experts; the groups are data-parallel)");
  if (model.experts % layout.ep != 0)
    throw UsageError("--ep " + str(layout.ep) + " must divide the number of experts (" + str(model.experts) +
                     "): each rank holds E / ep of them");
}

EpTrainer::EpTrainer(Communicator& world, const TrainingConfig& cfg, EpLayout layout) : layout_(layout) {
  check_ep_layout(layout_, world.size(), cfg.model);
  check_world_device("EpTrainer", world, cfg.device);
  mesh_ = std::make_unique<Mesh>(world, MeshLayout(world.size(), MeshSizes{.dp = layout_.dp, .ep = layout_.ep}));
  experts_ = std::make_unique<AllToAllExperts>(mesh_->ep(), cfg.model.experts);
  ModelOptions options = cfg.model_options();
  options.expert_parallel = experts_.get();
  // Initialisation keys each element by its parameter's name: this rank's experts start as the
  // single-device model's experts of the same (global) index.
  state_ = build_rank_model(cfg, StoreLayout{.ep = EpShard{layout_.ep, mesh_->ep().rank()}}, options);
  // The flat buffer as runs of dense and of expert parameters (each synchronised over its group).
  for (const ParamInfo& p : state_.store->infos()) {
    auto& runs = p.expert >= 0 ? expert_runs_ : dense_runs_;
    if (!runs.empty() && runs.back().second == p.offset) runs.back().second = p.offset + p.numel;
    else runs.emplace_back(p.offset, p.offset + p.numel);
  }
}

EpTrainer::~EpTrainer() = default;

double EpTrainer::step(const std::vector<Batch>& micro_batches) {
  const float scale = 1.0f / static_cast<float>(micro_batches.size());
  state_.store->zero_grad();
  double loss = 0.0;
  aux_loss_ = 0;
  routing_.clear();
  for (const Batch& b : micro_batches) {
    loss += state_.model->forward(b.inputs, b.targets);
    aux_loss_ += state_.model->aux_loss() / static_cast<double>(micro_batches.size());
    const std::vector<MoeRouting>& r = state_.model->routing();
    if (routing_.empty()) routing_.assign(r.size(), MoeRouting{});
    for (std::size_t l = 0; l < r.size(); ++l) {
      MoeRouting& sum = routing_[l];
      sum.routed.resize(r[l].routed.size(), 0);
      sum.kept.resize(r[l].kept.size(), 0);
      for (std::size_t e = 0; e < r[l].routed.size(); ++e) {
        sum.routed[e] += r[l].routed[e];
        sum.kept[e] += r[l].kept[e];
      }
      sum.dropped += r[l].dropped;
    }
    state_.model->backward(scale);
  }
  // Dense: the mean over the dp ranks. Experts: the sum over the ranks holding them, over dp.
  Tensor& g = state_.store->flat_grad();
  for (auto [begin, end] : dense_runs_) {
    Tensor run = g.slice(begin, end);
    if (layout_.dp > 1) mesh_->dp().all_reduce(run, ReduceOp::avg);
  }
  for (auto [begin, end] : expert_runs_) {
    Tensor run = g.slice(begin, end);
    if (mesh_->ep_dp().size() > 1) mesh_->ep_dp().all_reduce(run, ReduceOp::sum);
    ops::scale_inplace(run, 1.0f / static_cast<float>(layout_.dp));
  }
  state_.optimizer->step(*state_.store);
  synchronize(state_.store->device());  // a GPU's queued work belongs to this step (and its time)
  return loss / static_cast<double>(micro_batches.size());
}

}  // namespace usp::ch09
