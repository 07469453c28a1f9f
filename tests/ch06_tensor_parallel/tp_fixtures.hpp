// What chapter 06's tests train: a model every t in {1, 2, 4} splits (heads, kv heads, ffn,
// vocabulary), with grouped-query attention (2 query heads per kv head) and a vocabulary larger
// than anything else a step allocates; and the layouts a world of W ranks can run.
#pragma once
#include <vector>

#include "chapters/06_tensor_parallel/tp_layout.hpp"
#include "common/train/training_flags.hpp"
#include "tests/support/small_model.hpp"
#include "tests/support/small_training.hpp"

namespace usp::testing {

inline ModelConfig tp_model() {
  return small_model({.name = "tp-test", .vocab = 256, .hidden = 32, .layers = 2, .heads = 8, .kv_heads = 4, .ffn = 48});
}

inline TrainingConfig tp_training() { return small_training(tp_model(), /*seq=*/16, /*mbs=*/2, /*steps=*/3); }

// tp = W without and with sequence parallelism, and on 4 ranks dp 2 × tp 2 each way.
inline std::vector<ch06::TpLayout> layouts_for(int W) {
  std::vector<ch06::TpLayout> out = {{1, W, false}};
  if (W > 1) out.push_back({1, W, true});
  if (W == 4) out.push_back({2, 2, false}), out.push_back({2, 2, true});
  return out;
}

}  // namespace usp::testing
