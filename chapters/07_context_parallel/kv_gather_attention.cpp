// The all-gather variant of context-parallel attention (see kv_gather_attention.hpp).
#include "chapters/07_context_parallel/kv_gather_attention.hpp"

#include <vector>

#include "common/ops/ops.hpp"
#include "common/trace.hpp"

namespace usp::ch07 {

KvGatherAttention::KvGatherAttention(Communicator& cp, CpSharding sharding) : CpAttentionBase(cp, sharding) {}

Tensor KvGatherAttention::gather_sequence(const Tensor& x) {
  const std::int64_t B = x.dim(0), T = x.dim(1), G = x.dim(2), D = x.dim(3), W = cp_.size();
  Tensor all = Tensor::empty({B, W * T, G, D}, x.dtype(), MemCategory::CommBuffer, x.device());  // the other ranks' K or V
  // One sequence at a time: its T rows from every rank land rank-major in its W·T rows, so the
  // gathered tensor needs no reordering (and no second buffer).
  for (std::int64_t b = 0; b < B; ++b) {
    Tensor row = all.slice(b, b + 1);
    cp_.all_gather(x.slice(b, b + 1), row);
  }
  return all;
}

void KvGatherAttention::attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, Tensor& out,
                                          Tensor& saved) {
  const std::int64_t B = q.dim(0), T = q.dim(1), H = q.dim(2);
  const Tensor K = gather_sequence(k), V = gather_sequence(v);  // [B, W·T, G, D]
  const Tensor& k_pos = gathered_positions(T);
  saved = Tensor::empty({B, H, T}, DType::f32, MemCategory::Activation, q.device());  // the log-sum-exp
  work_.compute_seconds += traced_seconds("all-gather attention", q.device(), [&] {
    ops::attention_block_forward(q, K, V, positions(T), k_pos, out, saved);
  });
  // One step; its blocks are the (query chunk, key chunk) pairs with a visible key, the key
  // chunks in the gathered order (rank after rank, each rank's chunks in its storage order).
  work_.blocks_per_step = {all_visible_blocks()};
}

void KvGatherAttention::attention_backward(const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v,
                                           const Tensor& out, const Tensor& saved, Tensor& dq, Tensor& dk,
                                           Tensor& dv) {
  const std::int64_t B = q.dim(0), T = q.dim(1);
  const Tensor K = gather_sequence(k), V = gather_sequence(v);  // again: the forward let them go
  Tensor dK = Tensor::zeros(K.shape(), DType::f32, MemCategory::Temporary, K.device());
  Tensor dV = Tensor::zeros(V.shape(), DType::f32, MemCategory::Temporary, V.device());
  dq.zero();
  {
    TraceScope span("all-gather attention backward");
    // The final lse feeds nothing else: its gradient is 0 (dlse undefined).
    ops::attention_block_backward(dout, Tensor(), q, K, V, positions(T), gathered_positions(T), out, saved, dq, dK,
                                  dV);
  }
  // Each sequence's W·T rows of dK, dV are rank-major: the reduce-scatter sums every rank's
  // contribution and hands rank w its T rows.
  for (std::int64_t b = 0; b < B; ++b) {
    Tensor dk_b = dk.slice(b, b + 1), dv_b = dv.slice(b, b + 1);
    cp_.reduce_scatter(dK.slice(b, b + 1), dk_b);
    cp_.reduce_scatter(dV.slice(b, b + 1), dv_b);
  }
}

}  // namespace usp::ch07
