// Which units of the model each virtual stage runs (units: 0 embedding, 1..L decoder layers,
// L+1 final norm + head; see ModelOptions::stage).
//
// S virtual stages share the L layers as evenly as they can: every stage gets floor(L / S)
// layers and the first L mod S stages one more (so stage 0, which also embeds the tokens, is
// never lighter than the last one, which computes the head and the loss). Stage 0 adds the
// embedding, stage S-1 the head:
//   L = 6, S = 4:  stage 0 = units 0..2 (embedding, layers 0-1)   stage 1 = units 3..4
//                  stage 2 = unit 5                               stage 3 = units 6..7 (layer 5, head)
// The embedding and the head are not layers: on a small vocabulary they are cheap, on Llama's
// 128k vocabulary the head alone costs about as much as several layers (the playbook's reason
// for giving the last stage fewer layers); the split here keeps to layers and says so.
#pragma once
#include <string>
#include <vector>

#include "common/model/config.hpp"

namespace usp::ch08 {

struct UnitRange {
  int first = 0, last = 0;  // inclusive
};

// The decoder layers among a range's units (the embedding and the head are not layers).
int layers_in(const UnitRange& r, const ModelConfig& model);

// The units of each of num_stages virtual stages. UsageError when there are fewer layers than
// stages (a stage without a layer is not a pipeline stage) or the embeddings are tied (the head
// on the last stage would read the embedding on the first: untie them, --tied off).
std::vector<UnitRange> split_units(const ModelConfig& model, int num_stages);

// "units 0..2 (embedding, layers 0-1)".
std::string describe(const UnitRange& r, const ModelConfig& model);

}  // namespace usp::ch08
