// Chapter 13's kernels on CUDA; see fused_cuda.hpp. The row kernels use one block of 256 threads
// per row: each thread strides over the row (consecutive threads, consecutive elements:
// coalesced), partial sums meet in a block reduction.
#include <cuda_runtime.h>

#include <chrono>

#include "common/cuda/block_reduce.cuh"
#include "common/cuda/cuda_check.hpp"
#include "common/error.hpp"
#include "kernels/fused/fused_cuda.hpp"

namespace usp::fused_cuda {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(std::int64_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }
cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }
void check_launch() { USP_CUDA_CHECK(cudaGetLastError()); }

// Sum (or max) of one value per thread over the block; every thread gets the result.
template <bool kMax>
__device__ float block_reduce(float v) { return cuda::block_reduce<kThreads, kMax>(v); }

__global__ void residual_rmsnorm_forward_kernel(const float* x, const float* r, const float* w, float eps,
                                                std::int64_t C, float* x2, float* h, float* rstd) {
  const std::int64_t row = blockIdx.x;
  const float* xi = x + row * C;
  const float* ri = r + row * C;
  float* x2i = x2 + row * C;
  float* hi = h + row * C;
  float ss = 0.0f;
  for (std::int64_t j = threadIdx.x; j < C; j += blockDim.x) {
    const float s = xi[j] + ri[j];
    x2i[j] = s;
    ss += s * s;
  }
  ss = block_reduce<false>(ss);
  const float rs = static_cast<float>(1.0 / sqrt(static_cast<double>(ss / static_cast<float>(C)) + eps));
  if (threadIdx.x == 0) rstd[row] = rs;
  // Each thread re-reads the x2 elements it wrote itself: no barrier needed, and they are in L1/L2.
  for (std::int64_t j = threadIdx.x; j < C; j += blockDim.x) hi[j] = x2i[j] * rs * w[j];
}

__global__ void residual_rmsnorm_backward_kernel(const float* dh, const float* x2, const float* w, const float* rstd,
                                                 std::int64_t C, float* dx, float* dw) {
  const std::int64_t row = blockIdx.x;
  const float* dhi = dh + row * C;
  const float* xi = x2 + row * C;
  float* dxi = dx + row * C;
  const float r = rstd[row];
  float gx = 0.0f;
  for (std::int64_t j = threadIdx.x; j < C; j += blockDim.x) gx += dhi[j] * w[j] * xi[j];
  gx = block_reduce<false>(gx);
  const float k = r * r * r * gx / static_cast<float>(C);
  for (std::int64_t j = threadIdx.x; j < C; j += blockDim.x) {
    dxi[j] += r * dhi[j] * w[j] - k * xi[j];
    atomicAdd(&dw[j], dhi[j] * xi[j] * r);  // one add per row and column: rows meet in dw
  }
}

__device__ float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

__global__ void swiglu_forward_kernel(const float* g, const float* u, float* z, std::int64_t n) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) z[i] = g[i] * sigmoid(g[i]) * u[i];
}

__global__ void swiglu_backward_kernel(const float* dz, const float* g, const float* u, float* dg, float* du,
                                       std::int64_t n) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float s = sigmoid(g[i]);
  du[i] = dz[i] * (g[i] * s);
  dg[i] = (dz[i] * u[i]) * (s * (1.0f + g[i] * (1.0f - s)));
}

__global__ void softmax_cross_entropy_kernel(const float* x, const std::int32_t* t, float k, float* loss, float* d,
                                             std::int64_t cols) {
  const std::int64_t row = blockIdx.x;
  const float* xi = x + row * cols;
  float* di = d + row * cols;
  float m = -INFINITY;
  for (std::int64_t j = threadIdx.x; j < cols; j += blockDim.x) m = fmaxf(m, xi[j]);
  m = block_reduce<true>(m);
  const float target_logit = xi[t[row]];  // every thread reads it before any thread writes d (maybe x)
  float s = 0.0f;
  for (std::int64_t j = threadIdx.x; j < cols; j += blockDim.x) s += expf(xi[j] - m);
  s = block_reduce<false>(s);  // its barriers also order the reads above before the writes below
  if (threadIdx.x == 0) loss[row] = static_cast<float>(static_cast<double>(m) + log(static_cast<double>(s)) - target_logit);
  const float f = k / s;
  for (std::int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    const float p = expf(xi[j] - m) * f;
    di[j] = j == t[row] ? p - k : p;
  }
}

__global__ void adamw_kernel(float* p, const float* g, float* m, float* v, AdamWArgs s, std::int64_t n) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float w = p[i] * s.decay;
  const float mi = s.beta1 * m[i] + (1.0f - s.beta1) * g[i];
  const float vi = s.beta2 * v[i] + (1.0f - s.beta2) * g[i] * g[i];
  m[i] = mi;
  v[i] = vi;
  w -= s.step_size * mi / (sqrtf(vi) / s.bc2_sqrt + s.eps);
  p[i] = w;
}

// ---- the unfused forward's kernels -------------------------------------------------------------
__global__ void add_kernel(const float* a, const float* b, float* y, std::int64_t n) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a[i] + b[i];
}
__global__ void square_kernel(const float* a, float* y, std::int64_t n) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a[i] * a[i];
}
__global__ void row_mean_kernel(const float* x, float* y, std::int64_t cols) {
  float s = 0.0f;
  for (std::int64_t j = threadIdx.x; j < cols; j += blockDim.x) s += x[blockIdx.x * cols + j];
  s = block_reduce<false>(s);
  if (threadIdx.x == 0) y[blockIdx.x] = s / static_cast<float>(cols);
}
__global__ void rsqrt_kernel(const float* x, float* y, float eps, std::int64_t n) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = static_cast<float>(1.0 / sqrt(static_cast<double>(x[i]) + eps));
}
__global__ void mul_rows_kernel(const float* x, const float* r, float* y, std::int64_t rows, std::int64_t cols) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < rows * cols) y[i] = x[i] * r[i / cols];
}
__global__ void mul_cols_kernel(const float* x, const float* w, float* y, std::int64_t rows, std::int64_t cols) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < rows * cols) y[i] = x[i] * w[i % cols];
}

__global__ void empty_kernel() {}

void check_rows(const char* op, std::int64_t rows, std::int64_t cols) {
  USP_CHECK(rows >= 1 && rows <= 0x7fffffff && cols >= 1,
            std::string("fused_cuda::") + op + ": rows must be in [1, 2^31) and cols >= 1");
}

}  // namespace

void residual_rmsnorm_forward(const float* x, const float* r, const float* w, float eps, std::int64_t rows,
                              std::int64_t C, float* x2, float* h, float* rstd, void* stream) {
  check_rows("residual_rmsnorm_forward", rows, C);
  residual_rmsnorm_forward_kernel<<<static_cast<unsigned>(rows), kThreads, 0, as_stream(stream)>>>(x, r, w, eps, C, x2,
                                                                                                  h, rstd);
  check_launch();
}

void residual_rmsnorm_backward(const float* dh, const float* x2, const float* w, const float* rstd,
                               std::int64_t rows, std::int64_t C, float* dx, float* dw, void* stream) {
  check_rows("residual_rmsnorm_backward", rows, C);
  residual_rmsnorm_backward_kernel<<<static_cast<unsigned>(rows), kThreads, 0, as_stream(stream)>>>(dh, x2, w, rstd, C,
                                                                                                   dx, dw);
  check_launch();
}

void swiglu_forward(const float* g, const float* u, float* z, std::int64_t n, void* stream) {
  swiglu_forward_kernel<<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(g, u, z, n);
  check_launch();
}

void swiglu_backward(const float* dz, const float* g, const float* u, float* dg, float* du, std::int64_t n,
                     void* stream) {
  swiglu_backward_kernel<<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(dz, g, u, dg, du, n);
  check_launch();
}

void softmax_cross_entropy(const float* x, const std::int32_t* t, float k, float* loss, float* d, std::int64_t rows,
                           std::int64_t cols, void* stream) {
  check_rows("softmax_cross_entropy", rows, cols);
  softmax_cross_entropy_kernel<<<static_cast<unsigned>(rows), kThreads, 0, as_stream(stream)>>>(x, t, k, loss, d, cols);
  check_launch();
}

void adamw(float* p, const float* g, float* m, float* v, const AdamWArgs& s, std::int64_t n, void* stream) {
  adamw_kernel<<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(p, g, m, v, s, n);
  check_launch();
}

void residual_rmsnorm_forward_unfused(const float* x, const float* r, const float* w, float eps, std::int64_t rows,
                                      std::int64_t C, float* x2, float* h, float* rstd, float* sq, float* ms, float* t,
                                      void* stream) {
  check_rows("residual_rmsnorm_forward_unfused", rows, C);
  const cudaStream_t s = as_stream(stream);
  const std::int64_t n = rows * C;
  add_kernel<<<blocks_for(n), kThreads, 0, s>>>(x, r, x2, n);
  square_kernel<<<blocks_for(n), kThreads, 0, s>>>(x2, sq, n);
  row_mean_kernel<<<static_cast<unsigned>(rows), kThreads, 0, s>>>(sq, ms, C);
  rsqrt_kernel<<<blocks_for(rows), kThreads, 0, s>>>(ms, rstd, eps, rows);
  mul_rows_kernel<<<blocks_for(n), kThreads, 0, s>>>(x2, rstd, t, rows, C);
  mul_cols_kernel<<<blocks_for(n), kThreads, 0, s>>>(t, w, h, rows, C);
  check_launch();
}

double empty_kernel_us(int launches) {
  USP_CHECK(launches >= 1, "fused_cuda::empty_kernel_us: launches must be >= 1");
  empty_kernel<<<1, 1>>>();  // warm-up: the first launch loads the module
  USP_CUDA_CHECK(cudaDeviceSynchronize());
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < launches; ++i) empty_kernel<<<1, 1>>>();
  USP_CUDA_CHECK(cudaDeviceSynchronize());
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  return us / launches;
}

}  // namespace usp::fused_cuda
