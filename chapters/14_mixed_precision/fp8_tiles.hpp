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

// Exercise 14.2 — quantise a tensor to FP8 with one scale per tile.
//   in:  x [grid.rows, grid.cols] fp32, row-major; format DType::e4m3 or DType::e5m2
//   out: q [grid.rows, grid.cols] codes of `format` (overwritten), encoded by the core's
//        float_to_e4m3 / float_to_e5m2 (common/float_formats.hpp: round to nearest even, saturating);
//        scales [grid.tiles()] fp32, row-major over the grid: scales[i · tiles_across + j] (overwritten)
// so that dequantize_tiles below gives x back: x ≈ decode(q) · s, element by element, where s is the
// scale of the element's tile. What each tile must satisfy:
//   * the scale is the tile's own: s = amax / max_finite(format), amax = max |x| over the tile's
//     elements only (an outlier moves its own tile's scale, no other's), so the tile's largest
//     magnitude is encoded as ±max_finite (or within rounding of it) and nothing else saturates;
//   * every element is within half a step of the format of its value: round to nearest, never
//     toward zero, at the magnitude x / s;
//   * a tile of zeros has s = 1 and codes 0 (no 0 / 0);
//   * the tiles at the right and bottom edges are cut short where the tile does not divide the
//     shape (TileGrid above): every element of x belongs to exactly one tile.
// Error cases: usp::Error, naming quantize_tiles and the cause (q and scales are then undefined):
//   * format not e4m3 or e5m2:                 "quantize_tiles: format must be e4m3 or e5m2"
//   * grid.rows or grid.cols < 0, or grid.tile_rows or grid.tile_cols < 1:
//                                              "quantize_tiles: bad tile grid <rows>×<cols> in tiles of <tr>×<tc>"
//   * an element that is ±inf or NaN: no finite scale can carry it, and it must not pass silently
//     (a NaN compares false with everything: it can hide from a max):
//                                              "quantize_tiles: x[<row>][<col>] = <value> is not finite"
void quantize_tiles(const float* x, const TileGrid& grid, DType format, std::uint8_t* q, float* scales);

// x ≈ decode(q) · s, tile by tile (fp32; the product rounds to fp32).
void dequantize_tiles(const std::uint8_t* q, const float* scales, const TileGrid& grid, DType format, float* x);

}  // namespace usp::ch14
