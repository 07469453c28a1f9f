// The counts of cp_formulas.hpp, operator by operator.
#include "chapters/07_context_parallel/cp_formulas.hpp"

#include "common/comm/comm_volume.hpp"

namespace usp::ch07 {

namespace {

using u64 = std::uint64_t;

struct Counter {
  std::array<u64, kNumCommOps>& bytes;
  std::array<u64, kNumCommOps>& calls;
  int n, rank;
  // `times` ops of `payload` bytes each (comm_volume's payload and bytes sent: a send sends its
  // message, a receive nothing).
  void add(CommOp op, u64 times, u64 payload) {
    bytes[static_cast<int>(op)] += times * comm_volume(op, payload, n, rank).bytes_sent;
    calls[static_cast<int>(op)] += times;
  }
};

}  // namespace

CommCount count_comm(const TrainingConfig& cfg, const CpLayout& layout, std::int64_t micro_batches, int cp_rank,
                     int dp_cp_rank) {
  CommCount c;
  const u64 W = static_cast<u64>(layout.cp), B = static_cast<u64>(cfg.mbs), T = static_cast<u64>(cfg.seq) / W;
  // With tp, a rank's attention runs on its share of the heads.
  const u64 H = static_cast<u64>(cfg.model.heads / layout.tp), G = static_cast<u64>(cfg.model.kv_heads / layout.tp);
  const u64 D = static_cast<u64>(cfg.model.head_dim()), e = dtype_size(cfg.dtype), f32 = 4;
  // Attention forwards per step: one per layer and micro-batch, twice under full recomputation
  // (backward runs each layer's forward again); one backward per layer and micro-batch.
  const u64 layers = static_cast<u64>(cfg.model.layers) * static_cast<u64>(micro_batches);
  const u64 forwards = layers * (cfg.recompute == Recompute::full ? 2 : 1), backwards = layers;
  Counter cp{c.cp_bytes, c.cp_calls, layout.cp, cp_rank};
  switch (layout.attention) {
    case CpAttention::all_gather: {
      // One collective per sequence of the micro-batch, of its W·T·G·D elements: forward k and v
      // gathered; backward gathered again, and dK, dV (f32) reduce-scattered.
      const u64 seq_kv = W * T * G * D;
      cp.add(CommOp::all_gather, 2 * B * (forwards + backwards), seq_kv * e);
      cp.add(CommOp::reduce_scatter, 2 * B * backwards, seq_kv * f32);
      break;
    }
    case CpAttention::ring: {
      // Forward: W-1 hops of the K and V blocks (2 messages of kv each); backward: W-1 hops of K
      // and V again, and W hops of dK, dV (f32), the last bringing them home. Every send has its
      // receive on the next rank.
      const u64 kv = B * T * G * D, hops = W - 1, home = W > 1 ? W : 0;
      for (CommOp op : {CommOp::send, CommOp::recv}) {
        cp.add(op, 2 * hops * (forwards + backwards), kv * e);
        cp.add(op, 2 * home * backwards, kv * f32);
      }
      break;
    }
    case CpAttention::all_to_all: {
      // Every all-to-all carries fp32 (ulysses_attention.hpp). Forward: q, k, v to the head split,
      // the output back; backward: dout, out, q, k, v to the head split again (nothing kept), dq,
      // dk, dv back.
      const u64 q = B * T * H * D, kv = B * T * G * D;
      cp.add(CommOp::all_to_all, 2 * forwards, q * f32);
      cp.add(CommOp::all_to_all, 2 * forwards, kv * f32);
      cp.add(CommOp::all_to_all, 4 * backwards, q * f32);
      cp.add(CommOp::all_to_all, 4 * backwards, kv * f32);
      break;
    }
  }
  // The gradient: one all-reduce over the dp·cp ranks of what a rank holds (the whole model, or
  // with tp its shard, the same size on every tp rank).
  if (layout.dp * layout.cp > 1) {
    u64 held = 0;
    for (const ParamInfo& p : llama_param_layout(cfg.model, TpShard{layout.tp, 0})) held += static_cast<u64>(p.numel);
    Counter dp_cp{c.dp_cp_bytes, c.dp_cp_calls, layout.dp * layout.cp, dp_cp_rank};
    dp_cp.add(CommOp::all_reduce, 1, held * e);
  }
  return c;
}

std::int64_t attention_kv_bytes(const TrainingConfig& cfg, const CpLayout& layout) {
  const std::int64_t W = layout.cp, kv = cfg.mbs * (cfg.seq / W) * (cfg.model.kv_dim() / layout.tp) *
                                          static_cast<std::int64_t>(dtype_size(cfg.dtype));
  switch (layout.attention) {
    case CpAttention::all_gather: return 2 * W * kv;  // K and V of the whole sequence
    case CpAttention::ring: return W > 1 ? 2 * 2 * kv : 0;  // the blocks of this step and the next
    case CpAttention::all_to_all: return 0;  // every token's K and V of G/W heads: as many as its own
  }
  return 0;
}

}  // namespace usp::ch07
