// Saving a mixture of experts trained with its experts spread over ranks as ONE checkpoint in
// Mixtral's layout (common/io/checkpoint.hpp), which usp_eval and transformers load as they load
// a single device's: the ep ranks of world rank 0's group gather their experts to rank 0, which
// writes the dense parameters (every rank holds them) and every expert under its global name.
// Every rank learns whether the write succeeded (run_on_root).
#pragma once
#include <string>

#include "chapters/09_expert_parallel/ep_trainer.hpp"

namespace usp::ch09 {

// Collective over world: the job's ranks on the CPU (the outcome is agreed over them); the experts
// are gathered over the trainer's ep group, on its device.
void save_ep_checkpoint(Communicator& world, EpTrainer& trainer, const std::string& dir);

}  // namespace usp::ch09
