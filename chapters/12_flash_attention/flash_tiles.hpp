// The two pieces of flash attention that work on plain fp32 arrays of one head — the exercises:
// one query tile's whole forward (12.1) and one key tile's whole backward (12.2). The drivers
// (flash_attention.cpp) loop over batches and heads, copy the tile that stays put (the query
// tile forward, the key and value tiles backward) into a contiguous buffer, pass the rest in place
// with its stride, and call these; everything else about layouts stays there.
//
// Notation for a query tile of `rows` queries and a key tile of `cols` keys, head dim d:
//   s[i][j] = q_i · k_j · scale       (scale = 1/√d), or -inf where key j is masked for query i
//   (causal: the key's position k0 + j is after the query's q0 + i).
#pragma once
#include <cstdint>

namespace usp::ch12 {

// Exercise 12.1 — one query tile's whole forward: the attention of `rows` queries over `keys`
// keys, walking the keys `cols` at a time, so that no more than one [rows, cols] tile of scores
// ever exists (the online softmax: the chapter's README, section 1).
struct QueryTileIn {
  const float* q;  // [rows, d] the query tile, contiguous: queries at positions q0 .. q0 + rows - 1
  const float* k;  // key j (0 .. keys-1, at position k0 + j) is k[j·ld .. j·ld + d)
  const float* v;  // value j likewise: v[j·ld .. j·ld + d)
  float* s;        // [rows, cols] scratch for one tile of scores (contents undefined on entry)
  float* m;        // [rows] scratch (contents undefined on entry)
  float* l;        // [rows] scratch (contents undefined on entry)
  int rows = 0, keys = 0, cols = 0, d = 0;
  std::int64_t ld = 0;  // the row stride of k and v, in floats (>= d: the heads of a token interleave)
  float scale = 1;      // the scores are q_i · k_j · scale
  bool causal = false;  // key j is masked for query i when its position is after the query's: k0 + j > q0 + i
  std::int64_t q0 = 0, k0 = 0;
};
// Writes, overwriting:
//   out [rows, d] contiguous: out_i = Σ_j p_ij · v_j, with p_i the softmax of row i's scores over
//                 its visible keys;
//   lse [rows]:   lse_i = log Σ_j exp(s_ij) over the visible keys (the backward recomputes p from it).
// Invariants: the keys are visited tile by tile, in order, tiles of `cols` keys (the last one may be
// shorter): s holds one tile at a time, m and l one number per row; a causal tile whose keys are
// all after every query of the tile may be skipped (it contributes nothing). Any rows, keys, cols
// >= 1. A row that sees no key at all (causal, q0 + i < k0) gets out_i = 0 and lse_i = -inf,
// never NaN: the ring attention of chapter 07 merges such rows by their lse.
// The products inside a tile are small matrix products: ops::detail::sgemm (common/ops/gemm.hpp,
// OpenBLAS) runs them at the CPU's speed (its lda/ldb arguments take the stride ld); plain loops
// give the same numbers, slower.
void flash_query_tile(const QueryTileIn& in, float* out, float* lse);

// Exercise 12.2 — one key tile's whole backward: the gradients that flow through the `cols` keys
// of one tile, from every query that sees them, walking the queries `rows` at a time (FA2's
// backward: the key tile is the outer loop, so its dk and dv stay in the tile while dq is added
// to in place). The mirror image of 12.1.
struct KeyTileBackwardIn {
  const float* k;     // [cols, d] the key tile, contiguous: keys at positions k0 .. k0 + cols - 1
  const float* v;     // [cols, d] the value tile, contiguous
  const float* q;     // query i (0 .. queries-1, at position q0 + i) is q[i·ld .. i·ld + d)
  const float* out;   // the forward's output row i likewise: out[i·ld .. i·ld + d)
  const float* dout;  // ∂L/∂out row i likewise: dout[i·ld .. i·ld + d)
  const float* lse;   // [queries] contiguous: the forward's lse_i (over ALL keys of row i, not this tile's)
  float* p;           // [rows, cols] scratch (contents undefined on entry)
  float* dp;          // [rows, cols] scratch (contents undefined on entry)
  float* delta;       // [rows] scratch (contents undefined on entry)
  int cols = 0, queries = 0, rows = 0, d = 0;
  std::int64_t ld = 0;  // the row stride of q, out, dout and dq, in floats (>= d: a token's heads interleave)
  float scale = 1;      // the scores were s_ij = q_i · k_j · scale
  bool causal = false;  // key j is masked for query i when k0 + j > q0 + i
  std::int64_t q0 = 0, k0 = 0;
};
struct KeyTileBackwardOut {
  float* dq;  // query i's gradient at dq[i·ld .. i·ld + d): ADDED to (other key tiles add theirs)
  float* dk;  // [cols, d] contiguous: OVERWRITTEN with the tile's whole ∂L/∂k
  float* dv;  // [cols, d] contiguous: OVERWRITTEN with the tile's whole ∂L/∂v
};
// The forward (12.1) computed, for every query row i over its visible keys j,
//   out_i = Σ_j p_ij · v_j,   p_ij = exp(s_ij - lse_i)   (p_ij = 0 where masked),
// and kept only out and lse. Given dout = ∂L/∂out, this call writes
//   dk_j, dv_j = ∂L/∂k_j, ∂L/∂v_j for the tile's keys: the sum over EVERY query i of the terms of
//                the chain rule through p_ij (so the tile's gradients are complete when it returns);
//   dq_i      += the terms of ∂L/∂q_i through this tile's p_ij, for every query i (the caller
//                sums the key tiles).
// Invariants: no [queries, keys] matrix ever exists — p is recomputed from lse, a [rows, cols]
// tile at a time, in the two scratch tiles; the softmax's backward needs one number per query
// row besides dout, D_i = Σ_e dout_i[e] · out_i[e] (= Σ_j p_ij · dp_ij over all of row i's keys),
// computed here from out and dout, a tile of rows at a time, in `delta`. The query tiles are
// `rows` queries (the last may be shorter); a causal query tile whose queries all come before
// the key tile's first key sees none of it and may be skipped. Any cols, queries, rows >= 1;
// masked pairs contribute nothing, and a key that no query sees gets dk = dv = 0.
// The products inside a tile are small matrix products: ops::detail::sgemm (common/ops/gemm.hpp)
// runs them with the stride ld; plain loops give the same numbers, slower. Deriving the formulas
// is the exercise (the chapter's README, section 2, asks the questions that lead there).
void key_tile_backward(const KeyTileBackwardIn& in, const KeyTileBackwardOut& out);

}  // namespace usp::ch12
