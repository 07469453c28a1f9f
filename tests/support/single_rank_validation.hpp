// The reference for the parallel chapters' --eval-every: the single-rank held-out loss
// (validation_loss.hpp) of full parameters in the single-device flat layout, as chapters 01 and
// 03 evaluate it.
#pragma once
#include <cstdint>
#include <vector>

#include "common/data/dataset.hpp"
#include "common/model/model.hpp"
#include "common/train/training_flags.hpp"
#include "common/train/validation_loss.hpp"

namespace usp::testing {

inline double single_rank_validation(const TrainingConfig& cfg, const std::vector<float>& params, const Dataset& data,
                                     std::int64_t batches) {
  ParamStore p(cfg.model, cfg.dtype);
  p.flat().copy_from(Tensor::from_floats(params, {p.numel()}, cfg.dtype));
  Model m(p, cfg.model_options());
  return validation_loss(m, data, batches, cfg.mbs, cfg.seq);
}

}  // namespace usp::testing
