// A block's sum or max of one float per thread, returned to every thread (CUDA sources only).
// Warp shuffles first, then one value per warp through shared memory, read by every thread in
// the same order (so all threads get the same bits). kThreads: the block size, a multiple of 32.
// The leading barrier lets a kernel call it several times in a row: the previous call's reads
// of the shared slots finish before they are overwritten.
#pragma once
#include <cuda_runtime.h>

namespace usp::cuda {

template <int kThreads, bool kMax>
__device__ float block_reduce(float v) {
  static_assert(kThreads % 32 == 0 && kThreads <= 1024, "a block of whole warps");
  __shared__ float per_warp[kThreads / 32];
  for (int o = 16; o > 0; o >>= 1) {
    const float other = __shfl_xor_sync(0xffffffffu, v, o);
    v = kMax ? fmaxf(v, other) : v + other;
  }
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  __syncthreads();
  if (lane == 0) per_warp[warp] = v;
  __syncthreads();
  v = per_warp[0];
  for (int w = 1; w < kThreads / 32; ++w) v = kMax ? fmaxf(v, per_warp[w]) : v + per_warp[w];
  return v;
}

template <int kThreads>
__device__ float block_sum(float v) { return block_reduce<kThreads, false>(v); }
template <int kThreads>
__device__ float block_max(float v) { return block_reduce<kThreads, true>(v); }

}  // namespace usp::cuda
