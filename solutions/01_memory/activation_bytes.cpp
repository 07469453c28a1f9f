// Exercise 01.1, the reference solution: the bytes one decoder layer keeps, op by op, for every
// recomputation mode, and the head's.
#include "chapters/01_memory/activation_bytes.hpp"

#include <string>

#include "common/error.hpp"

namespace usp::ch01 {

namespace {

// fn: the function's name, which every message starts with.
void check_inputs(const std::string& fn, std::int64_t b, std::int64_t s, DType activation) {
  if (b < 1 || s < 1)
    throw UsageError(fn + ": b and s must be >= 1, got b = " + std::to_string(b) + ", s = " + std::to_string(s));
  if (activation != DType::f32 && activation != DType::bf16 && activation != DType::f16)
    throw UsageError(fn + ": activations are f32, bf16 or f16, not " + dtype_name(activation));
}

constexpr std::int64_t kFp32 = 4;  // the norms' 1/rms is kept in fp32 whatever the activations are

}  // namespace

std::int64_t layer_activation_bytes(const ModelConfig& c, std::int64_t b, std::int64_t s, DType activation,
                                    Recompute recompute) {
  check_inputs("layer_activation_bytes", b, s, activation);
  if (c.is_moe())
    throw UsageError("layer_activation_bytes: " + c.name +
                     " is a mixture of experts; its layers keep what the routing decides");
  const std::int64_t tokens = b * s;
  const std::int64_t es = static_cast<std::int64_t>(dtype_size(activation));  // bytes per activation element
  const std::int64_t h = c.hidden, a = c.heads, d = c.head_dim(), g = c.kv_heads, f = c.ffn;
  const std::int64_t fp32 = kFp32;

  // Full recomputation: backward reruns the layer's forward from its input x, the residual stream.
  const std::int64_t input = tokens * h * es;
  if (recompute == Recompute::full) return input;

  std::int64_t bytes = input;
  // input RMSNorm: its backward reads x (above) and 1/rms; its output h1 is the projections' input
  bytes += tokens * h * es + tokens * fp32;
  // q, k, v projections read h1; attention's backward reads q and k after RoPE (a·d and g·d), and v
  bytes += tokens * (a * d + 2 * g * d) * es;
  // attention's softmax backward reads its probabilities, one s×s matrix per head per sample:
  // what selective recomputation drops (it rebuilds them from q and k)
  if (recompute == Recompute::none) bytes += b * a * s * s * es;
  // o_proj reads its input, the attention output (a·d)
  bytes += tokens * (a * d) * es;
  // residual + post-attention RMSNorm: x2 (the norm's input), h2 (the MLP's input), 1/rms in fp32
  bytes += tokens * (h + h) * es + tokens * fp32;
  // SwiGLU MLP: gate and up (f each) for silu's and the product's backward, and z = silu(gate)·up,
  // the down_proj input
  bytes += tokens * (3 * f) * es;
  return bytes;
}

std::int64_t head_activation_bytes(const ModelConfig& c, std::int64_t b, std::int64_t s, DType activation) {
  check_inputs("head_activation_bytes", b, s, activation);
  const std::int64_t tokens = b * s, es = static_cast<std::int64_t>(dtype_size(activation));
  // final RMSNorm: its input (the last layer's output), its output (lm_head's input), 1/rms in fp32
  std::int64_t bytes = tokens * 2 * c.hidden * es + tokens * kFp32;
  // the loss's backward reads the logits, one row of the vocabulary per token (on one device the
  // loss keeps nothing else: its backward recomputes the softmax from the logits)
  bytes += tokens * c.vocab * es;
  return bytes;
}

}  // namespace usp::ch01
