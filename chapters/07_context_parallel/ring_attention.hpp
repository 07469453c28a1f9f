// RingAttention: context-parallel attention with K/V blocks travelling around the ring of ranks
// (Liu et al. 2023, "Ring Attention"). Shapes: W ranks, B sequences, T tokens per rank in its
// chunks (cp_layout.hpp: 1 chunk contiguous, 2 zig-zag, each L = T / chunks tokens), H query
// heads and G kv heads of D; e = the activations' bytes.
//
// forward   out = 0 and lse = -inf for every query row; the rank starts with its own K/V. At step
//           i = 0 .. W-1 it holds the K/V of rank (r - i) mod W: it posts the send of that block
//           to rank r+1 and the receive of the next from rank r-1, then, while they travel,
//           computes the step's blocks (ring_step_blocks, exercise 07.2) — each one
//           ops::attention_block_forward of a query chunk against a key chunk at their positions —
//           merging each partial (out_b, lse_b) into its query chunk's rows (exercise 07.1).
//           Keeps lse [B, H, T] f32 (an Activation) for backward; out is the layer's own.
// backward  the ring again, the K/V prefetched the same way; with each block travels its dK/dV
//           accumulator (f32), which every rank adds its queries' share to before passing it on,
//           so after W-1 hops every rank has added, and one more hop brings it home. For each
//           block the rank recomputes (out_b, lse_b), turns the final out's gradient into the
//           block's (merge_partial_attention_backward) and runs the block's backward
//           (ops::attention_block_backward).
// Memory: the rank's own K/V plus the block in flight (2 blocks); in backward also the
// travelling dK/dV (f32) in and out.
// Communication per layer and micro-batch (every message B·T·G·D elements): forward 2(W-1)
// sends (k and v), backward 2(W-1) sends of k and v and 2W of dk and dv in f32 (none at W = 1).
// Each step's compute is traced as "ring step i" on the compute lane: the trace shows the next
// block's transfer running under it.
#pragma once
#include "chapters/07_context_parallel/cp_attention.hpp"

namespace usp::ch07 {

class RingAttention final : public CpAttentionBase {
 public:
  RingAttention(Communicator& cp, CpSharding sharding);

  void attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, Tensor& out, Tensor& saved) override;
  void attention_backward(const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                          const Tensor& saved, Tensor& dq, Tensor& dk, Tensor& dv) override;
};

}  // namespace usp::ch07
