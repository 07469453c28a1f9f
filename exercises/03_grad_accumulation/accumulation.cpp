// Exercise 03.1: gradient accumulation, k micro-batches and one optimizer step.
//
// The contract is in chapters/03_grad_accumulation/accumulation.hpp; the idea is in
// chapters/03_grad_accumulation/README.md ("The loop"). Replace the throw with your code.
// Check it with: ./usp test 03 --exercises, then run it with ./usp run 03 --exercises
#include "chapters/03_grad_accumulation/accumulation.hpp"

#include "common/error.hpp"

namespace usp::ch03 {

double accumulation_step(Model& model, AdamW& optimizer, const std::vector<Batch>& micro_batches) {
  (void)model;
  (void)optimizer;
  (void)micro_batches;
  throw NotImplemented(
      "exercise 03.1: the accumulation step (hint: the big batch's loss is the mean of the k "
      "micro-batch means, and gradients add up in the store between backward passes)");
}

}  // namespace usp::ch03
