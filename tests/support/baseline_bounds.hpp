// The bounds a parallel layout's CPU fp32 run meets against the single-rank baseline
// (baseline_run.hpp) when the two differ only in the order of their fp32 sums: partial sums over
// ranks, shards or blocks, averaged or all-reduced. Each chapter's test says why its layout only
// reorders sums and what it measured; a replica, shard or micro-batch lost or counted twice is an
// O(1) error against these bounds.
//
//   check_losses_near_baseline(got.losses, base.losses);
//   check_grad_near_baseline(got.grad0, base.grad0, w.rank());         // or this rank's part of both
//   check_params_near_baseline(got.params, base.params, cfg.adamw.lr, w.rank());
#pragma once
#include <catch2/catch.hpp>
#include <cmath>
#include <cstddef>
#include <vector>

#include "tests/support/elementwise_check.hpp"

namespace usp::testing {

// Each step's loss: the means over the tokens averaged in double, a few fp32 ulps (6e-8 relative
// each) apart; bounded by 1e-6 relative (16 ulps).
inline void check_losses_near_baseline(const std::vector<double>& got, const std::vector<double>& base) {
  for (std::size_t s = 0; s < got.size(); ++s) CHECK(std::fabs(got[s] - base[s]) <= 1e-6 * base[s]);
}

// The first step's gradient, `want` the baseline's values of the elements `got` holds: a few ulps
// of the largest terms; bounded by 2e-6 of the largest element (which must not be 0).
inline void check_grad_near_baseline(const std::vector<float>& got, const std::vector<float>& want, int rank) {
  const double gmax = max_abs(want);
  REQUIRE(gmax > 0);
  CHECK(elementwise_mismatch(got, want, Tolerance::absolute(2e-6 * gmax), rank) == "");
}

// The parameters after the steps: the rounding above through AdamW's normalised update (≤ lr per
// element and step; where a gradient is within rounding of zero its sign, and so its update, is
// arbitrary, so no tighter bound follows). lr/30, a thirtieth of one update, fails a weight that
// missed an update or got a wrong one.
inline void check_params_near_baseline(const std::vector<float>& got, const std::vector<float>& want, double lr,
                                       int rank) {
  CHECK(elementwise_mismatch(got, want, Tolerance::absolute(lr / 30), rank) == "");
}

}  // namespace usp::testing
