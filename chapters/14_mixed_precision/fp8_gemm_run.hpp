// The FP8 matrix product on a GPU (chapter 14, section 4): y = x · wᵀ with x [M, K] and w [N, K]
// quantised per tensor to e4m3 (exercise 14.2's quantize_tiles with one tile), multiplied by
// cuBLASLt's FP8 GEMM (kernels/fp8), against the same product in bf16 through cuBLAS.
//   error  largest |y - reference| over max |reference|, the reference being the CPU's fp32
//          product of exactly the operands the GPU multiplied (the dequantised e4m3 values, or
//          the bf16-rounded ones): what is left is the accumulation order and the bf16 rounding
//          of y, 2^-8 relative at most
//   rate   2·M·N·K over the median time of `reps` products, in TFLOP/s
// Needs a CUDA build and a GPU with FP8 tensor cores (compute capability 8.9+: Ada, Hopper);
// fp8_gemm_available() says whether this process has one.
#pragma once
#include <cstdint>

namespace usp::ch14 {

bool fp8_gemm_available();

struct Fp8GemmRun {
  int M = 0, N = 0, K = 0;
  double fp8_error = 0, bf16_error = 0;   // against each one's own CPU reference
  double fp8_vs_fp32 = 0;                 // FP8's result against the unquantised fp32 product
  double fp8_tflops = 0, bf16_tflops = 0;  // 0 when reps == 0 (accuracy only)
};

// M, N, K multiples of 16; reps = 0 skips the timing. With check = false the CPU references are
// not computed (the errors stay 0): for sizes too large for the host.
Fp8GemmRun run_fp8_gemm(int M, int N, int K, int reps, bool check = true);

}  // namespace usp::ch14
