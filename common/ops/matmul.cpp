// matmul forward and backward: y = x · wᵀ with HF's [out, in] weight, on sgemm (see ops.hpp).
//   forward   y  [N, out] = x [N, in] · w [out, in]ᵀ        2·N·out·in FLOPs
//   backward  dx [N, in]  = dy [N, out] · w [out, in]      2·N·out·in FLOPs
//             dw [out, in] += dy [N, out]ᵀ · x [N, in]     2·N·out·in FLOPs (beta = 1)
// Leading dimensions of x, y, dy and dx are flattened into N.
#include "common/ops/float_args.hpp"
#include "common/ops/gemm.hpp"
#include "common/ops/ops.hpp"

#if defined(USP_HAVE_CUDA)
#include "common/ops/cuda/ops_cuda.hpp"
#endif

namespace usp::ops {

using namespace detail;

void matmul_forward(const Tensor& x, const Tensor& w, Tensor& y) {
  const char* op = "matmul_forward";
  check_float(op, "x", x);
  check_float(op, "w", w);
  check_float(op, "y", y);
  USP_CHECK(w.ndim() == 2, std::string("ops::matmul_forward: w is ") + shape_str(w.shape()) + ", expected [out, in]");
  const std::int64_t out = w.dim(0), in = w.dim(1);
  USP_CHECK(in > 0 && x.ndim() >= 1 && x.dim(-1) == in,
            "ops::matmul_forward: x " + shape_str(x.shape()) + " does not match w " + shape_str(w.shape()));
  const std::int64_t n = x.numel() / in;
  check_rows(op, "y", y, n, out);

  [[maybe_unused]] const bool on_gpu = on_cuda(op, {&x, &w, &y});  // checked in every build
#if defined(USP_HAVE_CUDA)
  if (on_gpu) {
    cuda_path::matmul_forward(x, w, y, n, out, in);
    add_flops(2 * n * out * in);
    return;
  }
#endif
  FloatIn xf(x), wf(w);
  FloatOut yf(y, false);
  sgemm(false, true, n, out, in, 1.0f, xf.data(), in, wf.data(), in, 0.0f, yf.data(), out);
  yf.store();
  add_flops(2 * n * out * in);
}

void matmul_backward(const Tensor& dy, const Tensor& x, const Tensor& w, Tensor& dx, Tensor& dw,
                     bool accumulate_dx) {
  const char* op = "matmul_backward";
  check_float(op, "dy", dy);
  check_float(op, "x", x);
  check_float(op, "w", w);
  USP_CHECK(w.ndim() == 2, std::string("ops::matmul_backward: w is ") + shape_str(w.shape()) + ", expected [out, in]");
  const std::int64_t out = w.dim(0), in = w.dim(1);
  USP_CHECK(in > 0 && x.ndim() >= 1 && x.dim(-1) == in,
            "ops::matmul_backward: x " + shape_str(x.shape()) + " does not match w " + shape_str(w.shape()));
  const std::int64_t n = x.numel() / in;
  check_rows(op, "dy", dy, n, out);
  if (dx.defined()) {
    check_float(op, "dx", dx);
    check_rows(op, "dx", dx, n, in);
  }
  if (dw.defined()) {
    check_float(op, "dw", dw);
    check_shape(op, "dw", dw, w.shape());
  }

  [[maybe_unused]] const bool on_gpu = on_cuda(op, {&dy, &x, &w, &dx, &dw});  // checked in every build
#if defined(USP_HAVE_CUDA)
  if (on_gpu) {
    cuda_path::matmul_backward(dy, x, w, dx, dw, accumulate_dx, n, out, in);
    add_flops((dx.defined() ? 2 : 0) * n * out * in + (dw.defined() ? 2 : 0) * n * out * in);
    return;
  }
#endif
  FloatIn dyf(dy);
  if (dx.defined()) {
    FloatIn wf(w);
    FloatOut dxf(dx, accumulate_dx);
    sgemm(false, false, n, in, out, 1.0f, dyf.data(), out, wf.data(), in, accumulate_dx ? 1.0f : 0.0f,
          dxf.data(), in);
    dxf.store();
    add_flops(2 * n * out * in);
  }
  if (dw.defined()) {
    FloatIn xf(x);
    FloatOut dwf(dw, true);
    sgemm(true, false, out, in, n, 1.0f, dyf.data(), out, xf.data(), in, 1.0f, dwf.data(), in);
    dwf.store();
    add_flops(2 * n * out * in);
  }
}

}  // namespace usp::ops
