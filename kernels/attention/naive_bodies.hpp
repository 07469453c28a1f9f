// Rung 01, naive attention: three kernels with S and P in global memory, [B, H, T, T] fp32.
//   scores   one thread per (b, h, i, j):  S_ij = q_i · k_j · scale, -inf where masked
//   softmax  one thread per (b, h, i):     the row's max and Σ exp, P_ij = exp(S_ij - lse_i) in place
//   output   one thread per (b, h, i, e):  out_ie = Σ_j P_ij · v_je
// Every element of S and P crosses HBM twice: the traffic flash attention removes. The bodies
// below are what one thread does; the kernels (01_naive.cu) and the CPU emulation
// (attention_emulation.hpp) call them over the same grid.
#pragma once
#include <cmath>

#include "kernels/attention/attention_problem.hpp"

namespace usp::attention {

// S / P element (b, h, i, j) at ((b·H + h)·T + i)·T + j.
USP_HD std::int64_t s_offset(const AttentionF32& a, int b, int h, int i) {
  return row_offset(a, b, h, i) * a.T;
}

USP_HD void naive_score(const AttentionF32& a, int b, int h, int i, int j, float* S) {
  float s = -INFINITY;
  if (visible(a, i, j)) {
    const float* qi = a.q + q_offset(a, b, i, h);
    const float* kj = a.k + kv_offset(a, b, j, h / (a.H / a.G));
    s = 0;
    for (int e = 0; e < a.D; ++e) s += qi[e] * kj[e];
    s *= a.scale;
  }
  S[s_offset(a, b, h, i) + j] = s;
}

USP_HD void naive_softmax_row(const AttentionF32& a, int b, int h, int i, float* S) {
  float* row = S + s_offset(a, b, h, i);
  float m = -INFINITY;
  for (int j = 0; j < a.T; ++j) m = fmaxf(m, row[j]);
  float l = 0;
  for (int j = 0; j < a.T; ++j) l += expf(row[j] - m);
  const float lse = m + logf(l);
  for (int j = 0; j < a.T; ++j) row[j] = expf(row[j] - lse);
  a.lse[row_offset(a, b, h, i)] = lse;
}

USP_HD void naive_output(const AttentionF32& a, int b, int h, int i, int e, const float* P) {
  const float* row = P + s_offset(a, b, h, i);
  const int g = h / (a.H / a.G);
  float acc = 0;
  for (int j = 0; j < a.T; ++j) acc += row[j] * a.v[kv_offset(a, b, j, g) + e];
  a.out[q_offset(a, b, i, h) + e] = acc;
}

}  // namespace usp::attention
