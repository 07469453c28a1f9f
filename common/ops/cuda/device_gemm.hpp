// detail::sgemm's twins for device pointers (CUDA builds only): the same row-major contract
// (common/ops/gemm.hpp), computed by cuBLAS on the compute stream.
//   device_sgemm  fp32 operands and result, plain fp32 math (no TF32)
//   device_gemm   operands a and b of one float dtype (f32, bf16 or f16), c of any: products
//                 accumulated in fp32 (beta·c read in fp32 too) and rounded once into c's dtype
//                 — what the CPU ops compute by widening, without the widened copies; 16-bit
//                 operands run on the tensor cores
#pragma once
#include <cstdint>

#include "common/dtype.hpp"

namespace usp::ops::detail {

void device_sgemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                  const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
                  std::int64_t ldc);

void device_gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, DType ab,
                 const void* a, std::int64_t lda, const void* b, std::int64_t ldb, float beta, DType c_type, void* c,
                 std::int64_t ldc);

}  // namespace usp::ops::detail
