// Reference solution of exercise 11.2: one thread of the shared-memory tiled matmul, for any tile
// shape (rung 03: 32×32×32, one element per thread; rung 04: 64×64×8, eight per thread).
// Included by chapters/11_gpu_primer/smem_tiling.hpp, which declares it and states the contract,
// in the solution build of chapter 11's library (USP_CH11_EXERCISES=0); the kernels
// (kernels/matmul/03_smem_tiling.cu, 04_blocktiling_1d.cu) and the CPU emulation call it.
#pragma once
#include "chapters/11_gpu_primer/smem_tiling.hpp"

namespace usp::ch11 {

template <class Tile, class Lane>
USP_LANE_BODY void smem_tiling_thread(Lane& lane, const matmul::GemmF32& g, int bx, int by, int t, float* As,
                                      float* Bs) {
  constexpr int BM = Tile::BM, BN = Tile::BN, BK = Tile::BK, TM = Tile::TM, kThreads = Tile::kThreads;
  const int row0 = by * BM, col0 = bx * BN;
  const int ty = t / BN, tx = t % BN;  // this thread's rows row0 + ty·TM + i, column col0 + tx
  float acc[TM];
  for (int i = 0; i < TM; ++i) acc[i] = 0.0f;
  for (int k0 = 0; k0 < g.K; k0 += BK) {
    // Load: the block's threads share out the BM·BK + BK·BN elements, consecutive threads taking
    // consecutive elements of a row (coalesced); 0 outside the matrices, so the edge tiles add 0.
    for (int e = t; e < BM * BK; e += kThreads) {
      const int row = row0 + e / BK, k = k0 + e % BK;
      As[e] = (row < g.M && k < g.K) ? g.A[row * g.K + k] : 0.0f;
    }
    for (int e = t; e < BK * BN; e += kThreads) {
      const int k = k0 + e / BN, col = col0 + e % BN;
      Bs[e] = (k < g.K && col < g.N) ? g.B[k * g.N + col] : 0.0f;
    }
    lane.sync_block();  // nobody reads the tiles before everybody has written them
    // Compute: each B value read from shared memory feeds TM multiply-adds from a register. In a
    // warp, As[...][k] is one address (a broadcast), Bs[k][tx] 32 consecutive floats (no conflicts).
    for (int k = 0; k < BK; ++k) {
      const float b = Bs[k * BN + tx];
      for (int i = 0; i < TM; ++i) acc[i] += As[(ty * TM + i) * BK + k] * b;
    }
    lane.sync_block();  // nobody overwrites the tiles before everybody has read them
  }
  // Only the store is guarded: every thread took part in the loads and the barriers above.
  const int col = col0 + tx;
  for (int i = 0; i < TM; ++i) {
    const int row = row0 + ty * TM + i;
    if (row < g.M && col < g.N) matmul::store_c(&g.C[row * g.N + col], g.alpha, g.beta, acc[i]);
  }
}

}  // namespace usp::ch11
