// What the course's counts say one rank of a TP (+SP) layout holds and sends, for the chapter to
// print next to what the tracker and the communicators measured:
//   layer_activation_formula  the bytes one decoder layer saves for backward on one rank;
//   count_comm                the bytes one rank sends per optimizer step, by collective, from the
//                             operators of parallel_linear.hpp, the embedding and the loss
//                             (megatron_tp.hpp, vocab_parallel_loss.hpp) and the trainer's
//                             synchronisation (tp_trainer.hpp).
#pragma once
#include <array>
#include <cstdint>

#include "chapters/06_tensor_parallel/tp_layout.hpp"
#include "common/comm/communicator.hpp"
#include "common/train/training_flags.hpp"

namespace usp::ch06 {

// One micro-batch of cfg.mbs × cfg.seq tokens, cfg.recompute, activations in cfg.dtype.
// Tensor parallelism splits every tensor a column block makes (q, k, v, the attention output,
// gate, up, SwiGLU's output and the probabilities) by t; the stream's tensors (x, h1, x2, h2 and
// the two rstd vectors) stay whole on every rank unless sequence parallelism splits their rows.
std::int64_t layer_activation_formula(const TrainingConfig& cfg, const TpLayout& layout);

// Bytes sent and calls per optimizer step on the tensor-parallel and data-parallel groups,
// indexed by CommOp, for a replica that runs `micro_batches` micro-batches per step.
struct CommCount {
  std::array<std::uint64_t, kNumCommOps> tp_bytes{}, tp_calls{}, dp_bytes{}, dp_calls{};
};
// tp_rank, dp_rank: this rank's place in its groups (a ring's all-reduce of a size the group
// does not divide sends a little less on some ranks; see comm_volume.hpp).
CommCount count_comm(const TrainingConfig& cfg, const TpLayout& layout, std::int64_t micro_batches, int tp_rank,
                     int dp_rank);

}  // namespace usp::ch06
