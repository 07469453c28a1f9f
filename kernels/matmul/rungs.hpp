// The launchers of the matmul ladder's rungs that live in kernels/matmul/ (one .cu file each).
// Rungs 02 and 03 are chapter 11's exercises: they live in solutions/11_gpu_primer/ and are
// declared in chapters/11_gpu_primer/coalesced.hpp and smem_tiling.hpp.
//
// Every launcher computes C = alpha·A·B + beta·C for the problem in gemm.hpp (device pointers),
// any M, N, K >= 1, tile multiples or not. It checks its preconditions first (check_gemm in
// gemm.hpp, plus the rung's own, listed in its file) and throws usp::Error before any CUDA call
// when one fails. It then launches on the compute stream and returns without waiting; a launch
// failure is reported as usp::Error, a fault inside the kernel at the next synchronisation.
//
// Defined only when the build has CUDA (USP_HAVE_CUDA).
#pragma once
#include "kernels/matmul/gemm.hpp"

namespace usp::matmul {

void matmul_01_naive(const GemmF32& g);
void matmul_04_blocktiling_1d(const GemmF32& g);
void matmul_05_blocktiling_2d(const GemmF32& g);
void matmul_06_vectorized(const GemmF32& g);
void matmul_07_warptiling(const GemmF32& g);
// bf16 inputs, fp32 accumulation on tensor cores (mma.sync); needs a GPU of compute capability
// 8.0 or newer (A100, H100, ...).
void matmul_08_tensor_core_bf16(const GemmBf16& g);

}  // namespace usp::matmul
