// Attention rung 03, FlashAttention-2's forward (flash_bodies.hpp): a block of kBlockRows threads
// per (query tile, head, batch), one query row per thread, K/V tiles of kBlockCols keys staged in
// shared memory, the online softmax and the output accumulator in registers. S and P never touch
// global memory.
#include <cuda_runtime.h>

#include <string>

#include "common/cuda/cuda_check.hpp"
#include "common/error.hpp"
#include "kernels/attention/attention_rungs.hpp"
#include "kernels/attention/flash_bodies.hpp"

namespace usp::attention {
namespace {

__global__ void __launch_bounds__(kBlockRows) flash_forward_kernel(AttentionF32 a) {
  extern __shared__ float smem[];
  float* Ks = smem;                     // [kBlockCols, D]
  float* Vs = smem + kBlockCols * a.D;  // [kBlockCols, D]
  const int t = static_cast<int>(threadIdx.x);
  const int i0 = static_cast<int>(blockIdx.x) * kBlockRows, h = static_cast<int>(blockIdx.y);
  const int b = static_cast<int>(blockIdx.z), g = h / (a.H / a.G), i = i0 + t;
  float q[kMaxHeadDim], acc[kMaxHeadDim];
  float m = -INFINITY, l = 0;
  for (int e = 0; e < a.D; ++e) acc[e] = 0;
  if (i < a.T)
    for (int e = 0; e < a.D; ++e) q[e] = a.q[q_offset(a, b, i, h) + e];
  const int k_end = a.causal ? min(a.T, i0 + kBlockRows) : a.T;
  for (int j0 = 0; j0 < k_end; j0 += kBlockCols) {
    const int nk = min(kBlockCols, a.T - j0);
    load_kv_tile(a, b, g, j0, nk, t, Ks, Vs);  // every thread loads its share, even past the end
    __syncthreads();
    if (i < a.T) row_tile_update(a, i, q, Ks, Vs, j0, nk, m, l, acc);
    __syncthreads();
  }
  if (i < a.T) write_row(a, b, h, i, m, l, acc);
}

}  // namespace

void flash_forward(const AttentionF32& a, void* stream) {
  USP_CHECK(a.G > 0 && a.H % a.G == 0, "attention::flash_forward: G must divide H");
  USP_CHECK(a.D >= 1 && a.D <= kMaxHeadDim,
            "attention::flash_forward: head dim " + std::to_string(a.D) + " outside 1.." + std::to_string(kMaxHeadDim));
  const dim3 grid(static_cast<unsigned>((a.T + kBlockRows - 1) / kBlockRows), static_cast<unsigned>(a.H),
                  static_cast<unsigned>(a.B));
  const std::size_t shared = 2 * kBlockCols * static_cast<std::size_t>(a.D) * sizeof(float);  // 64 KiB at D = 128
  USP_CUDA_CHECK(cudaFuncSetAttribute(flash_forward_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      static_cast<int>(shared)));
  flash_forward_kernel<<<grid, kBlockRows, shared, static_cast<cudaStream_t>(stream)>>>(a);
  USP_CUDA_CHECK(cudaGetLastError());
}

}  // namespace usp::attention
