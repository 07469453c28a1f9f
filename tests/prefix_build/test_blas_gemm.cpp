// The BLAS the build found, called through common/ops/gemm.cpp's cblas.h: ops::detail::sgemm on
// a small product against a double-precision loop. tests/prefix_build runs this test in a build
// whose OpenBLAS sits in a prefix, loaded without LD_LIBRARY_PATH.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "common/ops/gemm.hpp"

TEST_CASE("sgemm (OpenBLAS's cblas_sgemm where the build found it) equals a double loop", "[core][blas]") {
#ifndef USP_HAVE_BLAS
  WARN("built without BLAS: this checks the fallback loop");
#endif
  const int m = 7, n = 5, k = 9;
  std::vector<float> a(m * k), b(k * n), c(m * n, 1.0f);
  for (int i = 0; i < m * k; ++i) a[i] = 0.25f * static_cast<float>(i % 11) - 1.0f;
  for (int i = 0; i < k * n; ++i) b[i] = 0.5f * static_cast<float>(i % 7) - 1.5f;
  usp::ops::detail::sgemm(false, false, m, n, k, 2.0f, a.data(), k, b.data(), n, 0.5f, c.data(), n);
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      double want = 0.5;  // beta * the initial 1
      for (int p = 0; p < k; ++p) want += 2.0 * a[i * k + p] * b[p * n + j];
      CHECK(std::abs(c[i * n + j] - want) <= 1e-5 * (1.0 + std::abs(want)));
    }
  }
}
