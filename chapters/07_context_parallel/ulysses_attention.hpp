// UlyssesAttention: context-parallel attention by swapping the token split for a head split
// (DeepSpeed-Ulysses, Jacobs et al. 2023). Shapes: W ranks, B sequences, T tokens per rank, H
// query heads and G kv heads of D (W divides H and G).
//
// forward   an all-to-all sends rank j the heads [j·H/W, (j+1)·H/W) of this rank's tokens and
//           receives this rank's heads of every rank's tokens: q [B, T, H, D] -> [B, W·T, H/W, D]
//           (rank i's tokens at rows [i·T, (i+1)·T), at their positions in the sequence, so
//           zig-zag needs nothing more); the same for k and v (G/W heads). Then ordinary causal
//           attention over the whole sequence for those heads (one ops::attention_block_forward at
//           the tokens' positions), and the inverse all-to-all of the output.
//           Keeps the log-sum-exp of its heads' rows ([B, H/W, W·T] f32, an Activation).
// backward  the all-to-alls of dout, out, q, k and v to the head split (nothing else kept), the
//           attention's backward, and the inverse all-to-alls of dq, dk, dv.
// Memory: the whole sequence for H/W heads (the same bytes as the rank's own tokens for all heads).
// Communication per layer and micro-batch: forward 4 all-to-alls (q, k, v, out), backward 8 (dout,
// out, q, k, v there; dq, dk, dv back); each rank sends (W-1)/W of each tensor. The attention
// cannot start before its all-to-alls: no overlap, as with the all-gather.
#pragma once
#include "chapters/07_context_parallel/cp_attention.hpp"

namespace usp::ch07 {

class UlyssesAttention final : public CpAttentionBase {
 public:
  UlyssesAttention(Communicator& cp, CpSharding sharding);

  void attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, Tensor& out, Tensor& saved) override;
  void attention_backward(const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                          const Tensor& saved, Tensor& dq, Tensor& dk, Tensor& dv) override;

 private:
  // x [B, T, X, D] (this rank's tokens, all X heads) -> [B, W·T, X/W, D] f32 (every rank's tokens,
  // this rank's X/W heads), and back (into `into`, converting to its dtype).
  Tensor to_heads(const Tensor& x);
  void to_tokens(const Tensor& y, Tensor& into);
};

}  // namespace usp::ch07
