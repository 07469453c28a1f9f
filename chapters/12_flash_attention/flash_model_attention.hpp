// The model's attention as flash attention: plugged in through the decoder's AttentionHook
// interface (common/model/attention_hook.hpp) — the hook for an attention over the whole
// sequence that keeps no probabilities — with the whole sequence on this one device (positions
// 0..T-1, which the interface spells as an undefined tensor). The layer then saves the
// log-sum-exp [B, H, T] instead of the probabilities [B, H, T, T]: ModelOptions::attention
// = &flash turns it on, same losses. On the CPU it runs the tiled algorithm with the tiles given;
// on a GPU (the model's tensors on CUDA) the kernels of kernels/attention (flash_attention_cuda.hpp).
#pragma once
#include <cstdint>

#include "chapters/12_flash_attention/flash_attention.hpp"
#include "common/model/attention_hook.hpp"

namespace usp::ch12 {

class FlashModelAttention final : public AttentionHook {
 public:
  explicit FlashModelAttention(FlashTiles tiles = {}) : tiles_(tiles) {}

  const Tensor& positions(std::int64_t tokens) const override;
  void attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, Tensor& out, Tensor& saved) override;
  void attention_backward(const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                          const Tensor& saved, Tensor& dq, Tensor& dk, Tensor& dv) override;

 private:
  FlashTiles tiles_;
  Tensor whole_sequence_;  // undefined: positions 0..T-1
};

}  // namespace usp::ch12
