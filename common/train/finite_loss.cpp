#include "common/train/finite_loss.hpp"

#include <cmath>

#include "common/error.hpp"
#include "common/number_text.hpp"

namespace usp {

std::int64_t first_non_finite(const std::vector<double>& values) {
  for (std::size_t s = 0; s < values.size(); ++s)
    if (!std::isfinite(values[s])) return static_cast<std::int64_t>(s);
  return -1;
}

void require_finite_loss(double value, std::int64_t step, const std::string& quantity, const std::string& run,
                         const std::string& where) {
  if (std::isfinite(value)) return;
  throw Error("step " + std::to_string(step) + (run.empty() ? "" : " of run '" + run + "'") + ": the " + quantity +
              " is " + format_double(value) + where +
              ": the training diverged (a smaller --lr, or fp32?); no result is written from it");
}

void require_finite_losses(const std::vector<double>& losses, const std::string& run) {
  const std::int64_t s = first_non_finite(losses);
  if (s >= 0) require_finite_loss(losses[static_cast<std::size_t>(s)], s, "loss", run);
}

}  // namespace usp
