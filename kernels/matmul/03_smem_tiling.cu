// Rung 03, shared-memory tiling. Changes from rung 02: a block stages 32×32 tiles of A and B in
// shared memory and its threads compute from there (the two phases are exercise 11.2).
// Why faster: every element loaded from global memory serves 32 FMAs instead of 1, so global
// traffic drops 32×; the repeated reads hit on-chip shared memory instead.
//
// The algorithm is drawn in chapters/11_gpu_primer/smem_tiling.hpp, which declares the two phases;
// their bodies are header-only in solutions/11_gpu_primer/smem_tile_body.hpp (or, in chapter 11's
// exercise build, exercises/11_gpu_primer/smem_tile_body.hpp). Compiled into chapter 11's library,
// once per variant, like rung 02.
//
// Block: 1024 threads for a 32×32 tile of C, thread t = (ty, tx) = (t/32, t%32);
// grid: ceil(N/32) × ceil(M/32).
//   shared As: 32×32 floats (A[row0 .. +32][k0 .. +32]), shared Bs: 32×32 floats (B[k0 .. +32][col0 .. +32])
// Every thread takes part in the loads and the barriers, even one whose element of C lies
// outside the matrix: it still has to fetch its share of the tiles (and a thread that skipped
// a __syncthreads would leave the others waiting). Only the final store is guarded.
#include <cuda_runtime.h>

#include "chapters/11_gpu_primer/cpu_checks.hpp"
#include "chapters/11_gpu_primer/smem_tiling.hpp"
#include "common/cuda/cuda_check.hpp"
#include "common/cuda/streams.hpp"
#include "kernels/matmul/epilogue.hpp"
#include "kernels/matmul/rungs.hpp"

namespace usp::matmul {
namespace {

constexpr int T = ch11::kSmemTile;

__global__ void __launch_bounds__(T * T) smem_tiling_kernel(GemmF32 g) {
  __shared__ float As[T * T];
  __shared__ float Bs[T * T];
  const int ty = static_cast<int>(threadIdx.x) / T, tx = static_cast<int>(threadIdx.x) % T;
  const int row0 = static_cast<int>(blockIdx.y) * T, col0 = static_cast<int>(blockIdx.x) * T;

  float acc = 0.0f;
  for (int k0 = 0; k0 < g.K; k0 += T) {
    ch11::smem_load_tiles(g, row0, col0, k0, ty, tx, As, Bs);
    __syncthreads();
    acc = ch11::smem_tile_dot(As, Bs, ty, tx, acc);
    __syncthreads();
  }
  const int row = row0 + ty, col = col0 + tx;
  if (row < g.M && col < g.N) store_c(&g.C[row * g.N + col], g.alpha, g.beta, acc);
}

}  // namespace

void matmul_03_smem_tiling(const GemmF32& g) {
  check_gemm(g, "matmul_03_smem_tiling", T);
  static const bool phases_checked = (ch11::check_smem_tiling_on_cpu(), true);  // once; a throw retries next call
  (void)phases_checked;
  const dim3 grid(ceil_div(g.N, T), ceil_div(g.M, T));
  smem_tiling_kernel<<<grid, T * T, 0, cuda::compute_stream()>>>(g);
  USP_CUDA_CHECK(cudaGetLastError());
}

}  // namespace usp::matmul
