// Exercise 13.1: residual add + RMSNorm, fused. The contract is in
// chapters/13_fused_kernels/fused_residual_norm.hpp; the lesson (chapters/13_fused_kernels/README.md,
// "Exercise 13.1") gives the idea.
//
// Hints:
//  - forward: one row at a time. While you form x2 = x + r, also accumulate Σ x2² — then the row
//    is still in cache when you write h. Careful when x2 is the same array as x or r: read both
//    inputs of an element before you write it.
//  - backward: the gradient of a row's norm needs one number per row, Σ_k (dh·w)·x2, before any
//    element of dx can be written; then one sweep adds the norm's gradient into dx (the residual
//    path's gradient is already there) and accumulates dw.
//  - the tests compare with the core's ops (add + rmsnorm) to fp32 rounding, on C = 37 (not a
//    multiple of any vector width), and train a model through your kernel.
#include "chapters/13_fused_kernels/fused_residual_norm.hpp"

#include "common/error.hpp"

namespace usp::ch13 {

void residual_rmsnorm_forward(const float* /*x*/, const float* /*r*/, const float* /*w*/, float /*eps*/,
                              std::int64_t /*rows*/, std::int64_t /*C*/, float* /*x2*/, float* /*h*/,
                              float* /*rstd*/) {
  throw NotImplemented("exercise 13.1: residual_rmsnorm_forward (fused residual add + RMSNorm)");
}

void residual_rmsnorm_backward(const float* /*dh*/, const float* /*x2*/, const float* /*w*/, const float* /*rstd*/,
                               std::int64_t /*rows*/, std::int64_t /*C*/, float* /*dx*/, float* /*dw*/) {
  throw NotImplemented("exercise 13.1: residual_rmsnorm_backward (fused residual add + RMSNorm)");
}

}  // namespace usp::ch13
