// Checkpoints of a tensor-parallel model, in the one format every chapter uses (common/io/
// checkpoint.hpp: Hugging Face's LlamaForCausalLM, loadable by usp_eval and transformers):
// whatever the TP degree, the files hold the WHOLE model.
//   save: every rank's shards are gathered (tp_gather.hpp) and rank 0 of the world writes the
//         unsharded parameters; collective over the trainer's mesh.
//   load: every rank reads the whole checkpoint and keeps its own slice (load_shard), so a
//         checkpoint trained at any t (or on one device) loads into any t: resharding is just
//         another slice. Errors (a missing file, another shape) are usp::UsageError on every rank.
// Parameters only (no optimizer state): a run that loads one starts a fresh optimizer.
#pragma once
#include <string>

#include "chapters/06_tensor_parallel/tp_trainer.hpp"

namespace usp::ch06 {

// Collective over world (the communicator the trainer was built on).
void save_tp_checkpoint(Communicator& world, TpTrainer& trainer, const std::string& dir);
// Every rank; no communication. Replaces the trainer's parameters.
void load_tp_checkpoint(TpTrainer& trainer, const std::string& dir);

}  // namespace usp::ch06
