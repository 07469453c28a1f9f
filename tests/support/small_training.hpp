// The training runs the tests make: a hand-sized model (small_model.hpp), short sequences, a few
// steps; everything else TrainingConfig's defaults (the seed, AdamW's settings, f32 on the CPU).
//
//   const TrainingConfig cfg = small_training(small_model({...}), /*seq=*/16, /*mbs=*/2, /*steps=*/3);
#pragma once
#include <cstdint>

#include "common/model/config.hpp"
#include "common/train/training_flags.hpp"

namespace usp::testing {

inline TrainingConfig small_training(const ModelConfig& model, std::int64_t seq, std::int64_t mbs,
                                     std::int64_t steps = TrainingConfig{}.steps) {
  TrainingConfig cfg;
  cfg.model = model;
  cfg.seq = seq;
  cfg.mbs = mbs;
  cfg.steps = steps;
  return cfg;
}

}  // namespace usp::testing
