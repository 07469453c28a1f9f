#include "chapters/12_flash_attention/flash_attention_cuda.hpp"

#include <cmath>
#include <string>

#include "common/error.hpp"
#if defined(USP_HAVE_CUDA)
#include "common/cuda/streams.hpp"
#include "common/ops/ops.hpp"
#include "kernels/attention/attention_rungs.hpp"
#endif

namespace usp::ch12 {

#if defined(USP_HAVE_CUDA)

namespace {

// x itself when it is fp32, otherwise an fp32 copy on its device.
Tensor widened(const Tensor& x) {
  if (x.dtype() == DType::f32) return x;
  Tensor y = Tensor::empty(x.shape(), DType::f32, MemCategory::Temporary, x.device());
  ops::convert(x, y);
  return y;
}

// Where a result is computed: dst itself when it is fp32, otherwise an fp32 Temporary that
// round_into() then rounds into dst.
Tensor fp32_target(const Tensor& dst) {
  return dst.dtype() == DType::f32 ? dst : Tensor::empty(dst.shape(), DType::f32, MemCategory::Temporary, dst.device());
}
void round_into(const Tensor& computed, Tensor& dst) {
  if (!computed.shares_storage_with(dst)) ops::convert(computed, dst);
}

attention::AttentionF32 problem(const Tensor& q, const Tensor& k, bool causal, const char* op) {
  if (q.dim(3) > attention::kMaxHeadDim)
    throw UsageError(std::string(op) + ": head dim " + std::to_string(q.dim(3)) + " is over the CUDA kernels' " +
                     std::to_string(attention::kMaxHeadDim));
  attention::AttentionF32 a;
  a.B = static_cast<int>(q.dim(0)), a.T = static_cast<int>(q.dim(1)), a.H = static_cast<int>(q.dim(2));
  a.G = static_cast<int>(k.dim(2)), a.D = static_cast<int>(q.dim(3));
  a.causal = causal;
  a.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(a.D)));
  return a;
}

void* stream() { return static_cast<void*>(cuda::compute_stream()); }

}  // namespace

void flash_attention_forward_cuda(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, Tensor& out,
                                  Tensor& lse) {
  attention::AttentionF32 a = problem(q, k, causal, "flash_attention_forward");
  const Tensor q32 = widened(q), k32 = widened(k), v32 = widened(v);
  Tensor out32 = fp32_target(out);
  a.q = q32.data<float>(), a.k = k32.data<float>(), a.v = v32.data<float>();
  a.out = out32.data<float>(), a.lse = lse.data<float>();
  attention::flash_forward(a, stream());
  round_into(out32, out);
}

void flash_attention_backward_cuda(const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v,
                                   const Tensor& out, const Tensor& lse, bool causal, Tensor& dq, Tensor& dk,
                                   Tensor& dv) {
  attention::AttentionBackwardF32 g;
  g.f = problem(q, k, causal, "flash_attention_backward");
  const Tensor q32 = widened(q), k32 = widened(k), v32 = widened(v), out32 = widened(out), dout32 = widened(dout);
  Tensor dq32 = fp32_target(dq), dk32 = fp32_target(dk), dv32 = fp32_target(dv);
  Tensor delta = Tensor::empty(lse.shape(), DType::f32, MemCategory::Temporary, lse.device());
  g.f.q = q32.data<float>(), g.f.k = k32.data<float>(), g.f.v = v32.data<float>();
  g.f.out = const_cast<float*>(out32.data<float>()), g.f.lse = const_cast<float*>(lse.data<float>());  // read only
  g.dout = dout32.data<float>(), g.delta = delta.data<float>();
  g.dq = dq32.data<float>(), g.dk = dk32.data<float>(), g.dv = dv32.data<float>();
  attention::flash_backward(g, stream());
  round_into(dq32, dq);
  round_into(dk32, dk);
  round_into(dv32, dv);
}

#else

void flash_attention_forward_cuda(const Tensor&, const Tensor&, const Tensor&, bool, Tensor&, Tensor&) {
  throw Error("flash_attention_forward: CUDA tensors need a CUDA build");
}
void flash_attention_backward_cuda(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                   const Tensor&, bool, Tensor&, Tensor&, Tensor&) {
  throw Error("flash_attention_backward: CUDA tensors need a CUDA build");
}

#endif

}  // namespace usp::ch12
