// Exercise 14.1: dynamic loss scaling. The contract is in
// chapters/14_mixed_precision/loss_scaling.hpp; the lesson (chapters/14_mixed_precision/README.md,
// "Exercise 14.1") gives the idea.
//
// Useful: common/dtype.hpp reads any float dtype as floats (convert_to_float); std::isfinite is
// false for inf and NaN alike; std::frexp splits a float into a mantissa and an exponent.
#include "chapters/14_mixed_precision/loss_scaling.hpp"

#include "common/error.hpp"

namespace usp::ch14 {

bool unscale_and_update(const Tensor& /*scaled_grads*/, Tensor& /*unscaled*/, LossScaleState& /*state*/) {
  throw NotImplemented("exercise 14.1: unscale_and_update (dynamic loss scaling: check, skip and back off, unscale, grow)");
}

}  // namespace usp::ch14
