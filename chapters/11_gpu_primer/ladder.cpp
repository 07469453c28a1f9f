// The ladder's table (ladder.hpp). The launchers exist only in CUDA builds; the names, files and
// ideas are there in every build (ch11_gpu_primer --list prints them).
#include "chapters/11_gpu_primer/ladder.hpp"

#include "common/error.hpp"

#if defined(USP_HAVE_CUDA)
#include "kernels/matmul/cublas_baseline.hpp"
#include "kernels/matmul/rungs.hpp"
#define USP_LAUNCHER(f) (f)
#else
#define USP_LAUNCHER(f) nullptr
#endif

namespace usp::ch11 {

const std::vector<Rung>& ladder() {
  using namespace usp::matmul;
  static const std::vector<Rung> rungs = [] {
    std::vector<Rung> r;
    const auto f32 = [&](std::string name, std::string file, std::string idea,
                         std::function<void(const GemmF32&)> run, bool baseline = false) {
      r.push_back({std::move(name), std::move(file), std::move(idea), Precision::f32, baseline, std::move(run), {}});
    };
    const auto bf16 = [&](std::string name, std::string file, std::string idea,
                          std::function<void(const GemmBf16&)> run, bool baseline = false) {
      r.push_back({std::move(name), std::move(file), std::move(idea), Precision::bf16, baseline, {}, std::move(run)});
    };
    f32("01_naive", "kernels/matmul/01_naive.cu", "one thread per element of C; a warp walks down a column",
        USP_LAUNCHER(matmul_01_naive));
    f32("02_coalesced", "kernels/matmul/02_coalesced.cu (exercise 11.1)",
        "a warp takes consecutive columns: coalesced loads of B and stores of C", USP_LAUNCHER(matmul_02_coalesced));
    f32("03_smem_tiling", "kernels/matmul/03_smem_tiling.cu (exercise 11.2)",
        "32×32 tiles of A and B staged in shared memory: each global load serves 32 FMAs",
        USP_LAUNCHER(matmul_03_smem_tiling));
    f32("04_blocktiling_1d", "kernels/matmul/04_blocktiling_1d.cu",
        "each thread computes 8 elements of a column: fewer shared-memory loads per FMA",
        USP_LAUNCHER(matmul_04_blocktiling_1d));
    f32("05_blocktiling_2d", "kernels/matmul/05_blocktiling_2d.cu",
        "each thread computes an 8×8 block as outer products in registers", USP_LAUNCHER(matmul_05_blocktiling_2d));
    f32("06_vectorized", "kernels/matmul/06_vectorized.cu",
        "16-byte loads and stores, A transposed in shared memory", USP_LAUNCHER(matmul_06_vectorized));
    f32("07_warptiling", "kernels/matmul/07_warptiling.cu",
        "a warp-level tile: lanes laid out for conflict-free shared-memory reads", USP_LAUNCHER(matmul_07_warptiling));
    bf16("08_tensor_core_bf16", "kernels/matmul/08_tensor_core_bf16.cu",
         "bf16 tensor cores via mma.sync m16n8k16, fp32 accumulation", USP_LAUNCHER(matmul_08_tensor_core_bf16));
    f32("cublas_sgemm", "kernels/matmul/cublas_baseline.cu", "cuBLAS fp32 (cublasSgemm, no TF32): the fp32 yardstick",
        USP_LAUNCHER(cublas_sgemm), true);
    bf16("cublas_bf16", "kernels/matmul/cublas_baseline.cu",
         "cuBLAS bf16 in, fp32 compute (cublasGemmEx): the tensor-core yardstick", USP_LAUNCHER(cublas_gemm_bf16), true);
    return r;
  }();
  return rungs;
}

const Rung& find_rung(const std::string& name) {
  std::string names;
  for (const Rung& r : ladder()) {
    if (r.name == name) return r;
    names += (names.empty() ? "" : ", ") + r.name;
  }
  throw UsageError("unknown kernel '" + name + "' (the ladder: " + names + ")");
}

const Rung& baseline_for(Precision p) {
  for (const Rung& r : ladder())
    if (r.baseline && r.precision == p) return r;
  throw Error("the ladder has no baseline for this precision");
}

const char* precision_name(Precision p) { return p == Precision::f32 ? "f32" : "bf16"; }

}  // namespace usp::ch11
