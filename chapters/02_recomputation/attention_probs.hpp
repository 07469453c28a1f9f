// Exercise 02.1: the attention probabilities that selective recomputation drops and rebuilds.
//
// Chapter 02's model (measure_mode) makes every attention probability with this function: in
// each layer's forward, and, under Recompute::selective, again in backward from the q and k the
// layer kept. The chapter's memory, FLOPs and bit-for-bit gradient comparison therefore measure
// your code, and the three modes agree only if the rebuild reproduces the forward exactly.
//
// Contract
//   q      [B, T, H, D]  queries after RoPE, f32 or bf16 (read them with q.to_floats())
//   k      [B, T, G, D]  keys after RoPE, same dtype; G divides H, query head j reads kv head
//                        j / (H / G) (grouped-query attention)
//   probs  [B, H, T, T]  f32, allocated by the caller; on return, for every b, j and query
//                        position t: row probs[b, j, t, :] is the softmax over s <= t of
//                        (q[b, t, j, :] · k[b, s, j / (H/G), :]) / √D, and exactly 0 for s > t
//                        (causal mask). Each row sums to 1 (to rounding).
//   Deterministic: the same q and k give the same bits every time. Throws usp::Error (not an
//   assertion) when the shapes do not fit together.
#pragma once

#include "common/tensor.hpp"

namespace usp::ch02 {

void attention_probs(const Tensor& q, const Tensor& k, Tensor& probs);

}  // namespace usp::ch02
