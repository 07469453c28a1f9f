// Chapter 02's measurement: one forward + backward of the same batch under each recomputation
// mode, from the same weights, with what it kept, what it peaked at, the FLOPs it spent and
// the gradients it produced.
#pragma once
#include <cstdint>
#include <vector>

#include "common/data/dataset.hpp"
#include "common/train/training_flags.hpp"

namespace usp::ch02 {

struct ModeResult {
  Recompute mode = Recompute::none;
  double loss = 0;                          // of the batch (the same in every mode)
  std::int64_t held_after_forward = 0;      // Activation bytes alive between forward and backward
  std::int64_t layer_kept = 0;              // bytes one decoder layer kept (Model::saved_bytes)
  std::int64_t layer_formula = 0;           // calc::course_layer_activation_bytes for this mode
  std::int64_t peak_activation = 0;         // tracker peak of Activation bytes over the step
  std::int64_t peak_total = 0;              // tracker peak of all bytes over the step
  StepFlops flops;                          // model (MFU) vs hardware (HFU) FLOPs
  double seconds = 0;                       // forward + backward wall time (median of repeats)
  std::vector<float> gradients;             // the flat gradient, to compare modes
};

// Runs forward + backward on `batch` with a fresh model in `mode`; `repeats` timed runs (the
// memory and FLOPs of the first).
ModeResult measure_mode(const TrainingConfig& cfg, Recompute mode, const Batch& batch, int repeats = 1);

// Elements where two gradients differ (0: bit-identical).
std::int64_t count_differences(const std::vector<float>& a, const std::vector<float>& b);

}  // namespace usp::ch02
