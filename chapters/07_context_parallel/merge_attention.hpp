// Exercise 07.1: merging partial attention results by their log-sum-exp, and the gradient of the
// merge. Implemented in solutions/07_context_parallel/merge_attention.cpp; stubs in
// exercises/07_context_parallel/.
//
// Attention over a set of keys can be computed block by block: a block b of keys gives, for each
// query row, the softmax over ITS keys only, out_b = Σ_j∈b e^(s_j - lse_b)·v_j, and
// lse_b = log Σ_j∈b e^(s_j) (ops::attention_block_forward). The softmax over all the keys is then
//   lse = log Σ_b e^(lse_b)         out = Σ_b w_b · out_b,   w_b = e^(lse_b - lse)
// and merging two at a time gives the same: (out, lse) ⊕ (out_b, lse_b). A block with no visible
// key for a row has lse_b = -inf (weight 0); a row that has seen nothing yet has lse = -inf too.
//
// Backward: out depends on out_b (through w_b·out_b) and on lse_b (through every weight), so
//   ∂L/∂out_b = w_b · dout
//   ∂L/∂lse_b = w_b · (rowsum(dout ∘ out_b) - rowsum(dout ∘ out))
// which the block's own backward (ops::attention_block_backward, from dout_b and dlse_b) turns
// into dq, dk, dv.
//
// Shapes: out, out_b, dout [B, T, H, D] (f32 or bf16; computed in fp32), lse, lse_b, dlse_b
// [B, H, T] f32 (row (b, h, t) of lse belongs to out[b, t, h, :]).
#pragma once
#include "common/tensor.hpp"

namespace usp::ch07 {

// (out, lse) <- (out, lse) ⊕ (block_out, block_lse), in place. Rows where both lse are -inf stay
// out = 0, lse = -inf; never NaN.
void merge_partial_attention(Tensor& out, Tensor& lse, const Tensor& block_out, const Tensor& block_lse);

// The gradient of the merged (out, lse) with respect to one block's (block_out, block_lse), given
// dout (the gradient of the final out; the final lse feeds nothing else): dblock_out and
// dblock_lse are overwritten. Rows where block_lse is -inf get zeros.
void merge_partial_attention_backward(const Tensor& dout, const Tensor& out, const Tensor& lse,
                                      const Tensor& block_out, const Tensor& block_lse, Tensor& dblock_out,
                                      Tensor& dblock_lse);

}  // namespace usp::ch07
