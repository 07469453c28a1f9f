// Attention rung 02, FlashAttention-1's forward (fa1_bodies.hpp): one block of kBlockRows threads
// per (head, batch); the key/value tiles are the outer loop (staged in shared memory), the query
// tiles the inner one, and every row's out, m and l make a round trip through global memory per
// key tile. B·H blocks in all: at B 1, H 16 a GPU with 132 SMs is mostly idle.
#include <cuda_runtime.h>

#include <string>

#include "common/cuda/cuda_check.hpp"
#include "common/error.hpp"
#include "kernels/attention/attention_rungs.hpp"
#include "kernels/attention/fa1_bodies.hpp"

namespace usp::attention {
namespace {

__global__ void __launch_bounds__(kBlockRows) fa1_forward_kernel(AttentionF32 a, float* row_sum) {
  extern __shared__ float smem[];
  float* Ks = smem;                     // [kBlockCols, D]
  float* Vs = smem + kBlockCols * a.D;  // [kBlockCols, D]
  const int t = static_cast<int>(threadIdx.x), h = static_cast<int>(blockIdx.x), b = static_cast<int>(blockIdx.y);
  const int g = h / (a.H / a.G);
  for (int i = t; i < a.T; i += kBlockRows) fa1_init_row(a, b, h, i, row_sum);  // thread t owns rows t + 64k
  for (int j0 = 0; j0 < a.T; j0 += kBlockCols) {
    const int nk = min(kBlockCols, a.T - j0);
    load_kv_tile(a, b, g, j0, nk, t, Ks, Vs);
    __syncthreads();
    for (int i = fa1_first_query_tile(a, j0) + t; i < a.T; i += kBlockRows)
      fa1_row_tile_update(a, b, h, i, Ks, Vs, j0, nk, row_sum);
    __syncthreads();
  }
  for (int i = t; i < a.T; i += kBlockRows) fa1_finish_row(a, b, h, i, row_sum);
}

}  // namespace

void fa1_forward(const AttentionF32& a, float* row_sum, void* stream) {
  USP_CHECK(a.G > 0 && a.H % a.G == 0, "attention::fa1_forward: G must divide H");
  USP_CHECK(a.D >= 1 && a.D <= kMaxHeadDim,
            "attention::fa1_forward: head dim " + std::to_string(a.D) + " outside 1.." + std::to_string(kMaxHeadDim));
  const dim3 grid(static_cast<unsigned>(a.H), static_cast<unsigned>(a.B));
  const std::size_t shared = 2 * kBlockCols * static_cast<std::size_t>(a.D) * sizeof(float);
  USP_CUDA_CHECK(cudaFuncSetAttribute(fa1_forward_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      static_cast<int>(shared)));
  fa1_forward_kernel<<<grid, kBlockRows, shared, static_cast<cudaStream_t>(stream)>>>(a, row_sum);
  USP_CUDA_CHECK(cudaGetLastError());
}

}  // namespace usp::attention
