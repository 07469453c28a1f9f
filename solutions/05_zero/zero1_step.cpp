// Solution 05.1: the ZeRO-1 step.
#include "chapters/05_zero/zero1_step.hpp"

#include "common/error.hpp"

namespace usp::ch05 {

void zero1_step(Communicator& dp, ParamStore& params, AdamW& optimizer, const Tensor& grads, Tensor& reduced) {
  Tensor& flat = params.padded_flat();
  const Shard shard = shard_of(params.numel(), dp.size(), dp.rank());
  USP_CHECK(flat.numel() == shard.size * dp.size() && grads.numel() == flat.numel() && reduced.numel() == shard.size,
            "zero1_step: expected params and grads of " + std::to_string(shard.size * dp.size()) +
                " elements (padded to N_d·S) and a reduced buffer of S = " + std::to_string(shard.size));
  // 1. Each rank receives its chunk of the gradient, summed over the ranks and divided by N_d.
  dp.reduce_scatter(grads, reduced, ReduceOp::avg);
  // 2. Adam on the real elements of the shard (the padding has no optimizer state).
  optimizer.step_range(flat.slice(shard.begin, shard.owned_end()), reduced.slice(0, shard.owned));
  // 3. Every rank's updated shard to every rank. The input is this rank's slot of the output,
  //    so the communicator gathers in place.
  dp.all_gather(flat.slice(shard.begin, shard.end()), flat);
}

}  // namespace usp::ch05
