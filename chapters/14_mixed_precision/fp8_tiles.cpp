#include "chapters/14_mixed_precision/fp8_tiles.hpp"

#include <algorithm>

#include "common/error.hpp"
#include "common/float_formats.hpp"

namespace usp::ch14 {

void dequantize_tiles(const std::uint8_t* q, const float* scales, const TileGrid& g, DType format, float* x) {
  USP_CHECK(format == DType::e4m3 || format == DType::e5m2, "dequantize_tiles: format must be e4m3 or e5m2");
  for (std::int64_t r = 0; r < g.rows; ++r)
    for (std::int64_t c = 0; c < g.cols; ++c) {
      const std::int64_t i = r * g.cols + c;
      const float s = scales[(r / g.tile_rows) * g.tiles_across() + c / g.tile_cols];
      x[i] = (format == DType::e4m3 ? e4m3_to_float(q[i]) : e5m2_to_float(q[i])) * s;
    }
}

}  // namespace usp::ch14
