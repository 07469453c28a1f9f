#include "chapters/08_pipeline_parallel/stage_params.hpp"

#include <algorithm>

#include "common/error.hpp"

namespace usp::ch08 {

StageParams::StageParams(const TrainingConfig& cfg, const std::vector<UnitRange>& ranges, TpShard tp, EpShard ep,
                         bool with_optimizer) {
  store_ = std::make_unique<ParamStore>(cfg.model, cfg.dtype, cfg.device,
                                        StoreLayout{Residency::per_unit, Residency::per_unit, 1, tp, ep});
  for (const UnitRange& r : ranges)
    for (int u = r.first; u <= r.last; ++u) units_.push_back(u);
  std::sort(units_.begin(), units_.end());
  USP_CHECK(std::adjacent_find(units_.begin(), units_.end()) == units_.end(),
            "StageParams: a unit belongs to two of this rank's stages");
  for (int u : units_) {
    store_->materialize_params(u);
    store_->materialize_grads(u);
    const auto [begin, end] = store_->unit_range(u);
    Tensor& values = store_->unit_params(u);  // [end - begin] (no padding)
    store_->init_range(cfg.seed, begin, end, values);
    if (with_optimizer) optimizers_.push_back(std::make_unique<AdamW>(store_->infos(), cfg.adamw, begin, end, values));
  }
}

StageParams::~StageParams() = default;

void StageParams::average_grads(Communicator& dp) {
  if (dp.size() == 1) return;
  for (int u : units_) dp.all_reduce(store_->unit_grads(u), ReduceOp::avg);
}

void StageParams::step() {
  USP_CHECK(optimizers_.size() == units_.size(), "StageParams::step: built without an optimizer");
  for (std::size_t i = 0; i < units_.size(); ++i)
    optimizers_[i]->step_range(store_->unit_params(units_[i]), store_->unit_grads(units_[i]));
}

std::int64_t StageParams::numel() const {
  std::int64_t n = 0;
  for (int u : units_) {
    const auto [begin, end] = store_->unit_range(u);
    n += end - begin;
  }
  return n;
}

}  // namespace usp::ch08
