// The two pieces of flash attention that work on plain fp32 arrays of one head — the exercises:
// one query tile's whole forward (12.1) and one (query tile, key tile) pair of the backward
// (12.2). The drivers (flash_attention.cpp) loop over batches, heads and query tiles, copy each
// query tile into a contiguous buffer and call these; everything about layouts stays there.
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

// Exercise 12.2 — the backward of one (query tile, key tile) pair, from the saved log-sum-exp.
struct TileBackwardIn {
  const float* q;      // [rows, d] the query tile
  const float* k;      // [cols, d] the key tile
  const float* v;      // [cols, d] the value tile
  const float* dout;   // [rows, d] the gradient of the output rows
  const float* lse;    // [rows]    log Σ exp(s) over ALL keys of each query row (the forward's)
  const float* delta;  // [rows]    Σ_e dout_i[e] · out_i[e] (= Σ_j p_ij · dp_ij over all keys)
  float* p;            // [rows, cols] scratch for the tile's probabilities (contents undefined)
  float* dp;           // [rows, cols] scratch for dp, then ds (contents undefined)
  int rows = 0, cols = 0, d = 0;
  float scale = 1;
  bool causal = false;
  std::int64_t q0 = 0, k0 = 0;  // positions of the tiles' first query and first key
};
struct TileBackwardOut {
  float* dq;  // [rows, d] accumulate
  float* dk;  // [cols, d] accumulate
  float* dv;  // [cols, d] accumulate
};
// The forward computed out_i = Σ_j p_ij · v_j over all keys, with p_ij = exp(s_ij - lse_i) (0 where
// masked). Given dout = ∂L/∂out, this call ADDS to dq, dk and dv this pair's share of ∂L/∂q,
// ∂L/∂k and ∂L/∂v: the terms of the chain rule that go through the p_ij of this tile pair — so
// that summing the calls over every key tile (for dq) and every query tile (for dk, dv) gives
// the whole gradients. p is recomputed from lse, never stored for the whole sequence; the two
// scratch tiles are yours to use. Masked pairs contribute nothing. Deriving the formulas is the
// exercise (the chapter's README, section 2, asks the questions that lead there).
void tile_backward(const TileBackwardIn& in, const TileBackwardOut& out);

}  // namespace usp::ch12
