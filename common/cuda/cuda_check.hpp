// USP_CUDA_CHECK(expr): runs a CUDA runtime call and turns a failure into usp::Error naming the
// call, the CUDA error and the place. Internal to the CUDA files of the core (common/cuda/,
// kernels/): everything else reaches CUDA through cuda_support.hpp and never sees this header.
#pragma once
#include <cuda_runtime.h>

#include <string>

#include "common/error.hpp"

namespace usp::cuda::detail {

// Builds the message and clears CUDA's "last error" slot, so that a failure reported once
// here is not reported again by the next unrelated cudaGetLastError().
[[noreturn]] inline void throw_cuda_error(cudaError_t err, const char* expr, const char* file, int line) {
  (void)cudaGetLastError();
  throw ::usp::Error(std::string("CUDA error: ") + cudaGetErrorString(err) + " (" +
                     cudaGetErrorName(err) + ") in " + expr + " at " + file + ":" + std::to_string(line));
}

}  // namespace usp::cuda::detail

#define USP_CUDA_CHECK(expr)                                                          \
  do {                                                                                \
    const cudaError_t usp_cuda_err_ = (expr);                                         \
    if (usp_cuda_err_ != cudaSuccess)                                                 \
      ::usp::cuda::detail::throw_cuda_error(usp_cuda_err_, #expr, __FILE__, __LINE__); \
  } while (0)
