// Attention rung 04, FlashAttention-2's backward (flash_backward_bodies.hpp): delta first (a thread
// per query row), then a block of kBlockCols threads per (key tile, head, batch), a thread per
// key, query tiles staged in shared memory, the probabilities recomputed from the saved lse.
#include <cuda_runtime.h>

#include <string>

#include "common/cuda/cuda_check.hpp"
#include "common/error.hpp"
#include "kernels/attention/attention_rungs.hpp"
#include "kernels/attention/backward_launch.cuh"
#include "kernels/attention/flash_backward_bodies.hpp"

namespace usp::attention {
namespace {

__global__ void delta_kernel(AttentionBackwardF32 g) {
  const std::int64_t n = static_cast<std::int64_t>(g.f.B) * g.f.H * g.f.T;
  const std::int64_t x = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (x >= n) return;
  const int i = static_cast<int>(x % g.f.T), h = static_cast<int>(x / g.f.T % g.f.H);
  delta_row(g, static_cast<int>(x / g.f.T / g.f.H), h, i);
}

__global__ void __launch_bounds__(kBlockCols) flash_backward_kernel(AttentionBackwardF32 g) {
  const AttentionF32& a = g.f;
  extern __shared__ float smem[];
  float* Qs = smem;                      // [kBlockRows, D]
  float* dOs = Qs + kBlockRows * a.D;    // [kBlockRows, D]
  float* Ls = dOs + kBlockRows * a.D;    // [kBlockRows]
  float* Ds = Ls + kBlockRows;           // [kBlockRows]
  const int t = static_cast<int>(threadIdx.x);
  const int j0 = static_cast<int>(blockIdx.x) * kBlockCols, h = static_cast<int>(blockIdx.y);
  const int b = static_cast<int>(blockIdx.z), j = j0 + t;
  float k[kMaxHeadDim], v[kMaxHeadDim], dk[kMaxHeadDim], dv[kMaxHeadDim];
  if (j < a.T) {
    const std::int64_t o = kv_offset(a, b, j, h / (a.H / a.G));
    for (int e = 0; e < a.D; ++e) k[e] = a.k[o + e], v[e] = a.v[o + e], dk[e] = 0, dv[e] = 0;
  }
  for (int i0 = a.causal ? j0 / kBlockRows * kBlockRows : 0; i0 < a.T; i0 += kBlockRows) {
    const int nq = min(kBlockRows, a.T - i0);
    load_q_tile(g, b, h, i0, nq, t, Qs, dOs, Ls, Ds);
    __syncthreads();
    if (j < a.T) key_row_tile_backward(g, b, h, j, k, v, Qs, dOs, Ls, Ds, i0, nq, dk, dv);
    __syncthreads();
  }
  if (j < a.T) write_key_grads(g, b, h, j, dk, dv);
}

}  // namespace

void flash_backward(const AttentionBackwardF32& g, void* stream) {
  const AttentionF32& a = g.f;
  USP_CHECK(a.G > 0 && a.H % a.G == 0, "attention::flash_backward: G must divide H");
  USP_CHECK(a.D >= 1 && a.D <= kMaxHeadDim,
            "attention::flash_backward: head dim " + std::to_string(a.D) + " outside 1.." + std::to_string(kMaxHeadDim));
  auto s = static_cast<cudaStream_t>(stream);
  zero_gradients(a, g.dq, g.dk, g.dv, s);
  const std::int64_t rows = static_cast<std::int64_t>(a.B) * a.H * a.T;
  delta_kernel<<<static_cast<unsigned>((rows + 255) / 256), 256, 0, s>>>(g);
  USP_CUDA_CHECK(cudaGetLastError());
  const dim3 grid(static_cast<unsigned>((a.T + kBlockCols - 1) / kBlockCols), static_cast<unsigned>(a.H),
                  static_cast<unsigned>(a.B));
  const std::size_t shared = (2 * kBlockRows * static_cast<std::size_t>(a.D) + 2 * kBlockRows) * sizeof(float);
  USP_CUDA_CHECK(cudaFuncSetAttribute(flash_backward_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      static_cast<int>(shared)));
  flash_backward_kernel<<<grid, kBlockCols, shared, s>>>(g);
  USP_CUDA_CHECK(cudaGetLastError());
}

}  // namespace usp::attention
