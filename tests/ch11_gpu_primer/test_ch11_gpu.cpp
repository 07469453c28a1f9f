// Chapter 11 on a GPU: every rung of the ladder (ladder.hpp) and cuBLAS, on sizes that are and
// are not multiples of the tiles, every output element against the CPU reference — bit for bit
// on exactly representable data, within the tolerance of reference.hpp on random data — and
// the divergence kernels against the CPU. [gpu] cases skip with a warning when no CUDA device
// is visible (and in builds without CUDA). The launchers' preconditions are checked on the CPU.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "common/device.hpp"
#include "common/error.hpp"
#include "common/tensor.hpp"
#include "kernels/divergence/branch_work.hpp"
#include "kernels/matmul/reference.hpp"
#include "chapters/11_gpu_primer/ladder.hpp"
#include "chapters/11_gpu_primer/problem_data.hpp"

#if defined(USP_HAVE_CUDA)
#include "common/cuda_support.hpp"
#include "kernels/divergence/divergence_kernels.hpp"
#include "kernels/matmul/cublas_baseline.hpp"
#include "kernels/matmul/rungs.hpp"
#endif

using namespace usp;
using namespace usp::ch11;

namespace {

// Catch2 2.x has no SKIP: say why, visibly, and let the caller return.
bool skipped_without_gpu() {
  if (cuda_device_count() > 0) return false;
  WARN("no CUDA device: skipped");
  return true;
}

#if defined(USP_HAVE_CUDA)
// Runs rung r on p on the GPU and returns C. offset shifts A, B and C by that many elements
// from their allocations' start, to try pointers that are not 16-byte aligned.
std::vector<float> run_on_gpu(const Rung& r, const HostProblem& p, int offset = 0) {
  const Device gpu = Device::cuda(0);
  const auto upload = [&](const std::vector<float>& v, DType dt) {
    std::vector<float> padded(static_cast<std::size_t>(offset), 0.0f);
    padded.insert(padded.end(), v.begin(), v.end());
    return Tensor::from_floats(padded, {static_cast<std::int64_t>(padded.size())}, dt).to(gpu, MemCategory::Temporary);
  };
  const DType in = r.precision == Precision::f32 ? DType::f32 : DType::bf16;
  const Tensor A = upload(p.A, in), B = upload(p.B, in), C = upload(p.C0, DType::f32);
  float* c = C.data<float>() + offset;
  if (r.precision == Precision::f32) {
    r.run_f32({p.M, p.N, p.K, p.alpha, p.beta, A.data<float>() + offset, B.data<float>() + offset, c});
  } else {
    r.run_bf16({p.M, p.N, p.K, p.alpha, p.beta, A.data<std::uint16_t>() + offset, B.data<std::uint16_t>() + offset, c});
  }
  cuda::synchronize();
  std::vector<float> out = C.to_floats();
  return {out.begin() + offset, out.end()};
}

struct Dims {
  int M, N, K;
};
// Tiles are 32, 64 and 128 wide, K steps 8, 16 and 32, vector widths 4 and 8: these hit exact
// multiples, one over, one under, single rows and columns, and K not a multiple of 4 or 8.
const std::vector<Dims> kGpuSizes = {{1, 1, 1},     {128, 128, 128}, {129, 127, 33},   {64, 256, 8},
                                     {1, 300, 17},  {300, 1, 9},     {1000, 1023, 130}, {2049, 130, 64}};

matmul::ExpectedC expected_for(const Rung& r, const HostProblem& p) {
  if (r.precision == Precision::f32)
    return matmul::expected_gemm(p.M, p.N, p.K, p.alpha, p.beta, p.A, p.B, p.C0, matmul::Accumulation::fp32);
  return matmul::expected_gemm(p.M, p.N, p.K, p.alpha, p.beta, rounded_to_bf16(p.A), rounded_to_bf16(p.B), p.C0,
                               matmul::Accumulation::tensor_core);
}
#endif

}  // namespace

TEST_CASE("every rung and cuBLAS match the CPU reference on every element", "[ch11][gpu]") {
  if (skipped_without_gpu()) return;
#if defined(USP_HAVE_CUDA)
  for (const Rung& r : ladder())
    for (const Dims d : kGpuSizes) {
      INFO(r.name << " on " << d.M << "×" << d.N << "×" << d.K);
      // Exact data: every order of the additions gives the same bits, so nothing may differ.
      const HostProblem x = exact_problem(d.M, d.N, d.K, 2.0f, -0.5f);
      std::vector<float> want = x.C0;
      matmul::matmul_triple_loop({d.M, d.N, d.K, x.alpha, x.beta, x.A.data(), x.B.data(), want.data()});
      CHECK(run_on_gpu(r, x) == want);
      // Random data: within the rounding tolerance.
      const HostProblem p = random_problem(d.M, d.N, d.K, 1.0f, 0.5f, 7);
      const matmul::Verdict v = matmul::check_result(run_on_gpu(r, p), expected_for(r, p));
      INFO(v.message);
      CHECK(v.ok);
    }
#endif
}

TEST_CASE("with beta = 0 the rungs do not read C: NaN there does not reach the result", "[ch11][gpu]") {
  if (skipped_without_gpu()) return;
#if defined(USP_HAVE_CUDA)
  for (const Rung& r : ladder()) {
    INFO(r.name);
    HostProblem p = exact_problem(70, 130, 40, 1.0f, 0.0f);
    std::vector<float> want = p.C0;
    matmul::matmul_triple_loop({p.M, p.N, p.K, p.alpha, p.beta, p.A.data(), p.B.data(), want.data()});
    p.C0.assign(p.C0.size(), std::numeric_limits<float>::quiet_NaN());
    CHECK(run_on_gpu(r, p) == want);
  }
#endif
}

TEST_CASE("the 16-byte rungs take their scalar path on pointers that are not 16-byte aligned", "[ch11][gpu]") {
  if (skipped_without_gpu()) return;
#if defined(USP_HAVE_CUDA)
  for (const char* name : {"06_vectorized", "07_warptiling", "08_tensor_core_bf16"}) {
    INFO(name);
    const HostProblem x = exact_problem(96, 128, 64, 1.0f, 1.0f);
    std::vector<float> want = x.C0;
    matmul::matmul_triple_loop({x.M, x.N, x.K, x.alpha, x.beta, x.A.data(), x.B.data(), want.data()});
    CHECK(run_on_gpu(find_rung(name), x, 1) == want);  // one element past a 256-byte boundary
  }
#endif
}

TEST_CASE("the divergent and uniform kernels compute the same as the CPU", "[ch11][gpu]") {
  if (skipped_without_gpu()) return;
#if defined(USP_HAVE_CUDA)
  const int iters = 64;
  for (const std::int64_t n : {std::int64_t{1}, std::int64_t{1000}, std::int64_t{65536 + 33}}) {
    std::vector<float> x(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 101) / 100.0f;
    const Tensor xd = Tensor::from_floats(x, {n}).to(Device::cuda(0), MemCategory::Temporary);
    for (const bool uniform : {false, true}) {
      INFO((uniform ? "uniform" : "divergent") << ", n = " << n);
      Tensor yd = Tensor::zeros({n}, DType::f32, MemCategory::Temporary, Device::cuda(0));
      (uniform ? divergence::run_uniform : divergence::run_divergent)(xd.data<float>(), yd.data<float>(), n, iters);
      cuda::synchronize();
      const std::vector<float> y = yd.to_floats();
      for (std::int64_t e = 0; e < n; ++e) {
        const float want = divergence::branch_work(e, x[static_cast<std::size_t>(e)], iters);
        const float got = y[static_cast<std::size_t>(e)];
        if (!(std::isfinite(got) && std::fabs(got - want) <= divergence::branch_tolerance(iters))) {
          FAIL("element " << e << ": got " << got << ", expected " << want);
        }
      }
    }
  }
#endif
}

#if defined(USP_HAVE_CUDA)
TEST_CASE("every launcher checks its preconditions before any CUDA call", "[ch11]") {
  // Runs without a GPU: the checks come first, so these throw usp::Error and never touch CUDA.
  alignas(16) float f[4] = {};
  alignas(16) std::uint16_t h[4] = {};
  const matmul::GemmF32 empty{0, 4, 4, 1.0f, 0.0f, f, f, f};
  const matmul::GemmF32 null_b{4, 4, 4, 1.0f, 0.0f, f, nullptr, f};
  for (const Rung& r : ladder()) {
    INFO(r.name);
    if (r.precision == Precision::f32) {
      CHECK_THROWS_AS(r.run_f32(empty), Error);
      CHECK_THROWS_AS(r.run_f32(null_b), Error);
    } else {
      CHECK_THROWS_AS(r.run_bf16({4, 4, 0, 1.0f, 0.0f, h, h, f}), Error);
      CHECK_THROWS_AS(r.run_bf16({4, 4, 4, 1.0f, 0.0f, nullptr, h, f}), Error);
    }
  }
  CHECK_THROWS_AS(divergence::run_uniform(f, f, 0, 1), Error);
  CHECK_THROWS_AS(divergence::run_divergent(nullptr, f, 4, 1), Error);
}
#endif

TEST_CASE("the ladder lists rungs 01 to 08 and the two cuBLAS baselines", "[ch11]") {
  std::vector<std::string> names;
  for (const Rung& r : ladder()) names.push_back(r.name);
  CHECK(names == std::vector<std::string>{"01_naive", "02_coalesced", "03_smem_tiling", "04_blocktiling_1d",
                                          "05_blocktiling_2d", "06_vectorized", "07_warptiling",
                                          "08_tensor_core_bf16", "cublas_sgemm", "cublas_bf16"});
  CHECK(baseline_for(Precision::f32).name == "cublas_sgemm");
  CHECK(baseline_for(Precision::bf16).name == "cublas_bf16");
  CHECK_THROWS_AS(find_rung("09_magic"), UsageError);
#if defined(USP_HAVE_CUDA)
  for (const Rung& r : ladder()) CHECK((r.precision == Precision::f32 ? bool(r.run_f32) : bool(r.run_bf16)));
#endif
}
