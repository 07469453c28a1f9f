// A rank's model and its optimizer, built alike by the trainers that hold one model each
// (chapters 06, 07, 09; 12-14 on one device, StoreLayout{}): the rank's share of the parameters
// (`layout`: a TP or an EP shard, or the whole model), initialised from cfg.seed by the counter-based init of params.hpp (each
// shard by itself: the whole model never exists on a rank that holds a shard), the model over
// them with the chapter's hooks (`options`), and AdamW over all of the rank's parameters.
#pragma once
#include <memory>

#include "common/model/model.hpp"
#include "common/model/params.hpp"
#include "common/optim/adamw.hpp"
#include "common/train/training_flags.hpp"

namespace usp {

struct RankModel {
  std::unique_ptr<ParamStore> store;
  std::unique_ptr<Model> model;
  std::unique_ptr<AdamW> optimizer;
};

RankModel build_rank_model(const TrainingConfig& cfg, const StoreLayout& layout, const ModelOptions& options);

}  // namespace usp
