// Rung 04, 1-D block tiling. Changes from rung 03: each thread computes 8 elements of a column
// of C instead of 1, in a 64×64 block tile whose K dimension is walked 8 at a time.
// Why faster: each value of B a thread reads from shared memory stays in a register and feeds 8
// FMAs: 9 shared-memory loads per 8 FMAs, where rung 03 needed 2 per FMA.
//
// Block: 512 threads for a BM×BN = 64×64 tile of C; the K dimension is walked BK = 8 at a time.
//   shared As: BM×BK = 64×8 floats (A[row0 .. +64][k0 .. +8])
//   shared Bs: BK×BN = 8×64 floats (B[k0 .. +8][col0 .. +64])
// Thread t loads one element of each tile, then, as thread (ty, tx) = (t/64, t%64), computes
// C[row0 + ty·8 + i][col0 + tx] for i = 0..7: per step k it reads one value of Bs (kept in a
// register) and 8 of As (the same 8 for the whole warp: a broadcast), for 8 FMAs.
// The 8 accumulators live in registers.
#include <cuda_runtime.h>

#include "common/cuda/cuda_check.hpp"
#include "common/cuda/streams.hpp"
#include "kernels/matmul/epilogue.hpp"
#include "kernels/matmul/rungs.hpp"

namespace usp::matmul {
namespace {

constexpr int BM = 64, BN = 64, BK = 8, TM = 8;
constexpr int kThreads = BM * BN / TM;  // 512, one per TM×1 column of the tile
static_assert(kThreads == BM * BK && kThreads == BK * BN, "each thread loads one element of As and of Bs");

__global__ void __launch_bounds__(kThreads) blocktiling_1d_kernel(GemmF32 g) {
  __shared__ float As[BM * BK];  // As[r·BK + c] = A[row0 + r][k0 + c]
  __shared__ float Bs[BK * BN];  // Bs[r·BN + c] = B[k0 + r][col0 + c]
  const int t = static_cast<int>(threadIdx.x);
  const int row0 = static_cast<int>(blockIdx.y) * BM, col0 = static_cast<int>(blockIdx.x) * BN;
  const int ty = t / BN, tx = t % BN;                 // this thread's column of C: rows ty·TM .. +TM, column tx
  const int a_r = t / BK, a_c = t % BK;               // the element of As this thread loads
  const int b_r = t / BN, b_c = t % BN;               // ... and of Bs

  float acc[TM] = {};
  for (int k0 = 0; k0 < g.K; k0 += BK) {
    // Load (zero outside the matrices, so the edge tiles compute with zeros).
    const int a_row = row0 + a_r, a_k = k0 + a_c, b_k = k0 + b_r, b_col = col0 + b_c;
    As[t] = (a_row < g.M && a_k < g.K) ? g.A[a_row * g.K + a_k] : 0.0f;
    Bs[t] = (b_k < g.K && b_col < g.N) ? g.B[b_k * g.N + b_col] : 0.0f;
    __syncthreads();
    for (int k = 0; k < BK; ++k) {
      const float b = Bs[k * BN + tx];
#pragma unroll
      for (int i = 0; i < TM; ++i) acc[i] += As[(ty * TM + i) * BK + k] * b;
    }
    __syncthreads();
  }
  const int col = col0 + tx;
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int row = row0 + ty * TM + i;
    if (row < g.M && col < g.N) store_c(&g.C[row * g.N + col], g.alpha, g.beta, acc[i]);
  }
}

}  // namespace

// Preconditions: those of check_gemm (gemm.hpp); nothing else (edges are guarded).
void matmul_04_blocktiling_1d(const GemmF32& g) {
  check_gemm(g, "matmul_04_blocktiling_1d", BM);
  const dim3 grid(ceil_div(g.N, BN), ceil_div(g.M, BM));
  blocktiling_1d_kernel<<<grid, kThreads, 0, cuda::compute_stream()>>>(g);
  USP_CUDA_CHECK(cudaGetLastError());
}

}  // namespace usp::matmul
