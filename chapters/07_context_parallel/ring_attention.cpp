#include "chapters/07_context_parallel/ring_attention.hpp"

#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "chapters/07_context_parallel/merge_attention.hpp"
#include "chapters/07_context_parallel/token_rows.hpp"
#include "common/device.hpp"
#include "common/ops/ops.hpp"

namespace usp::ch07 {

namespace {

// Tags: four per step (k, v, dk, dv), so that the messages of one step never match another's.
int tag(int step, int which) { return 4 * step + which; }

// Where a chunk's tokens sit among its rank's: the row of its first token (token_place, exercise
// 07.2) in a sequence of chunk_count chunks of len tokens; `rank` must be the one holding it.
std::int64_t chunk_row(CpSharding s, int world, int rank, int chunk, std::int64_t len) {
  const TokenPlace place = token_place(s, chunk_count(s, world) * len, world, chunk * len);
  if (place.rank != rank)
    throw Error("ring attention: rank " + std::to_string(rank) + " does not hold chunk " + std::to_string(chunk));
  return place.index;
}

// The positions [L] i32 of a chunk's tokens in the whole sequence, on `device` (the attention
// op's arguments share one).
Tensor chunk_positions(int chunk, std::int64_t len, Device device) {
  std::vector<std::int32_t> p(static_cast<std::size_t>(len));
  std::iota(p.begin(), p.end(), static_cast<std::int32_t>(chunk * len));
  return positions_on(p, device);
}

// Two tensors passed one hop along the ring: a and b go to rank r+1 while two of their shapes and
// dtypes (CommBuffers, allocated here) arrive from rank r-1, under tags `first` and first + 1. The
// caller computes, then waits before it reads what arrived.
struct Hop {
  Tensor a, b;  // what arrives
  WorkHandle recv_a, recv_b, send_a, send_b;
  void wait() {
    for (WorkHandle* w : {&recv_a, &recv_b, &send_a, &send_b})
      if (*w) (*w)->wait();
  }
};

Hop hop(Communicator& cp, const Tensor& a, const Tensor& b, int first) {
  const int W = cp.size(), r = cp.rank();
  Hop h;
  h.a = Tensor::empty(a.shape(), a.dtype(), MemCategory::CommBuffer, a.device());
  h.b = Tensor::empty(b.shape(), b.dtype(), MemCategory::CommBuffer, b.device());
  h.recv_a = cp.recv_async(h.a, (r - 1 + W) % W, first);
  h.recv_b = cp.recv_async(h.b, (r - 1 + W) % W, first + 1);
  h.send_a = cp.send_async(a, (r + 1) % W, first);
  h.send_b = cp.send_async(b, (r + 1) % W, first + 1);
  return h;
}

// The K/V block a rank holds at a ring step.
struct KvBlock {
  Tensor k, v;  // [B, T, G, D]: the keys and values of rank `owner`
  int owner = 0;
};

// Exercise 07.1's merge and its backward work on host memory. With the ring on a GPU the merge's
// operands (a chunk's running out and lse, the block's, and their gradients: O(len·H·D) per
// block, against the block's O(len²·H·D) attention) go through host copies, so the student's
// merge is the one every device runs; a production ring fuses it into the attention kernel.
Tensor host_copy(const Tensor& t) { return on_device(t, Device::cpu()); }

// (On the CPU host_copy is the tensor itself: nothing is copied, the results land in place.)
void merge_on_host(Tensor& out, Tensor& lse, const Tensor& block_out, const Tensor& block_lse) {
  Tensor o = host_copy(out), l = host_copy(lse);
  merge_partial_attention(o, l, host_copy(block_out), host_copy(block_lse));
  if (!o.shares_storage_with(out)) {
    out.copy_from(o);
    lse.copy_from(l);
  }
}

void merge_backward_on_host(const Tensor& dout, const Tensor& out, const Tensor& lse, const Tensor& block_out,
                            const Tensor& block_lse, Tensor& dblock_out, Tensor& dblock_lse) {
  Tensor dbo = host_copy(dblock_out), dbl = host_copy(dblock_lse);
  merge_partial_attention_backward(host_copy(dout), host_copy(out), host_copy(lse), host_copy(block_out),
                                   host_copy(block_lse), dbo, dbl);
  if (!dbo.shares_storage_with(dblock_out)) {
    dblock_out.copy_from(dbo);
    dblock_lse.copy_from(dbl);
  }
}

}  // namespace

RingAttention::RingAttention(Communicator& cp, CpSharding sharding) : CpAttentionBase(cp, sharding) {}

void RingAttention::attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, Tensor& out, Tensor& saved) {
  const std::int64_t B = q.dim(0), T = q.dim(1), H = q.dim(2), D = q.dim(3);
  const int W = cp_.size(), r = cp_.rank();
  const std::int64_t len = T / static_cast<std::int64_t>(rank_chunks(sharding_, W, r).size());
  // The running result in fp32: out [B, T, H, D] and lse [B, H, T] (what backward keeps).
  const Device dev = q.device();
  Tensor acc = Tensor::zeros({B, T, H, D}, DType::f32, MemCategory::Temporary, dev);
  saved = Tensor::empty({B, H, T}, DType::f32, MemCategory::Activation, dev);
  saved.fill(-std::numeric_limits<float>::infinity());
  Tensor lse_rows = saved.reshape({B * H, T, 1});  // the same memory, tokens as dim 1

  work_.blocks_per_step.assign(static_cast<std::size_t>(W), {});
  KvBlock held{k, v, r};
  for (int step = 0; step < W; ++step) {
    Hop next;
    if (step + 1 < W) next = hop(cp_, held.k, held.v, tag(step, 0));  // in flight while we compute
    work_.compute_seconds += traced_seconds("ring step " + std::to_string(step), dev, [&] {
      for (const Block& b : ring_step_blocks(sharding_, W, r, step)) {
        const std::int64_t qr = chunk_row(sharding_, W, r, b.q_chunk, len);
        const std::int64_t kr = chunk_row(sharding_, W, held.owner, b.k_chunk, len);
        const Tensor qc = take_tokens(q, qr, len), kc = take_tokens(held.k, kr, len), vc = take_tokens(held.v, kr, len);
        Tensor out_b = Tensor::empty({B, len, H, D}, DType::f32, MemCategory::Temporary, dev);
        Tensor lse_b = Tensor::empty({B, H, len}, DType::f32, MemCategory::Temporary, dev);
        ops::attention_block_forward(qc, kc, vc, chunk_positions(b.q_chunk, len, dev),
                                     chunk_positions(b.k_chunk, len, dev), out_b, lse_b);
        // Merge into the query chunk's rows of the running result (exercise 07.1).
        Tensor out_c = take_tokens(acc, qr, len);
        Tensor lse_c = take_tokens(lse_rows, qr, len).reshape({B, H, len});
        merge_on_host(out_c, lse_c, out_b, lse_b);
        put_tokens(out_c, acc, qr);
        put_tokens(lse_c.reshape({B * H, len, 1}), lse_rows, qr);
        work_.blocks_per_step[static_cast<std::size_t>(step)].push_back(b);
      }
    });
    if (step + 1 < W) {
      next.wait();
      held = {next.a, next.b, (held.owner - 1 + W) % W};
    }
  }
  put_tokens(acc, out, 0);  // rounded to the layer's dtype once
}

void RingAttention::attention_backward(const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v,
                                       const Tensor& out, const Tensor& saved, Tensor& dq, Tensor& dk, Tensor& dv) {
  const std::int64_t B = q.dim(0), T = q.dim(1), H = q.dim(2), D = q.dim(3), G = k.dim(2);
  const int W = cp_.size(), r = cp_.rank();
  const std::int64_t len = T / static_cast<std::int64_t>(rank_chunks(sharding_, W, r).size());
  const Tensor lse_rows = saved.reshape({B * H, T, 1});
  const Device dev = q.device();
  Tensor dq_acc = Tensor::zeros({B, T, H, D}, DType::f32, MemCategory::Temporary, dev);
  // The dK/dV accumulator of the block held, travelling with it (f32).
  Tensor dk_acc = Tensor::zeros({B, T, G, D}, DType::f32, MemCategory::CommBuffer, dev);
  Tensor dv_acc = Tensor::zeros({B, T, G, D}, DType::f32, MemCategory::CommBuffer, dev);

  KvBlock held{k, v, r};
  for (int step = 0; step < W; ++step) {
    Hop next;
    if (step + 1 < W) next = hop(cp_, held.k, held.v, tag(step, 0));  // the next K/V, prefetched
    traced_seconds("ring backward step " + std::to_string(step), dev, [&] {  // traced; compute_seconds is the forward's
      for (const Block& b : ring_step_blocks(sharding_, W, r, step)) {
        const std::int64_t qr = chunk_row(sharding_, W, r, b.q_chunk, len);
        const std::int64_t kr = chunk_row(sharding_, W, held.owner, b.k_chunk, len);
        const Tensor qc = take_tokens(q, qr, len), kc = take_tokens(held.k, kr, len), vc = take_tokens(held.v, kr, len);
        const Tensor qp = chunk_positions(b.q_chunk, len, dev), kp = chunk_positions(b.k_chunk, len, dev);
        // The block's own partial result, recomputed.
        Tensor out_b = Tensor::empty({B, len, H, D}, DType::f32, MemCategory::Temporary, dev);
        Tensor lse_b = Tensor::empty({B, H, len}, DType::f32, MemCategory::Temporary, dev);
        ops::attention_block_forward(qc, kc, vc, qp, kp, out_b, lse_b);
        // The gradient the merge hands it (exercise 07.1), then the block's backward.
        const Tensor lse_c = take_tokens(lse_rows, qr, len).reshape({B, H, len});
        Tensor dout_b = Tensor::empty({B, len, H, D}, DType::f32, MemCategory::Temporary, dev);
        Tensor dlse_b = Tensor::empty({B, H, len}, DType::f32, MemCategory::Temporary, dev);
        merge_backward_on_host(take_tokens(dout, qr, len), take_tokens(out, qr, len), lse_c, out_b, lse_b, dout_b,
                               dlse_b);
        Tensor dqc = Tensor::zeros({B, len, H, D}, DType::f32, MemCategory::Temporary, dev);
        Tensor dkc = Tensor::zeros({B, len, G, D}, DType::f32, MemCategory::Temporary, dev);
        Tensor dvc = Tensor::zeros({B, len, G, D}, DType::f32, MemCategory::Temporary, dev);
        ops::attention_block_backward(dout_b, dlse_b, qc, kc, vc, qp, kp, out_b, lse_b, dqc, dkc, dvc);
        put_tokens(dqc, dq_acc, qr, /*add=*/true);
        put_tokens(dkc, dk_acc, kr, /*add=*/true);
        put_tokens(dvc, dv_acc, kr, /*add=*/true);
      }
    });
    if (step + 1 < W) next.wait();
    if (W > 1) {
      // The accumulator goes on with its block to rank r+1; the one for the block arriving (or,
      // after the last step, this rank's own, home from its last visit) comes from rank r-1.
      Hop acc = hop(cp_, dk_acc, dv_acc, tag(step, 2));
      acc.wait();
      dk_acc = acc.a;
      dv_acc = acc.b;
    }
    if (step + 1 < W) held = {next.a, next.b, (held.owner - 1 + W) % W};
  }
  put_tokens(dq_acc, dq, 0);
  put_tokens(dk_acc, dk, 0);
  put_tokens(dv_acc, dv, 0);
}

}  // namespace usp::ch07
