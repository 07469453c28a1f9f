// Chapter 13's chains as CUDA kernels (CUDA builds only). Pointers are device pointers, fp32,
// row-major; every launcher runs on the given stream (null: the default stream).
//
//   fused (one launch per chain, the CPU's fused_kernels.hpp and exercise 13.1 mirrored):
//     residual_rmsnorm_forward / _backward   a block per row; the row's sum reduced in the block
//                                            (warp shuffles, then one value per warp in shared memory)
//     swiglu_forward / _backward             a thread per element
//     softmax_cross_entropy                  a block per row: max and sum reduced in the block, the
//                                            row re-read from L2 for the gradient (no [N, V] probabilities)
//     adamw                                  a thread per parameter
//   unfused (one launch per operator, as unfused_kernels.hpp): element-wise kernels over n
//     elements and row reductions, enough to run the unfused residual + RMSNorm forward
//   empty_kernel_us                          the launch overhead: the mean time of `launches`
//                                            back-to-back launches of a kernel that does nothing
#pragma once
#include <cstdint>

namespace usp::fused_cuda {

void residual_rmsnorm_forward(const float* x, const float* r, const float* w, float eps, std::int64_t rows,
                              std::int64_t C, float* x2, float* h, float* rstd, void* stream = nullptr);
void residual_rmsnorm_backward(const float* dh, const float* x2, const float* w, const float* rstd,
                               std::int64_t rows, std::int64_t C, float* dx, float* dw, void* stream = nullptr);
void swiglu_forward(const float* g, const float* u, float* z, std::int64_t n, void* stream = nullptr);
void swiglu_backward(const float* dz, const float* g, const float* u, float* dg, float* du, std::int64_t n,
                     void* stream = nullptr);
void softmax_cross_entropy(const float* x, const std::int32_t* t, float k, float* loss, float* d, std::int64_t rows,
                           std::int64_t cols, void* stream = nullptr);
struct AdamWArgs {
  float decay, beta1, beta2, step_size, bc2_sqrt, eps;
};
void adamw(float* p, const float* g, float* m, float* v, const AdamWArgs& s, std::int64_t n, void* stream = nullptr);

// The unfused residual + RMSNorm forward: six launches (add, square, row_mean, rsqrt, mul_rows,
// mul_cols) through the scratch sq [rows, C], ms [rows], t [rows, C].
void residual_rmsnorm_forward_unfused(const float* x, const float* r, const float* w, float eps, std::int64_t rows,
                                      std::int64_t C, float* x2, float* h, float* rstd, float* sq, float* ms, float* t,
                                      void* stream = nullptr);

double empty_kernel_us(int launches);

}  // namespace usp::fused_cuda
