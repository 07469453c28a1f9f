#include "chapters/08_pipeline_parallel/stage_split.hpp"

#include <algorithm>

#include "common/error.hpp"

namespace usp::ch08 {

int layers_in(const UnitRange& r, const ModelConfig& model) {
  const int L = static_cast<int>(model.layers);
  const int lo = std::max(r.first, 1), hi = std::min(r.last, L);
  return std::max(0, hi - lo + 1);
}

std::vector<UnitRange> split_units(const ModelConfig& model, int num_stages) {
  const int L = static_cast<int>(model.layers);
  if (num_stages < 1) throw UsageError("a pipeline needs at least one stage");
  if (L < num_stages)
    throw UsageError("the model has " + std::to_string(L) + " layers for " + std::to_string(num_stages) +
                     " pipeline stages (p · v): every stage needs at least one layer (--layers, or fewer stages)");
  if (num_stages > 1 && model.tied_embeddings)
    throw UsageError("tied embeddings: the head on the last pipeline stage would read the embedding on the first "
                     "(drop --tied)");
  std::vector<UnitRange> out;
  int next_layer = 1;  // unit of the next layer to hand out
  for (int s = 0; s < num_stages; ++s) {
    const int count = L / num_stages + (s < L % num_stages ? 1 : 0);
    UnitRange r{s == 0 ? 0 : next_layer, next_layer + count - 1};
    next_layer += count;
    if (s == num_stages - 1) r.last = L + 1;
    out.push_back(r);
  }
  return out;
}

std::string describe(const UnitRange& r, const ModelConfig& model) {
  const int L = static_cast<int>(model.layers);
  std::string parts;
  if (r.first == 0) parts = "embedding";
  const int lo = std::max(r.first, 1), hi = std::min(r.last, L);
  if (hi >= lo) {
    if (!parts.empty()) parts += ", ";
    parts += hi == lo ? "layer " + std::to_string(lo - 1) : "layers " + std::to_string(lo - 1) + "-" + std::to_string(hi - 1);
  }
  if (r.last == L + 1) parts += parts.empty() ? "head" : ", head";
  return "units " + std::to_string(r.first) + ".." + std::to_string(r.last) + " (" + parts + ")";
}

}  // namespace usp::ch08
