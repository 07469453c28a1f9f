// Exercise 12.2, the reference solution: one (query tile, key tile) pair of the backward, as five
// small matrix products around two elementwise steps (FlashAttention-2's inner loop).
#include <cmath>

#include "chapters/12_flash_attention/flash_tiles.hpp"
#include "common/ops/gemm.hpp"

namespace usp::ch12 {

void tile_backward(const TileBackwardIn& in, const TileBackwardOut& out) {
  using ops::detail::sgemm;
  const int r = in.rows, c = in.cols, d = in.d;
  sgemm(false, true, r, c, d, in.scale, in.q, d, in.k, d, 0.0f, in.p, c);     // s = q·kᵀ·scale
  sgemm(false, true, r, c, d, 1.0f, in.dout, d, in.v, d, 0.0f, in.dp, c);     // dp = dout·vᵀ
  for (int i = 0; i < r; ++i)
    for (int j = 0; j < c; ++j) {
      const std::int64_t ij = static_cast<std::int64_t>(i) * c + j;
      const bool masked = in.causal && in.k0 + j > in.q0 + i;
      in.p[ij] = masked ? 0.0f : std::exp(in.p[ij] - in.lse[i]);  // the forward's probability, recomputed
      in.dp[ij] = in.p[ij] * (in.dp[ij] - in.delta[i]);           // ds
    }
  sgemm(true, false, c, d, r, 1.0f, in.p, c, in.dout, d, 1.0f, out.dv, d);       // dv += pᵀ·dout
  sgemm(false, false, r, d, c, in.scale, in.dp, c, in.k, d, 1.0f, out.dq, d);    // dq += ds·k·scale
  sgemm(true, false, c, d, r, in.scale, in.dp, c, in.q, d, 1.0f, out.dk, d);     // dk += dsᵀ·q·scale
}

}  // namespace usp::ch12
