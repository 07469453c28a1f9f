// Exercise 12.2, the reference solution: one key tile's whole backward over every query tile that
// sees it, from the saved log-sum-exp (the contract: chapters/12_flash_attention/flash_tiles.hpp).
// Per query tile: five small matrix products around one elementwise step (FlashAttention-2's
// inner loop).
#include <algorithm>
#include <cmath>

#include "chapters/12_flash_attention/flash_tiles.hpp"
#include "common/ops/gemm.hpp"

namespace usp::ch12 {

void key_tile_backward(const KeyTileBackwardIn& in, const KeyTileBackwardOut& out) {
  using ops::detail::sgemm;
  const int c = in.cols, d = in.d;
  std::fill_n(out.dk, static_cast<std::int64_t>(c) * d, 0.0f);
  std::fill_n(out.dv, static_cast<std::int64_t>(c) * d, 0.0f);
  // Causal: query i sees key k0 only from position k0 on; the rows before see none of this tile.
  const std::int64_t first = in.causal ? std::clamp<std::int64_t>(in.k0 - in.q0, 0, in.queries) : 0;
  for (std::int64_t i0 = first; i0 < in.queries; i0 += in.rows) {
    const int r = static_cast<int>(std::min<std::int64_t>(in.rows, in.queries - i0));
    const float* q = in.q + i0 * in.ld;
    const float* dout = in.dout + i0 * in.ld;
    // D_i = dout_i · out_i: the softmax's backward needs Σ_j p_ij·dp_ij over ALL keys of the row.
    for (int i = 0; i < r; ++i) {
      const float* o = in.out + (i0 + i) * in.ld;
      float sum = 0.0f;
      for (int e = 0; e < d; ++e) sum += dout[static_cast<std::int64_t>(i) * in.ld + e] * o[e];
      in.delta[i] = sum;
    }
    sgemm(false, true, r, c, d, in.scale, q, in.ld, in.k, d, 0.0f, in.p, c);  // s [r, c] = q·kᵀ·scale
    sgemm(false, true, r, c, d, 1.0f, dout, in.ld, in.v, d, 0.0f, in.dp, c);  // dp [r, c] = dout·vᵀ
    for (int i = 0; i < r; ++i)
      for (int j = 0; j < c; ++j) {
        const std::int64_t ij = static_cast<std::int64_t>(i) * c + j;
        const bool masked = in.causal && in.k0 + j > in.q0 + i0 + i;
        in.p[ij] = masked ? 0.0f : std::exp(in.p[ij] - in.lse[i0 + i]);  // the forward's p, recomputed
        in.dp[ij] = in.p[ij] * (in.dp[ij] - in.delta[i]);                 // ds = ∂L/∂s
      }
    sgemm(true, false, c, d, r, 1.0f, in.p, c, dout, in.ld, 1.0f, out.dv, d);                     // dv += pᵀ·dout
    sgemm(false, false, r, d, c, in.scale, in.dp, c, in.k, d, 1.0f, out.dq + i0 * in.ld, in.ld);  // dq += ds·k·scale
    sgemm(true, false, c, d, r, in.scale, in.dp, c, q, in.ld, 1.0f, out.dk, d);                   // dk += dsᵀ·q·scale
  }
}

}  // namespace usp::ch12
