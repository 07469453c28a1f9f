// Exercise 14.2, the reference: a pass over each tile for its amax, a second to scale and cast.
#include <algorithm>
#include <cmath>

#include "chapters/14_mixed_precision/fp8_tiles.hpp"
#include "common/error.hpp"
#include "common/float_formats.hpp"

namespace usp::ch14 {

void quantize_tiles(const float* x, const TileGrid& g, DType format, std::uint8_t* q, float* scales) {
  USP_CHECK(format == DType::e4m3 || format == DType::e5m2, "quantize_tiles: format must be e4m3 or e5m2");
  const float max_finite = format_info(format).max_finite;
  for (std::int64_t ti = 0; ti < g.tiles_down(); ++ti)
    for (std::int64_t tj = 0; tj < g.tiles_across(); ++tj) {
      const std::int64_t r0 = ti * g.tile_rows, r1 = std::min(r0 + g.tile_rows, g.rows);
      const std::int64_t c0 = tj * g.tile_cols, c1 = std::min(c0 + g.tile_cols, g.cols);
      float amax = 0.0f;
      for (std::int64_t r = r0; r < r1; ++r)
        for (std::int64_t c = c0; c < c1; ++c) amax = std::max(amax, std::fabs(x[r * g.cols + c]));
      const float s = amax > 0.0f ? amax / max_finite : 1.0f;
      scales[ti * g.tiles_across() + tj] = s;
      for (std::int64_t r = r0; r < r1; ++r)
        for (std::int64_t c = c0; c < c1; ++c) {
          const float v = x[r * g.cols + c] / s;
          q[r * g.cols + c] = format == DType::e4m3 ? float_to_e4m3(v) : float_to_e5m2(v);
        }
    }
}

}  // namespace usp::ch14
