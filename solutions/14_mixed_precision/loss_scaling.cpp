// Exercise 14.1, the reference: one pass to find an overflow, one to divide; the state update
// after both.
#include "chapters/14_mixed_precision/loss_scaling.hpp"

#include <cmath>
#include <vector>

#include "common/dtype.hpp"
#include "common/error.hpp"

namespace usp::ch14 {

bool unscale_and_update(const Tensor& scaled_grads, Tensor& unscaled, LossScaleState& state) {
  USP_CHECK(unscaled.dtype() == DType::f32 && unscaled.numel() == scaled_grads.numel(),
            "unscale_and_update: unscaled must be f32 with as many elements as the gradients");
  const std::int64_t n = scaled_grads.numel();
  float* out = unscaled.data<float>();
  // Widen into the output first (it is f32 and the right size): the check and the division then
  // read fp32 values whatever the gradients' dtype.
  convert_to_float(scaled_grads.dtype(), scaled_grads.raw(), out, static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    if (!std::isfinite(out[i])) {
      ++state.skipped_steps;
      state.scale *= state.backoff;
      state.good_steps = 0;
      return false;
    }
  const float inv = 1.0f / state.scale;  // S is a power of two: multiplying by 1/S is exact division
  for (std::int64_t i = 0; i < n; ++i) out[i] *= inv;
  if (++state.good_steps >= state.growth_interval) {
    state.scale *= state.growth;
    state.good_steps = 0;
  }
  return true;
}

}  // namespace usp::ch14
