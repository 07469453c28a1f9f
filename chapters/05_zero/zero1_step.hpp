// Exercise 05.1: the ZeRO-1 step — everything between the backward passes and the next forward.
//
// Every rank holds the full parameters and, after its backward passes, its full LOCAL gradient,
// both in flat buffers padded to N_d·S elements (shard_layout.hpp): rank r owns [r·S, (r+1)·S), of
// which the first `owned` (0 to S) are real parameters. "The parameters" are any such flat vector
// (FlatParams): this chapter's whole ParamStore, or what chapter 10's 5D trainer packs of the units
// one pipeline stage holds, sharded over that stage's data-parallel group. A rank's optimizer holds
// the Adam states of the real elements of its shard only: that is the 1/N_d of ZeRO-1. Which data moves
// where, and how, is the exercise (the chapter's README, "ZeRO-1", asks the questions).
#pragma once
#include <cstdint>
#include <utility>

#include "chapters/05_zero/shard_layout.hpp"
#include "common/comm/communicator.hpp"
#include "common/model/params.hpp"
#include "common/optim/adamw.hpp"

namespace usp::ch05 {

// The parameters as one flat vector: `padded` [P] holds the Ψ = `real` parameters, then zeros.
// A ParamStore with flat parameters converts to one (padded_flat(), numel()). Views, not owned.
struct FlatParams {
  Tensor padded;         // [P], a view of the caller's buffer: the step writes through it
  std::int64_t real = 0; // Ψ
  FlatParams(Tensor padded_values, std::int64_t real_count) : padded(std::move(padded_values)), real(real_count) {}
  FlatParams(ParamStore& store) : padded(store.padded_flat()), real(store.numel()) {}  // NOLINT: implicit
  std::int64_t numel() const { return real; }
  std::int64_t padded_numel() const { return padded.numel(); }
  Tensor& padded_flat() { return padded; }
};

// Inputs, with N_d = dp.size(), r = dp.rank(), Ψ = params.numel(), P = params.padded_numel():
//   params     a flat vector padded to a multiple of N_d (a ParamStore: StoreLayout::pad_to), P = N_d·S
//              (S = P / N_d: ceil(Ψ / N_d) when pad_to = N_d, more when it is padded further); on entry
//              every rank holds the same parameters; the padding [Ψ, P) holds zeros.
//   optimizer  AdamW meant for this rank's real elements [r·S, r·S + owned).
//   grads      [P], f32 or the parameters' dtype: this rank's local gradient, laid out like
//              params.padded_flat(). Its padding [Ψ, P) holds anything (NaN included): it is not
//              a gradient. Read only.
//   reduced    [S], grads' dtype: a buffer the step may use; see below.
// Outputs, on every rank:
//   params     every real element updated by one AdamW step (optimizer's hyper-parameters and step
//              count) with the gradient AVERAGED over the N_d ranks: the same values, on every
//              rank, as an all-reduce of the gradients followed by a full AdamW step. The padding
//              stays zero.
//   reduced    [0, owned): this rank's shard of the averaged gradient; [owned, S): 0.
//   returns    the L2 norm of the averaged gradient over its Ψ real elements (what a trainer logs
//              or clips by), the same value on every rank; accumulated in double, but no rank holds
//              the whole gradient.
// Communication: no more bytes than data parallelism's one all-reduce of grads, plus O(1).
// A rank whose shard is all padding (owned = 0) still takes part in every collective.
// Errors (usp::Error, thrown before any collective, the message starting with exactly this; every
// rank sees the same sizes, so every rank throws and none is left waiting):
//   "zero1_step: P = <P> padded parameters do not split into N_d = <N_d> shards"
//   "zero1_step: grads has <n> elements, the padded parameters <P>"
//   "zero1_step: reduced has <n> elements, a shard <S>"
//   "zero1_step: reduced is <dtype>, grads <dtype>"                      (dtype_name: f32, bf16)
//   "zero1_step: the optimizer covers [<begin>, <end>), rank <r> owns [<r·S>, <r·S + owned>)"
double zero1_step(Communicator& dp, FlatParams params, AdamW& optimizer, const Tensor& grads, Tensor& reduced);

}  // namespace usp::ch05
