// Rung 05, 2-D block tiling. Changes from rung 04: each thread computes an 8×8 block of C as
// outer products of 8 values of A and 8 of B held in registers, in a 128×128 block tile.
// Why faster: 16 shared-memory loads feed 64 FMAs (rung 04: 9 per 8), and each float loaded from
// global memory serves 64 FMAs instead of 32.
//
// Block: 256 threads for a BM×BN = 128×128 tile of C; K is walked BK = 8 at a time.
//   shared As: BM×BK = 128×8 floats,  shared Bs: BK×BN = 8×128 floats
// Loading: each tile holds 1024 floats, so each thread copies 4 of each.
// Computing: thread (ty, tx) = (t/16, t%16) owns C[row0 + ty·8 + i][col0 + tx·8 + j], i, j < 8.
// For each k it loads a column slice a[0..8) of As and a row slice b[0..8) of Bs into registers
// and adds their outer product a·bᵀ to its 64 accumulators.
// Per block and step of BK, the tile moves (128 + 128)·8 floats from global memory for
// 128·128·8 FMAs: 64 FMAs per float loaded, twice rung 04's 32.
#include <cuda_runtime.h>

#include "common/cuda/cuda_check.hpp"
#include "common/cuda/streams.hpp"
#include "kernels/matmul/epilogue.hpp"
#include "kernels/matmul/rungs.hpp"

namespace usp::matmul {
namespace {

constexpr int BM = 128, BN = 128, BK = 8, TM = 8, TN = 8;
constexpr int kThreads = (BM / TM) * (BN / TN);   // 256
constexpr int kLoadsA = BM * BK / kThreads;        // 4 elements of As per thread
constexpr int kLoadsB = BK * BN / kThreads;        // 4 elements of Bs per thread

__global__ void __launch_bounds__(kThreads) blocktiling_2d_kernel(GemmF32 g) {
  __shared__ float As[BM * BK];  // As[r·BK + c] = A[row0 + r][k0 + c]
  __shared__ float Bs[BK * BN];  // Bs[r·BN + c] = B[k0 + r][col0 + c]
  const int t = static_cast<int>(threadIdx.x);
  const int row0 = static_cast<int>(blockIdx.y) * BM, col0 = static_cast<int>(blockIdx.x) * BN;
  const int ty = t / (BN / TN), tx = t % (BN / TN);

  float acc[TM][TN] = {};
  float a[TM], b[TN];
  for (int k0 = 0; k0 < g.K; k0 += BK) {
#pragma unroll
    for (int i = 0; i < kLoadsA; ++i) {
      const int idx = t + i * kThreads, r = idx / BK, c = idx % BK;
      const int row = row0 + r, k = k0 + c;
      As[idx] = (row < g.M && k < g.K) ? g.A[row * g.K + k] : 0.0f;
    }
#pragma unroll
    for (int i = 0; i < kLoadsB; ++i) {
      const int idx = t + i * kThreads, r = idx / BN, c = idx % BN;
      const int k = k0 + r, col = col0 + c;
      Bs[idx] = (k < g.K && col < g.N) ? g.B[k * g.N + col] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
#pragma unroll
      for (int i = 0; i < TM; ++i) a[i] = As[(ty * TM + i) * BK + k];
#pragma unroll
      for (int j = 0; j < TN; ++j) b[j] = Bs[k * BN + tx * TN + j];
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int row = row0 + ty * TM + i;
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int col = col0 + tx * TN + j;
      if (row < g.M && col < g.N) store_c(&g.C[row * g.N + col], g.alpha, g.beta, acc[i][j]);
    }
  }
}

}  // namespace

// Preconditions: those of check_gemm (gemm.hpp); nothing else (edges are guarded).
void matmul_05_blocktiling_2d(const GemmF32& g) {
  check_gemm(g, "matmul_05_blocktiling_2d", BM);
  const dim3 grid(ceil_div(g.N, BN), ceil_div(g.M, BM));
  blocktiling_2d_kernel<<<grid, kThreads, 0, cuda::compute_stream()>>>(g);
  USP_CUDA_CHECK(cudaGetLastError());
}

}  // namespace usp::matmul
