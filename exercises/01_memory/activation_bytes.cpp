// Exercise 01.1: the bytes one decoder layer keeps for backward (Recompute::none).
//
// The contract is in chapters/01_memory/activation_bytes.hpp; the idea is in
// chapters/01_memory/README.md ("What a layer keeps"). Replace the throw with your code.
// Check it with: ./usp test 01 --exercises, then see it next to the measurement with
// ./usp run 01 --exercises
#include "chapters/01_memory/activation_bytes.hpp"

#include "common/error.hpp"

namespace usp::ch01 {

std::int64_t layer_activation_bytes(const ModelConfig& config, std::int64_t b, std::int64_t s, DType activation) {
  (void)config;
  (void)b;
  (void)s;
  (void)activation;
  throw NotImplemented(
      "exercise 01.1: a layer's activation bytes (hint: every tensor the layer's backward reads was "
      "kept by its forward; count each one's elements and element size)");
}

}  // namespace usp::ch01
