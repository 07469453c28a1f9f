// Exercise 12.1, the reference solution: the online softmax of one key tile.
#include <cmath>
#include <limits>

#include "chapters/12_flash_attention/flash_tiles.hpp"
#include "common/ops/gemm.hpp"

namespace usp::ch12 {

void online_softmax_update(float* s, const float* v, int rows, int cols, int d, float* m, float* l, float* acc) {
  constexpr float kNone = -std::numeric_limits<float>::infinity();
  for (int i = 0; i < rows; ++i) {
    float* si = s + static_cast<std::int64_t>(i) * cols;
    float tile_max = kNone;
    for (int j = 0; j < cols; ++j) tile_max = std::fmax(tile_max, si[j]);
    const float m_new = std::fmax(m[i], tile_max);
    float* ai = acc + static_cast<std::int64_t>(i) * d;
    if (m_new == kNone) {  // nothing visible yet: the row contributes nothing
      for (int j = 0; j < cols; ++j) si[j] = 0;
      continue;
    }
    // What was summed under the old maximum, rescaled to the new one (0 when there was nothing).
    const float rescale = std::exp(m[i] - m_new);
    l[i] *= rescale;
    for (int e = 0; e < d; ++e) ai[e] *= rescale;
    for (int j = 0; j < cols; ++j) {
      si[j] = std::exp(si[j] - m_new);  // 0 for a masked key
      l[i] += si[j];
    }
    m[i] = m_new;
  }
  // acc [rows, d] += p [rows, cols] · v [cols, d]
  ops::detail::sgemm(false, false, rows, d, cols, 1.0f, s, cols, v, d, 1.0f, acc, d);
}

}  // namespace usp::ch12
