// Exercise 12.2, the reference solution: one (query tile, key tile) pair of the backward.
#include <cmath>
#include <vector>

#include "chapters/12_flash_attention/flash_tiles.hpp"

namespace usp::ch12 {

void tile_backward(const TileBackwardIn& in, const TileBackwardOut& out) {
  const int d = in.d;
  for (int i = 0; i < in.rows; ++i) {
    const float* qi = in.q + static_cast<std::int64_t>(i) * d;
    const float* doi = in.dout + static_cast<std::int64_t>(i) * d;
    float* dqi = out.dq + static_cast<std::int64_t>(i) * d;
    for (int j = 0; j < in.cols; ++j) {
      if (in.causal && in.k0 + j > in.q0 + i) break;  // this key and the rest of the tile are masked
      const float* kj = in.k + static_cast<std::int64_t>(j) * d;
      const float* vj = in.v + static_cast<std::int64_t>(j) * d;
      float s = 0, dp = 0;
      for (int e = 0; e < d; ++e) {
        s += qi[e] * kj[e];
        dp += doi[e] * vj[e];
      }
      const float p = std::exp(s * in.scale - in.lse[i]);  // the forward's probability, recomputed
      const float ds = p * (dp - in.delta[i]);
      float* dkj = out.dk + static_cast<std::int64_t>(j) * d;
      float* dvj = out.dv + static_cast<std::int64_t>(j) * d;
      for (int e = 0; e < d; ++e) {
        dvj[e] += p * doi[e];
        dqi[e] += in.scale * ds * kj[e];
        dkj[e] += in.scale * ds * qi[e];
      }
    }
  }
}

}  // namespace usp::ch12
