// Rung 02 on the CPU: every thread of every block of the grid, one after the other, through the
// same coalesced_thread the kernel runs (coalesced.hpp). Faithful because rung 02's threads share
// nothing: any order of them gives the GPU's result, and this is one of those orders.
// Shapes: A M×K, B K×N, C M×N row-major host pointers (kernels/matmul/gemm.hpp).
#pragma once
#include "chapters/11_gpu_primer/coalesced.hpp"
#include "kernels/matmul/epilogue.hpp"
#include "kernels/matmul/gemm.hpp"

namespace usp::ch11 {

// The grid of the launcher: ceil(N / 32) blocks across (bx), ceil(M / 32) down (by).
inline void emulate_coalesced(const matmul::GemmF32& g) {
  constexpr int T = kCoalescedTile;
  for (int by = 0; by < matmul::ceil_div(g.M, T); ++by)
    for (int bx = 0; bx < matmul::ceil_div(g.N, T); ++bx)
      for (int t = 0; t < T * T; ++t) coalesced_thread(g, bx, by, t);
}

}  // namespace usp::ch11
