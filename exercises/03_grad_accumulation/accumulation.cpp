// Exercise 03.1: gradient accumulation.
//
// Read chapters/03_grad_accumulation/README.md ("The loop") first. Then replace the throw:
//   1. clear the gradients once (model.params().zero_grad()),
//   2. for each micro-batch: loss = model.forward(inputs, targets); model.backward(1/k),
//   3. step the optimizer once (optimizer.step(model.params())),
//   4. return the mean of the k losses.
// Check your work with: ./usp test 03 --exercises
#include "chapters/03_grad_accumulation/accumulation.hpp"

#include "common/error.hpp"

namespace usp::ch03 {

double accumulation_step(Model& model, AdamW& optimizer, const std::vector<Batch>& micro_batches) {
  (void)model;
  (void)optimizer;
  (void)micro_batches;
  throw NotImplemented(
      "exercise 03.1: the accumulation loop — zero the gradients, forward + backward(1/k) per "
      "micro-batch, one optimizer step, return the mean loss");
}

}  // namespace usp::ch03
