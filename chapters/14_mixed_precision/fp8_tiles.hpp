// FP8 with scales: a tensor stored as fp8 codes plus one fp32 scale per tile.
//
// e4m3 covers [2^-9, 448] and e5m2 [2^-16, 57344] — a few binades each, far narrower than the
// values a layer produces. So a tile of the tensor is divided by a scale s before it is cast:
// s = amax / max_finite, with amax = max |x| over the tile, maps the tile's largest value onto the
// format's largest, and x ≈ code · s. One scale for the whole tensor ("per-tensor") is ruined by a
// single outlier: every other value is squeezed toward the bottom of the range, into the
// subnormals or zero. One scale per tile keeps the damage local — DeepSeek-V3 uses 1 × 128 tiles
// (a row's 128 consecutive features) for activations and gradients and 128 × 128 blocks for weights.
//
// Exercise 14.2 is quantize_tiles; dequantize_tiles is given.
#pragma once
#include <cstdint>

#include "common/dtype.hpp"

namespace usp::ch14 {

// The tile grid of a rows × cols tensor: tiles of tile_rows × tile_cols, the last ones in each
// direction cut short when the tile does not divide the shape. Tile (i, j) covers rows
// [i·tile_rows, min((i+1)·tile_rows, rows)) and columns [j·tile_cols, min((j+1)·tile_cols, cols));
// scales are stored row-major over the grid: scales[i · tiles_across + j].
struct TileGrid {
  std::int64_t rows, cols, tile_rows, tile_cols;
  std::int64_t tiles_down() const { return (rows + tile_rows - 1) / tile_rows; }
  std::int64_t tiles_across() const { return (cols + tile_cols - 1) / tile_cols; }
  std::int64_t tiles() const { return tiles_down() * tiles_across(); }
};

// Exercise 14.2. x [rows, cols] fp32 row-major -> q [rows, cols] codes of `format` (DType::e4m3 or
// DType::e5m2, the core's float_to_e4m3 / float_to_e5m2: round to nearest even, saturating) and
// scales [grid.tiles()]:
//   s = amax / max_finite(format) for a tile whose amax = max |x| > 0; s = 1 for an all-zero tile
//   q = encode(x / s)   for every element of the tile
// so that |x / s| <= max_finite: no code saturates, and the largest |x| of each tile lands on (or
// within rounding of) the format's largest value.
void quantize_tiles(const float* x, const TileGrid& grid, DType format, std::uint8_t* q, float* scales);

// x ≈ decode(q) · s, tile by tile (fp32; the product rounds to fp32).
void dequantize_tiles(const std::uint8_t* q, const float* scales, const TileGrid& grid, DType format, float* x);

}  // namespace usp::ch14
