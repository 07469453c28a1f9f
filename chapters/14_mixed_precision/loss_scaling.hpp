// Exercise 14.1: dynamic loss scaling, the step that makes fp16 training work.
//
// fp16 has 5 exponent bits: nothing below 2^-24 ≈ 6e-8 survives, and below 2^-14 ≈ 6.1e-5 values
// lose bits as subnormals — where a good share of a model's gradients live. So the loss is
// multiplied by a scale S before backward: every gradient is S times larger and stays
// representable; the optimizer divides by S again, in fp32. Too large an S overflows (inf or NaN
// somewhere in the gradients, fp16's max is 65504): that step is skipped and S halved. After
// `growth_interval` good steps in a row, S doubles, to find the largest S that does not overflow.
#pragma once
#include <cstdint>

#include "common/tensor.hpp"

namespace usp::ch14 {

struct LossScaleState {
  float scale = 65536.0f;            // S, the factor the loss was multiplied by
  float growth = 2.0f;               // S *= growth after growth_interval good steps in a row
  float backoff = 0.5f;              // S *= backoff after an overflow
  std::int64_t growth_interval = 2000;
  std::int64_t good_steps = 0;       // good steps since the last change of S
  std::int64_t skipped_steps = 0;    // steps skipped for an overflow, in all
};

// One step of the scaler: may the optimizer step with these gradients, and what is the scale
// for the next step? scaled_grads holds S·g (any float dtype: f32, bf16 or f16, any shape; S is
// state.scale on entry); unscaled [same numel] is f32. Returns true when the optimizer may step.
// Postconditions, with S the scale on entry:
//   - some element of scaled_grads is inf or NaN (an overflow: the first element and the last
//     count as much as any): returns false; skipped_steps grew by 1, scale = S · backoff,
//     good_steps = 0; unscaled is unspecified (the caller does not step);
//   - otherwise: returns true; unscaled[i] = (the element widened to fp32) / S, in fp32;
//     good_steps grew by 1 — unless that made growth_interval good steps in a row, in which case
//     scale = S · growth and good_steps = 0; skipped_steps unchanged.
bool unscale_and_update(const Tensor& scaled_grads, Tensor& unscaled, LossScaleState& state);

}  // namespace usp::ch14
