// Exercise 01.1: the bytes one decoder layer keeps for backward, for every recomputation mode.
// The contract is in chapters/01_memory/activation_bytes.hpp; the lesson
// (chapters/01_memory/README.md, "What a layer keeps") gives the idea and the questions.
// Check it with: ./usp test 01.1 --exercises, then see it next to the measurement with
// ./usp run 01 --exercises
#include "chapters/01_memory/activation_bytes.hpp"

#include "common/error.hpp"

namespace usp::ch01 {

std::int64_t layer_activation_bytes(const ModelConfig& /*config*/, std::int64_t /*b*/, std::int64_t /*s*/,
                                    DType /*activation*/, Recompute /*recompute*/) {
  throw NotImplemented("exercise 01.1: layer_activation_bytes (what one layer keeps for its backward)");
}

std::int64_t head_activation_bytes(const ModelConfig& /*config*/, std::int64_t /*b*/, std::int64_t /*s*/,
                                   DType /*activation*/) {
  throw NotImplemented("exercise 01.1: head_activation_bytes (what the head keeps for its backward)");
}

}  // namespace usp::ch01
