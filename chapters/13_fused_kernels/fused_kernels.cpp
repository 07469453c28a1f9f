#include "chapters/13_fused_kernels/fused_kernels.hpp"

#include <cmath>

#include "common/ops/simd_math.hpp"

namespace usp::ch13::fused {

using ops::detail::exp_approx;
using ops::detail::lane_max;

namespace {

// d[j] = e^(x[j] - m), returning Σ_j d[j] in lanes (the unfused row_sum's order). d may be x.
USP_SIMD_CLONES float exp_into(const float* x, float m, float* d, std::int64_t n) {
  using ops::detail::kLanes;
  float acc[kLanes] = {};
  std::int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int l = 0; l < kLanes; ++l) {
      d[j + l] = exp_approx(x[j + l] - m);
      acc[l] += d[j + l];
    }
  float s = 0.0f;
  for (int l = 0; l < kLanes; ++l) s += acc[l];
  for (; j < n; ++j) {
    d[j] = exp_approx(x[j] - m);
    s += d[j];
  }
  return s;
}

}  // namespace

void softmax_cross_entropy(const float* x, const std::int32_t* t, float k, float* loss, float* d, std::int64_t rows,
                           std::int64_t cols) {
  for (std::int64_t i = 0; i < rows; ++i) {
    const float* xi = x + i * cols;
    float* di = d + i * cols;
    const float m = lane_max(xi, cols);
    const float target_logit = xi[t[i]];  // read before d (maybe x itself) overwrites the row
    // The row's exponentials go straight into d (the row is in cache, not a [N, V] tensor of
    // probabilities in memory); one more sweep scales them into the gradient.
    const float sum = exp_into(xi, m, di, cols);
    loss[i] = static_cast<float>(static_cast<double>(m) + std::log(static_cast<double>(sum)) - target_logit);
    const float f = k / sum;
    for (std::int64_t j = 0; j < cols; ++j) di[j] *= f;
    di[t[i]] -= k;
  }
}

USP_SIMD_CLONES void adamw(float* p, const float* g, float* m, float* v, const AdamWStep& s, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    p[i] *= s.decay;
    m[i] = s.beta1 * m[i] + (1.0f - s.beta1) * g[i];
    v[i] = s.beta2 * v[i] + (1.0f - s.beta2) * g[i] * g[i];
    p[i] -= s.step_size * m[i] / (std::sqrt(v[i]) / s.bc2_sqrt + s.eps);
  }
}

}  // namespace usp::ch13::fused
