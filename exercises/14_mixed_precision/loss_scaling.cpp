// Exercise 14.1: dynamic loss scaling. The contract is in
// chapters/14_mixed_precision/loss_scaling.hpp; the lesson (chapters/14_mixed_precision/README.md,
// "Exercise 14.1") gives the idea.
//
// Hints:
//  - read the gradients as floats whatever their dtype (common/dtype.hpp has convert_to_float);
//    unscaled is f32 and the right size, so it can hold them while you look;
//  - std::isfinite is false for inf and NaN alike;
//  - decide first, then touch the state: a skipped step changes the scale and the counters, a
//    good one divides by the scale it was made with before the scale may grow.
#include "chapters/14_mixed_precision/loss_scaling.hpp"

#include "common/error.hpp"

namespace usp::ch14 {

bool unscale_and_update(const Tensor& /*scaled_grads*/, Tensor& /*unscaled*/, LossScaleState& /*state*/) {
  throw NotImplemented("exercise 14.1: unscale_and_update (dynamic loss scaling: skip on overflow, halve, grow)");
}

}  // namespace usp::ch14
