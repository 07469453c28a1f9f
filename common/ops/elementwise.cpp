// Element-wise updates in place (see ops.hpp): y += x and y *= s; and the float conversions.
// No FLOPs counted.
#include "common/ops/float_args.hpp"
#include "common/ops/ops.hpp"

#if defined(USP_HAVE_CUDA)
#include "common/ops/cuda/ops_cuda.hpp"
#endif

namespace usp::ops {

using namespace detail;

void add_inplace(Tensor& y, const Tensor& x) {
  const char* op = "add_inplace";
  check_float(op, "y", y);
  check_float(op, "x", x);
  check_numel(op, "x", x, y.numel());
  [[maybe_unused]] const bool on_gpu = on_cuda(op, {&y, &x});  // checked in every build
#if defined(USP_HAVE_CUDA)
  if (on_gpu) {
    cuda_path::add_inplace(y, x);
    return;
  }
#endif
  FloatIn xf(x);
  FloatOut yf(y, true);
  const float* xp = xf.data();
  float* yp = yf.data();
  const std::int64_t n = y.numel();
  for (std::int64_t i = 0; i < n; ++i) yp[i] += xp[i];
  yf.store();
}

void scale_inplace(Tensor& y, float s) {
  const char* op = "scale_inplace";
  check_float(op, "y", y);
  [[maybe_unused]] const bool on_gpu = on_cuda(op, {&y});  // checked in every build
#if defined(USP_HAVE_CUDA)
  if (on_gpu) {
    cuda_path::scale_inplace(y, s);
    return;
  }
#endif
  FloatOut yf(y, true);
  float* yp = yf.data();
  const std::int64_t n = y.numel();
  for (std::int64_t i = 0; i < n; ++i) yp[i] *= s;
  yf.store();
}

void convert(const Tensor& src, Tensor& dst) {
  const char* op = "convert";
  check_float(op, "src", src);
  check_float(op, "dst", dst);
  check_numel(op, "dst", dst, src.numel());
  if (src.dtype() == dst.dtype()) {
    dst.copy_from(src);
    return;
  }
  (void)on_cuda(op, {&src, &dst});  // one device: the conversions below run on either
  if (dst.dtype() == DType::f32) {
    widen_to_f32(src, dst.data<float>());
  } else {
    const FloatIn sf(src);
    round_from_f32(sf.data(), dst);
  }
}

}  // namespace usp::ops
