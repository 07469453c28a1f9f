// Attention rung 05, FlashAttention-2's forward on tensor cores (tc_flash_bodies.hpp): bf16 q, k, v,
// fp32 out and lse; a block of 4 warps per (64-query tile, head, batch), S = q·kᵀ and out += P·v
// by mma.sync m16n8k16, the online softmax on the accumulator registers, P kept in registers.
// Not done, and why FlashAttention-2/3 are still ahead: ldmatrix fragment loads, cp.async double
// buffering of the K/V tiles, and on Hopper wgmma with TMA (FlashAttention-3).
#include <cuda_runtime.h>

#include <string>

#include "common/cuda/cuda_check.hpp"
#include "common/error.hpp"
#include "kernels/attention/attention_rungs.hpp"
#include "kernels/attention/tc_flash_bodies.hpp"

namespace usp::attention {
namespace {

template <int D>
__global__ void __launch_bounds__(kTcThreads) tc_forward_kernel(AttentionBf16 a) {
  extern __shared__ __align__(16) std::uint16_t tc_smem[];  // Qs, Ks, Vs [64, D + 8]
  mma::DeviceLane lane;
  tc_forward_block<D>(a, static_cast<int>(blockIdx.x), static_cast<int>(blockIdx.y), static_cast<int>(blockIdx.z),
                      static_cast<int>(threadIdx.x), tc_smem, lane);
}

template <int D>
void launch(const AttentionBf16& a, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>((a.f.T + kTcRows - 1) / kTcRows), static_cast<unsigned>(a.f.H),
                  static_cast<unsigned>(a.f.B));
  const std::size_t shared = kTcSharedElems<D> * sizeof(std::uint16_t);  // 51 KiB at D = 128
  USP_CUDA_CHECK(cudaFuncSetAttribute(tc_forward_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      static_cast<int>(shared)));
  tc_forward_kernel<D><<<grid, kTcThreads, shared, stream>>>(a);
  USP_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void flash_forward_bf16_tc(const AttentionBf16& a, void* stream) {
  USP_CHECK(a.f.G > 0 && a.f.H % a.f.G == 0, "attention::flash_forward_bf16_tc: G must divide H");
  USP_CHECK(a.f.D == 64 || a.f.D == 128,
            "attention::flash_forward_bf16_tc: head dim " + std::to_string(a.f.D) + " (64 or 128 only)");
  mma::require_bf16_mma("attention::flash_forward_bf16_tc");
  if (a.f.D == 64)
    launch<64>(a, static_cast<cudaStream_t>(stream));
  else
    launch<128>(a, static_cast<cudaStream_t>(stream));
}

}  // namespace usp::attention
