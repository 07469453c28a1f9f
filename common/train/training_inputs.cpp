#include "common/train/training_inputs.hpp"

namespace usp {

TrainingInputs agree_training_inputs(Runtime& rt, const Cli& cli, TrainingDevices devices) {
  TrainingInputs in;
  rt.agree([&] {
    in.config = training_config_from(cli, devices, rt.local_rank());
    in.data = open_training_data(in.config);
  });
  return in;
}

}  // namespace usp
