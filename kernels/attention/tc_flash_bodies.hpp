// Rung 05, FlashAttention-2's forward on tensor cores, bf16 in, fp32 out: the loop of rung 03 with
// its two products, S = q·kᵀ and out += P·v, done by mma.sync m16n8k16 (kernels/tensor_core).
// Block: 4 warps = 128 threads per (batch, head, tile of 64 queries); warp w owns queries
// [16w, 16w + 16) of the tile ("split along Q": no warp needs another's partial results).
//   shared Qs, Ks, Vs [64, D + 8] bf16 — the +8 shifts consecutive rows by 4 banks
//   per lane: the warp's q as A fragments aq[D/16][4] (loaded once), the tile's scores
//   s[8][4] (a 16×64 C tile), the output accumulator o[D/8][4] (a 16×D C tile), and m, l for
//   the two rows it holds values of (grp and grp + 8)
// For each key tile: S = Σ over D/16 k-steps of mma(aq, K fragment); mask and scale; each row's
// tile max over the lane's 16 values and then over the 4 lanes that share the row (two xor
// shuffles); rescale o and l by exp(m - m'), p = exp(s - m'); then out += P·V where P's A
// fragments ARE the s registers (C's layout for keys 16ks.. equals A's for k-step ks: the values
// of n-tiles 2ks and 2ks+1, rounded to bf16 in pairs) — P never touches shared memory.
// l stays a per-lane partial sum until the end (the 4 lanes of a row rescale by the same factor),
// then one quad reduction, out = o / l, lse = m + log l.
// D ∈ {64, 128}. The body is a template over the lane operations (DeviceLane on the GPU, the
// CPU's thread-per-lane HostLane in the tests), so the kernel's own code runs in both.
#pragma once
#include <cmath>
#include <cstdint>

#include "kernels/attention/attention_problem.hpp"
#include "kernels/tensor_core/m16n8k16.hpp"

namespace usp::attention {

struct AttentionBf16 {
  AttentionF32 f;                    // shape, causal, scale, out [B, T, H, D] and lse [B, H, T]; f.q/k/v unused
  const std::uint16_t* q = nullptr;  // [B, T, H, D] bf16 bits
  const std::uint16_t* k = nullptr;  // [B, T, G, D]
  const std::uint16_t* v = nullptr;  // [B, T, G, D]
};

inline constexpr int kTcWarps = 4, kTcThreads = 32 * kTcWarps;
inline constexpr int kTcRows = mma::kM * kTcWarps;  // 64 queries per block
inline constexpr int kTcCols = 64;                  // keys per shared tile
template <int D>
inline constexpr int kTcPitch = D + 8;
template <int D>
inline constexpr int kTcSharedElems = 3 * kTcRows* kTcPitch<D>;  // Qs, Ks, Vs (kTcRows == kTcCols)
static_assert(kTcRows == kTcCols, "Qs, Ks and Vs share one shape");

// Thread t's share of copying rows [r0, r0 + 64) of a bf16 matrix whose row r starts at
// src + r·stride into dst [64, D + 8]; rows at or past T become zeros. 8 bf16 (16 bytes) at a time.
template <int D>
USP_HD void tc_load_tile(const std::uint16_t* src, std::int64_t stride, int r0, int T, int t, std::uint16_t* dst) {
  constexpr int kChunks = D / 8;
  for (int c = t; c < kTcRows * kChunks; c += kTcThreads) {
    const int r = c / kChunks, e = (c % kChunks) * 8;
    std::uint16_t* d = dst + r * kTcPitch<D> + e;
    const std::uint16_t* s = src + (r0 + r) * stride + e;
#if defined(__CUDA_ARCH__)
    *reinterpret_cast<uint4*>(d) = r0 + r < T ? *reinterpret_cast<const uint4*>(s) : make_uint4(0, 0, 0, 0);
#else
    for (int x = 0; x < 8; ++x) d[x] = r0 + r < T ? s[x] : std::uint16_t{0};
#endif
  }
}

template <int D, class Lane>
USP_LANE_BODY void tc_forward_block(const AttentionBf16& a, int tile, int h, int b, int t, std::uint16_t* smem,
                                    Lane& lane) {
  using namespace mma;
  constexpr int P = kTcPitch<D>, KSTEPS = D / kK, DTILES = D / kN, NTILES = kTcCols / kN;
  const AttentionF32& f = a.f;
  std::uint16_t* Qs = smem;
  std::uint16_t* Ks = smem + kTcRows * P;
  std::uint16_t* Vs = Ks + kTcCols * P;
  const int warp = t / 32, ln = t % 32, g = h / (f.H / f.G), i0 = tile * kTcRows, w0 = warp * kM;

  tc_load_tile<D>(a.q + q_offset(f, b, 0, h), static_cast<std::int64_t>(f.H) * D, i0, f.T, t, Qs);
  lane.sync_block();
  std::uint32_t aq[KSTEPS][4];
  USP_UNROLL
  for (int ks = 0; ks < KSTEPS; ++ks) {
    USP_UNROLL
    for (int r = 0; r < 4; ++r) {
      const std::uint16_t* row = Qs + (w0 + a_row(ln, r)) * P + ks * kK;
      aq[ks][r] = pack(row[a_col(ln, r, 0)], row[a_col(ln, r, 1)]);
    }
  }

  float o[DTILES][4] = {};
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0, 0};  // rows w0 + grp and w0 + grp + 8
  const int k_end = f.causal ? (f.T < i0 + kTcRows ? f.T : i0 + kTcRows) : f.T;
  for (int j0 = 0; j0 < k_end; j0 += kTcCols) {
    const std::int64_t kv_stride = static_cast<std::int64_t>(f.G) * D;
    tc_load_tile<D>(a.k + kv_offset(f, b, 0, g), kv_stride, j0, f.T, t, Ks);
    tc_load_tile<D>(a.v + kv_offset(f, b, 0, g), kv_stride, j0, f.T, t, Vs);
    lane.sync_block();

    float s[NTILES][4] = {};  // S = q·kᵀ: B(k = e, n = key) = Ks[key][e]
    USP_UNROLL
    for (int nt = 0; nt < NTILES; ++nt) {
      USP_UNROLL
      for (int ks = 0; ks < KSTEPS; ++ks) {
        const std::uint16_t* key = Ks + (nt * kN + b_n(ln)) * P + ks * kK;
        const std::uint32_t bk[2] = {pack(key[b_k(ln, 0, 0)], key[b_k(ln, 0, 1)]),
                                     pack(key[b_k(ln, 1, 0)], key[b_k(ln, 1, 1)])};
        lane.mma(s[nt], aq[ks], bk);
      }
    }

    float tile_max[2] = {-INFINITY, -INFINITY};
    USP_UNROLL
    for (int nt = 0; nt < NTILES; ++nt) {
      USP_UNROLL
      for (int x = 0; x < 4; ++x) {
        const int i = i0 + w0 + c_row(ln, x), j = j0 + nt * kN + c_col(ln, x);
        s[nt][x] = j < f.T && visible(f, i, j) ? s[nt][x] * f.scale : -INFINITY;
        tile_max[x / 2] = fmaxf(tile_max[x / 2], s[nt][x]);
      }
    }
    float rescale[2];
    USP_UNROLL
    for (int r = 0; r < 2; ++r) {
      tile_max[r] = fmaxf(tile_max[r], lane.shfl_xor(tile_max[r], 1));  // the 4 lanes of a row: tg = 0..3
      tile_max[r] = fmaxf(tile_max[r], lane.shfl_xor(tile_max[r], 2));
      const float m_new = fmaxf(m[r], tile_max[r]);
      rescale[r] = m_new == -INFINITY ? 1.0f : expf(m[r] - m_new);
      m[r] = m_new;
      l[r] *= rescale[r];
    }
    USP_UNROLL
    for (int dt = 0; dt < DTILES; ++dt) {
      USP_UNROLL
      for (int x = 0; x < 4; ++x) o[dt][x] *= rescale[x / 2];
    }
    USP_UNROLL
    for (int nt = 0; nt < NTILES; ++nt) {
      USP_UNROLL
      for (int x = 0; x < 4; ++x) {
        s[nt][x] = s[nt][x] == -INFINITY ? 0.0f : expf(s[nt][x] - m[x / 2]);
        l[x / 2] += s[nt][x];
      }
    }

    USP_UNROLL
    for (int ks = 0; ks < NTILES / 2; ++ks) {  // out += P·V: B(k = key, n = e) = Vs[key][e]
      const std::uint32_t ap[4] = {pack_floats(s[2 * ks][0], s[2 * ks][1]), pack_floats(s[2 * ks][2], s[2 * ks][3]),
                                   pack_floats(s[2 * ks + 1][0], s[2 * ks + 1][1]),
                                   pack_floats(s[2 * ks + 1][2], s[2 * ks + 1][3])};
      USP_UNROLL
      for (int dt = 0; dt < DTILES; ++dt) {
        const std::uint16_t* vcol = Vs + ks * kK * P + dt * kN + b_n(ln);
        const std::uint32_t bv[2] = {pack(vcol[b_k(ln, 0, 0) * P], vcol[b_k(ln, 0, 1) * P]),
                                     pack(vcol[b_k(ln, 1, 0) * P], vcol[b_k(ln, 1, 1) * P])};
        lane.mma(o[dt], ap, bv);
      }
    }
    lane.sync_block();  // before the next tile overwrites Ks, Vs
  }

  USP_UNROLL
  for (int r = 0; r < 2; ++r) {
    l[r] += lane.shfl_xor(l[r], 1);
    l[r] += lane.shfl_xor(l[r], 2);
  }
  USP_UNROLL
  for (int dt = 0; dt < DTILES; ++dt) {
    USP_UNROLL
    for (int x = 0; x < 4; ++x) {
      const int i = i0 + w0 + c_row(ln, x);
      if (i < f.T) f.out[q_offset(f, b, i, h) + dt * kN + c_col(ln, x)] = o[dt][x] / l[x / 2];
    }
  }
  if (ln % 4 == 0)
    for (int r = 0; r < 2; ++r) {
      const int i = i0 + w0 + ln / 4 + 8 * r;
      if (i < f.T) f.lse[row_offset(f, b, h, i)] = m[r] + logf(l[r]);
    }
}

}  // namespace usp::attention
