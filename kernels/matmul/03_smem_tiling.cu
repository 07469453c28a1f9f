// Rung 03, shared-memory tiling. Changes from rung 02: a block stages 32×32 tiles of A and B in
// shared memory and its threads compute from there.
// Why faster: every element loaded from global memory serves 32 FMAs instead of 1, so global
// traffic drops 32×; the repeated reads hit on-chip shared memory instead.
//
// The whole thread is exercise 11.2, smem_tiling_thread<Rung03Tile>, drawn and declared in
// chapters/11_gpu_primer/smem_tiling.hpp; its body is header-only in
// solutions/11_gpu_primer/smem_tile_body.hpp (or, in chapter 11's exercise build,
// exercises/11_gpu_primer/smem_tile_body.hpp). Compiled into chapter 11's library, once per
// variant, like rung 02.
//
// Block: 1024 threads for a 32×32 tile of C, thread t = (ty, tx) = (t/32, t%32);
// grid: ceil(N/32) × ceil(M/32).
//   shared As: 32×32 floats (A[row0 .. +32][k0 .. +32]), shared Bs: 32×32 floats (B[k0 .. +32][col0 .. +32])
#include <cuda_runtime.h>

#include "chapters/11_gpu_primer/cpu_checks.hpp"
#include "chapters/11_gpu_primer/smem_tiling.hpp"
#include "common/cuda/cuda_check.hpp"
#include "common/cuda/streams.hpp"
#include "kernels/matmul/epilogue.hpp"
#include "kernels/matmul/rungs.hpp"

namespace usp::matmul {
namespace {

using Tile = ch11::Rung03Tile;
constexpr int T = Tile::BM;

__global__ void __launch_bounds__(Tile::kThreads) smem_tiling_kernel(GemmF32 g) {
  __shared__ float As[Tile::BM * Tile::BK];
  __shared__ float Bs[Tile::BK * Tile::BN];
  mma::DeviceLane lane;
  ch11::smem_tiling_thread<Tile>(lane, g, static_cast<int>(blockIdx.x), static_cast<int>(blockIdx.y),
                                 static_cast<int>(threadIdx.x), As, Bs);
}

}  // namespace

void matmul_03_smem_tiling(const GemmF32& g) {
  check_gemm(g, "matmul_03_smem_tiling", T);
  static const bool body_checked = (ch11::check_smem_tiling_on_cpu(), true);  // once; a throw retries next call
  (void)body_checked;
  const dim3 grid(ceil_div(g.N, T), ceil_div(g.M, T));
  smem_tiling_kernel<<<grid, Tile::kThreads, 0, cuda::compute_stream()>>>(g);
  USP_CUDA_CHECK(cudaGetLastError());
}

}  // namespace usp::matmul
