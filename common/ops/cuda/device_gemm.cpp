// Row-major GEMM on cuBLAS. cuBLAS is column-major, and a row-major [m, n] matrix is the same
// memory as a column-major [n, m] one (its transpose), so row-major C = op(A)·op(B) is
// column-major Cᵀ = op(B)ᵀ·op(A)ᵀ: B goes first, A second, each with its own flag, and the
// leading dimensions are the row strides unchanged.
#include "common/ops/cuda/device_gemm.hpp"

#include <limits>
#include <string>

#include "common/cuda/cublas_handle.hpp"
#include "common/error.hpp"

namespace usp::ops::detail {

namespace {

int as_int(std::int64_t v, const char* what) {
  if (v < 0 || v > std::numeric_limits<int>::max())
    throw Error(std::string("device_sgemm: ") + what + " = " + std::to_string(v) + " does not fit cuBLAS's int");
  return static_cast<int>(v);
}

}  // namespace

void device_sgemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                  const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
                  std::int64_t ldc) {
  if (m == 0 || n == 0) return;
  const cublasOperation_t op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  cuda::cublas_check(cublasSgemm(cuda::cublas_handle(), op_b, op_a, as_int(n, "n"), as_int(m, "m"), as_int(k, "k"),
                                 &alpha, b, as_int(ldb, "ldb"), a, as_int(lda, "lda"), &beta, c, as_int(ldc, "ldc")),
                     "cublasSgemm");
}

}  // namespace usp::ops::detail
