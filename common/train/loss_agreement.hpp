// Do several runs of the same training steps agree? The parallel chapters run one step sequence
// under several layouts (TP degrees, CP attentions, ...) side by side; every layout computes the
// single device's step, so their losses must agree up to the order of floating-point sums.
//
// The tolerance, relative to the loss: in fp32 the layouts sum the same terms in other orders
// (split matmuls, merged attention blocks, averaged gradients): a few ulps per op, carried
// through a few AdamW steps: 1e-4 (the tests measure far below, 1e-6 or less). In bf16 every
// activation is rounded to 8 significant bits after sums in other orders; the mean over a batch's
// tokens averages those roundings, so a difference of one bf16 step of the loss itself (2^-8)
// would be systematic, not rounding.
#pragma once
#include <vector>

#include "common/dtype.hpp"

namespace usp {

// The largest gap between a run's losses and a reference's over their common steps: |a - b|, or
// |a - b| / |b| when relative. A NaN or an infinity on either side makes it +inf: a diverged run
// never agrees (std::max would silently drop a NaN).
double max_loss_gap(const std::vector<double>& run, const std::vector<double>& reference, bool relative);

struct LossAgreement {
  double max_relative_difference = 0;  // over the runs and steps, against the first run
  double allowed = 0;                  // the tolerance above, for the runs' dtype
  bool agree() const { return max_relative_difference <= allowed; }  // false for +inf (a diverged run)
};

// losses[run][step]; every run as many steps as the first.
LossAgreement compare_losses(const std::vector<std::vector<double>>& losses, DType dtype);

}  // namespace usp
