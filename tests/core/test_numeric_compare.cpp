// numeric_compare.hpp: the gaps chapters 12-14 (and the parallel chapters' parameter columns) report.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "common/error.hpp"
#include "common/numeric_compare.hpp"

using namespace usp;

TEST_CASE("max_abs_diff is the largest gap, taken exactly in double", "[core][numeric_compare]") {
  CHECK(max_abs_diff(std::vector<float>{}, std::vector<float>{}) == 0);
  CHECK(max_abs_diff(std::vector<float>{1, -2, 3}, std::vector<float>{1, 2, 2.5f}) == 4);
  // 1 + 2^-23 against -2^-30: the float difference would round to 1 + 2^-23; in double it is exact.
  const float a = 1.0f + std::ldexp(1.0f, -23), b = -std::ldexp(1.0f, -30);
  CHECK(max_abs_diff(std::vector<float>{a}, std::vector<float>{b}) == static_cast<double>(a) - b);
  CHECK(static_cast<double>(std::fabs(a - b)) != static_cast<double>(a) - b);
}

TEST_CASE("max_abs_diff never hides a NaN and refuses sequences of different lengths", "[core][numeric_compare]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  CHECK(std::isnan(max_abs_diff(std::vector<float>{5, nan, 1}, std::vector<float>{0, 0, 0})));
  CHECK(std::isnan(max_abs_diff(std::vector<float>{0, 0}, std::vector<float>{0, nan})));
  CHECK_THROWS_AS(max_abs_diff(std::vector<float>{1, 2}, std::vector<float>{1}), Error);
}

TEST_CASE("relative_error is the gap over the reference's largest magnitude", "[core][numeric_compare]") {
  CHECK(relative_error(std::vector<float>{1, 2}, std::vector<float>{1, -4}) == Approx(6.0 / 4.0));
  CHECK(relative_error(std::vector<float>{0.5f, 0}, std::vector<float>{0, 0}) == 0.5);  // all-zero reference
  CHECK(std::isnan(relative_error(std::vector<float>{std::nanf("")}, std::vector<float>{1})));
}
