#include "chapters/12_flash_attention/flash_model_attention.hpp"

namespace usp::ch12 {

const Tensor& FlashModelAttention::positions(std::int64_t) const { return whole_sequence_; }

void FlashModelAttention::attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, Tensor& out,
                                            Tensor& saved) {
  saved = Tensor::empty({q.dim(0), q.dim(2), q.dim(1)}, DType::f32, MemCategory::Activation, q.device());  // lse [B, H, T]
  flash_attention_forward(q, k, v, /*causal=*/true, tiles_, out, saved);
}

void FlashModelAttention::attention_backward(const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v,
                                             const Tensor& out, const Tensor& saved, Tensor& dq, Tensor& dk,
                                             Tensor& dv) {
  flash_attention_backward(dout, q, k, v, out, saved, /*causal=*/true, tiles_, dq, dk, dv);
}

}  // namespace usp::ch12
