#include "common/report/median.hpp"

#include <algorithm>

#include "common/error.hpp"

namespace usp::report {

double median(std::vector<double> values) {
  USP_CHECK(!values.empty(), "median of no values");
  std::sort(values.begin(), values.end());
  const std::size_t m = values.size() / 2;
  return values.size() % 2 == 1 ? values[m] : (values[m - 1] + values[m]) / 2;
}

}  // namespace usp::report
