// One matmul problem, C = alpha·A·B + beta·C, as every rung of the ladder receives it.
//
//   A: M×K, row-major (element (i, k) at A[i·K + k])
//   B: K×N, row-major (element (k, j) at B[k·N + j])
//   C: M×N, row-major (element (i, j) at C[i·N + j]); read only when beta != 0 (as in BLAS:
//      with beta == 0, C is output only and may hold NaN)
//
// The pointers are device pointers for the kernels and host pointers for the CPU code. This
// header has no CUDA in it, so plain C++ files (the runner, the tests) can describe problems.
#pragma once
#include <cstdint>
#include <string>

namespace usp::matmul {

struct GemmF32 {
  int M = 0, N = 0, K = 0;
  float alpha = 1.0f, beta = 0.0f;
  const float* A = nullptr;  // M×K
  const float* B = nullptr;  // K×N
  float* C = nullptr;        // M×N
};

// The tensor-core rung's problem: A and B in bf16 (raw bit patterns, as a bf16 Tensor stores
// them), C and the accumulation in fp32.
struct GemmBf16 {
  int M = 0, N = 0, K = 0;
  float alpha = 1.0f, beta = 0.0f;
  const std::uint16_t* A = nullptr;  // M×K bf16
  const std::uint16_t* B = nullptr;  // K×N bf16
  float* C = nullptr;                // M×N fp32
};

// 2·M·N·K: one multiply and one add per (i, j, k). The alpha/beta epilogue (3·M·N) is left out,
// as everyone who reports GFLOP/s does.
inline double gemm_flops(int M, int N, int K) { return 2.0 * M * N * K; }

// The preconditions every launcher checks before any CUDA call, throwing usp::Error that names
// the rung and the broken condition:
//   * M, N, K >= 1 and A, B, C not null;
//   * M·K, K·N and M·N < 2^31: the kernels index with 32-bit ints (faster on the GPU);
//   * the grid fits: ceil(M / rows_per_block) <= 65535 (gridDim.y's limit; rows_per_block = 0
//     for callers without a grid of their own, such as cuBLAS);
//   * A, B and C aligned to `align_bytes` (4 for floats; 16 where a rung uses 16-byte loads).
void check_gemm(const GemmF32& g, const std::string& rung, int rows_per_block, int align_bytes = 4);
void check_gemm(const GemmBf16& g, const std::string& rung, int rows_per_block, int align_bytes = 2);

}  // namespace usp::matmul
