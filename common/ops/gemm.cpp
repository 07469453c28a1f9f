// sgemm: OpenBLAS when available, a straightforward loop otherwise (see gemm.hpp).
#include "common/ops/gemm.hpp"

#include <climits>
#include <string>

#include "common/error.hpp"

#ifdef USP_HAVE_BLAS
#include <cblas.h>
#endif

namespace usp::ops::detail {

#ifdef USP_HAVE_BLAS

void sgemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
           const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
           std::int64_t ldc) {
  if (m == 0 || n == 0) return;
  for (std::int64_t v : {m, n, k, lda, ldb, ldc})
    USP_CHECK(v <= INT_MAX, "sgemm: dimension " + std::to_string(v) + " exceeds BLAS's int");
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
              static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), alpha, a,
              static_cast<int>(lda), b, static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
}

#else

// Without BLAS: C row i accumulates alpha · A(i, p) · op(B) row p, a contiguous (vectorizable)
// update when B is not transposed, a dot product along k when it is.
void sgemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
           const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
           std::int64_t ldc) {
  for (std::int64_t i = 0; i < m; ++i) {
    float* ci = c + i * ldc;
    if (beta == 0.0f) {
      for (std::int64_t j = 0; j < n; ++j) ci[j] = 0.0f;
    } else if (beta != 1.0f) {
      for (std::int64_t j = 0; j < n; ++j) ci[j] *= beta;
    }
    if (!trans_b) {
      for (std::int64_t p = 0; p < k; ++p) {
        const float aip = alpha * (trans_a ? a[p * lda + i] : a[i * lda + p]);
        const float* bp = b + p * ldb;
        for (std::int64_t j = 0; j < n; ++j) ci[j] += aip * bp[j];
      }
    } else {
      for (std::int64_t j = 0; j < n; ++j) {
        const float* bj = b + j * ldb;
        float acc = 0.0f;
        for (std::int64_t p = 0; p < k; ++p) acc += (trans_a ? a[p * lda + i] : a[i * lda + p]) * bj[p];
        ci[j] += alpha * acc;
      }
    }
  }
}

#endif

}  // namespace usp::ops::detail
