// Rung 02, coalesced: rung 01 with the 32 threads of a warp on 32 consecutive COLUMNS of C.
//
// One change from rung 01, the mapping from threads to elements of C (coalesced_cell,
// exercise 11.1): a warp's loads of B and stores of C become single 128-byte transactions and
// its load of A one broadcast address.
//
// Block: 1024 threads for a 32×32 tile of C; grid: ceil(N/32) × ceil(M/32).
// Same arithmetic as rung 01 (2 global loads per FMA); only the memory traffic changes.
#include <cuda_runtime.h>

#include "chapters/11_gpu_primer/coalesced.hpp"
#include "common/cuda/cuda_check.hpp"
#include "common/cuda/streams.hpp"
#include "chapters/11_gpu_primer/cpu_checks.hpp"
#include "kernels/matmul/epilogue.hpp"

namespace usp::ch11 {
namespace {

constexpr int kTile = kCoalescedTile;

__global__ void __launch_bounds__(kTile * kTile) coalesced_kernel(matmul::GemmF32 g) {
  const Cell c = coalesced_cell(static_cast<int>(blockIdx.x), static_cast<int>(blockIdx.y),
                                static_cast<int>(threadIdx.x));
  if (c.row >= g.M || c.col >= g.N) return;  // the edge tiles overhang when M or N is not a multiple of 32

  float acc = 0.0f;
  for (int k = 0; k < g.K; ++k) acc += g.A[c.row * g.K + k] * g.B[k * g.N + c.col];
  matmul::store_c(&g.C[c.row * g.N + c.col], g.alpha, g.beta, acc);
}

}  // namespace

void matmul_02_coalesced(const matmul::GemmF32& g) {
  matmul::check_gemm(g, "matmul_02_coalesced", kTile);
  static const bool mapping_checked = (check_coalesced_cell_on_cpu(), true);  // once; a throw retries next call
  (void)mapping_checked;
  const dim3 grid(matmul::ceil_div(g.N, kTile), matmul::ceil_div(g.M, kTile));
  coalesced_kernel<<<grid, kTile * kTile, 0, cuda::compute_stream()>>>(g);
  USP_CUDA_CHECK(cudaGetLastError());
}

}  // namespace usp::ch11
