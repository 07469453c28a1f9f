// The last step of every rung: C[i][j] = alpha·acc + beta·C[i][j], done by the thread that
// accumulated acc. Shared by the kernels and the CPU emulations so they round alike.
#pragma once
#include "common/hostdevice.hpp"

namespace usp::matmul {

// c points at C[i][j]. With beta == 0 the old value is not read: C may be uninitialised
// (NaN), and BLAS promises the same.
USP_HD void store_c(float* c, float alpha, float beta, float acc) {
  *c = beta == 0.0f ? alpha * acc : alpha * acc + beta * *c;
}

// ceil(a / b) for positive ints: how many tiles of b cover a.
USP_HD int ceil_div(int a, int b) { return (a + b - 1) / b; }

}  // namespace usp::matmul
