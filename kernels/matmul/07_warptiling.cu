// Rung 07, warp tiling. Changes from rung 06: a level of tiling between the block and the thread
// that matches how the hardware runs a block, as warps: each warp owns a 64×32 tile of C, its 32
// lanes laid out 8×4; and the K step grows from 8 to 16.
// Why faster: the lanes' shared-memory reads never collide in a bank (rung 06 had 2-way
// conflicts), and BK = 16 halves the __syncthreads per FMA.
//
// Block: 256 threads = 8 warps, BM×BN = 128×128 tile of C, BK = 16.
//   shared As: BK×BM = 16×128 floats, transposed (As[c·BM + r] = A[row0 + r][k0 + c])
//   shared Bs: BK×BN = 16×128 floats (Bs[r·BN + c] = B[k0 + r][col0 + c])
// Warps: a 2×4 grid of 64×32 warp tiles; warp w owns rows (w/4)·64 .. +64, columns (w%4)·32 .. +32.
// Lanes: an 8×4 grid; lane l = (lr, lc) = (l/4, l%4) owns, within its warp tile, the 4×4 blocks
//   rows  wm·32 + lr·4 .. +4   for wm = 0, 1
//   cols  wn·16 + lc·4 .. +4   for wn = 0, 1
// so 64 accumulators per thread, as in rung 06, but at each k the 8 lanes with different lr
// read 8 consecutive float4s of As (128 bytes, no bank conflict) and the 4 lc read 4
// consecutive float4s of Bs; lanes sharing an address get a broadcast. (In rung 06 a warp's 16
// different tx read float4s 32 bytes apart: 2-way bank conflicts.) BK = 16 halves the
// __syncthreads per FMA. Edges and unaligned sizes as in rung 06 (kVec).
#include <cuda_runtime.h>

#include "common/cuda/cuda_check.hpp"
#include "common/cuda/streams.hpp"
#include "kernels/matmul/epilogue.hpp"
#include "kernels/matmul/float4_access.cuh"
#include "kernels/matmul/rungs.hpp"

namespace usp::matmul {
namespace {

constexpr int BM = 128, BN = 128, BK = 16;
constexpr int kWarpsM = 2, kWarpsN = 4, kThreads = 32 * kWarpsM * kWarpsN;  // 256
constexpr int WM = BM / kWarpsM, WN = BN / kWarpsN;                           // 64×32 per warp
constexpr int kLanesM = 8, kLanesN = 4;                                        // lanes in a warp
constexpr int TM = 4, TN = 4;                                                  // one lane's block
constexpr int kIterM = WM / (kLanesM * TM), kIterN = WN / (kLanesN * TN);      // 2 × 2 blocks per lane
static_assert(kLanesM * kLanesN == 32 && kIterM == 2 && kIterN == 2, "the lane layout above");
constexpr int kLoads = BM * BK / 4 / kThreads;  // float4s of each tile per thread: 2
static_assert(BK * BN / 4 / kThreads == kLoads, "same share of A and B");

template <bool kVec>
__global__ void __launch_bounds__(kThreads) warptiling_kernel(GemmF32 g) {
  __shared__ __align__(16) float As[BK * BM];
  __shared__ __align__(16) float Bs[BK * BN];
  const int t = static_cast<int>(threadIdx.x), warp = t / 32, lane = t % 32;
  const int row0 = static_cast<int>(blockIdx.y) * BM, col0 = static_cast<int>(blockIdx.x) * BN;
  const int warp_row = (warp / kWarpsN) * WM, warp_col = (warp % kWarpsN) * WN;  // in the block tile
  const int lr = lane / kLanesN, lc = lane % kLanesN;

  float acc[kIterM][kIterN][TM][TN] = {};
  for (int k0 = 0; k0 < g.K; k0 += BK) {
#pragma unroll
    for (int i = 0; i < kLoads; ++i) {
      const int idx = t + i * kThreads;
      const int ar = idx / (BK / 4), ac = (idx % (BK / 4)) * 4;  // A tile: 128 rows of 4 float4
      const float4 va = load4<kVec>(g.A, g.M, g.K, row0 + ar, k0 + ac);
      As[(ac + 0) * BM + ar] = va.x;
      As[(ac + 1) * BM + ar] = va.y;
      As[(ac + 2) * BM + ar] = va.z;
      As[(ac + 3) * BM + ar] = va.w;
      const int br = idx / (BN / 4), bc = (idx % (BN / 4)) * 4;  // B tile: 16 rows of 32 float4
      *reinterpret_cast<float4*>(&Bs[br * BN + bc]) = load4<kVec>(g.B, g.K, g.N, k0 + br, col0 + bc);
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      float4 a[kIterM], b[kIterN];
#pragma unroll
      for (int wm = 0; wm < kIterM; ++wm)
        a[wm] = *reinterpret_cast<const float4*>(&As[k * BM + warp_row + wm * (WM / kIterM) + lr * TM]);
#pragma unroll
      for (int wn = 0; wn < kIterN; ++wn)
        b[wn] = *reinterpret_cast<const float4*>(&Bs[k * BN + warp_col + wn * (WN / kIterN) + lc * TN]);
#pragma unroll
      for (int wm = 0; wm < kIterM; ++wm)
#pragma unroll
        for (int wn = 0; wn < kIterN; ++wn) {
          const float av[TM] = {a[wm].x, a[wm].y, a[wm].z, a[wm].w};
          const float bv[TN] = {b[wn].x, b[wn].y, b[wn].z, b[wn].w};
#pragma unroll
          for (int i = 0; i < TM; ++i)
#pragma unroll
            for (int j = 0; j < TN; ++j) acc[wm][wn][i][j] += av[i] * bv[j];
        }
    }
    __syncthreads();
  }

#pragma unroll
  for (int wm = 0; wm < kIterM; ++wm)
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
      for (int wn = 0; wn < kIterN; ++wn)
        store4_c<kVec>(g, row0 + warp_row + wm * (WM / kIterM) + lr * TM + i,
                       col0 + warp_col + wn * (WN / kIterN) + lc * TN, acc[wm][wn][i]);
}

}  // namespace

// Preconditions: those of check_gemm (gemm.hpp). The 16-byte path runs when K % 4 == 0,
// N % 4 == 0 and A, B, C are 16-byte aligned; otherwise the scalar path (same result).
void matmul_07_warptiling(const GemmF32& g) {
  check_gemm(g, "matmul_07_warptiling", BM);
  const dim3 grid(ceil_div(g.N, BN), ceil_div(g.M, BM));
  if (float4_path_ok(g))
    warptiling_kernel<true><<<grid, kThreads, 0, cuda::compute_stream()>>>(g);
  else
    warptiling_kernel<false><<<grid, kThreads, 0, cuda::compute_stream()>>>(g);
  USP_CUDA_CHECK(cudaGetLastError());
}

}  // namespace usp::matmul
