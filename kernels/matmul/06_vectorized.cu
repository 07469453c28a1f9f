// Rung 06, vectorized. Changes from rung 05: every global load and store and every shared-memory
// read is a 16-byte float4, and As is stored transposed so that a thread's 8 values of A for one
// k are contiguous. Why faster: a float4 instruction moves 4 floats, so 4× fewer load and store
// instructions are issued for the same traffic.
//
// Block: 256 threads, BM×BN = 128×128 tile of C, BK = 8; thread (ty, tx) owns the 8×8 block
// C[row0 + ty·8 + i][col0 + tx·8 + j] as in rung 05.
//   shared As: BK×BM = 8×128 floats, TRANSPOSED: As[c·BM + r] = A[row0 + r][k0 + c], so the 8
//              values a thread needs for one k are contiguous: two float4 reads instead of 8
//   shared Bs: BK×BN = 8×128 floats, Bs[r·BN + c] = B[k0 + r][col0 + c]: two float4 reads
// Loading: the A tile is 128 rows of 8 floats = 256 float4, the B tile 8 rows of 128 floats =
// 256 float4: one of each per thread. C is written as float4s too.
//
// A float4 access needs a 16-byte-aligned address. Row r of A starts at A + r·K, which is
// 16-byte aligned for every r only when K % 4 == 0; likewise B and C need N % 4 == 0. When that
// (or the alignment of the pointers themselves) fails, the launcher runs the same kernel
// compiled with kVec = false: identical tiling, scalar global loads and stores, each guarded.
#include <cuda_runtime.h>

#include "common/cuda/cuda_check.hpp"
#include "common/cuda/streams.hpp"
#include "kernels/matmul/epilogue.hpp"
#include "kernels/matmul/float4_access.cuh"
#include "kernels/matmul/rungs.hpp"

namespace usp::matmul {
namespace {

constexpr int BM = 128, BN = 128, BK = 8, TM = 8, TN = 8;
constexpr int kThreads = (BM / TM) * (BN / TN);  // 256
static_assert(BM * BK / 4 == kThreads && BK * BN / 4 == kThreads, "one float4 of each tile per thread");

template <bool kVec>
__global__ void __launch_bounds__(kThreads) vectorized_kernel(GemmF32 g) {
  __shared__ __align__(16) float As[BK * BM];  // transposed: As[c·BM + r] = A[row0 + r][k0 + c]
  __shared__ __align__(16) float Bs[BK * BN];  // Bs[r·BN + c] = B[k0 + r][col0 + c]
  const int t = static_cast<int>(threadIdx.x);
  const int row0 = static_cast<int>(blockIdx.y) * BM, col0 = static_cast<int>(blockIdx.x) * BN;
  const int ty = t / (BN / TN), tx = t % (BN / TN);
  const int a_r = t / (BK / 4), a_c = (t % (BK / 4)) * 4;  // this thread's float4 of the A tile
  const int b_r = t / (BN / 4), b_c = (t % (BN / 4)) * 4;  // ... and of the B tile

  float acc[TM][TN] = {};
  float a[TM], b[TN];
  for (int k0 = 0; k0 < g.K; k0 += BK) {
    const float4 va = load4<kVec>(g.A, g.M, g.K, row0 + a_r, k0 + a_c);
    As[(a_c + 0) * BM + a_r] = va.x;  // the transpose happens on the way into shared memory
    As[(a_c + 1) * BM + a_r] = va.y;
    As[(a_c + 2) * BM + a_r] = va.z;
    As[(a_c + 3) * BM + a_r] = va.w;
    // B's rows are k: rows past K are zero (load4's row guard), columns past N too.
    *reinterpret_cast<float4*>(&Bs[b_r * BN + b_c]) = load4<kVec>(g.B, g.K, g.N, k0 + b_r, col0 + b_c);
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      const float4 a0 = *reinterpret_cast<const float4*>(&As[k * BM + ty * TM]);
      const float4 a1 = *reinterpret_cast<const float4*>(&As[k * BM + ty * TM + 4]);
      const float4 b0 = *reinterpret_cast<const float4*>(&Bs[k * BN + tx * TN]);
      const float4 b1 = *reinterpret_cast<const float4*>(&Bs[k * BN + tx * TN + 4]);
      a[0] = a0.x, a[1] = a0.y, a[2] = a0.z, a[3] = a0.w, a[4] = a1.x, a[5] = a1.y, a[6] = a1.z, a[7] = a1.w;
      b[0] = b0.x, b[1] = b0.y, b[2] = b0.z, b[3] = b0.w, b[4] = b1.x, b[5] = b1.y, b[6] = b1.z, b[7] = b1.w;
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
    }
    __syncthreads();
  }

#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; j += 4) {
      const float part[4] = {acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]};
      store4_c<kVec>(g, row0 + ty * TM + i, col0 + tx * TN + j, part);
    }
}

}  // namespace

// Preconditions: those of check_gemm (gemm.hpp). The 16-byte path runs when K % 4 == 0,
// N % 4 == 0 and A, B, C are 16-byte aligned; otherwise the scalar path (same result).
void matmul_06_vectorized(const GemmF32& g) {
  check_gemm(g, "matmul_06_vectorized", BM);
  const dim3 grid(ceil_div(g.N, BN), ceil_div(g.M, BM));
  if (float4_path_ok(g))
    vectorized_kernel<true><<<grid, kThreads, 0, cuda::compute_stream()>>>(g);
  else
    vectorized_kernel<false><<<grid, kThreads, 0, cuda::compute_stream()>>>(g);
  USP_CUDA_CHECK(cudaGetLastError());
}

}  // namespace usp::matmul
