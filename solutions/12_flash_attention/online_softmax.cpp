// Exercise 12.1, the reference solution: the online softmax of one key tile.
#include <cmath>
#include <limits>

#include "chapters/12_flash_attention/flash_tiles.hpp"

namespace usp::ch12 {

void online_softmax_update(const float* s, const float* v, int rows, int cols, int d, float* m, float* l,
                           float* acc) {
  for (int i = 0; i < rows; ++i) {
    const float* si = s + static_cast<std::int64_t>(i) * cols;
    float tile_max = -std::numeric_limits<float>::infinity();
    for (int j = 0; j < cols; ++j) tile_max = std::fmax(tile_max, si[j]);
    const float m_new = std::fmax(m[i], tile_max);
    if (m_new == -std::numeric_limits<float>::infinity()) continue;  // nothing visible yet
    // What was summed under the old maximum, rescaled to the new one (0 when there was nothing).
    const float rescale = std::exp(m[i] - m_new);
    float* ai = acc + static_cast<std::int64_t>(i) * d;
    l[i] *= rescale;
    for (int e = 0; e < d; ++e) ai[e] *= rescale;
    for (int j = 0; j < cols; ++j) {
      const float p = std::exp(si[j] - m_new);  // 0 for a masked key
      if (p == 0.0f) continue;
      l[i] += p;
      const float* vj = v + static_cast<std::int64_t>(j) * d;
      for (int e = 0; e < d; ++e) ai[e] += p * vj[e];
    }
    m[i] = m_new;
  }
}

}  // namespace usp::ch12
