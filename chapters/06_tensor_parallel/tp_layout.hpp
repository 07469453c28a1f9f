// TpLayout: how chapter 06 lays a model over the world's ranks: dp data-parallel replicas, each
// split over tp tensor-parallel ranks (consecutive world ranks, the core Mesh's "tp-cp-dp-pp"
// order: TP peers are neighbours, as they would share a node's NVLink), optionally with sequence
// parallelism.
#pragma once
#include <string>

#include "common/mesh.hpp"
#include "common/model/config.hpp"

namespace usp::ch06 {

struct TpLayout {
  int dp = 1;
  int tp = 1;
  bool sp = false;

  int world() const { return dp * tp; }
  MeshSizes mesh_sizes() const { return {.dp = dp, .tp = tp}; }
  std::string label() const;  // "TP 2", "TP 2 + SP", "DP 2 × TP 2 + SP"
};

// UsageError (the same on every rank) when the layout cannot run: tp·dp is not the world size,
// SP without TP, or t not dividing the heads, kv heads, ffn or vocabulary of the model, or (SP)
// the batch's mbs·seq tokens.
void check_tp_layout(const TpLayout& layout, int world_size, const ModelConfig& model, std::int64_t mbs,
                     std::int64_t seq);

}  // namespace usp::ch06
