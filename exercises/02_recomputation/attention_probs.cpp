// Exercise 02.1: the attention probabilities, made in the forward and rebuilt in backward.
//
// The contract is in chapters/02_recomputation/attention_probs.hpp; the idea is in
// chapters/02_recomputation/README.md ("Exercise 02.1"). Replace the throw with your code.
// Check it with: ./usp test 02 --exercises, then see it measured with ./usp run 02 --exercises
#include "chapters/02_recomputation/attention_probs.hpp"

#include "common/error.hpp"

namespace usp::ch02 {

void attention_probs(const Tensor& q, const Tensor& k, Tensor& probs) {
  (void)q;
  (void)k;
  (void)probs;
  throw NotImplemented(
      "exercise 02.1: the causal attention probabilities softmax(q·kᵀ/√D) per sample, head and query "
      "(hint: a query reads only keys at or before its position; subtract the row's largest score "
      "before exp)");
}

}  // namespace usp::ch02
