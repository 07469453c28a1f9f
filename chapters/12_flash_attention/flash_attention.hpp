// Flash attention on the CPU: the whole of softmax(q·kᵀ/√d)·v computed tile by tile, without the
// [T, T] scores or probabilities ever existing (Dao et al. 2022; the loop order of FlashAttention-2).
//
// Shapes as the model's attention: q [B, T, H, D], k, v [B, T, G, D] (query head h reads kv head
// h / (H/G)), out [B, T, H, D], lse [B, H, T] f32 = log Σ_j exp(s_ij) per query row: what backward
// needs instead of the probabilities. Any float dtype in; fp32 arithmetic.
//
// Forward, per (batch, query head) and query tile of q_rows rows (FA2: the query tile is the
// outer loop, so a GPU gives each tile its own thread block):
//     flash_query_tile(q_tile, k, v of the kv head, ...)  exercise 12.1: over the key tiles of
//         k_cols keys, the online softmax, the final normalisation and the lse
// Backward, per (batch, query head) and key tile of k_cols keys (the outer loop: its dk, dv stay
//     in the tile):  key_tile_backward(k, v tiles, q, out, dout, dq of the head, ...)  exercise
//     12.2: over the query tiles of q_rows queries that see it, from the saved lse and
//     delta = rowsum(dout ∘ out), recomputing the tile's probabilities.
// Memory beyond the inputs and outputs: the tiles — O(q_rows·k_cols + (q_rows + k_cols)·D) floats
// (the forward reads k and v in place),
// whatever T is (Temporary tensors, so the tracker shows it).
#pragma once
#include <cstdint>

#include "common/tensor.hpp"

namespace usp::ch12 {

struct FlashTiles {
  std::int64_t q_rows = 64;  // queries per tile (B_r)
  std::int64_t k_cols = 64;  // keys per tile (B_c)
};

// out and lse are overwritten. UsageError for shapes that do not match or tiles < 1.
void flash_attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, FlashTiles tiles,
                             Tensor& out, Tensor& lse);
// dq, dk, dv are overwritten.
void flash_attention_backward(const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v,
                              const Tensor& out, const Tensor& lse, bool causal, FlashTiles tiles, Tensor& dq,
                              Tensor& dk, Tensor& dv);

}  // namespace usp::ch12
