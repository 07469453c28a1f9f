// The CPU reference every rung is checked against, and the tolerance it is checked with.
//
// Shapes as in gemm.hpp (row-major A: M×K, B: K×N, C: M×N); here every pointer is a host
// pointer.
//
// The tolerance, element by element (Higham, "Accuracy and Stability of Numerical
// Algorithms", §3.1): a K-term dot product summed in fp32, in any order, is off from the exact
// value by at most (K-1)·u·Σ_k|a_ik·b_kj| (to first order), u = 2^-24 the unit roundoff. The
// kernel and the reference each make such an error in their own order (tiles, warps and BLAS's
// vector lanes all change it), and rounding alpha·acc and adding beta·C adds two more roundings:
//
//   |C_gpu - C_ref| <= γ · ( |alpha| · Σ_k |A_ik|·|B_kj|  +  |beta| · |C0_ij| )
//   γ = (r_kernel + r_ref) · (K + 2) · u
//
// with r = 1 for IEEE round-to-nearest accumulation (CUDA cores, BLAS) and r = 2 for tensor
// cores, whose fp32 accumulation NVIDIA does not promise to round to nearest (truncation at
// most doubles the per-addition error). For the bf16 rung the reference is computed from the
// bf16-rounded inputs: rounding A and B to bf16 moves C by up to about 2^-8·Σ|a·b| — that is
// what bf16 costs, not an error of the kernel, and is not part of this tolerance.
//
// NaN and Inf never pass, whatever the tolerance (a NaN fails every comparison).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/matmul/gemm.hpp"

namespace usp::matmul {

// C = alpha·A·B + beta·C with OpenBLAS's sgemm when the build has BLAS (USP_HAVE_BLAS), else
// with matmul_triple_loop.
void matmul_cpu(const GemmF32& g);
bool matmul_cpu_uses_blas();

// The definition itself, one dot product per element: C[i][j] = alpha·Σ_k A[i][k]·B[k][j] +
// beta·C[i][j], the sum accumulated in double and rounded to float once: as accurate as an fp32
// result can be, the reference of the reference. Slow (no blocking): fine for tests, minutes
// at 4096. With beta == 0, C is not read.
void matmul_triple_loop(const GemmF32& g);

enum class Accumulation { fp32, tensor_core };

// γ above, for a kernel accumulating K terms the way `kernel` says, against the fp32 reference.
double gemm_gamma(int K, Accumulation kernel);

// What a rung's output must equal: the reference values and, per element, the tolerance above.
struct ExpectedC {
  int M = 0, N = 0;
  std::vector<float> value;
  std::vector<float> tolerance;
};
// Computes the reference (matmul_cpu) and the bound for C = alpha·A·B + beta·C0.
ExpectedC expected_gemm(int M, int N, int K, float alpha, float beta, const std::vector<float>& A,
                        const std::vector<float>& B, const std::vector<float>& C0, Accumulation kernel);

// The outcome of checking every element of a result.
struct Verdict {
  bool ok = false;
  std::int64_t wrong = 0;        // elements outside their tolerance, NaN/Inf included
  double max_abs_err = 0;        // over the finite elements; +inf if any is NaN/Inf
  double worst_ratio = 0;        // max |err| / tolerance (<= 1 passes)
  std::string message;           // the first wrong element, or "all M·N elements within tolerance"
};
Verdict check_result(const std::vector<float>& got, const ExpectedC& expected);

}  // namespace usp::matmul
