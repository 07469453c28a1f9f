// The launchers of the matmul ladder's rungs, one kernels/matmul/NN_*.cu file each.
// Rungs 02, 03 and 04 call chapter 11's exercise functions (declared in
// chapters/11_gpu_primer/coalesced.hpp and smem_tiling.hpp, bodies in solutions/ or exercises/
// 11_gpu_primer/), so their three files are compiled into chapter 11's library, once per variant,
// and these three launchers are defined only where that library is linked; the other rungs are in
// usp_kernels_matmul.
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
// Rungs 02, 03 and 04 first check their exercise functions on the CPU, once (throwing usp::Error,
// or usp::NotImplemented for a stub, before any CUDA call): chapters/11_gpu_primer/cpu_checks.hpp.
void matmul_02_coalesced(const GemmF32& g);
void matmul_03_smem_tiling(const GemmF32& g);
void matmul_04_blocktiling_1d(const GemmF32& g);
void matmul_05_blocktiling_2d(const GemmF32& g);
void matmul_06_vectorized(const GemmF32& g);
void matmul_07_warptiling(const GemmF32& g);
// bf16 inputs, fp32 accumulation on tensor cores (mma.sync); needs a GPU of compute capability
// 8.0 or newer (A100, H100, ...).
void matmul_08_tensor_core_bf16(const GemmBf16& g);

}  // namespace usp::matmul
