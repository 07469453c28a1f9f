#include "common/train/loss_agreement.hpp"

#include <algorithm>
#include <cmath>

#include "common/error.hpp"

namespace usp {

double max_loss_gap(const std::vector<double>& run, const std::vector<double>& reference, bool relative) {
  double gap = 0;
  for (std::size_t s = 0; s < run.size() && s < reference.size(); ++s) {
    const double d = std::fabs(run[s] - reference[s]) / (relative ? std::fabs(reference[s]) : 1.0);
    if (!std::isfinite(d) && !(std::isfinite(run[s]) && run[s] == reference[s])) return INFINITY;
    gap = std::max(gap, d);
  }
  return gap;
}

LossAgreement compare_losses(const std::vector<std::vector<double>>& losses, DType dtype) {
  LossAgreement a;
  a.allowed = dtype == DType::bf16 ? 1.0 / 256 : 1e-4;
  if (losses.empty()) return a;
  const std::vector<double>& first = losses.front();
  for (const std::vector<double>& run : losses) {
    USP_CHECK(run.size() == first.size(), "compare_losses: the runs have different numbers of steps");
    a.max_relative_difference = std::max(a.max_relative_difference, max_loss_gap(run, first, true));
  }
  return a;
}

}  // namespace usp
