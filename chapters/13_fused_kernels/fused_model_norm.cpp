#include "chapters/13_fused_kernels/fused_model_norm.hpp"

#include "chapters/13_fused_kernels/fused_residual_norm.hpp"
#include "common/error.hpp"
#include "common/train/one_device_training.hpp"

namespace usp::ch13 {

namespace {

void require_f32(const char* what, const Tensor& t) {
  if (t.dtype() != DType::f32 || !t.device().is_cpu())
    throw UsageError(std::string("chapter 13's fused residual + RMSNorm runs on f32 CPU tensors; ") + what + " is " +
                     dtype_name(t.dtype()) + " (use --precision fp32)");
}

}  // namespace

void FusedResidualNorm::forward(Tensor& x2, const Tensor& x, const Tensor& w, Tensor& h2, Tensor& rstd, float eps) {
  for (const auto& [name, t] : {std::pair<const char*, const Tensor*>{"x2", &x2}, {"x", &x}, {"w", &w}, {"h2", &h2}})
    require_f32(name, *t);
  const std::int64_t C = w.numel(), rows = x.numel() / C;
  USP_CHECK(x2.numel() == x.numel() && h2.numel() == x.numel() && rstd.numel() == rows,
            "FusedResidualNorm::forward: mismatched shapes");
  // x2 holds the branch output: it is r, and also the output (the kernel allows the alias).
  residual_rmsnorm_forward(x.data<float>(), x2.data<float>(), w.data<float>(), eps, rows, C, x2.data<float>(),
                           h2.data<float>(), rstd.data<float>());
}

void FusedResidualNorm::backward(const Tensor& dh2, const Tensor& x2, const Tensor& w, const Tensor& rstd,
                                 Tensor& dx_acc, Tensor& dw) {
  for (const auto& [name, t] : {std::pair<const char*, const Tensor*>{"dh2", &dh2}, {"x2", &x2}, {"w", &w},
                                {"dx", &dx_acc}, {"dw", &dw}})
    require_f32(name, *t);
  const std::int64_t C = w.numel(), rows = x2.numel() / C;
  USP_CHECK(dh2.numel() == x2.numel() && dx_acc.numel() == x2.numel() && rstd.numel() == rows && dw.numel() == C,
            "FusedResidualNorm::backward: mismatched shapes");
  residual_rmsnorm_backward(dh2.data<float>(), x2.data<float>(), w.data<float>(), rstd.data<float>(), rows, C,
                            dx_acc.data<float>(), dw.data<float>());
}

std::vector<double> train_losses(const TrainingConfig& cfg, const Dataset& data, bool fused, const StepLines& lines) {
  FusedResidualNorm fused_norm;
  ModelOptions options = cfg.model_options();
  if (fused) options.residual_norm = &fused_norm;
  const OneDeviceTraining how{.label = fused ? "fused" : "core", .run = fused ? "fused residual + RMSNorm" : "unfused"};
  return train_on_one_device(cfg, data, options, how, lines).losses;
}

}  // namespace usp::ch13
