// The fused kernels of chapter 13: each chain of unfused_kernels.hpp as ONE pass that reads its
// inputs once, keeps every intermediate in registers (or, for a row it visits several times, in
// cache) and writes only its outputs. The residual + RMSNorm pair is exercise 13.1
// (fused_residual_norm.hpp); SwiGLU's fused kernels are the core's own ops (ops::swiglu_*,
// already one pass each); these are the others.
#pragma once
#include <cstdint>

namespace usp::ch13::fused {

// Softmax + cross-entropy, forward and backward in one pass over each row of logits [rows, V]:
//   loss[i] = m + log Σ_j e^(x[i,j] - m) - x[i, t[i]]      (m = max_j x[i,j]; never log of 0)
//   d[i,j]  = k · (softmax(x[i])_j - [j = t[i]])
// The probabilities are never stored: the row's max and sum are kept, and each probability is
// recomputed where the gradient needs it. d may be x itself (the logits' buffer becomes their
// gradient, as the core's LM head does).
void softmax_cross_entropy(const float* x, const std::int32_t* t, float k, float* loss, float* d, std::int64_t rows,
                           std::int64_t cols);

// One AdamW step on n parameters in one pass (the core's update, common/optim/adamw.hpp):
//   p *= decay ; m = β1·m + (1-β1)·g ; v = β2·v + (1-β2)·g² ; p -= step · m / (√v / √bc2 + eps)
struct AdamWStep {
  float decay;      // 1 - lr · weight_decay
  float beta1, beta2;
  float step_size;  // lr / (1 - β1^t)
  float bc2_sqrt;   // √(1 - β2^t)
  float eps;
};
void adamw(float* p, const float* g, float* m, float* v, const AdamWStep& s, std::int64_t n);

}  // namespace usp::ch13::fused
