// Control divergence, the kernels: y[e] = branch_work(e, x[e], iters) for e < n, with elements
// handed to threads divergently or uniformly (branch_work.hpp). x and y are device pointers of
// n floats. Preconditions, checked before any CUDA call (usp::Error otherwise): 1 <= n < 2^31
// - 64, iters >= 0, x and y not null. Asynchronous, on the compute stream.
// Defined only when the build has CUDA (USP_HAVE_CUDA).
#pragma once
#include <cstdint>

namespace usp::divergence {

void run_divergent(const float* x, float* y, std::int64_t n, int iters);
void run_uniform(const float* x, float* y, std::int64_t n, int iters);

}  // namespace usp::divergence
