// Exercise 14.2, the reference: per tile, a first sweep for its amax (refusing a non-finite
// element), then a second to divide by the tile's scale and cast (the contract: fp8_tiles.hpp).
#include <algorithm>
#include <cmath>
#include <string>

#include "chapters/14_mixed_precision/fp8_tiles.hpp"
#include "common/error.hpp"
#include "common/float_formats.hpp"

namespace usp::ch14 {

void quantize_tiles(const float* x, const TileGrid& g, DType format, std::uint8_t* q, float* scales) {
  if (format != DType::e4m3 && format != DType::e5m2) throw Error("quantize_tiles: format must be e4m3 or e5m2");
  if (g.rows < 0 || g.cols < 0 || g.tile_rows < 1 || g.tile_cols < 1)
    throw Error("quantize_tiles: bad tile grid " + std::to_string(g.rows) + "×" + std::to_string(g.cols) +
                " in tiles of " + std::to_string(g.tile_rows) + "×" + std::to_string(g.tile_cols));
  const float max_finite = format_info(format).max_finite;
  for (std::int64_t ti = 0; ti < g.tiles_down(); ++ti)
    for (std::int64_t tj = 0; tj < g.tiles_across(); ++tj) {
      // The tile's rows [r0, r1) and columns [c0, c1): the last tiles are cut short.
      const std::int64_t r0 = ti * g.tile_rows, r1 = std::min(r0 + g.tile_rows, g.rows);
      const std::int64_t c0 = tj * g.tile_cols, c1 = std::min(c0 + g.tile_cols, g.cols);
      float amax = 0.0f;
      for (std::int64_t r = r0; r < r1; ++r)
        for (std::int64_t c = c0; c < c1; ++c) {
          const float v = x[r * g.cols + c];
          if (!std::isfinite(v))
            throw Error("quantize_tiles: x[" + std::to_string(r) + "][" + std::to_string(c) + "] = " +
                        std::to_string(v) + " is not finite");
          amax = std::max(amax, std::fabs(v));
        }
      // amax lands on max_finite; a tile of zeros keeps s = 1 (any s would do, 0 would not).
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
