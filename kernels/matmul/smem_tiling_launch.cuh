// The kernel and the launch of the rungs whose thread is exercise 11.2's smem_tiling_thread
// (rung 03 with Rung03Tile, rung 04 with Rung04Tile: the same algorithm, another tile shape).
// One block of Tile::kThreads threads per BM×BN tile of C; grid ceil(N/BN) × ceil(M/BM); shared
// As BM×BK and Bs BK×BN floats. The thread body is checked on the CPU once per tile shape
// before the first launch (a throw retries at the next call).
#pragma once
#include <cuda_runtime.h>

#include "chapters/11_gpu_primer/cpu_checks.hpp"
#include "chapters/11_gpu_primer/smem_tiling.hpp"
#include "common/cuda/cuda_check.hpp"
#include "common/cuda/streams.hpp"
#include "kernels/matmul/epilogue.hpp"
#include "kernels/matmul/gemm.hpp"

namespace usp::matmul {
// Internal to each rung's file, as its own kernel was: chapter 11 compiles the rungs once over
// the solution's thread body and once over the exercise's.
namespace {

template <class Tile>
__global__ void __launch_bounds__(Tile::kThreads) smem_tiling_kernel(GemmF32 g) {
  __shared__ float As[Tile::BM * Tile::BK];
  __shared__ float Bs[Tile::BK * Tile::BN];
  mma::DeviceLane lane;
  ch11::smem_tiling_thread<Tile>(lane, g, static_cast<int>(blockIdx.x), static_cast<int>(blockIdx.y),
                                 static_cast<int>(threadIdx.x), As, Bs);
}

// Preconditions: those of check_gemm (gemm.hpp), under the rung's name; nothing else (edges are
// guarded).
template <class Tile>
void launch_smem_tiling(const GemmF32& g, const char* rung) {
  check_gemm(g, rung, Tile::BM);
  static const bool body_checked = (ch11::check_smem_tiling_on_cpu(), true);  // once; a throw retries next call
  (void)body_checked;
  const dim3 grid(ceil_div(g.N, Tile::BN), ceil_div(g.M, Tile::BM));
  smem_tiling_kernel<Tile><<<grid, Tile::kThreads, 0, cuda::compute_stream()>>>(g);
  USP_CUDA_CHECK(cudaGetLastError());
}

}  // namespace
}  // namespace usp::matmul
