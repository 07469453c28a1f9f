// The CPU reference (OpenBLAS sgemm or the triple loop) and the element-wise check.
#include "kernels/matmul/reference.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <sstream>

#include "common/error.hpp"

#if defined(USP_HAVE_BLAS)
// The Fortran BLAS interface, which every BLAS exports (OpenBLAS, MKL, the reference BLAS):
// column-major, arguments by pointer. Declared here so no particular cblas.h is needed.
extern "C" void sgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k,
                       const float* alpha, const float* a, const int* lda, const float* b, const int* ldb,
                       const float* beta, float* c, const int* ldc);
#endif

namespace usp::matmul {
namespace {

void check_host_problem(const GemmF32& g, const char* who) {
  if (g.M < 0 || g.N < 0 || g.K < 0) throw Error(std::string(who) + ": M, N and K must be >= 0");
  if ((g.M > 0 && g.N > 0) && (g.C == nullptr || (g.K > 0 && (g.A == nullptr || g.B == nullptr))))
    throw Error(std::string(who) + ": null A, B or C");
}

std::size_t at(int row, int col, int ld) { return static_cast<std::size_t>(row) * ld + col; }

}  // namespace

bool matmul_cpu_uses_blas() {
#if defined(USP_HAVE_BLAS)
  return true;
#else
  return false;
#endif
}

void matmul_cpu(const GemmF32& g) {
#if defined(USP_HAVE_BLAS)
  check_host_problem(g, "matmul_cpu");
  if (g.M == 0 || g.N == 0) return;
  const std::size_t mn = static_cast<std::size_t>(g.M) * g.N;
  // Our contract: with beta == 0, C is not read. A BLAS may still compute 0·C (0·NaN = NaN).
  if (g.beta == 0.0f)
    for (std::size_t i = 0; i < mn; ++i) g.C[i] = 0.0f;
  if (g.K == 0) {  // nothing to multiply: C = beta·C (BLAS would not be called with k = 0)
    for (std::size_t i = 0; i < mn; ++i) g.C[i] *= g.beta;
    return;
  }
  // Row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ: hand BLAS B as the left operand (N×K in its
  // column-major view, leading dimension N) and A as the right one (K×M, leading dimension K).
  const char no = 'N';
  sgemm_(&no, &no, &g.N, &g.M, &g.K, &g.alpha, g.B, &g.N, g.A, &g.K, &g.beta, g.C, &g.N);
#else
  matmul_triple_loop(g);
#endif
}

void matmul_triple_loop(const GemmF32& g) {
  check_host_problem(g, "matmul_triple_loop");
  // Loop order i, k, j: row i of C accumulates row k of B scaled by A[i][k], so B is read along
  // its rows (contiguous) instead of down its columns. Each element still sums k = 0..K-1 in order.
  std::vector<double> row(static_cast<std::size_t>(g.N));
  for (int i = 0; i < g.M; ++i) {
    std::fill(row.begin(), row.end(), 0.0);
    for (int k = 0; k < g.K; ++k) {
      const double a = g.A[at(i, k, g.K)];
      const float* b = g.B + at(k, 0, g.N);
      for (int j = 0; j < g.N; ++j) row[static_cast<std::size_t>(j)] += a * static_cast<double>(b[j]);
    }
    for (int j = 0; j < g.N; ++j) {
      float& c = g.C[at(i, j, g.N)];
      const double old = g.beta == 0.0f ? 0.0 : static_cast<double>(g.beta) * c;
      c = static_cast<float>(static_cast<double>(g.alpha) * row[static_cast<std::size_t>(j)] + old);
    }
  }
}

double gemm_gamma(int K, Accumulation kernel) {
  const double u = std::ldexp(1.0, -24);
  const double r_kernel = kernel == Accumulation::tensor_core ? 2.0 : 1.0, r_ref = 1.0;
  return (r_kernel + r_ref) * (static_cast<double>(K) + 2.0) * u;
}

ExpectedC expected_gemm(int M, int N, int K, float alpha, float beta, const std::vector<float>& A,
                        const std::vector<float>& B, const std::vector<float>& C0, Accumulation kernel) {
  const std::size_t mn = static_cast<std::size_t>(M) * N;
  if (A.size() != static_cast<std::size_t>(M) * K || B.size() != static_cast<std::size_t>(K) * N || C0.size() != mn)
    throw Error("expected_gemm: A, B and C0 must hold M·K, K·N and M·N elements");
  ExpectedC e;
  e.M = M;
  e.N = N;
  e.value = C0;
  matmul_cpu({M, N, K, alpha, beta, A.data(), B.data(), e.value.data()});

  // The bound's Σ|a||b| is itself a matmul, of |A| and |B|: all terms positive, so fp32 gets it
  // to within a factor 1 + K·u, a second-order change to the tolerance.
  std::vector<float> abs_a(A.size()), abs_b(B.size());
  for (std::size_t i = 0; i < A.size(); ++i) abs_a[i] = std::fabs(A[i]);
  for (std::size_t i = 0; i < B.size(); ++i) abs_b[i] = std::fabs(B[i]);
  e.tolerance.assign(mn, 0.0f);
  if (beta != 0.0f)
    for (std::size_t i = 0; i < mn; ++i) e.tolerance[i] = std::fabs(C0[i]);
  matmul_cpu({M, N, K, std::fabs(alpha), std::fabs(beta), abs_a.data(), abs_b.data(), e.tolerance.data()});
  const double gamma = gemm_gamma(K, kernel);
  for (auto& t : e.tolerance) t = static_cast<float>(gamma * t);
  return e;
}

Verdict check_result(const std::vector<float>& got, const ExpectedC& e) {
  const std::size_t mn = static_cast<std::size_t>(e.M) * e.N;
  if (got.size() != mn || e.value.size() != mn || e.tolerance.size() != mn)
    throw Error("check_result: the result, the reference and the tolerance must hold M·N elements");
  Verdict v;
  std::size_t first = mn;
  for (std::size_t i = 0; i < mn; ++i) {
    const double err = std::fabs(static_cast<double>(got[i]) - e.value[i]);
    const double tol = e.tolerance[i];
    const bool finite = std::isfinite(got[i]);
    if (!finite) v.max_abs_err = std::numeric_limits<double>::infinity();
    else if (err > v.max_abs_err) v.max_abs_err = err;
    const double ratio = tol > 0 ? err / tol : (err == 0 ? 0.0 : std::numeric_limits<double>::infinity());
    if (!finite) v.worst_ratio = std::numeric_limits<double>::infinity();
    else if (ratio > v.worst_ratio) v.worst_ratio = ratio;
    if (!finite || !(err <= tol)) {  // written so that a NaN error fails too
      ++v.wrong;
      if (first == mn) first = i;
    }
  }
  v.ok = v.wrong == 0;
  std::ostringstream msg;
  if (v.ok) {
    msg << "all " << mn << " elements within tolerance";
  } else {
    const int row = static_cast<int>(first / e.N), col = static_cast<int>(first % e.N);
    msg << v.wrong << " of " << mn << " elements wrong; first at (" << row << ", " << col << "): got "
        << got[first] << ", expected " << e.value[first] << " ± " << e.tolerance[first];
  }
  v.message = msg.str();
  return v;
}

}  // namespace usp::matmul
