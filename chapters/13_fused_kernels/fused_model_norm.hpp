// The model with exercise 13.1's fused kernel: plugged in through ModelOptions::residual_norm
// (common/model/residual_norm.hpp), every decoder layer's "x2 = x + a·Woᵀ ; h2 = rmsnorm(x2)"
// runs as one pass instead of the core's add and norm. Same losses; the layer's saved tensors
// are the same, so memory is unchanged — what fusion saves is traffic, not capacity.
#pragma once
#include <cstdint>
#include <vector>

#include "common/data/dataset.hpp"
#include "common/model/residual_norm.hpp"
#include "common/train/step_lines.hpp"
#include "common/train/training_flags.hpp"

namespace usp::ch13 {

// f32 activations only (the exercise's kernels are fp32; a bf16 stream would round x2 between
// the add and the norm, which a fused bf16 kernel must reproduce). Contiguous [n, C] rows.
class FusedResidualNorm final : public ResidualNorm {
 public:
  void forward(Tensor& x2, const Tensor& x, const Tensor& w, Tensor& h2, Tensor& rstd, float eps) override;
  void backward(const Tensor& dh2, const Tensor& x2, const Tensor& w, const Tensor& rstd, Tensor& dx_acc,
                Tensor& dw) override;
};

// cfg's model trained for cfg.steps steps with the core's ops (fused = false) or with
// FusedResidualNorm (the core's one-device loop, common/train/one_device_training.hpp): the loss
// of each step.
// Each step's progress line through `lines` ("core: step ...", "fused: step ...").
std::vector<double> train_losses(const TrainingConfig& cfg, const Dataset& data, bool fused,
                                 const StepLines& lines = {});

}  // namespace usp::ch13
