// Rung 06, FlashAttention-2's backward on tensor cores: rung 04's loop (key tiles outside, query
// tiles inside, probabilities recomputed from the lse) with its five products done by mma.sync
// m16n8k16, bf16 operands and fp32 accumulation; q, k, v, dout bf16, out, lse fp32, and dq, dk, dv
// fp32. delta_i = Σ_e dout_ie·out_ie first (tc_delta_row, a thread per query row).
// Block: 4 warps per (batch, head, tile of 64 keys); warp w owns keys [16w, 16w + 16).
//   shared Ks, Vs [64, D + 8] (once), Qs, dOs [64, D + 8], Ls, Ds [64] (per query tile),
//          dSs [64 keys, 64 + 8 queries] bf16 (per query tile)
//   per lane: dK and dV accumulators for the warp's 16 keys, dk[D/8][4], dv[D/8][4] (C tiles)
// For each query tile that sees the keys, with the transposed tiles (rows = the warp's keys):
//   Sᵀ  = K_w·Qᵀ                   A = K_w rows from Ks, B(k = e, n = query) = Qs[query][e]
//   Pᵀ  = exp(Sᵀ·scale - lse)       masked to 0 (causal, past T)
//   dV += Pᵀ·dO                     A = Pᵀ from the registers (C layout = A layout), B = dOs
//   dPᵀ = V_w·dOᵀ                   A = V_w rows from Vs, B(k = e, n = query) = dOs[query][e]
//   dSᵀ = Pᵀ∘(dPᵀ - delta)
//   dK += dSᵀ·Q                     A = dSᵀ from the registers, B = Qs
//   dQ += dS·K  (scaled)            every warp's dSᵀ goes to dSs; then warp w takes queries
//                                   [16w, 16w + 16): A(query, key) = dSs[key][query], B = Ks;
//                                   added to dq in global memory (atomics: other key tiles' blocks)
// P and dS are rounded to bf16 for the products (FlashAttention-2's bf16 backward does the same).
// At the end scale·dK and dV are added to the kv head's gradients (atomics: the H/G query heads
// of a group share them). D ∈ {64, 128}. A template over the lane operations, like rung 05.
#pragma once
#include <cmath>
#include <cstdint>

#include "kernels/attention/tc_flash_bodies.hpp"

#if !defined(__CUDACC__)
#include <atomic>
#endif

namespace usp::attention {

struct AttentionBackwardBf16 {
  AttentionBf16 f;                      // q, k, v (bf16) and f.f.out, f.f.lse (fp32, read only)
  const std::uint16_t* dout = nullptr;  // [B, T, H, D] bf16
  float* delta = nullptr;               // [B, H, T] workspace
  float* dq = nullptr;                  // [B, T, H, D]  zeroed by the launcher, accumulated
  float* dk = nullptr;                  // [B, T, G, D]  zeroed by the launcher, accumulated
  float* dv = nullptr;                  // [B, T, G, D]  zeroed by the launcher, accumulated
};

inline constexpr int kTcBwdPitchS = kTcRows + 8;  // dSs row: 64 queries + padding
template <int D>
inline constexpr int kTcBwdSharedBytes =
    (4 * kTcRows * kTcPitch<D> + kTcCols * kTcBwdPitchS) * 2 + 2 * kTcRows * 4;  // bf16 tiles + Ls, Ds

// An add several threads may make to one address: atomic on the device and, since the CPU's
// emulation runs a block's threads at once, on the host too.
USP_HD void add_shared_total(float* at, float value) {
#if defined(__CUDA_ARCH__)
  atomicAdd(at, value);
#elif defined(__CUDACC__)
  *at += value;  // nvcc's host pass (C++17 there): no host code of a .cu file calls this
#else
  std::atomic_ref<float>(*at).fetch_add(value, std::memory_order_relaxed);
#endif
}

USP_HD void tc_delta_row(const AttentionBackwardBf16& g, int b, int h, int i) {
  const AttentionF32& a = g.f.f;
  const std::int64_t o = q_offset(a, b, i, h);
  float sum = 0;
  for (int e = 0; e < a.D; ++e) sum += bf16_to_float(g.dout[o + e]) * a.out[o + e];
  g.delta[row_offset(a, b, h, i)] = sum;
}

// A(row, k) fragments of a 16-row block of a [rows, D + 8] bf16 tile: rows r0.. , k-step ks.
template <int D>
USP_HD void tc_a_rows(const std::uint16_t* tile, int r0, int ks, int ln, std::uint32_t (&a)[4]) {
  for (int r = 0; r < 4; ++r) {
    const std::uint16_t* row = tile + (r0 + mma::a_row(ln, r)) * kTcPitch<D> + ks * mma::kK;
    a[r] = mma::pack(row[mma::a_col(ln, r, 0)], row[mma::a_col(ln, r, 1)]);
  }
}
// B(k = e, n = row) fragments from a [rows, D + 8] tile: n-tile nt (rows nt·8..), k-step ks.
template <int D>
USP_HD void tc_b_rows_by_e(const std::uint16_t* tile, int nt, int ks, int ln, std::uint32_t (&b)[2]) {
  const std::uint16_t* row = tile + (nt * mma::kN + mma::b_n(ln)) * kTcPitch<D> + ks * mma::kK;
  b[0] = mma::pack(row[mma::b_k(ln, 0, 0)], row[mma::b_k(ln, 0, 1)]);
  b[1] = mma::pack(row[mma::b_k(ln, 1, 0)], row[mma::b_k(ln, 1, 1)]);
}
// B(k = row, n = e) fragments from a [rows, pitch] tile: k-step ks over rows, n-tile dt over e.
USP_HD void tc_b_e_by_rows(const std::uint16_t* tile, int pitch, int ks, int dt, int ln, std::uint32_t (&b)[2]) {
  const std::uint16_t* col = tile + ks * mma::kK * pitch + dt * mma::kN + mma::b_n(ln);
  b[0] = mma::pack(col[mma::b_k(ln, 0, 0) * pitch], col[mma::b_k(ln, 0, 1) * pitch]);
  b[1] = mma::pack(col[mma::b_k(ln, 1, 0) * pitch], col[mma::b_k(ln, 1, 1) * pitch]);
}
// A fragments of k-step ks from C tiles c[2ks], c[2ks + 1] (C layout of 16 × 16 = A layout),
// rounded to bf16.
USP_HD void tc_a_from_c(const float (&c0)[4], const float (&c1)[4], std::uint32_t (&a)[4]) {
  a[0] = mma::pack_floats(c0[0], c0[1]);
  a[1] = mma::pack_floats(c0[2], c0[3]);
  a[2] = mma::pack_floats(c1[0], c1[1]);
  a[3] = mma::pack_floats(c1[2], c1[3]);
}

template <int D, class Lane>
USP_LANE_BODY void tc_backward_block(const AttentionBackwardBf16& g, int tile, int h, int b, int t,
                                     unsigned char* smem, Lane& lane) {
  using namespace mma;
  constexpr int P = kTcPitch<D>, KSTEPS = D / kK, DTILES = D / kN, NTILES = kTcRows / kN;
  const AttentionF32& f = g.f.f;
  std::uint16_t* Ks = reinterpret_cast<std::uint16_t*>(smem);
  std::uint16_t* Vs = Ks + kTcCols * P;
  std::uint16_t* Qs = Vs + kTcCols * P;
  std::uint16_t* dOs = Qs + kTcRows * P;
  std::uint16_t* dSs = dOs + kTcRows * P;  // [64 keys][64 + 8 queries]
  float* Ls = reinterpret_cast<float*>(dSs + kTcCols * kTcBwdPitchS);
  float* Ds = Ls + kTcRows;
  const int warp = t / 32, ln = t % 32, kvh = h / (f.H / f.G), j0 = tile * kTcCols, w0 = warp * kM;
  const std::int64_t kv_stride = static_cast<std::int64_t>(f.G) * D, q_stride = static_cast<std::int64_t>(f.H) * D;

  tc_load_tile<D>(g.f.k + kv_offset(f, b, 0, kvh), kv_stride, j0, f.T, t, Ks);
  tc_load_tile<D>(g.f.v + kv_offset(f, b, 0, kvh), kv_stride, j0, f.T, t, Vs);
  float dk[DTILES][4] = {}, dv[DTILES][4] = {};

  for (int i0 = f.causal ? j0 / kTcRows * kTcRows : 0; i0 < f.T; i0 += kTcRows) {
    tc_load_tile<D>(g.f.q + q_offset(f, b, 0, h), q_stride, i0, f.T, t, Qs);
    tc_load_tile<D>(g.dout + q_offset(f, b, 0, h), q_stride, i0, f.T, t, dOs);
    for (int r = t; r < kTcRows; r += kTcThreads) {
      const bool in = i0 + r < f.T;
      Ls[r] = in ? f.lse[row_offset(f, b, h, i0 + r)] : 0.0f;
      Ds[r] = in ? g.delta[row_offset(f, b, h, i0 + r)] : 0.0f;
    }
    lane.sync_block();

    // Sᵀ and dPᵀ for the warp's 16 keys against the tile's 64 queries.
    float s[NTILES][4] = {}, dp[NTILES][4] = {};
    USP_UNROLL
    for (int ks = 0; ks < KSTEPS; ++ks) {
      std::uint32_t ak[4], av[4];
      tc_a_rows<D>(Ks, w0, ks, ln, ak);
      tc_a_rows<D>(Vs, w0, ks, ln, av);
      USP_UNROLL
      for (int nt = 0; nt < NTILES; ++nt) {
        std::uint32_t bq[2], bo[2];
        tc_b_rows_by_e<D>(Qs, nt, ks, ln, bq);
        tc_b_rows_by_e<D>(dOs, nt, ks, ln, bo);
        lane.mma(s[nt], ak, bq);
        lane.mma(dp[nt], av, bo);
      }
    }
    // Pᵀ (in s) and dSᵀ (in dp); dSᵀ also to shared memory for dQ.
    USP_UNROLL
    for (int nt = 0; nt < NTILES; ++nt) {
      USP_UNROLL
      for (int x = 0; x < 4; ++x) {
        const int key = w0 + c_row(ln, x), query = nt * kN + c_col(ln, x);
        const int j = j0 + key, i = i0 + query;
        const bool seen = j < f.T && i < f.T && visible(f, i, j);
        s[nt][x] = seen ? expf(s[nt][x] * f.scale - Ls[query]) : 0.0f;
        dp[nt][x] = s[nt][x] * (dp[nt][x] - Ds[query]);
        dSs[key * kTcBwdPitchS + query] = pack_floats(dp[nt][x], 0.0f) & 0xffffu;
      }
    }
    // dV += Pᵀ·dO and dK += dSᵀ·Q over the tile's queries (k = query).
    USP_UNROLL
    for (int kq = 0; kq < NTILES / 2; ++kq) {
      std::uint32_t ap[4], ads[4];
      tc_a_from_c(s[2 * kq], s[2 * kq + 1], ap);
      tc_a_from_c(dp[2 * kq], dp[2 * kq + 1], ads);
      USP_UNROLL
      for (int dt = 0; dt < DTILES; ++dt) {
        std::uint32_t bo[2], bq[2];
        tc_b_e_by_rows(dOs, P, kq, dt, ln, bo);
        tc_b_e_by_rows(Qs, P, kq, dt, ln, bq);
        lane.mma(dv[dt], ap, bo);
        lane.mma(dk[dt], ads, bq);
      }
    }
    lane.sync_block();  // every warp's dSᵀ is in dSs

    // dQ for queries [w0, w0 + 16) of the tile: Σ over the 64 keys of dS(query, key)·K(key, e).
    {
      float dq[DTILES][4] = {};
      USP_UNROLL
      for (int kk = 0; kk < kTcCols / kK; ++kk) {
        std::uint32_t a[4];  // A(query, key) = dSs[key][query]
        for (int r = 0; r < 4; ++r) {
          const int query = w0 + a_row(ln, r), key = kk * kK + a_col(ln, r, 0);
          a[r] = pack(dSs[key * kTcBwdPitchS + query], dSs[(key + 1) * kTcBwdPitchS + query]);
        }
        USP_UNROLL
        for (int dt = 0; dt < DTILES; ++dt) {
          std::uint32_t bk[2];
          tc_b_e_by_rows(Ks, P, kk, dt, ln, bk);
          lane.mma(dq[dt], a, bk);
        }
      }
      USP_UNROLL
      for (int dt = 0; dt < DTILES; ++dt) {
        USP_UNROLL
        for (int x = 0; x < 4; ++x) {
          const int i = i0 + w0 + c_row(ln, x);
          if (i < f.T) add_shared_total(g.dq + q_offset(f, b, i, h) + dt * kN + c_col(ln, x), f.scale * dq[dt][x]);
        }
      }
    }
    lane.sync_block();  // before the next query tile overwrites Qs, dOs, Ls, Ds, dSs
  }

  USP_UNROLL
  for (int dt = 0; dt < DTILES; ++dt) {
    USP_UNROLL
    for (int x = 0; x < 4; ++x) {
      const int j = j0 + w0 + c_row(ln, x);
      if (j < f.T) {
        const std::int64_t o = kv_offset(f, b, j, kvh) + dt * kN + c_col(ln, x);
        add_shared_total(g.dk + o, f.scale * dk[dt][x]);
        add_shared_total(g.dv + o, dv[dt][x]);
      }
    }
  }
}

}  // namespace usp::attention
