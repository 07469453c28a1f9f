#include "common/train/training_comms.hpp"

namespace usp {

TrainingComms::TrainingComms(Runtime& rt, const TrainingConfig& cfg)
    : world_(rt.world()), metrics_(rt.world().split(0, rt.rank())), device_(rt.device_world(cfg.device, cfg.backend)) {}

}  // namespace usp
