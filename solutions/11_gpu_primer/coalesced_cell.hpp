// Reference solution of exercise 11.1: one thread of rung 02, the coalesced matmul — which
// element of C it computes, and computing it.
//
// Split t into a warp index and a lane: t = 32·w + lane (t / 32 and t % 32). Giving the lane
// the column and the warp the row puts a warp's 32 threads on 32 consecutive columns of one
// row: consecutive addresses of B and C, one address of A. (Rung 01 does the opposite — lane
// -> row — and every load of A by a warp touches 32 different rows.)
// Included by chapters/11_gpu_primer/coalesced.hpp, which declares both and states the contract,
// in the solution build of chapter 11's library (USP_CH11_EXERCISES=0).
#pragma once
#include "chapters/11_gpu_primer/coalesced.hpp"
#include "kernels/matmul/epilogue.hpp"

namespace usp::ch11 {

USP_HD Cell coalesced_cell(int bx, int by, int t) {
  const int warp = t / kCoalescedTile, lane = t % kCoalescedTile;
  return {by * kCoalescedTile + warp, bx * kCoalescedTile + lane};
}

USP_HD void coalesced_thread(const matmul::GemmF32& g, int bx, int by, int t) {
  const Cell c = coalesced_cell(bx, by, t);
  // The edge tiles overhang when M or N is not a multiple of 32: both bounds, since a column
  // past N would still be a valid address (the next row's) and a row past M would not.
  if (c.row >= g.M || c.col >= g.N) return;
  const float* a = g.A + c.row * g.K;  // row `row` of A: K consecutive floats
  const float* b = g.B + c.col;        // column `col` of B: one float every N
  float acc = 0.0f;
  for (int k = 0; k < g.K; ++k) acc += a[k] * b[k * g.N];
  matmul::store_c(&g.C[c.row * g.N + c.col], g.alpha, g.beta, acc);
}

}  // namespace usp::ch11
