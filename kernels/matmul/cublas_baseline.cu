// cuBLAS on the ladder's problems. cuBLAS is column-major; a row-major M×N matrix is the same
// memory as a column-major N×M one, its transpose. So row-major C = A·B is column-major
// Cᵀ = Bᵀ·Aᵀ: we call cuBLAS with B as the left operand (N×K, leading dimension N) and A as
// the right one (K×M, leading dimension K), and no transposition flags at all.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "common/cuda/cuda_check.hpp"
#include "common/cuda/cublas_handle.hpp"
#include "kernels/matmul/cublas_baseline.hpp"

namespace usp::matmul {

void cublas_sgemm(const GemmF32& g) {
  check_gemm(g, "cublas_sgemm", 0);
  cuda::cublas_check(cublasSgemm(cuda::cublas_handle(), CUBLAS_OP_N, CUBLAS_OP_N, g.N, g.M, g.K, &g.alpha, g.B, g.N,
                                 g.A, g.K, &g.beta, g.C, g.N),
                     "cublasSgemm");
}

void cublas_gemm_bf16(const GemmBf16& g) {
  check_gemm(g, "cublas_gemm_bf16", 0);
  cuda::cublas_check(cublasGemmEx(cuda::cublas_handle(), CUBLAS_OP_N, CUBLAS_OP_N, g.N, g.M, g.K, &g.alpha, g.B,
                                  CUDA_R_16BF, g.N, g.A, CUDA_R_16BF, g.K, &g.beta, g.C, CUDA_R_32F, g.N,
                                  CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                     "cublasGemmEx (bf16 in, fp32 compute)");
}

}  // namespace usp::matmul
