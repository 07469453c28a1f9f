// Exercise 05.1: the ZeRO-1 step.
//
// The contract is in chapters/05_zero/zero1_step.hpp; the idea is in chapters/05_zero/README.md
// ("ZeRO-1"). Replace the throw with your code.
// Check it with: ./usp test 05 --exercises, then run it with ./usp run 05 --exercises
#include "chapters/05_zero/zero1_step.hpp"

#include "common/error.hpp"

namespace usp::ch05 {

void zero1_step(Communicator& dp, ParamStore& params, AdamW& optimizer, const Tensor& grads, Tensor& reduced) {
  (void)dp;
  (void)params;
  (void)optimizer;
  (void)grads;
  (void)reduced;
  throw NotImplemented(
      "exercise 05.1: the ZeRO-1 step (hint: a rank needs the mean gradient of its shard only, and "
      "every rank needs every updated shard)");
}

}  // namespace usp::ch05
