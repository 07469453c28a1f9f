// The median of a list of numbers, the one every timing table of the course reports: the middle
// value of the sorted list for an odd count, the mean of the two middle values for an even count
// (so the median of {1, 2, 3, 4} is 2.5, not 3). An empty list is an error: no run was measured.
#pragma once
#include <vector>

namespace usp::report {

double median(std::vector<double> values);

}  // namespace usp::report
