// Exercise 07.1: merging partial attention results by their log-sum-exp, and the gradient of
// the merge.
//
// The contract is in chapters/07_context_parallel/merge_attention.hpp; the idea is in
// chapters/07_context_parallel/README.md ("Merging partial results"). Replace the throws with
// your code.
// Check it with: ./usp test 07 --exercises, then run it with ./usp run 07 --exercises
#include "chapters/07_context_parallel/merge_attention.hpp"

#include "common/error.hpp"

namespace usp::ch07 {

void merge_partial_attention(Tensor& out, Tensor& lse, const Tensor& block_out, const Tensor& block_lse) {
  (void)out, (void)lse, (void)block_out, (void)block_lse;
  throw NotImplemented(
      "exercise 07.1: merge_partial_attention (hint: each partial result is a softmax over its own keys; "
      "what weight does its lse give it in the softmax over both?)");
}

void merge_partial_attention_backward(const Tensor& dout, const Tensor& out, const Tensor& lse,
                                      const Tensor& block_out, const Tensor& block_lse, Tensor& dblock_out,
                                      Tensor& dblock_lse) {
  (void)dout, (void)out, (void)lse, (void)block_out, (void)block_lse, (void)dblock_out, (void)dblock_lse;
  throw NotImplemented(
      "exercise 07.1: merge_partial_attention_backward (hint: the block's lse moves every weight, not "
      "only its own)");
}

}  // namespace usp::ch07
