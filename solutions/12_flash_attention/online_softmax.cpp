// Exercise 12.1, the reference solution: one query tile's forward over every key tile, with the
// online softmax (the contract: chapters/12_flash_attention/flash_tiles.hpp).
#include <algorithm>
#include <cmath>
#include <limits>

#include "chapters/12_flash_attention/flash_tiles.hpp"
#include "common/ops/gemm.hpp"

namespace usp::ch12 {

void flash_query_tile(const QueryTileIn& in, float* out, float* lse) {
  constexpr float kNone = -std::numeric_limits<float>::infinity();
  const int rows = in.rows, d = in.d;
  // Per row, over the keys seen so far: m the largest score, l = Σ exp(s - m), and out (used as
  // the accumulator) = Σ exp(s - m) · v.
  std::fill_n(in.m, rows, kNone);
  std::fill_n(in.l, rows, 0.0f);
  std::fill_n(out, static_cast<std::int64_t>(rows) * d, 0.0f);
  for (int j0 = 0; j0 < in.keys; j0 += in.cols) {
    if (in.causal && in.k0 + j0 > in.q0 + rows - 1) break;  // this tile and every later one: all masked
    const int cols = std::min(in.cols, in.keys - j0);
    // s [rows, cols] = q · k_tileᵀ · scale, -inf where masked.
    ops::detail::sgemm(false, true, rows, cols, d, in.scale, in.q, d, in.k + j0 * in.ld, in.ld, 0.0f,
                       in.s, cols);
    for (int i = 0; i < rows; ++i) {
      float* si = in.s + static_cast<std::int64_t>(i) * cols;
      if (in.causal)
        for (int j = 0; j < cols; ++j)
          if (in.k0 + j0 + j > in.q0 + i) si[j] = kNone;
      float tile_max = kNone;
      for (int j = 0; j < cols; ++j) tile_max = std::fmax(tile_max, si[j]);
      const float m_new = std::fmax(in.m[i], tile_max);
      if (m_new == kNone) {  // nothing visible yet: this tile adds nothing to the row
        std::fill_n(si, cols, 0.0f);
        continue;
      }
      // What was summed under the old maximum, rescaled to the new one (0 when there was nothing).
      const float rescale = std::exp(in.m[i] - m_new);
      in.l[i] *= rescale;
      for (int e = 0; e < d; ++e) out[static_cast<std::int64_t>(i) * d + e] *= rescale;
      for (int j = 0; j < cols; ++j) {
        si[j] = std::exp(si[j] - m_new);  // 0 for a masked key
        in.l[i] += si[j];
      }
      in.m[i] = m_new;
    }
    // out [rows, d] += p [rows, cols] · v_tile [cols, d]
    ops::detail::sgemm(false, false, rows, d, cols, 1.0f, in.s, cols, in.v + j0 * in.ld, in.ld, 1.0f,
                       out, d);
  }
  // The last tile seen: normalise; a row that saw nothing stays 0 with lse -inf.
  for (int i = 0; i < rows; ++i) {
    if (in.l[i] == 0.0f) {
      lse[i] = kNone;
      continue;
    }
    for (int e = 0; e < d; ++e) out[static_cast<std::int64_t>(i) * d + e] /= in.l[i];
    lse[i] = in.m[i] + std::log(in.l[i]);
  }
}

}  // namespace usp::ch12
