// detail::sgemm's twin for device pointers (CUDA builds only): the same row-major contract
// (common/ops/gemm.hpp), computed by cuBLAS in plain fp32 (no TF32) on the compute stream.
#pragma once
#include <cstdint>

namespace usp::ops::detail {

void device_sgemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                  const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
                  std::int64_t ldc);

}  // namespace usp::ops::detail
