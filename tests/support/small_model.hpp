// The hand-sized models the tests build: sizes that are not powers of two, GQA, odd shapes
// that make every term of a formula visible. A fixture names the ModelConfig fields it chooses
// (the others keep ModelConfig's defaults) and gets the config validated:
//
//   const ModelConfig c = small_model({.name = "gradcheck", .vocab = 19, .hidden = 16, .layers = 2,
//                                      .heads = 4, .kv_heads = 2, .ffn = 20, .max_seq = 64});
#pragma once
#include "common/model/config.hpp"

namespace usp::testing {

// c, checked: throws UsageError, as ModelConfig::validate does, for a shape the model cannot run.
inline ModelConfig small_model(ModelConfig c) {
  c.validate();
  return c;
}

}  // namespace usp::testing
