// The hand-sized models the tests build: sizes that are not powers of two, GQA, odd shapes
// that make every term of a formula visible. One place fills a ModelConfig and validates it,
// so a fixture states only the sizes it chooses:
//
//   const ModelConfig c = small_model({.name = "gradcheck", .vocab = 19, .hidden = 16, .layers = 2,
//                                      .heads = 4, .kv_heads = 2, .ffn = 20, .max_seq = 64});
//
// Unnamed fields keep ModelConfig's defaults.
#pragma once
#include <cstdint>
#include <string>

#include "common/model/config.hpp"

namespace usp::testing {

struct SmallModel {
  std::string name = "test";
  std::int64_t vocab = 256;
  std::int64_t hidden = 64;
  std::int64_t layers = 2;
  std::int64_t heads = 4;
  std::int64_t kv_heads = 2;
  std::int64_t ffn = 192;
  std::int64_t max_seq = ModelConfig{}.max_seq;
  double init_std = ModelConfig{}.init_std;
  bool tied = false;
};

// The ModelConfig of shape s (its other fields at their defaults); throws UsageError, as
// ModelConfig::validate does, for a shape the model cannot run.
inline ModelConfig small_model(const SmallModel& s) {
  ModelConfig c;
  c.name = s.name;
  c.vocab = s.vocab;
  c.hidden = s.hidden;
  c.layers = s.layers;
  c.heads = s.heads;
  c.kv_heads = s.kv_heads;
  c.ffn = s.ffn;
  c.max_seq = s.max_seq;
  c.init_std = s.init_std;
  c.tied_embeddings = s.tied;
  c.validate();
  return c;
}

}  // namespace usp::testing
