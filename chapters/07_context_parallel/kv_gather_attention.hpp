// KvGatherAttention: context-parallel attention by gathering the whole sequence's keys and values
// on every rank (Llama 3's choice). Shapes: W ranks, B sequences of W·T tokens, each rank holding
// T tokens of each (cp_layout.hpp), H query heads and G kv heads of D; e = the activations' bytes.
//
// forward   all-gather k and v: [B, T, G, D] per rank -> K, V [B, W·T, G, D] (each sequence's
//           rows gathered straight into place: rank w's tokens at rows [w·T, (w+1)·T), at the
//           positions rank_positions gives rank w, so zig-zag needs nothing more), then ONE block
//           of attention of the rank's queries against them (ops::attention_block_forward at the
//           tokens' positions: the causal mask across the chunks comes from the positions).
//           Keeps the log-sum-exp of each query row ([B, H, T] f32, an Activation) for backward.
// backward  gathers K and V again (they were Temporaries, freed at the end of the forward), runs
//           the block's backward into dq and dK, dV [B, W·T, G, D] (every rank's keys: this
//           rank's queries' share of their gradient), and reduce-scatters dK, dV so that each
//           rank receives the sum over all queries for its own keys.
// Memory: while it computes, a rank holds the whole sequence's K and V, 2·B·W·T·G·D·e bytes
// (W times its own; the ring holds 2 blocks), plus in backward dK and dV in f32.
// Communication per layer and micro-batch (each is one collective per sequence of the batch, B
// calls carrying the bytes one call of the whole batch would): forward 2 all-gathers of
// B·W·T·G·D·e bytes; backward 2 more, and 2 reduce-scatters of B·W·T·G·D·4 bytes. A rank sends
// (W-1)/W of each. Nothing overlaps: the attention needs the whole gather first.
#pragma once
#include <cstdint>

#include "chapters/07_context_parallel/cp_attention.hpp"

namespace usp::ch07 {

class KvGatherAttention final : public CpAttentionBase {
 public:
  KvGatherAttention(Communicator& cp, CpSharding sharding);

  void attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, Tensor& out, Tensor& saved) override;
  void attention_backward(const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                          const Tensor& saved, Tensor& dq, Tensor& dk, Tensor& dv) override;

 private:
  // x [B, T, G, D] of every rank -> [B, W·T, G, D] (a Temporary), rank w's at rows [w·T, (w+1)·T).
  Tensor gather_sequence(const Tensor& x);
};

}  // namespace usp::ch07
