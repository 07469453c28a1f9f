// The one matrix-multiply routine the CPU ops call (internal to common/ops/): single-precision
// GEMM on row-major matrices, OpenBLAS's cblas_sgemm when the build found it (USP_HAVE_BLAS),
// a plain loop otherwise.
//
//   C [m, n] = alpha · op(A) · op(B) + beta · C
//   op(A) [m, k] is A [m, k] (row stride lda), or Aᵀ of A [k, m] when trans_a;
//   op(B) [k, n] is B [k, n] (row stride ldb), or Bᵀ of B [n, k] when trans_b.
// Leading dimensions let a head's [T, D] slice of a [B, T, H, D] tensor be used in place.
// beta = 0 overwrites C without reading it. Counts no FLOPs: the ops count their own.
#pragma once
#include <cstdint>

namespace usp::ops::detail {

void sgemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
           const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
           std::int64_t ldc);

}  // namespace usp::ops::detail
