#include "chapters/07_context_parallel/ulysses_attention.hpp"

#include <chrono>
#include <string>

#include "common/dtype.hpp"
#include "common/device.hpp"
#include "common/ops/ops.hpp"
#include "common/trace.hpp"

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

}  // namespace

Tensor UlyssesAttention::to_heads(const Tensor& x) {
  const std::int64_t B = x.dim(0), T = x.dim(1), X = x.dim(2), D = x.dim(3);
  const int W = cp_.size();
  const std::int64_t hp = X / W;
  // Chunk j of the send buffer: every token of mine, heads [j·hp, (j+1)·hp): [W, B, T, hp, D].
  const Tensor xh = host_of(x);
  Tensor xf = Tensor::empty(x.shape(), DType::f32, MemCategory::Temporary);
  convert_to_float(x.dtype(), xh.raw(), xf.data<float>(), static_cast<std::size_t>(x.numel()));
  Tensor send = staging(x.device(), {W, B, T, hp, D});
  const float* s = xf.data<float>();
  float* o = send.data<float>();
  for (int j = 0; j < W; ++j)
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t t = 0; t < T; ++t)
        for (std::int64_t h = 0; h < hp; ++h)
          for (std::int64_t e = 0; e < D; ++e)
            o[(((j * B + b) * T + t) * hp + h) * D + e] = s[((b * T + t) * X + j * hp + h) * D + e];
  const Tensor recv = exchange(cp_, send);
  // Chunk i received: rank i's tokens, my heads -> rows [i·T, (i+1)·T) of [B, W·T, hp, D].
  Tensor y = Tensor::empty({B, W * T, hp, D}, DType::f32, MemCategory::Temporary);
  const float* r = recv.data<float>();
  float* yp = y.data<float>();
  for (int i = 0; i < W; ++i)
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t t = 0; t < T; ++t)
        for (std::int64_t h = 0; h < hp; ++h)
          for (std::int64_t e = 0; e < D; ++e)
            yp[((b * W * T + i * T + t) * hp + h) * D + e] = r[(((i * B + b) * T + t) * hp + h) * D + e];
  return on_device(y, x.device());
}

void UlyssesAttention::to_tokens(const Tensor& y, Tensor& into) {
  const std::int64_t B = into.dim(0), T = into.dim(1), X = into.dim(2), D = into.dim(3);
  const int W = cp_.size();
  const std::int64_t hp = X / W;
  // Chunk i of the send buffer: rank i's tokens (rows [i·T, (i+1)·T)), my heads.
  Tensor send = staging(into.device(), {W, B, T, hp, D});
  const Tensor yh = host_of(y);
  const float* yp = yh.data<float>();
  float* o = send.data<float>();
  for (int i = 0; i < W; ++i)
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t t = 0; t < T; ++t)
        for (std::int64_t h = 0; h < hp; ++h)
          for (std::int64_t e = 0; e < D; ++e)
            o[(((i * B + b) * T + t) * hp + h) * D + e] = yp[((b * W * T + i * T + t) * hp + h) * D + e];
  const Tensor recv = exchange(cp_, send);
  // Chunk j received: my tokens, rank j's heads [j·hp, (j+1)·hp).
  Tensor xf = Tensor::empty(into.shape(), DType::f32, MemCategory::Temporary);
  const float* r = recv.data<float>();
  float* x = xf.data<float>();
  for (int j = 0; j < W; ++j)
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t t = 0; t < T; ++t)
        for (std::int64_t h = 0; h < hp; ++h)
          for (std::int64_t e = 0; e < D; ++e)
            x[((b * T + t) * X + j * hp + h) * D + e] = r[(((j * B + b) * T + t) * hp + h) * D + e];
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
  const auto t0 = std::chrono::steady_clock::now();
  {
    TraceScope span("all-to-all attention");
    ops::attention_block_forward(qh, kh, vh, pos, pos, outh, saved);
  }
  synchronize_compute(q.device());  // on a GPU: the kernels, not their launches
  work_.compute_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
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
  const auto t0 = std::chrono::steady_clock::now();
  {
    TraceScope span("all-to-all attention backward");
    ops::attention_block_backward(douth, Tensor(), qh, kh, vh, pos, pos, outh, saved, dqh, dkh, dvh);
  }
  synchronize_compute(q.device());  // on a GPU: the kernels, not their launches
  work_.compute_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  to_tokens(dqh, dq);
  to_tokens(dkh, dk);
  to_tokens(dvh, dv);
}

}  // namespace usp::ch07
