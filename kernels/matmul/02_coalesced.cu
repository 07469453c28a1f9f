// Rung 02, coalesced. Changes from rung 01: only the mapping from threads to elements of C; the
// 32 threads of a warp take 32 consecutive COLUMNS of one row (exercise 11.1: coalesced_cell, the
// mapping, and coalesced_thread, the whole thread).
// Why faster: a warp's loads of B and its stores of C become one 128-byte transaction each and
// its load of A one broadcast address, where rung 01 needed 32 transactions for 128 useful bytes.
//
// The thread is the exercise: declared with its contract in chapters/11_gpu_primer/coalesced.hpp,
// defined header-only in solutions/11_gpu_primer/coalesced_cell.hpp (or, in chapter 11's exercise
// build, exercises/11_gpu_primer/coalesced_cell.hpp). This file is compiled into chapter 11's
// library, once per variant, not into usp_kernels_matmul (kernels/CMakeLists.txt).
//
// Block: 1024 threads for a 32×32 tile of C; grid: ceil(N/32) × ceil(M/32).
// Same arithmetic as rung 01 (2 global loads per FMA); only the memory traffic changes.
#include <cuda_runtime.h>

#include "chapters/11_gpu_primer/coalesced.hpp"
#include "chapters/11_gpu_primer/cpu_checks.hpp"
#include "common/cuda/cuda_check.hpp"
#include "common/cuda/streams.hpp"
#include "kernels/matmul/epilogue.hpp"
#include "kernels/matmul/rungs.hpp"

namespace usp::matmul {
namespace {

constexpr int kTile = ch11::kCoalescedTile;

__global__ void __launch_bounds__(kTile * kTile) coalesced_kernel(GemmF32 g) {
  ch11::coalesced_thread(g, static_cast<int>(blockIdx.x), static_cast<int>(blockIdx.y), static_cast<int>(threadIdx.x));
}

}  // namespace

void matmul_02_coalesced(const GemmF32& g) {
  check_gemm(g, "matmul_02_coalesced", kTile);
  static const bool thread_checked = (ch11::check_coalesced_on_cpu(), true);  // once; a throw retries next call
  (void)thread_checked;
  const dim3 grid(ceil_div(g.N, kTile), ceil_div(g.M, kTile));
  coalesced_kernel<<<grid, kTile * kTile, 0, cuda::compute_stream()>>>(g);
  USP_CUDA_CHECK(cudaGetLastError());
}

}  // namespace usp::matmul
