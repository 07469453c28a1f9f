// What the backward rungs' launchers (04, 06) share: zeroing the gradients they accumulate into.
#pragma once
#include <cuda_runtime.h>

#include "common/cuda/cuda_check.hpp"
#include "kernels/attention/attention_problem.hpp"

namespace usp::attention {

inline void zero_gradients(const AttentionF32& a, float* dq, float* dk, float* dv, cudaStream_t s) {
  USP_CUDA_CHECK(cudaMemsetAsync(dq, 0, static_cast<std::size_t>(q_numel(a)) * sizeof(float), s));
  USP_CUDA_CHECK(cudaMemsetAsync(dk, 0, static_cast<std::size_t>(kv_numel(a)) * sizeof(float), s));
  USP_CUDA_CHECK(cudaMemsetAsync(dv, 0, static_cast<std::size_t>(kv_numel(a)) * sizeof(float), s));
}

}  // namespace usp::attention
