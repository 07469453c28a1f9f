#include "chapters/14_mixed_precision/fp8_gemm_run.hpp"

#include <algorithm>
#include <vector>

#include "chapters/14_mixed_precision/fp8_tiles.hpp"
#include "common/device.hpp"
#include "common/device_timer.hpp"
#include "common/error.hpp"
#include "common/float_formats.hpp"
#include "common/numeric_compare.hpp"
#include "common/ops/ops.hpp"
#include "common/rng.hpp"
#include "common/tensor.hpp"
#if defined(USP_HAVE_CUDA)
#include "kernels/fp8/fp8_gemm.hpp"
#endif

namespace usp::ch14 {

#if defined(USP_HAVE_CUDA)

bool fp8_gemm_available() { return cuda_device_count() > 0 && fp8::fp8_supported(); }

namespace {

// y [M, N] = x [M, K] · w [N, K]ᵀ on the CPU, in fp32.
std::vector<float> cpu_product(const std::vector<float>& x, const std::vector<float>& w, int M, int N, int K) {
  const Tensor xt = Tensor::from_floats(x, {M, K}), wt = Tensor::from_floats(w, {N, K});
  Tensor y = Tensor::empty({M, N});
  ops::matmul_forward(xt, wt, y);
  return y.to_floats();
}

}  // namespace

Fp8GemmRun run_fp8_gemm(int M, int N, int K, int reps, bool check) {
  USP_CHECK(fp8_gemm_available(), "the FP8 GEMM needs a GPU with FP8 tensor cores (compute capability 8.9+)");
  const Device gpu = Device::cuda(0);
  const std::vector<float> x = rng::normal_values(7, "fp8_gemm.x", std::int64_t{M} * K);
  const std::vector<float> w = rng::normal_values(7, "fp8_gemm.w", std::int64_t{N} * K);

  // e4m3 codes with one scale per tensor (exercise 14.2 with the whole tensor as its tile).
  const TileGrid gx{M, K, M, K}, gw{N, K, N, K};
  Tensor qx = Tensor::empty({M, K}, DType::e4m3), qw = Tensor::empty({N, K}, DType::e4m3);
  float sx = 0, sw = 0;
  quantize_tiles(x.data(), gx, DType::e4m3, qx.data<std::uint8_t>(), &sx);
  quantize_tiles(w.data(), gw, DType::e4m3, qw.data<std::uint8_t>(), &sw);
  // One tensor per scale: cuBLASLt refused the product with scale_b 4 bytes into scale_a's
  // allocation (fp8_gemm.hpp).
  const Tensor scale_x = Tensor::from_floats({sx}, {1}).to(gpu), scale_w = Tensor::from_floats({sw}, {1}).to(gpu);
  const Tensor qx_d = qx.to(gpu), qw_d = qw.to(gpu);
  // The same operands in bf16.
  const Tensor bx = Tensor::from_floats(x, {M, K}, DType::bf16), bw = Tensor::from_floats(w, {N, K}, DType::bf16);
  const Tensor bx_d = bx.to(gpu), bw_d = bw.to(gpu);
  Tensor y8 = Tensor::empty({M, N}, DType::bf16, MemCategory::Temporary, gpu);
  Tensor y16 = Tensor::empty({M, N}, DType::bf16, MemCategory::Temporary, gpu);

  const fp8::Fp8Gemm g8{M, N, K, qx_d.data<std::uint8_t>(), qw_d.data<std::uint8_t>(), scale_x.data<float>(),
                        scale_w.data<float>(), y8.data<std::uint16_t>()};
  const fp8::Bf16Gemm g16{M, N, K, bx_d.data<std::uint16_t>(), bw_d.data<std::uint16_t>(), y16.data<std::uint16_t>()};
  fp8::cublaslt_fp8_gemm(g8);
  fp8::cublas_bf16_gemm(g16);

  Fp8GemmRun r{M, N, K};
  if (check) {
    std::vector<float> dx(x.size()), dw(w.size());
    dequantize_tiles(qx.data<std::uint8_t>(), &sx, gx, DType::e4m3, dx.data());
    dequantize_tiles(qw.data<std::uint8_t>(), &sw, gw, DType::e4m3, dw.data());
    const std::vector<float> got8 = y8.to_floats(), got16 = y16.to_floats();
    r.fp8_error = relative_error(got8, cpu_product(dx, dw, M, N, K));
    r.bf16_error = relative_error(got16, cpu_product(bx.to_floats(), bw.to_floats(), M, N, K));
    r.fp8_vs_fp32 = relative_error(got8, cpu_product(x, w, M, N, K));
  }
  if (reps > 0) {
    const double flops = 2.0 * M * N * static_cast<double>(K);
    r.fp8_tflops = flops / median_ms([&] { fp8::cublaslt_fp8_gemm(g8); }, reps, gpu) / 1e9;
    r.bf16_tflops = flops / median_ms([&] { fp8::cublas_bf16_gemm(g16); }, reps, gpu) / 1e9;
  }
  return r;
}

#else

bool fp8_gemm_available() { return false; }
Fp8GemmRun run_fp8_gemm(int, int, int, int, bool) { throw Error("the FP8 GEMM needs a CUDA build"); }

#endif

}  // namespace usp::ch14
