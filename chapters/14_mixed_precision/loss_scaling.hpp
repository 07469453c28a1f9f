// Exercise 14.1: dynamic loss scaling, the step that makes fp16 training work.
//
// fp16 has 5 exponent bits: nothing below 2^-24 ≈ 6e-8 survives, and below 2^-14 ≈ 6.1e-5 values
// lose bits as subnormals — where a good share of a model's gradients live. So the loss is
// multiplied by a scale S before backward: every gradient is S times larger and stays
// representable; the optimizer divides by S again, in fp32. Too large an S overflows (inf or NaN
// somewhere in the gradients, fp16's max is 65504): that step is skipped and S backs off. After
// `growth_interval` good steps in a row, S grows, to find the largest S that does not overflow.
// S stays a power of two (so dividing by it is exact) and within [min_scale, max_scale].
#pragma once
#include <cstdint>

#include "common/tensor.hpp"

namespace usp::ch14 {

// The bounds a scaler starts with: below 1 the "scaling" would shrink the gradients (DeepSpeed's
// min_loss_scale is 1 too); 2^32 is far above any scale a run keeps (PyTorch starts at 2^16) and
// leaves room for the lesson's start at 2^30 (the chapter's --init-scale stops there too).
inline constexpr float kMinLossScale = 1.0f;
inline constexpr float kMaxLossScale = 0x1p32f;

struct LossScaleState {
  float scale = 65536.0f;            // S, the factor the loss was multiplied by
  float growth = 2.0f;               // S *= growth after growth_interval good steps in a row
  float backoff = 0.5f;              // S *= backoff after an overflow
  std::int64_t growth_interval = 2000;
  float min_scale = kMinLossScale;   // S never backs off below this
  float max_scale = kMaxLossScale;   // S never grows above this
  std::int64_t good_steps = 0;       // good steps since the last change of S (or the last growth)
  std::int64_t skipped_steps = 0;    // steps skipped for an overflow, in all
};

// One step of the scaler: may the optimizer step with these gradients, and what is the scale
// for the next step? scaled_grads holds S·g for all of the model's gradients (any float dtype:
// f32, bf16 or f16, any shape; S is state.scale on entry); unscaled [same numel] is f32. Returns
// true when the optimizer may step.
//
// Configuration, checked first, before anything is read or changed; the first violated rule, in
// this order, throws UsageError with exactly this text (<x> as printf's "%g" writes it, <n> as an
// integer):
//   "loss scaling: scale must be a power of two, got <x>"        (finite and > 0 too; the same
//   "loss scaling: min_scale must be a power of two, got <x>"     rule for the three, in this
//   "loss scaling: max_scale must be a power of two, got <x>"     order)
//   "loss scaling: scale <x> is outside [min_scale <x>, max_scale <x>]"
//   "loss scaling: growth must be a power of two above 1, got <x>"
//   "loss scaling: backoff must be a power of two below 1, got <x>"
//   "loss scaling: growth_interval must be >= 1, got <n>"
//   "loss scaling: good_steps must be in [0, growth_interval), got <n>"
// and then unscaled not f32 or not of scaled_grads' numel throws usp::Error, its message starting
//   "unscale_and_update: unscaled must be f32 with as many elements as the gradients".
//
// Postconditions, with S the scale on entry:
//   - some element of scaled_grads is inf or NaN (an overflow: the first element and the last
//     count as much as any):
//       if S == min_scale, the gradients overflow however little they are scaled: throws
//       usp::Error "loss scaling: the gradients overflow at min_scale <x>; the run has diverged"
//       (the state unchanged);
//       otherwise returns false; skipped_steps grew by 1, scale = max(S · backoff, min_scale),
//       good_steps = 0; unscaled is unspecified (the caller does not step);
//   - otherwise: returns true; unscaled[i] = (the element widened to fp32) / S, exactly, in fp32;
//     good_steps grew by 1 — unless that made growth_interval good steps in a row, in which case
//     scale = min(S · growth, max_scale) and good_steps = 0; skipped_steps unchanged.
bool unscale_and_update(const Tensor& scaled_grads, Tensor& unscaled, LossScaleState& state);

}  // namespace usp::ch14
