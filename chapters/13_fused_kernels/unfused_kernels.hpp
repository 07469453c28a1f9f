// The small kernels an eager framework launches, one per operator: each reads its inputs from
// memory and writes its output back, the way PyTorch runs `x + r`, `x.pow(2)`, `.mean(-1)` one
// after another. The unfused variants of chapter 13's chains are sequences of these; every one
// is a single sweep (one pass) over its tensors. Shapes: rows × cols row-major, n elements.
// Exponentials use the core's vectorizable exp (the fused kernels use the same one, so the
// variants differ only in how they move data).
#pragma once
#include <cstdint>

namespace usp::ch13::unfused {

// ---- element-wise: n elements -----------------------------------------------------------------
void add(const float* a, const float* b, float* y, std::int64_t n);        // y = a + b
void add_inplace(float* y, const float* a, std::int64_t n);                 // y += a
void mul(const float* a, const float* b, float* y, std::int64_t n);        // y = a · b
void square(const float* a, float* y, std::int64_t n);                      // y = a²
void scale_inplace(float* y, float s, std::int64_t n);                      // y *= s
void add_scalar_inplace(float* y, float s, std::int64_t n);                 // y += s
void div_scalar_inplace(float* y, float s, std::int64_t n);                 // y /= s
void axpy(float* y, float s, const float* a, std::int64_t n);               // y += s · a
void addcmul(float* y, float s, const float* a, const float* b, std::int64_t n);  // y += s · a · b
void addcdiv(float* y, float s, const float* a, const float* b, std::int64_t n);  // y += s · a / b
void sqrt(const float* a, float* y, std::int64_t n);                        // y = √a
void sigmoid(const float* a, float* y, std::int64_t n);                     // y = 1 / (1 + e^-a)
// y = s · (1 + g · (1 - s)): the derivative of silu(g) = g · s(g), from s = sigmoid(g)
void silu_grad(const float* s, const float* g, float* y, std::int64_t n);

// ---- with a row or column broadcast -------------------------------------------------------------
void mul_rows(const float* x, const float* r, float* y, std::int64_t rows, std::int64_t cols);  // y[i,j] = x[i,j]·r[i]
void mul_cols(const float* x, const float* w, float* y, std::int64_t rows, std::int64_t cols);  // y[i,j] = x[i,j]·w[j]
void div_rows(const float* x, const float* r, float* y, std::int64_t rows, std::int64_t cols);  // y[i,j] = x[i,j]/r[i]
void sub_rows_exp(const float* x, const float* m, float* y, std::int64_t rows, std::int64_t cols);  // e^(x[i,j]-m[i])
// y[i,j] = r[i]·g[i,j] - x[i,j]·r[i]³·d[i]: RMSNorm's input gradient once d = mean_j g·x is known
void rmsnorm_grad(const float* g, const float* x, const float* r, const float* d, float* y, std::int64_t rows,
                  std::int64_t cols);

// ---- reductions -----------------------------------------------------------------------------------
void row_mean(const float* x, float* y, std::int64_t rows, std::int64_t cols);  // y[i] = mean_j x[i,j]
void row_sum(const float* x, float* y, std::int64_t rows, std::int64_t cols);   // y[i] = Σ_j x[i,j]
void row_max(const float* x, float* y, std::int64_t rows, std::int64_t cols);   // y[i] = max_j x[i,j]
void rsqrt_eps(const float* x, float* y, float eps, std::int64_t n);            // y = 1 / √(x + eps)
// dw[j] += Σ_i dy[i,j] · x[i,j] · r[i]: RMSNorm's weight gradient
void col_sum_scaled(const float* dy, const float* x, const float* r, float* dw, std::int64_t rows, std::int64_t cols);

// ---- cross-entropy pieces --------------------------------------------------------------------
// loss[i] = -log p[i, t[i]]   (reads one element per row)
void nll(const float* p, const std::int32_t* t, float* loss, std::int64_t rows, std::int64_t cols);
// d[i,j] = k · (p[i,j] - [j = t[i]])
void softmax_grad(const float* p, const std::int32_t* t, float k, float* d, std::int64_t rows, std::int64_t cols);

}  // namespace usp::ch13::unfused
