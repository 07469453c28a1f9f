#include "common/train/rank_model.hpp"

namespace usp {

RankModel build_rank_model(const TrainingConfig& cfg, const StoreLayout& layout, const ModelOptions& options) {
  RankModel m;
  m.store = std::make_unique<ParamStore>(cfg.model, cfg.dtype, cfg.device, layout);
  m.store->init(cfg.seed);
  m.model = std::make_unique<Model>(*m.store, options);
  m.optimizer = std::make_unique<AdamW>(*m.store, cfg.adamw);
  return m;
}

}  // namespace usp
