// KvCache: generation one token at a time without recomputing the past.
//
// A decoder predicts token t+1 from tokens 0..t. Done naively, producing n tokens runs the model
// over 1, 2, ..., n tokens: every layer recomputes the keys and values of every earlier token at
// every step, n²/2 token-passes in all. But a token's key and value depend only on the tokens up
// to it (causal attention), so they never change once computed: keep them, and each new token
// costs one token-pass plus an attention over the cached keys. That cache is what inference
// memory is made of: 2 (K and V) · L layers · T tokens · G kv heads · D · bytes per value, per
// sequence (bytes()); GQA's G < H is there to shrink it.
//
// The cache plugs into the model as its AttentionHook (attention_hook.hpp): chapter 07 splits
// a sequence over ranks, the cache splits it over time, and both give the model the same two
// things, each new token's position in the whole sequence (positions()) and an attention over
// keys it does not hold itself (attention_forward: this call's keys are appended to the layer's
// cache, then the queries attend over every cached key with ops::attention_block_forward, query
// at position p seeing keys at positions <= p). So Model::forward_logits runs unchanged:
//
//   KvCache cache(config, max_tokens, DType::f32, Device::cpu());
//   Model model(params, {.attention = &cache});
//   cache.begin(prompt_len); model.forward_logits(prompt);     // the prompt at once (prefill)
//   cache.begin(1);          model.forward_logits(next_token); // then one token per call
//
// Contract: one sequence (inputs [1, T]); begin(T) before every forward of T new tokens; the
// model calls attention_forward once per layer, in layer order, per forward (as Model does).
// Errors (UsageError): more tokens than max_tokens ("the KV cache holds at most N tokens"); a
// batch of more than one sequence. attention_backward throws: the cache is for inference only.
#pragma once
#include <cstdint>
#include <vector>

#include "common/model/config.hpp"
#include "common/model/attention_hook.hpp"
#include "common/tensor.hpp"

namespace usp {

class KvCache final : public AttentionHook {
 public:
  // K and V of every layer for up to max_tokens tokens, [max_tokens, G, D] each, in `dtype` (the
  // model's activation dtype) on `device`; MemCategory::Activation.
  KvCache(const ModelConfig& config, std::int64_t max_tokens, DType dtype, Device device);

  // The next forward brings `tokens` new tokens: positions length() .. length() + tokens - 1.
  void begin(std::int64_t tokens);
  std::int64_t length() const { return length_; }  // tokens cached in every layer
  std::int64_t max_tokens() const { return max_tokens_; }
  std::int64_t bytes() const;  // 2 · L · max_tokens · G · D · dtype size

  const Tensor& positions(std::int64_t tokens) const override;
  void attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, Tensor& out, Tensor& saved) override;
  void attention_backward(const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                          const Tensor& saved, Tensor& dq, Tensor& dk, Tensor& dv) override;

 private:
  std::int64_t layers_, max_tokens_, kv_heads_, head_dim_;
  std::vector<Tensor> k_, v_;  // [layer]: [max_tokens, G, D]
  Tensor all_positions_;       // [max_tokens] i32: 0, 1, 2, ... on the cache's device
  Tensor new_positions_;       // positions of the tokens of this forward (a view of all_positions_)
  std::int64_t length_ = 0, pending_ = 0;
  std::int64_t next_layer_ = 0;
};

}  // namespace usp
