// Attention rung 01, naive: S = q·kᵀ·scale, P = softmax(S) and out = P·v as three kernels with
// S and P in global memory (naive_bodies.hpp). Each kernel is a grid of independent threads; the
// [B, H, T, T] matrices are what it costs.
#include <cuda_runtime.h>

#include <string>

#include "common/cuda/cuda_check.hpp"
#include "common/error.hpp"
#include "kernels/attention/attention_rungs.hpp"
#include "kernels/attention/naive_bodies.hpp"

namespace usp::attention {
namespace {

constexpr int kThreads = 256;

__global__ void scores_kernel(AttentionF32 a, float* S) {
  const std::int64_t n = static_cast<std::int64_t>(a.B) * a.H * a.T * a.T;
  const std::int64_t x = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (x >= n) return;
  const int j = static_cast<int>(x % a.T), i = static_cast<int>(x / a.T % a.T);
  const int h = static_cast<int>(x / a.T / a.T % a.H), b = static_cast<int>(x / a.T / a.T / a.H);
  naive_score(a, b, h, i, j, S);
}

__global__ void softmax_kernel(AttentionF32 a, float* S) {
  const std::int64_t n = static_cast<std::int64_t>(a.B) * a.H * a.T;
  const std::int64_t x = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (x >= n) return;
  const int i = static_cast<int>(x % a.T), h = static_cast<int>(x / a.T % a.H), b = static_cast<int>(x / a.T / a.H);
  naive_softmax_row(a, b, h, i, S);
}

__global__ void output_kernel(AttentionF32 a, const float* P) {
  const std::int64_t n = static_cast<std::int64_t>(a.B) * a.T * a.H * a.D;
  const std::int64_t x = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (x >= n) return;
  // Consecutive threads take consecutive e of one output row: coalesced writes.
  const int e = static_cast<int>(x % a.D), h = static_cast<int>(x / a.D % a.H);
  const int i = static_cast<int>(x / a.D / a.H % a.T), b = static_cast<int>(x / a.D / a.H / a.T);
  naive_output(a, b, h, i, e, P);
}

unsigned blocks_for(std::int64_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

}  // namespace

void naive_forward(const AttentionF32& a, float* S, void* stream) {
  USP_CHECK(a.G > 0 && a.H % a.G == 0, "attention::naive_forward: G must divide H");
  auto s = static_cast<cudaStream_t>(stream);
  const std::int64_t scores = static_cast<std::int64_t>(a.B) * a.H * a.T * a.T;
  scores_kernel<<<blocks_for(scores), kThreads, 0, s>>>(a, S);
  USP_CUDA_CHECK(cudaGetLastError());
  softmax_kernel<<<blocks_for(static_cast<std::int64_t>(a.B) * a.H * a.T), kThreads, 0, s>>>(a, S);
  USP_CUDA_CHECK(cudaGetLastError());
  output_kernel<<<blocks_for(static_cast<std::int64_t>(a.B) * a.T * a.H * a.D), kThreads, 0, s>>>(a, S);
  USP_CUDA_CHECK(cudaGetLastError());
}

}  // namespace usp::attention
