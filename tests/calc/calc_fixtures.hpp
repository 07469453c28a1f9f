// The small model the calculator's cross-checks run for real: GQA (6 query heads over 2 kv
// heads) with sizes that are not powers of two, so every term of a formula is visible.
#pragma once
#include <string>

#include "common/model/config.hpp"
#include "tests/support/small_model.hpp"

namespace usp {

inline ModelConfig small_gqa_model(const std::string& name) {
  return testing::small_model(
      {.name = name, .vocab = 23, .hidden = 24, .layers = 2, .heads = 6, .kv_heads = 2, .ffn = 40, .max_seq = 64});
}

}  // namespace usp
