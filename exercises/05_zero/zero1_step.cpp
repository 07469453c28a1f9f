// Exercise 05.1: the ZeRO-1 step.
//
// Read chapters/05_zero/README.md ("ZeRO-1") and zero1_step.hpp first. Then replace the throw:
//   1. const Shard shard = shard_of(params.numel(), dp.size(), dp.rank());
//   2. reduce-scatter `grads` into `reduced` with ReduceOp::avg (rank r gets chunk r of the mean);
//   3. optimizer.step_range(the rank's real elements of params.padded_flat(),
//                           the same number of elements from the start of `reduced`);
//   4. all-gather the rank's shard [shard.begin, shard.end()) of params.padded_flat() into the
//      whole padded_flat() (a slice of a tensor is a view: Tensor::slice).
// Check your work with: ./usp test 05 --exercises
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
      "exercise 05.1: the ZeRO-1 step — reduce-scatter the gradient (average) into this rank's shard, "
      "AdamW step_range on the shard, all-gather the parameters");
}

}  // namespace usp::ch05
