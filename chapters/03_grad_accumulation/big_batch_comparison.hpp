// Chapter 03's experiment: from the same initial weights, one optimizer step on k
// micro-batches of b samples (exercise 03.1) against one step on a single batch of k·b
// samples, with the peak activation memory of each.
#pragma once
#include <cstdint>

#include "chapters/03_grad_accumulation/accumulation.hpp"
#include "common/train/training_flags.hpp"

namespace usp::ch03 {

struct BigBatchComparison {
  std::int64_t k = 1, mbs = 1;            // k micro-batches of mbs samples
  double loss_accumulated = 0, loss_big = 0;
  double max_grad_diff = 0, max_grad = 0;  // accumulated vs big-batch gradient (before the step)
  double max_param_diff = 0;               // after the step, over every element
  // ... over the elements whose big-batch gradient is at least 1e-3 of the largest. Adam's
  // first step moves a weight by lr·g/(|g| + eps), a sign-like function that amplifies rounding
  // where |g| is near 0 (down to eps = 1e-8), so only these elements have a well-conditioned
  // update to compare: there it changes by ~lr·(|Δg|/|g|)·eps/|g|, far below an ulp of w.
  double max_param_diff_conditioned = 0;
  std::int64_t peak_activation_accumulated = 0;  // tracker peak of Activation bytes, per run
  std::int64_t peak_activation_big = 0;
};

// Samples [0, k·mbs) of `step` from data, as k micro-batches or one batch.
BigBatchComparison compare_with_big_batch(const TrainingConfig& cfg, const Dataset& data, std::int64_t k,
                                          std::int64_t step = 0);

}  // namespace usp::ch03
