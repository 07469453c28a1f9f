// Exercise 13.1: residual add + RMSNorm as one fused kernel, forward and backward.
//
// In the decoder, the attention branch's output r joins the residual stream x and the sum is
// normalised for the MLP. Unfused, that is an add kernel and a norm kernel (and an eager
// framework's norm is itself five kernels: square, mean, rsqrt, two multiplies), each reading
// and writing whole [rows, C] tensors. Fused, each row is read once and written once.
//
// Shapes: rows × C row-major; w [C]; rstd [rows]. All fp32.
#pragma once
#include <cstdint>

namespace usp::ch13 {

// Forward, for every row i (one pass over the row's elements, plus the row's reduction):
//   x2[i,j]  = x[i,j] + r[i,j]
//   rstd[i]  = 1 / sqrt(mean_j x2[i,j]² + eps)       (the square root in double, like ops::rmsnorm_forward)
//   h[i,j]   = x2[i,j] · rstd[i] · w[j]
// x2 may be the same array as x or r (the model adds the branch output into its buffer in place).
// Reads x, r, w once each; writes x2, h, rstd once each; allocates nothing.
void residual_rmsnorm_forward(const float* x, const float* r, const float* w, float eps, std::int64_t rows,
                              std::int64_t C, float* x2, float* h, float* rstd);

// Backward. dh [rows, C] is ∂L/∂h. dx [rows, C] holds, on entry, the gradient that reaches x2
// along the residual stream from the layers above, and on return ∂L/∂x2 in full: that plus what
// comes back through the norm (h depends on x2 directly and through rstd) — which is also ∂L/∂x
// and ∂L/∂r, since the add passes its gradient to both. dw [C] accumulates ∂L/∂w (+=, like every
// weight gradient). Deriving ∂L/∂x2 through rstd is the exercise (the lesson, section 3, asks the
// questions). rstd is the forward's.
// Reads dh, x2, rstd, w and dx once each; writes dx once; dw stays in cache across rows.
void residual_rmsnorm_backward(const float* dh, const float* x2, const float* w, const float* rstd, std::int64_t rows,
                               std::int64_t C, float* dx, float* dw);

}  // namespace usp::ch13
