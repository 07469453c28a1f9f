// Exercise 14.1, the reference: the configuration checked first; one pass to find an overflow,
// one to divide; the state update after both.
#include "chapters/14_mixed_precision/loss_scaling.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "common/dtype.hpp"
#include "common/error.hpp"

namespace usp::ch14 {

namespace {

bool power_of_two(float x) {
  int e = 0;
  return std::frexp(x, &e) == 0.5f;  // also false for 0, inf and NaN
}

std::string g(float x) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", static_cast<double>(x));
  return text;
}

void check_configuration(const LossScaleState& s) {
  const auto fail = [](const std::string& what) { throw UsageError("loss scaling: " + what); };
  if (!power_of_two(s.scale)) fail("scale must be a power of two, got " + g(s.scale));
  if (!power_of_two(s.min_scale)) fail("min_scale must be a power of two, got " + g(s.min_scale));
  if (!power_of_two(s.max_scale)) fail("max_scale must be a power of two, got " + g(s.max_scale));
  if (s.scale < s.min_scale || s.scale > s.max_scale)
    fail("scale " + g(s.scale) + " is outside [min_scale " + g(s.min_scale) + ", max_scale " + g(s.max_scale) + "]");
  if (!power_of_two(s.growth) || s.growth <= 1) fail("growth must be a power of two above 1, got " + g(s.growth));
  if (!power_of_two(s.backoff) || s.backoff >= 1) fail("backoff must be a power of two below 1, got " + g(s.backoff));
  if (s.growth_interval < 1) fail("growth_interval must be >= 1, got " + std::to_string(s.growth_interval));
  if (s.good_steps < 0 || s.good_steps >= s.growth_interval)
    fail("good_steps must be in [0, growth_interval), got " + std::to_string(s.good_steps));
}

}  // namespace

bool unscale_and_update(const Tensor& scaled_grads, Tensor& unscaled, LossScaleState& state) {
  check_configuration(state);
  USP_CHECK(unscaled.dtype() == DType::f32 && unscaled.numel() == scaled_grads.numel(),
            "unscale_and_update: unscaled must be f32 with as many elements as the gradients");
  const std::int64_t n = scaled_grads.numel();
  float* out = unscaled.data<float>();
  // Widen into the output first (it is f32 and the right size): the check and the division then
  // read fp32 values whatever the gradients' dtype.
  convert_to_float(scaled_grads.dtype(), scaled_grads.raw(), out, static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    if (!std::isfinite(out[i])) {
      if (state.scale == state.min_scale)
        throw Error("loss scaling: the gradients overflow at min_scale " + g(state.min_scale) + "; the run has diverged");
      ++state.skipped_steps;
      state.scale = std::max(state.scale * state.backoff, state.min_scale);
      state.good_steps = 0;
      return false;
    }
  const float inv = 1.0f / state.scale;  // S is a power of two: multiplying by 1/S is exact division
  for (std::int64_t i = 0; i < n; ++i) out[i] *= inv;
  if (++state.good_steps >= state.growth_interval) {
    state.scale = std::min(state.scale * state.growth, state.max_scale);
    state.good_steps = 0;
  }
  return true;
}

}  // namespace usp::ch14
