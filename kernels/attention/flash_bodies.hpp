// Rung 03, FlashAttention-2's forward: one thread block per (batch, head, tile of kBlockRows
// queries), one thread per query row. The block walks over tiles of kBlockCols keys: its threads
// load the tile of K and V into shared memory together (load_kv_tile), wait, and each folds the
// tile into its own row's online softmax (row_tile_update: the running max m, sum l and the
// unnormalised output acc in registers), wait again before the next tile overwrites the shared
// memory. S and P never leave the registers; HBM sees q, k, v once per query tile and out once.
// Causal: the block stops at the key tile that holds its last query's diagonal.
// The kernel (03_fa2_forward.cu) and the CPU emulation (attention_emulation.hpp) call these
// same bodies.
#pragma once
#include <cmath>

#include "kernels/attention/attention_problem.hpp"

namespace usp::attention {

inline constexpr int kBlockRows = 64;  // queries per block = threads per block
inline constexpr int kBlockCols = 64;  // keys per shared-memory tile

// Thread t's share of the tile's loads: rows t, t + kBlockRows, ... of K and V for keys
// [j0, j0 + nk) of kv head g, into Ks, Vs [kBlockCols, D].
USP_HD void load_kv_tile(const AttentionF32& a, int b, int g, int j0, int nk, int t, float* Ks, float* Vs) {
  for (int r = t; r < nk; r += kBlockRows) {
    const float* kr = a.k + kv_offset(a, b, j0 + r, g);
    const float* vr = a.v + kv_offset(a, b, j0 + r, g);
    for (int e = 0; e < a.D; ++e) {
      Ks[r * a.D + e] = kr[e];
      Vs[r * a.D + e] = vr[e];
    }
  }
}

// Query row i (its q in registers) against the keys [j0, j0 + nk) held in Ks, Vs.
USP_HD void row_tile_update(const AttentionF32& a, int i, const float* q, const float* Ks, const float* Vs, int j0,
                            int nk, float& m, float& l, float* acc) {
  for (int j = 0; j < nk; ++j) {
    if (!visible(a, i, j0 + j)) break;  // the rest of the tile is masked too
    float s = 0;
    for (int e = 0; e < a.D; ++e) s += q[e] * Ks[j * a.D + e];
    s *= a.scale;
    if (s > m) {  // a new maximum: what was summed under the old one shrinks by exp(m - s)
      const float rescale = expf(m - s);
      l *= rescale;
      for (int e = 0; e < a.D; ++e) acc[e] *= rescale;
      m = s;
    }
    const float p = expf(s - m);
    l += p;
    for (int e = 0; e < a.D; ++e) acc[e] += p * Vs[j * a.D + e];
  }
}

// The row's result: out = acc / l, lse = m + log l.
USP_HD void write_row(const AttentionF32& a, int b, int h, int i, float m, float l, const float* acc) {
  float* o = a.out + q_offset(a, b, i, h);
  for (int e = 0; e < a.D; ++e) o[e] = acc[e] / l;
  a.lse[row_offset(a, b, h, i)] = m + logf(l);
}

}  // namespace usp::attention
