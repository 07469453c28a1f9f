// Rung 01, naive: one thread per element of C, and a warp walks DOWN a column of C.
// Changes: nothing before it. The first rung is the textbook triple loop with its (i, j) loops
// spread over threads: the baseline every later rung is measured against.
//
// Block: 1024 threads for a 32×32 tile of C; grid: ceil(N/32) × ceil(M/32).
// Thread t of block (bx, by) computes C[by·32 + t%32][bx·32 + t/32]. The 32 threads of a warp
// (consecutive t) get 32 consecutive ROWS of one column, so at each step k they read
//   A[row][k]   32 addresses K floats apart   -> 32 memory transactions for 128 useful bytes
//   B[k][col]   one address                   -> one transaction, broadcast
// and finally write 32 elements of C that are N floats apart. Every byte of A is read from
// DRAM (or L2) again and again: this rung is bound by memory transactions, far from the FLOPs.
// Rung 02 changes only the mapping t -> (row, col).
#include <cuda_runtime.h>

#include "common/cuda/cuda_check.hpp"
#include "common/cuda/streams.hpp"
#include "kernels/matmul/epilogue.hpp"
#include "kernels/matmul/rungs.hpp"

namespace usp::matmul {
namespace {

constexpr int kTile = 32;  // the block's tile of C is kTile × kTile, one thread per element

__global__ void __launch_bounds__(kTile * kTile) naive_kernel(GemmF32 g) {
  const int t = static_cast<int>(threadIdx.x);
  const int row = static_cast<int>(blockIdx.y) * kTile + t % kTile;
  const int col = static_cast<int>(blockIdx.x) * kTile + t / kTile;
  if (row >= g.M || col >= g.N) return;  // the edge tiles overhang when M or N is not a multiple of 32

  float acc = 0.0f;
  for (int k = 0; k < g.K; ++k) acc += g.A[row * g.K + k] * g.B[k * g.N + col];
  store_c(&g.C[row * g.N + col], g.alpha, g.beta, acc);
}

}  // namespace

// Preconditions: those of check_gemm (gemm.hpp); nothing else.
void matmul_01_naive(const GemmF32& g) {
  check_gemm(g, "matmul_01_naive", kTile);
  const dim3 grid(ceil_div(g.N, kTile), ceil_div(g.M, kTile));
  naive_kernel<<<grid, kTile * kTile, 0, cuda::compute_stream()>>>(g);
  USP_CUDA_CHECK(cudaGetLastError());
}

}  // namespace usp::matmul
