// ContextParallel: what the decoder needs to change when each sequence is split over the ranks
// of a context-parallel group (chapter 07). Everything in a layer but attention works token by
// token, so it runs unchanged on a rank's share of the tokens; two things need the others':
//   RoPE rotates each token by its position in the WHOLE sequence (positions());
//   attention lets each query see the keys of every earlier token, wherever they live
//   (attention_forward / attention_backward: a ring of K/V blocks, an all-gather of K/V, or an
//   all-to-all that swaps the token split for a head split).
// Shapes: B sequences, T = this rank's tokens of each, H query heads and G kv heads of D.
// Without it (ModelOptions::context_parallel null) the model attends over its own tokens only,
// at positions 0..T-1: the single-device decoder.
#pragma once
#include <cstdint>

#include "common/tensor.hpp"

namespace usp {

class ContextParallel {
 public:
  virtual ~ContextParallel() = default;

  // The positions in the whole sequence of this rank's tokens of each sequence: [T] i32 on the
  // activations' device, or an undefined tensor for 0..T-1 (the whole sequence on this rank).
  virtual const Tensor& positions(std::int64_t tokens) const = 0;

  // Causal attention of this rank's queries over the whole sequence: q [B, T, H, D] (after RoPE),
  // k, v [B, T, G, D] (this rank's tokens) -> out [B, T, H, D] (overwritten). `saved` receives
  // what attention_backward needs besides q, k, v and out (an Activation; e.g. the log-sum-exp of
  // each query row, [B, H, T] f32).
  virtual void attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, Tensor& out, Tensor& saved) = 0;
  // dout [B, T, H, D] -> dq [B, T, H, D] and dk, dv [B, T, G, D] of this rank's tokens (overwritten),
  // including what every other rank's queries contribute to this rank's keys and values.
  virtual void attention_backward(const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v,
                                  const Tensor& out, const Tensor& saved, Tensor& dq, Tensor& dk, Tensor& dv) = 0;
};

}  // namespace usp
