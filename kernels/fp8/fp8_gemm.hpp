// An FP8 matrix product on the tensor cores (CUDA builds only; chapter 14): cuBLASLt's e4m3 GEMM
// with one scale per operand, next to the same product in bf16 through cuBLAS, so a run can
// compare their rates and their results. Row-major, the layout of a Linear layer:
//   D [M, N] bf16 = scale_a · scale_b · A [M, K] · B [N, K]ᵀ      (fp32 accumulation)
// A and B are e4m3 codes (what fp8_tiles.hpp's per-tensor quantisation produces: value = code ·
// scale), scale_a and scale_b device pointers to one float each. cuBLASLt's FP8 kernels need a
// GPU of compute capability 8.9 or newer (Ada, Hopper) and M, N, K multiples of 16.
#pragma once
#include <cstdint>

namespace usp::fp8 {

struct Fp8Gemm {
  int M = 0, N = 0, K = 0;
  const std::uint8_t* A = nullptr;  // [M, K] e4m3
  const std::uint8_t* B = nullptr;  // [N, K] e4m3
  const float* scale_a = nullptr;   // device, one float
  const float* scale_b = nullptr;   // device, one float
  std::uint16_t* D = nullptr;       // [M, N] bf16
};

struct Bf16Gemm {
  int M = 0, N = 0, K = 0;
  const std::uint16_t* A = nullptr;  // [M, K] bf16
  const std::uint16_t* B = nullptr;  // [N, K] bf16
  std::uint16_t* D = nullptr;        // [M, N] bf16
};

// True when the current device has FP8 tensor cores (compute capability >= 8.9).
bool fp8_supported();
// usp::Error when unsupported, for shapes that are no multiple of 16, or when cuBLASLt finds no
// algorithm.
void cublaslt_fp8_gemm(const Fp8Gemm& g);
void cublas_bf16_gemm(const Bf16Gemm& g);

}  // namespace usp::fp8
