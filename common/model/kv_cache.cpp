#include "common/model/kv_cache.hpp"

#include <string>

#include "common/error.hpp"
#include "common/ops/ops.hpp"

namespace usp {

KvCache::KvCache(const ModelConfig& config, std::int64_t max_tokens, DType dtype, Device device)
    : layers_(config.layers), max_tokens_(max_tokens), kv_heads_(config.kv_heads), head_dim_(config.head_dim()) {
  if (max_tokens < 1 || max_tokens > config.max_seq)
    throw UsageError("the KV cache must hold 1 to max_position_embeddings = " + std::to_string(config.max_seq) +
                     " tokens, got " + std::to_string(max_tokens));
  for (std::int64_t l = 0; l < layers_; ++l) {
    k_.push_back(Tensor::empty({max_tokens, kv_heads_, head_dim_}, dtype, MemCategory::Activation, device));
    v_.push_back(Tensor::empty({max_tokens, kv_heads_, head_dim_}, dtype, MemCategory::Activation, device));
  }
  Tensor pos = Tensor::empty({max_tokens}, DType::i32, MemCategory::Activation);
  for (std::int64_t t = 0; t < max_tokens; ++t) pos.data<std::int32_t>()[t] = static_cast<std::int32_t>(t);
  all_positions_ = pos.to(device);
}

std::int64_t KvCache::bytes() const {
  return 2 * layers_ * max_tokens_ * kv_heads_ * head_dim_ * static_cast<std::int64_t>(dtype_size(k_[0].dtype()));
}

void KvCache::begin(std::int64_t tokens) {
  USP_CHECK(next_layer_ == 0 || next_layer_ == layers_, "KvCache::begin: the previous forward did not reach every layer");
  if (tokens < 1) throw UsageError("a forward through the KV cache needs at least one token, got " + std::to_string(tokens));
  if (length_ + tokens > max_tokens_)
    throw UsageError("the KV cache holds at most " + std::to_string(max_tokens_) + " tokens; " +
                     std::to_string(length_) + " cached + " + std::to_string(tokens) + " new would be " +
                     std::to_string(length_ + tokens));
  pending_ = tokens;
  next_layer_ = 0;
  new_positions_ = all_positions_.view(length_, {tokens});
}

const Tensor& KvCache::positions(std::int64_t tokens) const {
  USP_CHECK(tokens == pending_, "KvCache: a forward of " + std::to_string(tokens) + " tokens after begin(" +
                                    std::to_string(pending_) + ")");
  return new_positions_;
}

void KvCache::attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, Tensor& out, Tensor& saved) {
  const std::int64_t B = q.dim(0), T = q.dim(1), H = q.dim(2), D = q.dim(3), G = k.dim(2);
  if (B != 1) throw UsageError("the KV cache holds one sequence; got a batch of " + std::to_string(B));
  USP_CHECK(T == pending_ && next_layer_ < layers_ && G == kv_heads_ && D == head_dim_,
            "KvCache::attention_forward: call begin(T) before each forward, one call per layer");
  const std::int64_t row = kv_heads_ * head_dim_, upto = length_ + T;
  Tensor& kc = k_[static_cast<std::size_t>(next_layer_)];
  Tensor& vc = v_[static_cast<std::size_t>(next_layer_)];
  // Append this forward's keys and values at rows length_ .. upto - 1 ...
  kc.view(length_ * row, {T, G, D}).copy_from(k.reshape({T, G, D}));
  vc.view(length_ * row, {T, G, D}).copy_from(v.reshape({T, G, D}));
  // ... and let the new queries (positions length_ ..) attend over every cached key (0 .. upto - 1).
  const Tensor keys = kc.view(0, {1, upto, G, D}), values = vc.view(0, {1, upto, G, D});
  Tensor lse = Tensor::empty({1, H, T}, DType::f32, MemCategory::Temporary, q.device());
  ops::attention_block_forward(q, keys, values, new_positions_, all_positions_.view(0, {upto}), out, lse);
  saved = Tensor();
  if (++next_layer_ == layers_) {
    length_ = upto;
    pending_ = 0;
  }
}

void KvCache::attention_backward(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                 const Tensor&, Tensor&, Tensor&, Tensor&) {
  throw Error("KvCache is for generation: there is no backward through the cache");
}

}  // namespace usp
