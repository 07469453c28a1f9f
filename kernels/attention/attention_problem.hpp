// One attention problem as every rung of the attention ladder receives it (chapter 12):
//   q   [B, T, H, D] fp32, k, v [B, T, G, D] fp32 (query head h reads kv head h / (H/G))
//   out [B, T, H, D] fp32, lse [B, H, T] fp32 (log Σ_j exp(s_ij), what the backward keeps)
//   s_ij = q_i · k_j · scale, scale = 1/√D; causal: key j visible to query i iff j <= i.
// Pointers are device pointers for the kernels and host pointers for the CPU emulation. No CUDA
// in this header.
#pragma once
#include <cstdint>

#include "common/hostdevice.hpp"

namespace usp::attention {

inline constexpr int kMaxHeadDim = 128;  // the rungs keep a query row and its accumulator in registers

struct AttentionF32 {
  int B = 0, T = 0, H = 0, G = 0, D = 0;
  bool causal = true;
  float scale = 1;
  const float* q = nullptr;
  const float* k = nullptr;
  const float* v = nullptr;
  float* out = nullptr;
  float* lse = nullptr;
};

// Element offsets of row i of head h (query layout) and of kv head g (key layout), batch b.
USP_HD std::int64_t q_offset(const AttentionF32& a, int b, int i, int h) {
  return ((static_cast<std::int64_t>(b) * a.T + i) * a.H + h) * a.D;
}
USP_HD std::int64_t kv_offset(const AttentionF32& a, int b, int j, int g) {
  return ((static_cast<std::int64_t>(b) * a.T + j) * a.G + g) * a.D;
}
// Offset of query row i of head h in the [B, H, T] per-row arrays (lse, the backward's delta).
USP_HD std::int64_t row_offset(const AttentionF32& a, int b, int h, int i) {
  return (static_cast<std::int64_t>(b) * a.H + h) * a.T + i;
}
// Elements of q (and out, dq) and of k (and v, dk, dv).
USP_HD std::int64_t q_numel(const AttentionF32& a) { return static_cast<std::int64_t>(a.B) * a.T * a.H * a.D; }
USP_HD std::int64_t kv_numel(const AttentionF32& a) { return static_cast<std::int64_t>(a.B) * a.T * a.G * a.D; }
USP_HD bool visible(const AttentionF32& a, int i, int j) { return !a.causal || j <= i; }

}  // namespace usp::attention
