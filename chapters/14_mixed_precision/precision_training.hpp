// One model trained under each precision recipe, on the same data from the same initial weights
// (the counter-based init gives every dtype the same values, rounded):
//   fp32           parameters, gradients, activations fp32; AdamW states fp32
//   bf16           parameters, gradients, activations bf16 (rounded to nearest even, emulated on
//                  the CPU: every op computes in fp32 and rounds what it stores); fp32 master
//                  weights in AdamW
//   fp16           the same in fp16, no loss scaling: small gradients flush to zero
//   fp16 + scaling the same with dynamic loss scaling (exercise 14.1)
// Per step: the loss, the loss scale, and how many gradient elements are exactly zero or
// subnormal in the gradients' own format (the underflow the scaling is there to prevent), or
// not finite (the overflow a too-large scale causes, which makes the step skip).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "chapters/14_mixed_precision/loss_scaling.hpp"
#include "common/calc/memory_model.hpp"
#include "common/data/dataset.hpp"
#include "common/model/linear_hook.hpp"
#include "common/train/step_lines.hpp"
#include "common/train/training_flags.hpp"

namespace usp::ch14 {

enum class Recipe { fp32, bf16, fp16, fp16_scaled };
const char* recipe_name(Recipe r);  // "fp32", "bf16", "fp16", "fp16+scaling"

// The recipe's training state as the tracker counted it, in bytes, and how far above it the
// optimizer step reached (the step's own allocations: unscaled gradients, widened copies).
struct StateMemory {
  std::int64_t parameters_numel = 0;
  std::int64_t parameters = 0, gradients = 0, optimizer = 0;  // Parameter, Gradient, OptimizerState
  std::int64_t step_extra = 0;  // peak during unscaling + the optimizer step, minus the bytes before it
  std::int64_t states() const { return parameters + gradients + optimizer; }
};

struct PrecisionRun {
  std::string recipe;
  StateMemory memory;  // measured on the first step
  std::vector<double> losses;         // one per step (the unscaled mean loss)
  std::vector<float> scales;          // the loss scale each step's backward used (1 without scaling)
  std::vector<bool> applied;          // false: the step was skipped for an overflow
  std::vector<double> zero_fraction;  // of the gradient elements, exactly 0 after backward
  std::vector<double> subnormal_fraction;  // nonzero but below the format's smallest normal
  std::vector<double> inf_fraction;   // overflowed to ±inf (fp16's range ends at 65504)
  std::vector<double> nan_fraction;   // NaN (inf - inf, 0 · inf downstream of an overflow)
  std::int64_t skipped_steps = 0;
  // The first step's gradients as stored (scaled, for fp16+scaling), by binade: log2_histogram[i]
  // counts the finite nonzero |g| in [2^(i + kHistLow), 2^(i + kHistLow + 1)) (the end bins also
  // take what lies beyond them); zeros, infinities and NaNs are counted apart.
  static constexpr int kHistLow = -64, kHistBins = 96;
  std::vector<std::int64_t> log2_histogram;
  std::int64_t histogram_zeros = 0, histogram_infs = 0, histogram_nans = 0;
};

// The usp_calc row a recipe's measured memory answers to, and its bytes per parameter:
//   fp32          --precision fp32                      4 + 4 + 8 = 16
//   bf16, fp16    --precision mixed                     2 + 2 + (4 master + 8) = 16
//   fp16+scaling  --precision mixed --fp32-grad-accum   2 + (2 + 4) + 12 = 20: the fp32 copy of the
//                 gradients that unscaling writes is the calculator's fp32 gradient buffer (here
//                 held only while the step runs, so it shows in step_extra, not in gradients)
struct CalcRow {
  const char* flags;
  calc::StateBytes bytes;
};
CalcRow calc_row(Recipe r);

// cfg.model trained cfg.steps steps (cfg.dtype is ignored: the recipe sets it); `scaler` is the
// starting state for Recipe::fp16_scaled.
// Each step's progress line through `lines`, labelled with `label`, which names the run too (empty:
// the recipe's name); its time includes the gradient census.
// linears: the model's linear blocks (null: the core's; otherwise the run measures no memory);
// section 3's FP8 runs are Recipe::fp32 with Fp8Linears (fp8_linears.hpp).
PrecisionRun train_recipe(Recipe recipe, const TrainingConfig& cfg, const Dataset& data, LossScaleState scaler = {},
                          const StepLines& lines = {}, LinearHook* linears = nullptr, const std::string& label = "");

}  // namespace usp::ch14
