#include "chapters/07_context_parallel/ulysses_attention.hpp"

#include <algorithm>
#include <string>

#include "common/dtype.hpp"
#include "common/device.hpp"
#include "common/ops/ops.hpp"

namespace usp::ch07 {

UlyssesAttention::UlyssesAttention(Communicator& cp, CpSharding sharding) : CpAttentionBase(cp, sharding) {}

namespace {

// The reshuffles below are host loops. On a GPU they work on host copies (O(B·T·H·D) numbers per
// move, against the attention's O(B·(W·T)²·H·D/W) products), and only the all-to-all itself runs
// on the group's device: a production version would fuse the reshuffle into a kernel.
Tensor host_of(const Tensor& t) { return on_device(t, Device::cpu()); }

// A [W, B, T, hp, D] f32 exchange buffer filled on the host: a CommBuffer on the CPU, where it is
// the one the all-to-all sends; a Temporary on a GPU, where it is staged to a device CommBuffer.
Tensor staging(Device device, const Shape& shape) {
  return Tensor::empty(shape, DType::f32, device.is_cpu() ? MemCategory::CommBuffer : MemCategory::Temporary);
}

// send (host) -> recv (host) through an all-to-all on cp's device.
Tensor exchange(Communicator& cp, const Tensor& send) {
  const Device dev = cp.device();
  Tensor recv = Tensor::empty(send.shape(), DType::f32, MemCategory::CommBuffer, dev);
  cp.all_to_all(on_device(send, dev, MemCategory::CommBuffer), recv);
  return host_of(recv);
}

// Moves D-element rows between the exchange buffer [W, B, T, hp, D] (`shape`) and one of the two
// layouts it connects, into the buffer when to_buffer. Chunk c of the buffer is
//   Split::tokens  x [B, T, W·hp, D], this rank's tokens: heads [c·hp, (c+1)·hp), rank c's share
//   Split::heads   y [B, W·T, hp, D], this rank's heads: rank c's tokens, rows [c·T, (c+1)·T)
enum class Split { tokens, heads };

void shuffle(const float* from, float* to, const Shape& shape, Split split, bool to_buffer) {
  const std::int64_t W = shape[0], B = shape[1], T = shape[2], hp = shape[3], D = shape[4];
  for (std::int64_t c = 0; c < W; ++c)
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t t = 0; t < T; ++t)
        for (std::int64_t h = 0; h < hp; ++h) {
          const std::int64_t buffer = (((c * B + b) * T + t) * hp + h) * D;
          const std::int64_t layout = split == Split::tokens ? ((b * T + t) * W * hp + c * hp + h) * D
                                                             : ((b * W * T + c * T + t) * hp + h) * D;
          std::copy_n(from + (to_buffer ? layout : buffer), D, to + (to_buffer ? buffer : layout));
        }
}

}  // namespace

Tensor UlyssesAttention::to_heads(const Tensor& x) {
  const std::int64_t B = x.dim(0), T = x.dim(1), X = x.dim(2), D = x.dim(3);
  const int W = cp_.size();
  const std::int64_t hp = X / W;
  const Tensor xh = host_of(x);
  Tensor xf = Tensor::empty(x.shape(), DType::f32, MemCategory::Temporary);
  convert_to_float(x.dtype(), xh.raw(), xf.data<float>(), static_cast<std::size_t>(x.numel()));
  // Rank j gets my tokens of its heads [j·hp, (j+1)·hp); rank i's tokens of my heads come back.
  Tensor send = staging(x.device(), {W, B, T, hp, D});
  shuffle(xf.data<float>(), send.data<float>(), send.shape(), Split::tokens, /*to_buffer=*/true);
  const Tensor recv = exchange(cp_, send);
  Tensor y = Tensor::empty({B, W * T, hp, D}, DType::f32, MemCategory::Temporary);
  shuffle(recv.data<float>(), y.data<float>(), recv.shape(), Split::heads, /*to_buffer=*/false);
  return on_device(y, x.device());
}

void UlyssesAttention::to_tokens(const Tensor& y, Tensor& into) {
  const std::int64_t B = into.dim(0), T = into.dim(1), X = into.dim(2), D = into.dim(3);
  const int W = cp_.size();
  const std::int64_t hp = X / W;
  // Rank i gets its tokens (my rows [i·T, (i+1)·T)) of my heads; my tokens of rank j's heads come back.
  Tensor send = staging(into.device(), {W, B, T, hp, D});
  const Tensor yh = host_of(y);
  shuffle(yh.data<float>(), send.data<float>(), send.shape(), Split::heads, /*to_buffer=*/true);
  const Tensor recv = exchange(cp_, send);
  Tensor xf = Tensor::empty(into.shape(), DType::f32, MemCategory::Temporary);
  shuffle(recv.data<float>(), xf.data<float>(), recv.shape(), Split::tokens, /*to_buffer=*/false);
  Tensor formed = into.device().is_cpu() ? into : Tensor::empty(into.shape(), into.dtype(), MemCategory::Temporary);
  convert_from_float(xf.data<float>(), into.dtype(), formed.raw(), static_cast<std::size_t>(into.numel()));
  if (!formed.shares_storage_with(into)) into.copy_from(formed);
}

void UlyssesAttention::attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, Tensor& out,
                                         Tensor& saved) {
  const std::int64_t B = q.dim(0), T = q.dim(1), H = q.dim(2), D = q.dim(3);
  const int W = cp_.size();
  const Tensor qh = to_heads(q), kh = to_heads(k), vh = to_heads(v);  // [B, W·T, heads/W, D]
  const Tensor& pos = gathered_positions(T);
  Tensor outh = Tensor::empty({B, W * T, H / W, D}, DType::f32, MemCategory::Temporary, q.device());
  saved = Tensor::empty({B, H / W, W * T}, DType::f32, MemCategory::Activation, q.device());  // the log-sum-exp
  work_.compute_seconds += traced_seconds("all-to-all attention", q.device(), [&] {
    ops::attention_block_forward(qh, kh, vh, pos, pos, outh, saved);
  });
  to_tokens(outh, out);
  // One step: for its heads the rank computes every block of the causal mask; per (query chunk,
  // key chunk) of its own tokens that is the same list as the others', so the work is listed as
  // the rank's query chunks against every visible key chunk (as the all-gather does).
  work_.blocks_per_step = {all_visible_blocks()};
}

void UlyssesAttention::attention_backward(const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v,
                                          const Tensor& out, const Tensor& saved, Tensor& dq, Tensor& dk,
                                          Tensor& dv) {
  const std::int64_t T = q.dim(1);
  const Tensor douth = to_heads(dout), outh = to_heads(out), qh = to_heads(q), kh = to_heads(k), vh = to_heads(v);
  const Tensor& pos = gathered_positions(T);
  Tensor dqh = Tensor::zeros(qh.shape(), DType::f32, MemCategory::Temporary, q.device());
  Tensor dkh = Tensor::zeros(kh.shape(), DType::f32, MemCategory::Temporary, q.device());
  Tensor dvh = Tensor::zeros(vh.shape(), DType::f32, MemCategory::Temporary, q.device());
  traced_seconds("all-to-all attention backward", q.device(), [&] {  // traced; compute_seconds is the forward's
    ops::attention_block_backward(douth, Tensor(), qh, kh, vh, pos, pos, outh, saved, dqh, dkh, dvh);
  });
  to_tokens(dqh, dq);
  to_tokens(dkh, dk);
  to_tokens(dvh, dv);
}

}  // namespace usp::ch07
