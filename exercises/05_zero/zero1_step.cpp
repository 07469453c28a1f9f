// Exercise 05.1: the ZeRO-1 step. The contract is in chapters/05_zero/zero1_step.hpp; the lesson
// (chapters/05_zero/README.md, "ZeRO-1 — exercise 05.1") gives the idea and the questions.
// Useful: shard_layout.hpp (the shard arithmetic), the Communicator's collectives
// (common/comm/communicator.hpp), AdamW::step_range (common/optim/adamw.hpp).
// Check it with: ./usp test 05.1 --exercises, then run it with ./usp run 05 --exercises
#include "chapters/05_zero/zero1_step.hpp"

#include "common/error.hpp"

namespace usp::ch05 {

double zero1_step(Communicator& /*dp*/, FlatParams /*params*/, AdamW& /*optimizer*/, const Tensor& /*grads*/,
                  Tensor& /*reduced*/) {
  throw NotImplemented("exercise 05.1: zero1_step (the ZeRO-1 step)");
}

}  // namespace usp::ch05
