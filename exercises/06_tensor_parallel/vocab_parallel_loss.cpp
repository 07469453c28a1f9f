// Exercise 06.2: cross-entropy over a vocabulary split across the tensor-parallel ranks.
//
// The contract is in chapters/06_tensor_parallel/vocab_parallel_loss.hpp; the idea is in
// chapters/06_tensor_parallel/README.md ("The vocabulary-parallel loss"). Replace the throws
// with your code.
// Check it with: ./usp test 06 --exercises, then run it with ./usp run 06 --exercises
#include "chapters/06_tensor_parallel/vocab_parallel_loss.hpp"

#include "common/error.hpp"

namespace usp::ch06 {

double vocab_parallel_cross_entropy(Communicator& tp, const Tensor& logits, const Tensor& targets,
                                    std::int64_t vocab_begin, Tensor& lse) {
  (void)tp, (void)logits, (void)targets, (void)vocab_begin, (void)lse;
  throw NotImplemented(
      "exercise 06.2: vocab_parallel_cross_entropy (hint: three numbers per row, each a reduction "
      "over the group of what every rank computes on its own columns)");
}

void vocab_parallel_cross_entropy_backward(const Tensor& logits, const Tensor& targets, std::int64_t vocab_begin,
                                           const Tensor& lse, Tensor& dlogits, float scale) {
  (void)logits, (void)targets, (void)vocab_begin, (void)lse, (void)dlogits, (void)scale;
  throw NotImplemented(
      "exercise 06.2: vocab_parallel_cross_entropy_backward (hint: with lse saved, softmax minus one-hot "
      "needs no communication)");
}

}  // namespace usp::ch06
