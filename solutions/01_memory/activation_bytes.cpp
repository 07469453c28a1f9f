// Solution 01.1: the bytes one decoder layer keeps, op by op (Recompute::none).
#include "chapters/01_memory/activation_bytes.hpp"

namespace usp::ch01 {

std::int64_t layer_activation_bytes(const ModelConfig& c, std::int64_t b, std::int64_t s, DType activation) {
  const std::int64_t tokens = b * s;
  const std::int64_t es = static_cast<std::int64_t>(dtype_size(activation));  // bytes per activation element
  const std::int64_t h = c.hidden, a = c.heads, d = c.head_dim(), g = c.kv_heads, f = c.ffn;
  const std::int64_t fp32 = 4;

  std::int64_t bytes = 0;
  // input RMSNorm: its input x (the residual stream) and output h1, plus 1/rms per token in fp32
  bytes += tokens * (h + h) * es + tokens * fp32;
  // q, k, v projections: the input h1 is already counted; keep q (a·d) and k, v (g·d each) after RoPE
  bytes += tokens * (a * d + 2 * g * d) * es;
  // attention: the softmax probabilities, one s×s matrix per head per sample
  bytes += b * a * s * s * es;
  // o_proj: its input, the attention output (a·d)
  bytes += tokens * (a * d) * es;
  // residual + post-attention RMSNorm: x2 (the norm's input) and h2, plus 1/rms in fp32
  bytes += tokens * (h + h) * es + tokens * fp32;
  // SwiGLU MLP: gate g and up u (f each) for silu's backward, and z = silu(g)·u, the down_proj input
  bytes += tokens * (3 * f) * es;
  return bytes;
}

}  // namespace usp::ch01
