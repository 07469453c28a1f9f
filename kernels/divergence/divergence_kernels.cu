// Control divergence, the kernels: one kernel body, templated on how threads find their element.
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "kernels/divergence/branch_work.hpp"
#include "common/cuda/cuda_check.hpp"
#include "common/cuda/streams.hpp"
#include "common/error.hpp"
#include "kernels/divergence/divergence_kernels.hpp"

namespace usp::divergence {
namespace {

constexpr int kBlock = 256;

template <bool kUniform>
__global__ void __launch_bounds__(kBlock) branchy_kernel(const float* x, float* y, std::int64_t n, int iters) {
  const std::int64_t t = static_cast<std::int64_t>(blockIdx.x) * kBlock + threadIdx.x;
  const std::int64_t e = kUniform ? uniform_element(t) : divergent_element(t);
  if (e < n) y[e] = branch_work(e, x[e], iters);
}

template <bool kUniform>
void launch(const char* name, const float* x, float* y, std::int64_t n, int iters) {
  if (n < 1 || n >= (std::int64_t{1} << 31) - 2 * kWarp)
    throw Error(std::string(name) + ": n must be in [1, 2^31 - 64), got " + std::to_string(n));
  if (iters < 0) throw Error(std::string(name) + ": iters must be >= 0");
  if (x == nullptr || y == nullptr) throw Error(std::string(name) + ": x and y must not be null");
  const auto blocks = static_cast<unsigned>((threads_for(n) + kBlock - 1) / kBlock);
  branchy_kernel<kUniform><<<blocks, kBlock, 0, cuda::compute_stream()>>>(x, y, n, iters);
  USP_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void run_divergent(const float* x, float* y, std::int64_t n, int iters) {
  launch<false>("run_divergent", x, y, n, iters);
}

void run_uniform(const float* x, float* y, std::int64_t n, int iters) {
  launch<true>("run_uniform", x, y, n, iters);
}

}  // namespace usp::divergence
