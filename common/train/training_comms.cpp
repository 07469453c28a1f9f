#include "common/train/training_comms.hpp"

#include <string>

#include "common/error.hpp"

namespace usp {

TrainingComms::TrainingComms(Runtime& rt, const TrainingConfig& cfg)
    : world_(rt.world()), metrics_(rt.world().split(0, rt.rank())), device_(rt.device_world(cfg.device, cfg.backend)) {}

void check_world_device(const char* trainer, const Communicator& world, Device model_device) {
  USP_CHECK(world.device() == model_device,
            std::string(trainer) + ": the model lives on " + model_device.str() + " but the world's tensors on " +
                world.device().str() + " (a GPU needs a device communicator: Runtime::make_world)");
}

}  // namespace usp
