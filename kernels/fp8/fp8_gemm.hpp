// An FP8 matrix product on the tensor cores (CUDA builds only; chapter 14): cuBLASLt's e4m3 GEMM
// with one scale per operand, next to the same product in bf16 through cuBLAS, so a run can
// compare their rates and their results. Row-major, the layout of a Linear layer:
//   D [M, N] bf16 = scale_a · scale_b · A [M, K] · B [N, K]ᵀ      (fp32 accumulation)
// A and B are e4m3 codes (what fp8_tiles.hpp's per-tensor quantisation produces: value = code ·
// scale), scale_a and scale_b device pointers to one float each. cuBLASLt's FP8 kernels need a
// GPU of compute capability 8.9 or newer (Ada, Hopper), M, N, K multiples of 16 and 16-byte
// aligned matrices. The scales are asked the same: on an H100 (cuBLAS 13.0) the product with
// scale_b 4 bytes into the allocation of scale_a was refused ("the requested functionality is
// not supported") after the heuristic had found an algorithm — a refusal that depends on the
// pointers alone. Give each scale a tensor of its own.
#pragma once
#include <cstddef>
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

constexpr std::size_t kFp8Alignment = 16;  // bytes, for A, B, D and both scales

// True when the current device has FP8 tensor cores (compute capability >= 8.9).
bool fp8_supported();
// usp::Error naming the operand when a shape is no positive multiple of 16, or a pointer is null
// or off a kFp8Alignment boundary (host-only: built without CUDA too).
void check_fp8_gemm(const Fp8Gemm& g);
// usp::Error when unsupported, when check_fp8_gemm refuses g, or when cuBLASLt finds no algorithm.
void cublaslt_fp8_gemm(const Fp8Gemm& g);
void cublas_bf16_gemm(const Bf16Gemm& g);

}  // namespace usp::fp8
