// The start every training chapter shares: the training flags read back (training_flags.hpp) and
// --data opened, as one agreement point, so that a bad flag or a missing file gives one
// "error: ..." and every rank exits (Runtime::agree).
#pragma once
#include <memory>

#include "common/cli.hpp"
#include "common/data/dataset.hpp"
#include "common/runtime.hpp"
#include "common/train/training_flags.hpp"

namespace usp {

struct TrainingInputs {
  TrainingConfig config;
  std::unique_ptr<Dataset> data;
};

// Collective: every rank calls it after rt.parse(cli, ...). devices: where the chapter can train
// (training_flags.hpp); the config's device is resolved with this rank's local rank.
TrainingInputs agree_training_inputs(Runtime& rt, const Cli& cli, TrainingDevices devices = TrainingDevices::cpu_only);

}  // namespace usp
