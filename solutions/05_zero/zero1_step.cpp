// Exercise 05.1, the reference solution: the ZeRO-1 step.
#include "chapters/05_zero/zero1_step.hpp"

#include <cmath>
#include <string>

#include "common/error.hpp"

namespace usp::ch05 {

namespace {

std::string range(std::int64_t begin, std::int64_t end) {
  return "[" + std::to_string(begin) + ", " + std::to_string(end) + ")";
}

// Everything is checked before the first collective: a rank that throws inside one would leave
// the others waiting. The sizes are the same on every rank, so every rank throws alike.
Shard checked_shard(const Communicator& dp, const FlatParams& params, const AdamW& optimizer, const Tensor& grads,
                    const Tensor& reduced) {
  const std::int64_t padded = params.padded_numel(), ranks = dp.size();
  if (padded % ranks != 0)
    throw Error("zero1_step: P = " + std::to_string(padded) + " padded parameters do not split into N_d = " +
                std::to_string(ranks) + " shards");
  if (grads.numel() != padded)
    throw Error("zero1_step: grads has " + std::to_string(grads.numel()) + " elements, the padded parameters " +
                std::to_string(padded));
  // The padded size, not the real one, decides S: a store padded beyond ceil(Ψ / N_d)·N_d still
  // splits into N_d equal chunks, and every chunk but the real elements is padding.
  Shard s = shard_of(padded, dp.size(), dp.rank());
  s.owned = std::clamp<std::int64_t>(params.numel() - s.begin, 0, s.size);
  if (reduced.numel() != s.size)
    throw Error("zero1_step: reduced has " + std::to_string(reduced.numel()) + " elements, a shard " +
                std::to_string(s.size));
  if (reduced.dtype() != grads.dtype())
    throw Error(std::string("zero1_step: reduced is ") + dtype_name(reduced.dtype()) + ", grads " +
                dtype_name(grads.dtype()));
  if (optimizer.begin() != s.begin || optimizer.end() != s.owned_end())
    throw Error("zero1_step: the optimizer covers " + range(optimizer.begin(), optimizer.end()) + ", rank " +
                std::to_string(dp.rank()) + " owns " + range(s.begin, s.owned_end()));
  return s;
}

}  // namespace

double zero1_step(Communicator& dp, FlatParams params, AdamW& optimizer, const Tensor& grads, Tensor& reduced) {
  const Shard shard = checked_shard(dp, params, optimizer, grads, reduced);
  Tensor& flat = params.padded_flat();

  // Chunk r of the gradient, averaged over the ranks: half of an all-reduce. Whatever the
  // padding of grads held, its average is no gradient: the shard's tail is cleared.
  dp.reduce_scatter(grads, reduced, ReduceOp::avg);
  if (shard.owned < shard.size) reduced.slice(shard.owned, shard.size).zero();

  // The norm: each rank sums the squares of its real elements, the ranks add their sums.
  double local = 0;
  for (const float g : reduced.slice(0, shard.owned).to_floats()) local += static_cast<double>(g) * g;
  Tensor sum = Tensor::from_floats({static_cast<float>(local)}, {1}).to(reduced.device());
  dp.all_reduce(sum, ReduceOp::sum);

  // Adam on the real elements of the shard (the padding has no optimizer state). A rank that
  // owns nothing skips the update but not the gather below.
  if (shard.owned > 0) optimizer.step_range(flat.slice(shard.begin, shard.owned_end()), reduced.slice(0, shard.owned));

  // Every rank's updated shard to every rank: the other half of the all-reduce. The input is this
  // rank's slot of the output, so the communicator gathers in place.
  dp.all_gather(flat.slice(shard.begin, shard.end()), flat);
  return std::sqrt(static_cast<double>(sum.to_floats()[0]));
}

}  // namespace usp::ch05
