#include "common/model/residual_norm.hpp"

#include "common/ops/ops.hpp"

namespace usp {

void UnfusedResidualNorm::forward(Tensor& x2, const Tensor& x, const Tensor& w, Tensor& h2, Tensor& rstd, float eps) {
  ops::add_inplace(x2, x);
  ops::rmsnorm_forward(x2, w, h2, rstd, eps);
}

void UnfusedResidualNorm::backward(const Tensor& dh2, const Tensor& x2, const Tensor& w, const Tensor& rstd,
                                   Tensor& dx_acc, Tensor& dw) {
  ops::rmsnorm_backward(dh2, x2, w, rstd, dx_acc, dw);
}

}  // namespace usp
