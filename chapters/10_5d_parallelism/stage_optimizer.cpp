#include "chapters/10_5d_parallelism/stage_optimizer.hpp"

#include <algorithm>

#include "chapters/05_zero/shard_layout.hpp"
#include "chapters/05_zero/zero1_step.hpp"
#include "common/error.hpp"

namespace usp::ch10 {

StageOptimizer::StageOptimizer(ch08::StageParams& params, const AdamWConfig& cfg, int zero, Communicator& replicas,
                               Communicator* expert_replicas, int passes)
    : params_(params), zero_(zero), replicas_(replicas), expert_replicas_(expert_replicas) {
  if (zero_ == 0) {
    if (replicas_.size() > 1)
      sync_ = std::make_unique<StageGradSync>(params_, replicas_, expert_replicas_, passes);
    return;
  }
  USP_CHECK(zero_ == 1 && expert_replicas_ == nullptr, "StageOptimizer: ZeRO-1 without expert parallelism only");
  ParamStore& store = params_.store();
  // The packed vector: the held units one after the other; its parameters' infos, moved there
  // (which elements get weight decay).
  std::vector<ParamInfo> packed_infos;
  for (int u : params_.units()) {
    const auto [begin, end] = store.unit_range(u);
    packed_offset_.push_back(packed_);
    for (const ParamInfo& p : store.infos())
      if (p.unit == u) {
        packed_infos.push_back(p);
        packed_infos.back().offset = p.offset - begin + packed_;
      }
    packed_ += end - begin;
  }
  const ch05::Shard shard = ch05::shard_of(packed_, replicas_.size(), replicas_.rank());
  padded_ = shard.size * replicas_.size();
  shard_adam_ = std::make_unique<AdamW>(packed_infos, cfg, shard.begin, shard.owned_end(),
                                        pack(false, shard.begin, shard.owned_end()));
}

StageOptimizer::~StageOptimizer() = default;

std::int64_t StageOptimizer::state_elements() const {
  return zero_ == 0 ? params_.numel() : shard_adam_->end() - shard_adam_->begin();
}

void StageOptimizer::step() {
  if (zero_ == 1) return zero1_step();
  if (sync_) sync_->finish();  // the buckets launched during backward; then the experts held apart
  params_.step();
}

Tensor StageOptimizer::pack(bool grads, std::int64_t begin, std::int64_t end) {
  ParamStore& store = params_.store();
  Tensor packed = Tensor::zeros({end - begin}, store.dtype(), MemCategory::CommBuffer, store.device());
  for (std::size_t i = 0; i < params_.units().size(); ++i) {
    const int u = params_.units()[i];
    const Tensor& from = grads ? store.unit_grads(u) : store.unit_params(u);
    const std::int64_t a = std::max(begin, packed_offset_[i]), b = std::min(end, packed_offset_[i] + from.numel());
    if (a < b) packed.slice(a - begin, b - begin).copy_from(from.slice(a - packed_offset_[i], b - packed_offset_[i]));
  }
  return packed;
}

void StageOptimizer::zero1_step() {
  ParamStore& store = params_.store();
  // [dp·cp·S]: the held units' parameters and local gradients, packed, then the padding's zeros.
  Tensor values = pack(false, 0, padded_), grads = pack(true, 0, padded_);
  Tensor reduced = Tensor::empty({padded_ / replicas_.size()}, store.dtype(), MemCategory::CommBuffer, store.device());
  (void)ch05::zero1_step(replicas_, ch05::FlatParams(values, packed_), *shard_adam_, grads, reduced);
  // Every replica's updated shard, back into the units.
  for (std::size_t i = 0; i < params_.units().size(); ++i) {
    Tensor& w = store.unit_params(params_.units()[i]);
    w.copy_from(values.slice(packed_offset_[i], packed_offset_[i] + w.numel()));
  }
}

}  // namespace usp::ch10
