// The training loop of the chapters that plug one replacement into the model on one device and
// compare its losses with the core's (12: flash attention through ModelOptions::attention; 13:
// the fused residual + RMSNorm through ModelOptions::residual_norm). The model is rank_model.hpp's
// over the whole store (cfg.dtype on cfg.device, initialised from cfg.seed; `options` its hooks;
// AdamW), then cfg.steps steps of
//
//   zero_grad -> batch(step) [mbs, seq] -> loss = forward -> backward -> AdamW step
//
// each loss checked finite as the run goes (a non-finite one ends it naming the step and `run`)
// and its progress line printed through `lines`, labelled `label` ("  flash: step ...").
// Chapter 14's recipes train in a loop of their own: loss scaling, a gradient census and the
// optimizer's memory are part of each of its steps.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "common/data/dataset.hpp"
#include "common/model/model.hpp"
#include "common/train/step_lines.hpp"
#include "common/train/training_flags.hpp"

namespace usp {

struct OneDeviceTraining {
  std::string label;  // the progress line's ("flash")
  std::string run;    // the run a non-finite loss names ("flash attention")
  // Also measure each forward's activation memory: the tracker's peak is reset as each step
  // begins (so the process's peak in summary.json is then the last step's).
  bool measure_forward_peak = false;
};

struct OneDeviceRun {
  std::vector<double> losses;  // one per step
  // With measure_forward_peak: the largest Activation bytes any forward reached above what was
  // held before the first step (the activations it keeps for the backward, and its temporaries
  // of that category); otherwise 0.
  std::int64_t peak_forward_activation_bytes = 0;
};

OneDeviceRun train_on_one_device(const TrainingConfig& cfg, const Dataset& data, const ModelOptions& options,
                                 const OneDeviceTraining& how, const StepLines& lines = {});

}  // namespace usp
