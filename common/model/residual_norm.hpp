// ResidualNorm: the step between a decoder layer's attention block and its MLP —
//   x2 = x2 + x            (the attention branch's output joins the residual stream)
//   h2 = rmsnorm(x2) · w   (the MLP's input), rstd = 1 / sqrt(mean(x2²) + eps)
// and its backward — as one replaceable operation, so a chapter can supply it fused (chapter 13:
// one pass over each row instead of an add kernel and a norm kernel). Without one
// (ModelOptions::residual_norm null) the model calls ops::add_inplace then ops::rmsnorm_forward.
// Shapes: x, x2, h2 [n, C] (the stream rows this rank holds), w [C], rstd [n] f32.
#pragma once

#include "common/tensor.hpp"

namespace usp {

class ResidualNorm {
 public:
  virtual ~ResidualNorm() = default;
  // x2 holds the branch output on entry and x2 + x on return; h2 and rstd are overwritten.
  virtual void forward(Tensor& x2, const Tensor& x, const Tensor& w, Tensor& h2, Tensor& rstd, float eps) = 0;
  // dh2 [n, C] f32: the gradient of h2. dx_acc [n, C] f32 holds the gradient reaching x2 along the
  // stream on entry and, on return, ∂L/∂x2 in full (= ∂L/∂x, as the add passes it through);
  // dw += ∂L/∂w.
  virtual void backward(const Tensor& dh2, const Tensor& x2, const Tensor& w, const Tensor& rstd, Tensor& dx_acc,
                        Tensor& dw) = 0;
};

// The default: the core's two ops (see ops.hpp). Their backward already adds into the stream's
// gradient (ops::rmsnorm_backward accumulates dx).
class UnfusedResidualNorm final : public ResidualNorm {
 public:
  void forward(Tensor& x2, const Tensor& x, const Tensor& w, Tensor& h2, Tensor& rstd, float eps) override;
  void backward(const Tensor& dh2, const Tensor& x2, const Tensor& w, const Tensor& rstd, Tensor& dx_acc,
                Tensor& dw) override;
};

}  // namespace usp
