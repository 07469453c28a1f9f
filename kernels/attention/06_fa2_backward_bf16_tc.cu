// Attention rung 06, FlashAttention-2's backward on tensor cores (tc_flash_backward_bodies.hpp):
// delta first (a thread per query row), then 4 warps per (64-key tile, head, batch), the five
// products of the backward by mma.sync m16n8k16 in bf16 with fp32 accumulation; dq, dk, dv fp32,
// gathered with atomic adds.
#include <cuda_runtime.h>

#include <string>

#include "common/cuda/cuda_check.hpp"
#include "common/error.hpp"
#include "kernels/attention/attention_rungs.hpp"
#include "kernels/attention/backward_launch.cuh"
#include "kernels/attention/tc_flash_backward_bodies.hpp"

namespace usp::attention {
namespace {

__global__ void tc_delta_kernel(AttentionBackwardBf16 g) {
  const AttentionF32& a = g.f.f;
  const std::int64_t rows = static_cast<std::int64_t>(a.B) * a.H * a.T;
  const std::int64_t x = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (x >= rows) return;
  const int i = static_cast<int>(x % a.T), h = static_cast<int>((x / a.T) % a.H), b = static_cast<int>(x / a.T / a.H);
  tc_delta_row(g, b, h, i);
}

template <int D>
__global__ void __launch_bounds__(kTcThreads) tc_backward_kernel(AttentionBackwardBf16 g) {
  extern __shared__ __align__(16) unsigned char tc_bwd_smem[];
  mma::DeviceLane lane;
  tc_backward_block<D>(g, static_cast<int>(blockIdx.x), static_cast<int>(blockIdx.y), static_cast<int>(blockIdx.z),
                       static_cast<int>(threadIdx.x), tc_bwd_smem, lane);
}

template <int D>
void launch(const AttentionBackwardBf16& g, cudaStream_t stream) {
  const AttentionF32& a = g.f.f;
  const dim3 grid(static_cast<unsigned>((a.T + kTcCols - 1) / kTcCols), static_cast<unsigned>(a.H),
                  static_cast<unsigned>(a.B));
  const int shared = kTcBwdSharedBytes<D>;  // 77.5 KiB at D = 128
  USP_CUDA_CHECK(cudaFuncSetAttribute(tc_backward_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, shared));
  tc_backward_kernel<D><<<grid, kTcThreads, static_cast<std::size_t>(shared), stream>>>(g);
  USP_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void flash_backward_bf16_tc(const AttentionBackwardBf16& g, void* stream) {
  const AttentionF32& a = g.f.f;
  USP_CHECK(a.G > 0 && a.H % a.G == 0, "attention::flash_backward_bf16_tc: G must divide H");
  USP_CHECK(a.D == 64 || a.D == 128,
            "attention::flash_backward_bf16_tc: head dim " + std::to_string(a.D) + " (64 or 128 only)");
  mma::require_bf16_mma("attention::flash_backward_bf16_tc");
  auto s = static_cast<cudaStream_t>(stream);
  zero_gradients(a, g.dq, g.dk, g.dv, s);
  const std::int64_t rows = static_cast<std::int64_t>(a.B) * a.H * a.T;
  tc_delta_kernel<<<static_cast<unsigned>((rows + 255) / 256), 256, 0, s>>>(g);
  USP_CUDA_CHECK(cudaGetLastError());
  if (a.D == 64)
    launch<64>(g, s);
  else
    launch<128>(g, s);
}

}  // namespace usp::attention
