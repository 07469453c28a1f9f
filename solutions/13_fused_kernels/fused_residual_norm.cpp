// Exercise 13.1, the reference: each row in two sweeps that stay in cache (the sum of squares,
// then the outputs), so memory sees one read of each input and one write of each output.
#include "chapters/13_fused_kernels/fused_residual_norm.hpp"

#include <cmath>

namespace usp::ch13 {

void residual_rmsnorm_forward(const float* x, const float* r, const float* w, float eps, std::int64_t rows,
                              std::int64_t C, float* x2, float* h, float* rstd) {
  for (std::int64_t i = 0; i < rows; ++i) {
    const float* xi = x + i * C;
    const float* ri = r + i * C;
    float* x2i = x2 + i * C;
    float* hi = h + i * C;
    // Sweep 1: the sum, written once, and its squares summed in 8 lanes (vectorizable; the same
    // order as ops::rmsnorm_forward's lane_dot, so both give the same bits).
    float acc[8] = {};
    std::int64_t j = 0;
    for (; j + 8 <= C; j += 8)
      for (int l = 0; l < 8; ++l) {
        const float s = xi[j + l] + ri[j + l];
        x2i[j + l] = s;
        acc[l] += s * s;
      }
    float ss = 0.0f;
    for (int l = 0; l < 8; ++l) ss += acc[l];
    for (; j < C; ++j) {
      const float s = xi[j] + ri[j];
      x2i[j] = s;
      ss += s * s;
    }
    const float ms = ss / static_cast<float>(C);
    const float rs = static_cast<float>(1.0 / std::sqrt(static_cast<double>(ms) + eps));
    rstd[i] = rs;
    // Sweep 2: the row is still in cache.
    for (j = 0; j < C; ++j) hi[j] = x2i[j] * rs * w[j];
  }
}

void residual_rmsnorm_backward(const float* dh, const float* x2, const float* w, const float* rstd, std::int64_t rows,
                               std::int64_t C, float* dx, float* dw) {
  const float inv_c = 1.0f / static_cast<float>(C);
  for (std::int64_t i = 0; i < rows; ++i) {
    const float* dhi = dh + i * C;
    const float* xi = x2 + i * C;
    float* dxi = dx + i * C;
    const float r = rstd[i];
    // Σ_k (dh·w)·x2, in 8 lanes.
    float acc[8] = {};
    std::int64_t j = 0;
    for (; j + 8 <= C; j += 8)
      for (int l = 0; l < 8; ++l) acc[l] += dhi[j + l] * w[j + l] * xi[j + l];
    float gx = 0.0f;
    for (int l = 0; l < 8; ++l) gx += acc[l];
    for (; j < C; ++j) gx += dhi[j] * w[j] * xi[j];
    const float k = r * r * r * gx * inv_c;
    for (j = 0; j < C; ++j) {
      dxi[j] += r * dhi[j] * w[j] - k * xi[j];
      dw[j] += dhi[j] * xi[j] * r;
    }
  }
}

}  // namespace usp::ch13
