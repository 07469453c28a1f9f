// The two pieces of flash attention that work on ONE tile, on plain fp32 arrays — the exercises.
// The drivers (flash_attention.cpp) cut q, k, v into tiles, copy each tile into a contiguous
// buffer and call these; everything about tiling, heads and layouts stays there.
//
// Notation for one query tile of `rows` queries and one key tile of `cols` keys, head dim d:
//   s[i][j] = q_i · k_j · scale       (scale = 1/√d), or -inf where key j is masked for query i
//   (causal: the key's position k0 + j is after the query's q0 + i).
#pragma once
#include <cstdint>

namespace usp::ch12 {

// The products inside a tile are small matrix products: ops::detail::sgemm (common/ops/gemm.hpp,
// OpenBLAS) runs them at the CPU's speed, as a GPU kernel runs them on tensor cores; plain loops
// give the same numbers, slower.
//
// Exercise 12.1 — the online softmax: fold one key tile into a query tile's running state.
//   s    [rows, cols]  in: the tile's scaled scores, -inf where masked (a row may be all -inf);
//                      out: the tile's unnormalised probabilities exp(s - m) under the new m
//   v    [cols, d]     the tile's values
//   m    [rows]        the largest score seen so far per row (-inf before the first tile)
//   l    [rows]        Σ exp(s - m) over the keys seen so far (0 before the first tile)
//   acc  [rows, d]     Σ exp(s - m) · v over the keys seen so far (0 before the first tile)
// After the call the three describe the keys seen so far AND this tile's, so that after the last
// tile out_i = acc_i / l_i and lse_i = m_i + log l_i. When a row's maximum grows, what was
// accumulated under the old maximum is rescaled by exp(m_old - m_new). A row that has seen only
// masked keys keeps m = -inf, l = 0, acc = 0 and leaves s as 0 (its probabilities: it saw
// nothing), never -inf and never exp(-inf - (-inf)) = NaN.
void online_softmax_update(float* s, const float* v, int rows, int cols, int d, float* m, float* l, float* acc);

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
