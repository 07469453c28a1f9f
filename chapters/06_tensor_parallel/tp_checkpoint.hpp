// Checkpoints of a tensor-parallel model, in the one format every chapter uses (common/io/
// checkpoint.hpp: Hugging Face's LlamaForCausalLM, loadable by usp_eval and transformers):
// whatever the TP degree, the files hold the WHOLE model.
//   save: the shards are gathered (tp_gather.hpp) and rank 0 of the world writes the unsharded
//         parameters, in the trainer's dtype (bf16 values gathered as f32 round back exactly);
//         collective over the trainer's mesh. For that moment rank 0 holds the whole model once
//         more (tracked as Parameter). Rank 0's outcome is shared: when it returns on any rank
//         the files are complete and every rank may read them; when rank 0 fails to write, every
//         rank throws the same exception (UsageError stays UsageError, any other failure, such
//         as a full disk, is an Error), so no rank is left waiting.
//   load: every rank reads the whole checkpoint and keeps its own slice (load_shard), so a
//         checkpoint trained at any t (or on one device) loads into any t: resharding is just
//         another slice. While it loads, a rank holds the whole model in the checkpoint's dtype
//         (a temporary store, tracked as Parameter while it lives). A checkpoint of another
//         dtype is converted (rounded to nearest when the trainer's dtype is narrower). Errors (a
//         missing file, another shape: load_params's checks) are usp::UsageError on every rank.
// Parameters only (no optimizer state): loading restarts the trainer's optimizer (m = v = 0,
// step 0, fp32 master weights = the loaded parameters), as a fresh run from these weights.
#pragma once
#include <string>

#include "chapters/06_tensor_parallel/tp_trainer.hpp"

namespace usp::ch06 {

// Collective over world (the communicator the trainer was built on). dir is created if needed.
void save_tp_checkpoint(Communicator& world, TpTrainer& trainer, const std::string& dir);
// Every rank; no communication. Replaces the trainer's parameters and restarts its optimizer.
void load_tp_checkpoint(TpTrainer& trainer, const std::string& dir);

}  // namespace usp::ch06
