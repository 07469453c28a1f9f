// cuBLAS, the yardstick the ladder is measured against, on the same problems (gemm.hpp).
//   cublas_sgemm       fp32 in, fp32 out, fp32 math (no TF32): what rungs 01-07 compete with
//   cublas_gemm_bf16   bf16 in, fp32 accumulate and out, tensor cores: what rung 08 competes with
// The handle is created on first use, for the current device, and lives until the process ends.
// Defined only when the build has CUDA (USP_HAVE_CUDA).
#pragma once
#include "kernels/matmul/gemm.hpp"

namespace usp::matmul {

void cublas_sgemm(const GemmF32& g);
void cublas_gemm_bf16(const GemmBf16& g);

}  // namespace usp::matmul
