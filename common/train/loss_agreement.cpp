#include "common/train/loss_agreement.hpp"

#include <algorithm>
#include <cmath>

#include "common/error.hpp"

namespace usp {

LossAgreement compare_losses(const std::vector<std::vector<double>>& losses, DType dtype) {
  LossAgreement a;
  a.allowed = dtype == DType::bf16 ? 1.0 / 256 : 1e-4;
  if (losses.empty()) return a;
  const std::vector<double>& first = losses.front();
  for (const std::vector<double>& run : losses) {
    USP_CHECK(run.size() == first.size(), "compare_losses: the runs have different numbers of steps");
    for (std::size_t s = 0; s < run.size(); ++s)
      a.max_relative_difference = std::max(a.max_relative_difference, std::fabs(run[s] - first[s]) / std::fabs(first[s]));
  }
  return a;
}

}  // namespace usp
