// AttentionHook: the two things of a decoder layer that read other tokens — RoPE's positions and
// the attention — as one interface the model calls (ModelOptions::attention), so a chapter can
// change where the tokens are and how attention runs over them without touching the layer:
//   chapter 07 splits each sequence over a context-parallel group: RoPE rotates each token by its
//     position in the WHOLE sequence (positions()), and attention lets each query see the keys of
//     every earlier token, wherever they live (a ring of K/V blocks, an all-gather of K/V, or an
//     all-to-all that swaps the token split for a head split);
//   chapter 12 keeps the sequence on one device and runs flash attention (no [T, T] probabilities);
//   generation's KvCache (kv_cache.hpp) splits a sequence over time: each new token's position,
//     attention over the cached keys.
// Everything else in a layer works token by token, so it runs unchanged on the tokens here.
// Shapes: B sequences, T = the tokens of each held here, H query heads and G kv heads of D.
// Without one (ModelOptions::attention null) the model attends over its own tokens only, at
// positions 0..T-1, with the ops' attention: the single-device decoder.
#pragma once
#include <cstdint>

#include "common/tensor.hpp"

namespace usp {

class AttentionHook {
 public:
  virtual ~AttentionHook() = default;

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
