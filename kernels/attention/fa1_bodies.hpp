// Rung 02, FlashAttention-1's forward (Dao et al. 2022, Algorithm 1): one thread block per
// (batch, head) walks the key/value tiles in its OUTER loop; for each tile (in shared memory) it
// visits every query tile that sees it, and each thread updates its query rows in global memory:
//   reads q_i, out_i, m_i, l_i from HBM, computes the tile's scores s_ij, their max m̃ and
//   p_ij = exp(s_ij - m̃), l̃ = Σ_j p_ij, then with m' = max(m_i, m̃):
//     l' = e^(m_i - m')·l_i + e^(m̃ - m')·l̃
//     out_i ← (e^(m_i - m')·l_i·out_i + e^(m̃ - m')·Σ_j p_ij v_j) / l'      (kept normalised)
//   and writes out_i, m_i ← m', l_i ← l' back.
// What FlashAttention-2 changed (rung 03): the query loop goes outside, so a row's m, l and
// accumulator stay in registers for the whole key loop (no HBM round trip per key tile), the
// division by l happens once at the end instead of on every tile, and the blocks split the
// sequence as well as (batch, head) — here only B·H blocks run, a few per SM at best.
// m lives in lse until the end (lse = m + log l); l in a [B, H, T] workspace.
// The kernel (02_fa1_forward.cu) and the CPU emulation call these same bodies.
#pragma once
#include <cmath>

#include "kernels/attention/flash_bodies.hpp"

namespace usp::attention {

// Before the first key tile: out_i = 0, m_i = -inf, l_i = 0.
USP_HD void fa1_init_row(const AttentionF32& a, int b, int h, int i, float* row_sum) {
  float* o = a.out + q_offset(a, b, i, h);
  for (int e = 0; e < a.D; ++e) o[e] = 0;
  a.lse[row_offset(a, b, h, i)] = -INFINITY;
  row_sum[row_offset(a, b, h, i)] = 0;
}

// Query row i against the keys [j0, j0 + nk) in Ks, Vs, through global memory as above.
USP_HD void fa1_row_tile_update(const AttentionF32& a, int b, int h, int i, const float* Ks, const float* Vs, int j0,
                                int nk, float* row_sum) {
  const float* q = a.q + q_offset(a, b, i, h);  // from HBM again for every key tile
  float p[kBlockCols], pv[kMaxHeadDim];
  float tile_max = -INFINITY;
  int n = 0;  // keys of the tile this row sees: a prefix of it
  for (; n < nk && visible(a, i, j0 + n); ++n) {
    float s = 0;
    for (int e = 0; e < a.D; ++e) s += q[e] * Ks[n * a.D + e];
    p[n] = s * a.scale;
    tile_max = fmaxf(tile_max, p[n]);
  }
  if (n == 0) return;
  float tile_sum = 0;
  for (int e = 0; e < a.D; ++e) pv[e] = 0;
  for (int j = 0; j < n; ++j) {
    p[j] = expf(p[j] - tile_max);
    tile_sum += p[j];
    for (int e = 0; e < a.D; ++e) pv[e] += p[j] * Vs[j * a.D + e];
  }
  const std::int64_t r = row_offset(a, b, h, i);
  const float m_old = a.lse[r], m_new = fmaxf(m_old, tile_max);
  const float w_old = row_sum[r] * expf(m_old - m_new);  // 0 on the row's first tile (l = 0, m = -inf)
  const float w_new = expf(tile_max - m_new);
  const float l_new = w_old + w_new * tile_sum;
  float* o = a.out + q_offset(a, b, i, h);
  for (int e = 0; e < a.D; ++e) o[e] = (w_old * o[e] + w_new * pv[e]) / l_new;
  a.lse[r] = m_new;
  row_sum[r] = l_new;
}

// After the last key tile: lse_i = m_i + log l_i (out is already normalised).
USP_HD void fa1_finish_row(const AttentionF32& a, int b, int h, int i, const float* row_sum) {
  const std::int64_t r = row_offset(a, b, h, i);
  a.lse[r] += logf(row_sum[r]);
}

// The first query tile that sees key tile j0: with causal masking, the one holding query j0.
USP_HD int fa1_first_query_tile(const AttentionF32& a, int j0) { return a.causal ? j0 / kBlockRows * kBlockRows : 0; }

}  // namespace usp::attention
