// Rung 03 on the CPU: every block of the grid, and every thread of a block, run one after the
// other through the same two phase functions the kernel calls (smem_tiling.hpp).
//
// Why this is a faithful emulation: between two __syncthreads() the kernel's threads run in
// an order nobody controls, and a correct kernel gives the same result for every order. The
// order "thread 0, then thread 1, ..., then the barrier" is one of them. Each phase therefore
// becomes a loop over the 1024 threads, and each barrier the end of that loop.
// Shapes: A M×K, B K×N, C M×N row-major host pointers (kernels/matmul/gemm.hpp).
#pragma once
#include <algorithm>
#include <vector>

#include "kernels/matmul/epilogue.hpp"
#include "kernels/matmul/gemm.hpp"
#include "chapters/11_gpu_primer/smem_tiling.hpp"

namespace usp::ch11 {

inline void emulate_smem_tiling(const matmul::GemmF32& g) {
  constexpr int T = kSmemTile, kThreads = T * T;
  std::vector<float> As(kThreads), Bs(kThreads), acc(kThreads);  // one block's shared memory and registers
  for (int by = 0; by < matmul::ceil_div(g.M, T); ++by)
    for (int bx = 0; bx < matmul::ceil_div(g.N, T); ++bx) {
      const int row0 = by * T, col0 = bx * T;
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int k0 = 0; k0 < g.K; k0 += T) {
        for (int t = 0; t < kThreads; ++t) smem_load_tiles(g, row0, col0, k0, t / T, t % T, As.data(), Bs.data());
        // __syncthreads()
        for (int t = 0; t < kThreads; ++t) acc[t] = smem_tile_dot(As.data(), Bs.data(), t / T, t % T, acc[t]);
        // __syncthreads()
      }
      for (int t = 0; t < kThreads; ++t) {
        const int row = row0 + t / T, col = col0 + t % T;
        if (row < g.M && col < g.N) matmul::store_c(&g.C[row * g.N + col], g.alpha, g.beta, acc[t]);
      }
    }
}

}  // namespace usp::ch11
