#include "chapters/06_tensor_parallel/tp_formulas.hpp"

#include "common/calc/memory_model.hpp"
#include "common/comm/comm_volume.hpp"
#include "common/dtype.hpp"
#include "common/model/params.hpp"

namespace usp::ch06 {

std::int64_t layer_activation_formula(const TrainingConfig& cfg, const TpLayout& layout) {
  // The course's count of one layer (common/calc/memory_model.hpp), for the layout's split.
  return calc::course_layer_activation_bytes(cfg.model, cfg.seq, cfg.mbs, cfg.recompute,
                                             static_cast<std::int64_t>(dtype_size(cfg.dtype)), layout.tp, layout.sp);
}

namespace {

struct Counter {
  CommCount& out;
  int tp, tp_rank, dp, dp_rank;

  // `times` calls of op with a payload of `bytes` (comm_volume.hpp's convention) on the group.
  void tp_op(CommOp op, std::uint64_t bytes, std::uint64_t times) {
    out.tp_bytes[static_cast<int>(op)] += times * comm_volume(op, bytes, tp, tp_rank).bytes_sent;
    out.tp_calls[static_cast<int>(op)] += times;
  }
  void dp_op(CommOp op, std::uint64_t bytes, std::uint64_t times) {
    out.dp_bytes[static_cast<int>(op)] += times * comm_volume(op, bytes, dp, dp_rank).bytes_sent;
    out.dp_calls[static_cast<int>(op)] += times;
  }
};

}  // namespace

CommCount count_comm(const TrainingConfig& cfg, const TpLayout& layout, std::int64_t micro_batches, int tp_rank,
                     int dp_rank) {
  CommCount out;
  Counter c{out, layout.tp, tp_rank, layout.dp, dp_rank};
  const std::vector<ParamInfo> shard = llama_param_layout(cfg.model, TpShard{layout.tp, tp_rank});
  const std::uint64_t e = dtype_size(cfg.dtype), k = static_cast<std::uint64_t>(micro_batches);
  const std::uint64_t L = static_cast<std::uint64_t>(cfg.model.layers);
  const std::uint64_t N = static_cast<std::uint64_t>(cfg.mbs * cfg.seq);
  const std::uint64_t C = static_cast<std::uint64_t>(cfg.model.hidden);
  // The whole stream [N, C]: activations in the activation dtype, its gradients in fp32.
  const std::uint64_t stream_act = N * C * e, stream_grad = N * C * 4;
  // Full recomputation runs every layer's forward a second time in backward, collectives included.
  const std::uint64_t layer_forwards = cfg.recompute == Recompute::full ? 2 * L : L;
  // (At t = 1 the group is one rank: the same calls, each sending nothing.)
  if (!layout.sp) {
    // Forward: g (all-reduce) after the embedding and after each row block (o, down).
    c.tp_op(CommOp::all_reduce, stream_act, k * (1 + 2 * layer_forwards));
    // Backward: f (all-reduce of the input gradient) before each column block (q/k/v,
    // gate/up) and the head.
    c.tp_op(CommOp::all_reduce, stream_grad, k * (2 * L + 1));
  } else {
    // Forward: f is an all-gather of the rows before each column block and the head, g a
    // reduce-scatter after each row block and the embedding.
    c.tp_op(CommOp::all_gather, stream_act, k * (2 * layer_forwards + 1));
    c.tp_op(CommOp::reduce_scatter, stream_act, k * (2 * layer_forwards + 1));
    // Backward: g's backward all-gathers the output gradient of each row block and of the
    // embedding; each column block (and the head) gathers its input again and reduce-scatters
    // its input gradient.
    c.tp_op(CommOp::all_gather, stream_grad, k * (2 * L + 1));
    c.tp_op(CommOp::all_gather, stream_act, k * (2 * L + 1));
    c.tp_op(CommOp::reduce_scatter, stream_grad, k * (2 * L + 1));
    // Once per step: the replicated RMSNorm weights' partial gradients (tp_trainer.hpp).
    for (const ParamInfo& p : shard)
      if (p.split_dim < 0) c.tp_op(CommOp::all_reduce, static_cast<std::uint64_t>(p.numel) * e, 1);
  }
  // The vocabulary-parallel loss: each row's max, Σ exp and target logit (fp32, N each).
  c.tp_op(CommOp::all_reduce, N * 4, 3 * k);
  if (layout.dp > 1) {  // the replicas average the rank's whole gradient shard once per step
    std::uint64_t numel = 0;
    for (const ParamInfo& p : shard) numel += static_cast<std::uint64_t>(p.numel);
    c.dp_op(CommOp::all_reduce, numel * e, 1);
  }
  return out;
}

}  // namespace usp::ch06
