#include "common/numeric_compare.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "common/error.hpp"

namespace usp {

double max_abs_diff(std::span<const float> a, std::span<const float> b) {
  USP_CHECK(a.size() == b.size(), "max_abs_diff: " + std::to_string(a.size()) + " values against " +
                                      std::to_string(b.size()));
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double d = std::fabs(static_cast<double>(a[i]) - b[i]);
    if (std::isnan(d)) return d;
    m = std::max(m, d);
  }
  return m;
}

double relative_error(std::span<const float> got, std::span<const float> want) {
  double scale = 0;
  const double worst = max_abs_diff(got, want);
  for (float w : want) scale = std::max(scale, std::fabs(static_cast<double>(w)));
  return scale > 0 ? worst / scale : worst;
}

}  // namespace usp
