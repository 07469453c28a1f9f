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
    throw Error(std::string("device_gemm: ") + what + " = " + std::to_string(v) + " does not fit cuBLAS's int");
  return static_cast<int>(v);
}

cudaDataType_t cuda_type(DType t) {
  switch (t) {
    case DType::f32: return CUDA_R_32F;
    case DType::bf16: return CUDA_R_16BF;
    case DType::f16: return CUDA_R_16F;
    default: throw Error(std::string("device_gemm: ") + dtype_name(t) + " is not a float dtype cuBLAS multiplies");
  }
}

}  // namespace

void device_gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, DType ab,
                 const void* a, std::int64_t lda, const void* b, std::int64_t ldb, float beta, DType c_type, void* c,
                 std::int64_t ldc) {
  if (m == 0 || n == 0) return;
  const cublasOperation_t op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  cuda::cublas_check(cublasGemmEx(cuda::cublas_handle(), op_b, op_a, as_int(n, "n"), as_int(m, "m"), as_int(k, "k"),
                                  &alpha, b, cuda_type(ab), as_int(ldb, "ldb"), a, cuda_type(ab), as_int(lda, "lda"),
                                  &beta, c, cuda_type(c_type), as_int(ldc, "ldc"), CUBLAS_COMPUTE_32F,
                                  CUBLAS_GEMM_DEFAULT),
                     "cublasGemmEx");
}

void device_sgemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                  const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
                  std::int64_t ldc) {
  device_gemm(trans_a, trans_b, m, n, k, alpha, DType::f32, a, lda, b, ldb, beta, DType::f32, c, ldc);
}

}  // namespace usp::ops::detail
