// Reference solution of exercise 11.2: the two phases of the shared-memory tiled matmul.
// Included by chapters/11_gpu_primer/smem_tiling.hpp, which declares them and states the
// contract, in the solution build of chapter 11's library (USP_CH11_EXERCISES=0); the kernel
// (kernels/matmul/03_smem_tiling.cu) and the CPU emulation call them.
#pragma once
#include "chapters/11_gpu_primer/smem_tiling.hpp"

namespace usp::ch11 {

// Phase 1: one element of each tile per thread. tx is the fastest index of the thread, so a
// warp (32 consecutive threads: one ty, tx = 0..31) reads 32 consecutive floats of a row of A
// and 32 of a row of B: both loads coalesced.
USP_HD void smem_load_tiles(const matmul::GemmF32& g, int row0, int col0, int k0, int ty, int tx, float* As,
                            float* Bs) {
  const int a_row = row0 + ty, a_col = k0 + tx;  // A[row0 + ty][k0 + tx]
  const int b_row = k0 + ty, b_col = col0 + tx;  // B[k0 + ty][col0 + tx]
  As[ty * kSmemTile + tx] = (a_row < g.M && a_col < g.K) ? g.A[a_row * g.K + a_col] : 0.0f;
  Bs[ty * kSmemTile + tx] = (b_row < g.K && b_col < g.N) ? g.B[b_row * g.N + b_col] : 0.0f;
}

// Phase 2: the zeros written for the overhanging parts of edge tiles add nothing, so every
// thread can run the full 32 steps. In a warp, As[ty][k] is one address (broadcast) and
// Bs[k][tx] 32 consecutive floats (32 different banks): no bank conflicts.
USP_HD float smem_tile_dot(const float* As, const float* Bs, int ty, int tx, float acc) {
  for (int k = 0; k < kSmemTile; ++k) acc += As[ty * kSmemTile + k] * Bs[k * kSmemTile + tx];
  return acc;
}

}  // namespace usp::ch11
