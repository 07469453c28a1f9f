// cuBLAS on the ladder's problems. cuBLAS is column-major; a row-major M×N matrix is the same
// memory as a column-major N×M one, its transpose. So row-major C = A·B is column-major
// Cᵀ = Bᵀ·Aᵀ: we call cuBLAS with B as the left operand (N×K, leading dimension N) and A as
// the right one (K×M, leading dimension K), and no transposition flags at all.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <string>

#include "common/cuda/cuda_check.hpp"
#include "common/cuda/streams.hpp"
#include "common/error.hpp"
#include "kernels/matmul/cublas_baseline.hpp"

namespace usp::matmul {
namespace {

void check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw Error(std::string("cuBLAS: ") + what + " failed: " + cublasGetStatusString(status));
}

// One handle for the process, on the device current at first use. It is deliberately never
// destroyed: destroying it from a static destructor could run after the CUDA runtime has shut
// down, and the process's end releases it anyway.
cublasHandle_t handle() {
  static cublasHandle_t h = [] {
    cublasHandle_t created = nullptr;
    check(cublasCreate(&created), "cublasCreate");
    check(cublasSetStream(created, cuda::compute_stream()), "cublasSetStream");
    // Plain fp32 math for sgemm: no TF32 tensor cores, so rungs 01-07 race a fair opponent.
    check(cublasSetMathMode(created, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
    return created;
  }();
  return h;
}

}  // namespace

void cublas_sgemm(const GemmF32& g) {
  check_gemm(g, "cublas_sgemm", 0);
  check(cublasSgemm(handle(), CUBLAS_OP_N, CUBLAS_OP_N, g.N, g.M, g.K, &g.alpha, g.B, g.N, g.A, g.K, &g.beta,
                    g.C, g.N),
        "cublasSgemm");
}

void cublas_gemm_bf16(const GemmBf16& g) {
  check_gemm(g, "cublas_gemm_bf16", 0);
  check(cublasGemmEx(handle(), CUBLAS_OP_N, CUBLAS_OP_N, g.N, g.M, g.K, &g.alpha, g.B, CUDA_R_16BF, g.N, g.A,
                     CUDA_R_16BF, g.K, &g.beta, g.C, CUDA_R_32F, g.N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
        "cublasGemmEx (bf16 in, fp32 compute)");
}

}  // namespace usp::matmul
