// One loop per kernel; see unfused_kernels.hpp. The row sums and maxima use the core's lane
// helpers (a fixed order, vectorized), as the fused kernels do.
#include "chapters/13_fused_kernels/unfused_kernels.hpp"

#include <cmath>

#include "common/ops/simd_math.hpp"

namespace usp::ch13::unfused {

using ops::detail::exp_approx;
using ops::detail::lane_max;
using ops::detail::lane_sum;

void add(const float* a, const float* b, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
}
void add_inplace(float* y, const float* a, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] += a[i];
}
void mul(const float* a, const float* b, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = a[i] * b[i];
}
void square(const float* a, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = a[i] * a[i];
}
void scale_inplace(float* y, float s, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] *= s;
}
void add_scalar_inplace(float* y, float s, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] += s;
}
void div_scalar_inplace(float* y, float s, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] /= s;
}
void axpy(float* y, float s, const float* a, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] += s * a[i];
}
void addcmul(float* y, float s, const float* a, const float* b, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] += s * a[i] * b[i];
}
USP_SIMD_CLONES void addcdiv(float* y, float s, const float* a, const float* b, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] += s * a[i] / b[i];
}
USP_SIMD_CLONES void sqrt(const float* a, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = std::sqrt(a[i]);
}
USP_SIMD_CLONES void sigmoid(const float* a, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = 1.0f / (1.0f + exp_approx(-a[i]));
}
void silu_grad(const float* s, const float* g, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = s[i] * (1.0f + g[i] * (1.0f - s[i]));
}

void mul_rows(const float* x, const float* r, float* y, std::int64_t rows, std::int64_t cols) {
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) y[i * cols + j] = x[i * cols + j] * r[i];
}
void mul_cols(const float* x, const float* w, float* y, std::int64_t rows, std::int64_t cols) {
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) y[i * cols + j] = x[i * cols + j] * w[j];
}
void div_rows(const float* x, const float* r, float* y, std::int64_t rows, std::int64_t cols) {
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) y[i * cols + j] = x[i * cols + j] / r[i];
}
USP_SIMD_CLONES void sub_rows_exp(const float* x, const float* m, float* y, std::int64_t rows, std::int64_t cols) {
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) y[i * cols + j] = exp_approx(x[i * cols + j] - m[i]);
}
void rmsnorm_grad(const float* g, const float* x, const float* r, const float* d, float* y, std::int64_t rows,
                  std::int64_t cols) {
  for (std::int64_t i = 0; i < rows; ++i) {
    const float k = r[i] * r[i] * r[i] * d[i];
    for (std::int64_t j = 0; j < cols; ++j) y[i * cols + j] = r[i] * g[i * cols + j] - k * x[i * cols + j];
  }
}

void row_mean(const float* x, float* y, std::int64_t rows, std::int64_t cols) {
  for (std::int64_t i = 0; i < rows; ++i) y[i] = lane_sum(x + i * cols, cols) / static_cast<float>(cols);
}
void row_sum(const float* x, float* y, std::int64_t rows, std::int64_t cols) {
  for (std::int64_t i = 0; i < rows; ++i) y[i] = lane_sum(x + i * cols, cols);
}
void row_max(const float* x, float* y, std::int64_t rows, std::int64_t cols) {
  for (std::int64_t i = 0; i < rows; ++i) y[i] = lane_max(x + i * cols, cols);
}
void rsqrt_eps(const float* x, float* y, float eps, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(1.0 / std::sqrt(static_cast<double>(x[i]) + eps));
}
void col_sum_scaled(const float* dy, const float* x, const float* r, float* dw, std::int64_t rows, std::int64_t cols) {
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) dw[j] += dy[i * cols + j] * x[i * cols + j] * r[i];
}

void nll(const float* p, const std::int32_t* t, float* loss, std::int64_t rows, std::int64_t cols) {
  for (std::int64_t i = 0; i < rows; ++i) loss[i] = -std::log(p[i * cols + t[i]]);
}
void softmax_grad(const float* p, const std::int32_t* t, float k, float* d, std::int64_t rows, std::int64_t cols) {
  for (std::int64_t i = 0; i < rows; ++i) {
    for (std::int64_t j = 0; j < cols; ++j) d[i * cols + j] = k * p[i * cols + j];
    d[i * cols + t[i]] -= k;
  }
}

}  // namespace usp::ch13::unfused
