// Exercise 05.1: the ZeRO-1 step.
//
// Every rank holds the full parameters and, after its backward passes, its full LOCAL gradient,
// both in flat buffers padded to N_d·S elements (shard_layout.hpp). Its optimizer (AdamW over
// the flat range [r·S, r·S + owned)) holds the Adam states of its shard only: that is the 1/N_d
// of ZeRO-1. One step is then three moves:
//
//   grads [N_d·S] ──reduce-scatter (average)──> reduced [S]    rank r: chunk r of the mean gradient
//   params[r·S, r·S + owned) ──AdamW step_range(reduced[0, owned))──> updated shard
//   params [r·S, (r+1)·S) ──all-gather──> params [N_d·S]       every rank: all updated shards
//
// The two collectives move as many bytes as data parallelism's one all-reduce (which IS a
// reduce-scatter followed by an all-gather), so ZeRO-1 saves memory at no extra communication.
#pragma once
#include "common/comm/communicator.hpp"
#include "common/model/params.hpp"
#include "common/optim/adamw.hpp"
#include "chapters/05_zero/shard_layout.hpp"

namespace usp::ch05 {

// dp: the data-parallel group (N_d = dp.size(), r = dp.rank()).
// params: a store whose flat buffers are padded to a multiple of N_d (StoreLayout::pad_to), so
//   params.padded_flat() is [N_d·S]; it holds the parameters before the step, and every rank's
//   updated values after it.
// optimizer: AdamW over [r·S, r·S + owned) (the real elements of this rank's shard).
// grads: this rank's local gradient, laid out like params.padded_flat() ([N_d·S], f32 or the
//   parameter dtype): the store's padded gradient, or an fp32 accumulation buffer.
// reduced: [S], grads' dtype: receives this rank's shard of the gradient averaged over the ranks.
void zero1_step(Communicator& dp, ParamStore& params, AdamW& optimizer, const Tensor& grads, Tensor& reduced);

}  // namespace usp::ch05
