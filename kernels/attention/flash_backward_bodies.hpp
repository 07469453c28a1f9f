// Rung 04, FlashAttention-2's backward: a block per (key tile of kBlockCols keys, query head,
// batch), a thread per key. Each thread keeps its key's k, v and its dk, dv accumulators in
// registers; the block walks over the query tiles that see its keys, staging q, dout, lse and
// delta of kBlockRows queries in shared memory, and every thread recomputes its column of the
// tile's probabilities from the saved lse:
//   p = exp(q_i·k_j·scale - lse_i),  dv_j += p·dout_i,  ds = p·(dout_i·v_j - delta_i),
//   dk_j += scale·ds·q_i,  dq_i += scale·ds·k_j   (dq_i gathers every key's share: an atomic add)
// At the end dk, dv are added to the kv head's gradients (the H/G query heads of a group share
// them: atomic adds too). delta_i = Σ_e dout_ie·out_ie comes first, one thread per query row.
// The kernels (04_fa2_backward.cu) and the CPU emulation call these same bodies.
#pragma once
#include <cmath>

#include "kernels/attention/flash_bodies.hpp"

namespace usp::attention {

struct AttentionBackwardF32 {
  AttentionF32 f;               // q, k, v, out, lse as the forward left them (f.out, f.lse read only)
  const float* dout = nullptr;  // [B, T, H, D]
  float* delta = nullptr;       // [B, H, T] workspace
  float* dq = nullptr;          // [B, T, H, D]  (zeroed by the launcher, accumulated)
  float* dk = nullptr;          // [B, T, G, D]  (zeroed by the launcher, accumulated)
  float* dv = nullptr;          // [B, T, G, D]  (zeroed by the launcher, accumulated)
};

// An add that several threads may make to the same address: atomic on the device, plain on the
// host (the emulation runs one thread at a time).
USP_HD void accumulate(float* at, float value) {
#if defined(__CUDA_ARCH__)
  atomicAdd(at, value);
#else
  *at += value;
#endif
}

USP_HD void delta_row(const AttentionBackwardF32& g, int b, int h, int i) {
  const std::int64_t o = q_offset(g.f, b, i, h);
  float sum = 0;
  for (int e = 0; e < g.f.D; ++e) sum += g.dout[o + e] * g.f.out[o + e];
  g.delta[row_offset(g.f, b, h, i)] = sum;
}

// Thread t's share of a query tile's loads: rows t, t + kBlockCols, ... of q and dout for queries
// [i0, i0 + nq) of head h, and their lse and delta, into Qs, dOs [kBlockRows, D], Ls, Ds [kBlockRows].
USP_HD void load_q_tile(const AttentionBackwardF32& g, int b, int h, int i0, int nq, int t, float* Qs, float* dOs,
                        float* Ls, float* Ds) {
  const AttentionF32& a = g.f;
  for (int r = t; r < nq; r += kBlockCols) {
    const std::int64_t o = q_offset(a, b, i0 + r, h);
    for (int e = 0; e < a.D; ++e) {
      Qs[r * a.D + e] = a.q[o + e];
      dOs[r * a.D + e] = g.dout[o + e];
    }
    const std::int64_t row = row_offset(a, b, h, i0 + r);
    Ls[r] = a.lse[row];
    Ds[r] = g.delta[row];
  }
}

// Key j (k, v in registers) against the queries [i0, i0 + nq) staged in shared memory.
USP_HD void key_row_tile_backward(const AttentionBackwardF32& g, int b, int h, int j, const float* k, const float* v,
                                  const float* Qs, const float* dOs, const float* Ls, const float* Ds, int i0, int nq,
                                  float* dk, float* dv) {
  const AttentionF32& a = g.f;
  for (int r = 0; r < nq; ++r) {
    if (!visible(a, i0 + r, j)) continue;  // causal: queries before the key
    const float* qi = Qs + r * a.D;
    const float* doi = dOs + r * a.D;
    float s = 0, dp = 0;
    for (int e = 0; e < a.D; ++e) {
      s += qi[e] * k[e];
      dp += doi[e] * v[e];
    }
    const float p = expf(s * a.scale - Ls[r]);
    const float ds = p * (dp - Ds[r]);
    float* dqi = g.dq + q_offset(a, b, i0 + r, h);
    for (int e = 0; e < a.D; ++e) {
      dv[e] += p * doi[e];
      dk[e] += a.scale * ds * qi[e];
      accumulate(dqi + e, a.scale * ds * k[e]);
    }
  }
}

// The key's accumulated share, into the kv head's gradients.
USP_HD void write_key_grads(const AttentionBackwardF32& g, int b, int h, int j, const float* dk, const float* dv) {
  const std::int64_t o = kv_offset(g.f, b, j, h / (g.f.H / g.f.G));
  for (int e = 0; e < g.f.D; ++e) {
    accumulate(g.dk + o + e, dk[e]);
    accumulate(g.dv + o + e, dv[e]);
  }
}

}  // namespace usp::attention
