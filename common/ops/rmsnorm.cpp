// RMSNorm forward and backward, one row of C at a time (see ops.hpp).
//   forward   r[n] = 1 / sqrt(mean_c x[n,c]² + eps),  y[n,c] = x[n,c] · r[n] · w[c]
//   backward  with g = dy ∘ w:
//             dx[n,c] += r[n] · g[n,c] - x[n,c] · r[n]³ · (Σ_c g[n,c] x[n,c]) / C
//             dw[c]   += Σ_n dy[n,c] · x[n,c] · r[n]
// Element-wise work: no FLOPs counted. The row sums use lane_sum/lane_dot (vectorized, fixed
// order); the square root is taken in double.
#include <cmath>

#include "common/ops/float_args.hpp"
#include "common/ops/ops.hpp"

#if defined(USP_HAVE_CUDA)
#include "common/ops/cuda/ops_cuda.hpp"
#endif
#include "common/ops/simd_math.hpp"

namespace usp::ops {

using namespace detail;

void rmsnorm_forward(const Tensor& x, const Tensor& w, Tensor& y, Tensor& rstd, float eps) {
  const char* op = "rmsnorm_forward";
  check_float(op, "x", x);
  check_float(op, "w", w);
  check_float(op, "y", y);
  USP_CHECK(w.ndim() == 1 && w.numel() > 0, "ops::rmsnorm_forward: w is " + shape_str(w.shape()) + ", expected [C]");
  const std::int64_t c = w.numel();
  USP_CHECK(x.ndim() >= 1 && x.dim(-1) == c,
            "ops::rmsnorm_forward: x " + shape_str(x.shape()) + " does not match w " + shape_str(w.shape()));
  const std::int64_t n = x.numel() / c;
  check_shape(op, "y", y, x.shape());
  USP_CHECK(rstd.defined() && rstd.dtype() == DType::f32,
            std::string("ops::rmsnorm_forward: rstd must be a defined f32 tensor"));
  check_numel(op, "rstd", rstd, n);
  [[maybe_unused]] const bool on_gpu = on_cuda(op, {&x, &w, &y, &rstd});  // checked in every build
#if defined(USP_HAVE_CUDA)
  if (on_gpu) {
    cuda_path::rmsnorm_forward(x, w, y, rstd, eps);
    return;
  }
#endif

  FloatIn xf(x), wf(w);
  FloatOut yf(y, false);
  const float* xp = xf.data();
  const float* wp = wf.data();
  float* yp = yf.data();
  float* rp = rstd.data<float>();
  for (std::int64_t i = 0; i < n; ++i) {
    const float* xi = xp + i * c;
    float* yi = yp + i * c;
    const float ms = lane_dot(xi, xi, c) / static_cast<float>(c);
    const float r = static_cast<float>(1.0 / std::sqrt(static_cast<double>(ms) + eps));
    rp[i] = r;
    for (std::int64_t j = 0; j < c; ++j) yi[j] = xi[j] * r * wp[j];
  }
  yf.store();
}

void rmsnorm_backward(const Tensor& dy, const Tensor& x, const Tensor& w, const Tensor& rstd,
                      Tensor& dx_acc, Tensor& dw) {
  const char* op = "rmsnorm_backward";
  check_float(op, "dy", dy);
  check_float(op, "x", x);
  check_float(op, "w", w);
  check_float(op, "dx_acc", dx_acc);
  check_float(op, "dw", dw);
  USP_CHECK(w.ndim() == 1 && w.numel() > 0, "ops::rmsnorm_backward: w is " + shape_str(w.shape()) + ", expected [C]");
  const std::int64_t c = w.numel();
  USP_CHECK(x.ndim() >= 1 && x.dim(-1) == c,
            "ops::rmsnorm_backward: x " + shape_str(x.shape()) + " does not match w " + shape_str(w.shape()));
  const std::int64_t n = x.numel() / c;
  check_shape(op, "dy", dy, x.shape());
  check_shape(op, "dx_acc", dx_acc, x.shape());
  check_shape(op, "dw", dw, w.shape());
  USP_CHECK(rstd.defined() && rstd.dtype() == DType::f32,
            std::string("ops::rmsnorm_backward: rstd must be a defined f32 tensor"));
  check_numel(op, "rstd", rstd, n);
  [[maybe_unused]] const bool on_gpu = on_cuda(op, {&dy, &x, &w, &rstd, &dx_acc, &dw});  // checked in every build
#if defined(USP_HAVE_CUDA)
  if (on_gpu) {
    cuda_path::rmsnorm_backward(dy, x, w, rstd, dx_acc, dw);
    return;
  }
#endif

  FloatIn dyf(dy), xf(x), wf(w);
  FloatOut dxf(dx_acc, true), dwf(dw, true);
  const float* dyp = dyf.data();
  const float* xp = xf.data();
  const float* wp = wf.data();
  const float* rp = rstd.data<float>();
  float* dxp = dxf.data();
  float* dwp = dwf.data();
  const float inv_c = 1.0f / static_cast<float>(c);
  for (std::int64_t i = 0; i < n; ++i) {
    const float* dyi = dyp + i * c;
    const float* xi = xp + i * c;
    float* dxi = dxp + i * c;
    const float r = rp[i];
    // Σ_c dy·w·x, as lanes of dy·x weighted by w: one pass, vectorized.
    float acc[kLanes] = {};
    std::int64_t j = 0;
    for (; j + kLanes <= c; j += kLanes)
      for (int l = 0; l < kLanes; ++l) acc[l] += dyi[j + l] * wp[j + l] * xi[j + l];
    float gx = 0.0f;
    for (int l = 0; l < kLanes; ++l) gx += acc[l];
    for (; j < c; ++j) gx += dyi[j] * wp[j] * xi[j];
    const float k = r * r * r * gx * inv_c;
    for (j = 0; j < c; ++j) {
      dxi[j] += r * dyi[j] * wp[j] - k * xi[j];
      dwp[j] += dyi[j] * xi[j] * r;
    }
  }
  dxf.store();
  dwf.store();
}

}  // namespace usp::ops
