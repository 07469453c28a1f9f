// Exercise 13.1: residual add + RMSNorm, fused. The contract is in
// chapters/13_fused_kernels/fused_residual_norm.hpp; the lesson (chapters/13_fused_kernels/README.md,
// "Exercise 13.1") gives the idea.
//
// The tests compare with the core's ops (add + rmsnorm) to fp32 rounding, on C = 37 (not a
// multiple of any vector width), in place (x2 the same array as x or r), and train a model
// through your kernel.
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
