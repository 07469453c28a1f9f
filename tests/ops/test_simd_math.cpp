// The ops' vectorizable helpers (common/ops/simd_math.hpp): exp_approx against double exp,
// its clamping and NaN, and the lane reductions against plain sums.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "tests/ops/op_reference.hpp"
#include "common/ops/simd_math.hpp"

using namespace usp;
using namespace usp::opstest;
using namespace usp::ops::detail;

TEST_CASE("exp_approx is within 2 ulp of e^x on [-87, 87]", "[ops][simd]") {
  // A correctly rounded expf is within 0.5 ulp; the polynomial and range reduction add about one
  // more. 2 ulp = 2·2^-23 relative at worst (a float's ulp is 2^-23..2^-24 of its value).
  double worst = 0;
  for (int i = 0; i <= 400000; ++i) {
    const float x = static_cast<float>(-87.0 + 174.0 * i / 400000.0);
    const double want = std::exp(static_cast<double>(x));
    worst = std::max(worst, std::abs(exp_approx(x) - want) / want);
  }
  CHECK(worst < 2 * 0x1p-23);
  CHECK(exp_approx(0.0f) == 1.0f);
}

TEST_CASE("exp_approx clamps beyond ±87 and keeps NaN", "[ops][simd]") {
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(exp_approx(-1000.0f) == exp_approx(-87.0f));
  CHECK(exp_approx(-inf) == exp_approx(-87.0f));
  CHECK(exp_approx(-87.0f) > 0.0f);
  CHECK(exp_approx(-87.0f) < 1e-37f);
  CHECK(exp_approx(1000.0f) == exp_approx(87.0f));
  CHECK(std::isfinite(exp_approx(inf)));
  CHECK(std::isnan(exp_approx(std::numeric_limits<float>::quiet_NaN())));
}

TEST_CASE("lane reductions equal the sums they replace", "[ops][simd]") {
  for (std::int64_t n : {1, 7, 8, 9, 64, 67}) {
    CAPTURE(n);
    const Vec a = random_values(static_cast<std::size_t>(n), 91), b = random_values(static_cast<std::size_t>(n), 92);
    std::vector<float> fa(a.begin(), a.end()), fb(b.begin(), b.end());
    double sum = 0, dot = 0, mx = -1e30, abs_sum = 0, abs_dot = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      sum += a[i];
      dot += a[i] * b[i];
      abs_sum += std::abs(a[i]);
      abs_dot += std::abs(a[i] * b[i]);
      mx = std::max(mx, a[i]);
    }
    // Any order of n f32 additions is within n·2^-24·Σ|terms| of the exact sum (a product adds
    // one more rounding per term); a dropped or doubled lane is off by O(1).
    CHECK(std::abs(lane_sum(fa.data(), n) - sum) <= n * 0x1p-24 * abs_sum);
    CHECK(std::abs(lane_dot(fa.data(), fb.data(), n) - dot) <= (n + 1) * 0x1p-24 * abs_dot);
    CHECK(lane_max(fa.data(), n) == mx);  // exact
  }
}
