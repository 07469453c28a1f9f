// The small model the calculator's cross-checks run for real: GQA (6 query heads over 2 kv
// heads) with sizes that are not powers of two, so every term of a formula is visible.
#pragma once
#include <string>

#include "common/model/config.hpp"

namespace usp {

inline ModelConfig small_gqa_model(const std::string& name) {
  ModelConfig cfg;
  cfg.name = name;
  cfg.vocab = 23;
  cfg.hidden = 24;
  cfg.layers = 2;
  cfg.heads = 6;
  cfg.kv_heads = 2;
  cfg.ffn = 40;
  cfg.max_seq = 64;
  return cfg;
}

}  // namespace usp
