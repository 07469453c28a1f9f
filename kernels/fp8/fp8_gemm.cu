// cuBLASLt's FP8 GEMM and its bf16 yardstick (see fp8_gemm.hpp).
//
// cuBLAS is column-major: the row-major D [M, N] is the column-major Dᵀ [N, M], and
// Dᵀ = B · Aᵀ. The row-major B [N, K] is the column-major Bᵀ [K, N], so cuBLAS's first operand
// is that buffer transposed (op T, K × N stored, ld K); the row-major A [M, K] is the
// column-major Aᵀ [K, M], cuBLAS's second operand as it is (op N, ld K). That is the "TN" form,
// the only one cuBLASLt's FP8 kernels accept — and a Linear layer's x · wᵀ lands on it by itself.
// Note the swap: cuBLAS's A scale is our B's, its B scale our A's.
#include "kernels/fp8/fp8_gemm.hpp"

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <string>

#include "common/cuda/cublas_handle.hpp"
#include "common/cuda/cuda_check.hpp"
#include "common/cuda/streams.hpp"
#include "common/error.hpp"

namespace usp::fp8 {

namespace {

using cuda::cublas_check;

cublasLtHandle_t lt_handle() {
  static cublasLtHandle_t h = [] {
    cublasLtHandle_t created = nullptr;
    cublas_check(cublasLtCreate(&created), "cublasLtCreate");
    return created;  // never destroyed, as the cuBLAS handle (cublas_handle.hpp)
  }();
  return h;
}

// The workspace cuBLASLt may use, allocated once.
constexpr std::size_t kWorkspaceBytes = std::size_t{32} << 20;
void* workspace() {
  static void* w = [] {
    void* p = nullptr;
    USP_CUDA_CHECK(cudaMalloc(&p, kWorkspaceBytes));
    return p;
  }();
  return w;
}

void check_shape(const char* what, int M, int N, int K) {
  if (M <= 0 || N <= 0 || K <= 0 || M % 16 || N % 16 || K % 16)
    throw Error(std::string(what) + ": M, N, K = " + std::to_string(M) + ", " + std::to_string(N) + ", " +
                std::to_string(K) + " must be positive multiples of 16");
}

// Owners of cuBLASLt's descriptors.
struct Desc {
  cublasLtMatmulDesc_t d = nullptr;
  ~Desc() { if (d) cublasLtMatmulDescDestroy(d); }
};
struct Layout {
  cublasLtMatrixLayout_t l = nullptr;
  Layout(cudaDataType_t type, int rows, int cols, int ld) {
    cublas_check(cublasLtMatrixLayoutCreate(&l, type, static_cast<std::uint64_t>(rows), static_cast<std::uint64_t>(cols),
                                            ld),
                 "cublasLtMatrixLayoutCreate");
  }
  ~Layout() { cublasLtMatrixLayoutDestroy(l); }
};
struct Preference {
  cublasLtMatmulPreference_t p = nullptr;
  Preference() {
    cublas_check(cublasLtMatmulPreferenceCreate(&p), "cublasLtMatmulPreferenceCreate");
    const std::size_t bytes = kWorkspaceBytes;
    cublas_check(cublasLtMatmulPreferenceSetAttribute(p, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &bytes, sizeof(bytes)),
                 "cublasLtMatmulPreferenceSetAttribute");
  }
  ~Preference() { cublasLtMatmulPreferenceDestroy(p); }
};

}  // namespace

bool fp8_supported() {
  int device = 0, major = 0, minor = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return false;
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device);
  return major > 8 || (major == 8 && minor >= 9);
}

void cublaslt_fp8_gemm(const Fp8Gemm& g) {
  if (!fp8_supported()) throw Error("cublaslt_fp8_gemm: this GPU has no FP8 tensor cores (compute capability < 8.9)");
  check_fp8_gemm(g);
  Desc desc;
  cublas_check(cublasLtMatmulDescCreate(&desc.d, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
  const cublasOperation_t t = CUBLAS_OP_T, n = CUBLAS_OP_N;
  auto set = [&](cublasLtMatmulDescAttributes_t attr, const void* value, std::size_t size) {
    cublas_check(cublasLtMatmulDescSetAttribute(desc.d, attr, value, size), "cublasLtMatmulDescSetAttribute");
  };
  set(CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof(t));
  set(CUBLASLT_MATMUL_DESC_TRANSB, &n, sizeof(n));
  set(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &g.scale_b, sizeof(g.scale_b));  // cuBLAS's A is our B
  set(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &g.scale_a, sizeof(g.scale_a));
  const Layout a(CUDA_R_8F_E4M3, g.K, g.N, g.K), b(CUDA_R_8F_E4M3, g.K, g.M, g.K), d(CUDA_R_16BF, g.N, g.M, g.N);
  const Preference pref;
  cublasLtMatmulHeuristicResult_t best{};
  int found = 0;
  cublas_check(cublasLtMatmulAlgoGetHeuristic(lt_handle(), desc.d, a.l, b.l, d.l, d.l, pref.p, 1, &best, &found),
               "cublasLtMatmulAlgoGetHeuristic");
  if (found == 0) throw Error("cublaslt_fp8_gemm: cuBLASLt has no FP8 algorithm for this problem");
  const float alpha = 1.0f, beta = 0.0f;
  cublas_check(cublasLtMatmul(lt_handle(), desc.d, &alpha, g.B, a.l, g.A, b.l, &beta, g.D, d.l, g.D, d.l, &best.algo,
                              workspace(), kWorkspaceBytes, cuda::compute_stream()),
               "cublasLtMatmul (e4m3)");
}

void cublas_bf16_gemm(const Bf16Gemm& g) {
  check_shape("cublas_bf16_gemm", g.M, g.N, g.K);
  const float alpha = 1.0f, beta = 0.0f;
  cublas_check(cublasGemmEx(cuda::cublas_handle(), CUBLAS_OP_T, CUBLAS_OP_N, g.N, g.M, g.K, &alpha, g.B, CUDA_R_16BF,
                            g.K, g.A, CUDA_R_16BF, g.K, &beta, g.D, CUDA_R_16BF, g.N, CUBLAS_COMPUTE_32F,
                            CUBLAS_GEMM_DEFAULT),
               "cublasGemmEx (bf16, TN)");
}

}  // namespace usp::fp8
