// Exercise 03.1: gradient accumulation, k micro-batches and one optimizer step. The contract is
// in chapters/03_grad_accumulation/accumulation.hpp; the lesson
// (chapters/03_grad_accumulation/README.md, "The loop") gives the idea and the questions.
// Check it with: ./usp test 03.1 --exercises, then run it with ./usp run 03 --exercises
#include "chapters/03_grad_accumulation/accumulation.hpp"

#include "common/error.hpp"

namespace usp::ch03 {

double accumulation_step(Model& /*model*/, AdamW& /*optimizer*/, const std::vector<Batch>& /*micro_batches*/) {
  throw NotImplemented("exercise 03.1: accumulation_step (k micro-batches, one optimizer step)");
}

}  // namespace usp::ch03
