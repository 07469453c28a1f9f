// Exercise 01.1: the bytes one decoder layer keeps for backward (Recompute::none).
//
// Read chapters/01_memory/README.md ("What a layer keeps") and the LayerSaved struct in
// common/model/model.cpp. Then replace the throw with a sum over the saved tensors:
//   tokens = b·s; es = dtype_size(activation); the two 1/rms vectors are always fp32;
//   the attention probabilities are per sample and per head: s × s each.
// Check your work with: ./usp test 01 --exercises
#include "chapters/01_memory/activation_bytes.hpp"

#include "common/error.hpp"

namespace usp::ch01 {

std::int64_t layer_activation_bytes(const ModelConfig& config, std::int64_t b, std::int64_t s, DType activation) {
  (void)config;
  (void)b;
  (void)s;
  (void)activation;
  throw NotImplemented(
      "exercise 01.1: a layer's activation bytes — add up x, h1, q, k, v, the attention probabilities, "
      "the attention output, x2, h2, g, u, z and the two fp32 rstd vectors");
}

}  // namespace usp::ch01
